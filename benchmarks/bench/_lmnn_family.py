"""LMNN over an instance family: ``python -m benchmarks bench lmnn --scale family`` (and
``python -m benchmarks.bench._lmnn_family`` with every option), and the MNIST-shaped data of
the ``--scale`` rows at tens of thousands of points.

A member is a specification string.  Those of :mod:`benchmarks._family`
(``"classification:d=16:c=10:sep=1"``, ``"blobs:d=10:c=10"``, ``"pendigits"``, …) are read by
:func:`benchmarks._family.points`; this module adds two of its own, both 10-class and shaped
like the PCA-50 coordinates of handwritten digits:

* ``"digitlike:d=50:c=10"`` — synthetic: every class a mixture of :data:`STYLES` Gaussian
  "writing styles"; along axis a the centres spread as :data:`CENTRE_SCALE` ·
  (1 + a)^−:data:`SIGNAL_DECAY` and the points about them as (1 + a)^−:data:`NOISE_DECAY`, so
  after standardization the leading axes separate the classes and the trailing ones are mostly
  noise, as in the PCA coordinates of images (plain k-NN is then far from perfect and a
  learned metric has something to do);
* ``"mnist5000-pca50"`` — the offline 5 000-image MNIST subset (CVXKML_DATA), pixels / 255, PCA
  to 50 components; beyond 5 000 points it is upsampled: each new point lies between a real
  image and one of its 10 nearest same-class images (a uniform point of the segment) plus a
  little Gaussian noise (a tenth of each component's spread), so the labels stay real and no
  point is a copy.

Every member's features are standardized.  To add a generator, add a branch to
:func:`family_points` and name it in :data:`GENERATORS`.

:func:`family_rows` solves every (member, n, seed) to a certified ``tol`` with one BLAS
thread and records CPU seconds (``time.process_time``); :func:`benchmarks._family.summarize`
and :func:`benchmarks._family.family_verdict` turn the rows into the per-member medians,
maxima and growth exponents and the target verdicts.

Nothing here is used by the library itself.
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np

from .._commands import CommandError, opt, script
from .._family import family_verdict, parse_spec, points, summarize
from .._runner import standardize

__all__ = [
    "FAMILY_TARGET",
    "GENERATORS",
    "LARGE",
    "LMNN_FAMILY",
    "REAL_SIZES",
    "family_points",
    "family_problem",
    "family_rows",
    "family_report",
    "main",
]

#: the generators of this module (name -> default parameters)
GENERATORS = {"digitlike": {"d": 50, "c": 10}, "mnist5000-pca50": {}}
#: writing styles (Gaussian components) per class of ``digitlike``
STYLES = 4
#: ``digitlike``'s spectra: the class-and-style centres' spread and its decay along the axes,
#: and the decay of the within-style noise (slower: trailing axes are mostly noise)
CENTRE_SCALE, SIGNAL_DECAY, NOISE_DECAY = 1.7, 0.9, 0.6
#: LMNN's parameters of the family rows: k target neighbours, pull/push weight γ
K, GAMMA = 3, 0.5
#: the default family: two generators, two real data sets
LMNN_FAMILY = ("classification:d=16:c=10:sep=1", "digitlike:d=50:c=10", "pendigits", "mnist5000-pca50")
#: the default sizes of the generators and of the real data sets (a data set's full size is
#: the paper-style row; a size beyond what a real set holds is skipped, never upsampled)
GENERATOR_SIZES = (1000, 2000, 4000)
REAL_SIZES = {"pendigits": (2000, 5000, 10992), "mnist5000-pca50": (1000, 2000, 5000)}
#: the target of the family: (n, CPU seconds) the worst certified instance of that size must meet
#: (the whole pendigits data set, the paper-style row)
FAMILY_TARGET = (10992, 10.0)
#: the MNIST-shaped rows of ``bench lmnn --scale`` (name -> member, points): 10 classes, d = 50
LARGE = {
    f"{name}{n // 1000}k": (spec, n)
    for name, spec in (("digitlike", "digitlike:d=50:c=10"), ("mnist-pca50-up", "mnist5000-pca50"))
    for n in (15000, 30000, 60000)
}


def _parse(spec: str) -> tuple[str, dict]:
    """``(name, parameters)`` of a member: this module's generators, else
    :func:`benchmarks._family.parse_spec`."""
    name, *parts = str(spec).split(":")
    if name not in GENERATORS:
        return parse_spec(spec)
    params = dict(GENERATORS[name])
    for part in parts:
        key, _, value = part.partition("=")
        if key not in params or not value.isdigit() or int(value) < 2:
            raise ValueError(f"family spec {spec!r}: unknown part {part!r} (known: {', '.join(params) or 'none'})")
        params[key] = int(value)
    return name, params


def check_specs(specs) -> None:
    """Raise :class:`CommandError` (one line) on the first bad specification."""
    for spec in specs:
        try:
            _parse(spec)
        except ValueError as exc:
            raise CommandError(str(exc)) from None


def _digitlike(n: int, d: int, c: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """``digitlike``: c classes (sizes within one), :data:`STYLES` styles each, spreads
    decaying along the axes (see the module doc)."""
    axis = 1.0 + np.arange(d)
    centres = CENTRE_SCALE * rng.standard_normal((c, STYLES, d)) * axis**-SIGNAL_DECAY
    y = np.arange(int(n)) % c
    style = rng.integers(STYLES, size=y.size)
    X = centres[y, style] + rng.standard_normal((y.size, d)) * axis**-NOISE_DECAY
    return X, y


def _mnist_pca50(n: int, seed: int, data_dir=None) -> tuple[np.ndarray, np.ndarray]:
    """``mnist5000-pca50``: a stratified subsample of n <= 5 000 images, or all of them
    upsampled to n between same-class neighbours (see the module doc)."""
    from sklearn.decomposition import PCA
    from sklearn.model_selection import train_test_split
    from sklearn.neighbors import NearestNeighbors

    from cvxkml.datasets import load_npz

    X, y = load_npz("mnist5000", data_dir)
    X = PCA(50, random_state=0).fit_transform(np.asarray(X, dtype=float) / 255.0)
    y = np.asarray(y)
    if n < y.size:
        X, _, y, _ = train_test_split(X, y, train_size=int(n), stratify=y, random_state=seed)
        return X, y
    rng = np.random.default_rng(seed)
    extra = int(n) - y.size
    src = rng.integers(y.size, size=extra)
    mate = np.empty(extra, np.int64)
    for label in np.unique(y):
        cls = np.flatnonzero(y == label)
        nbr = NearestNeighbors(n_neighbors=min(11, cls.size)).fit(X[cls]).kneighbors(X[cls], return_distance=False)
        pos = np.searchsorted(cls, src[y[src] == label])
        pick = nbr[pos, rng.integers(1, nbr.shape[1], size=pos.size)]
        mate[y[src] == label] = cls[pick]
    t = rng.random((extra, 1))
    new = X[src] + t * (X[mate] - X[src]) + 0.1 * X.std(axis=0) * rng.standard_normal((extra, X.shape[1]))
    return np.vstack([X, new]), np.concatenate([y, y[src]])


def family_points(spec: str, n: int, seed: int, data_dir=None) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)``: n standardized points of the member ``spec``, seed ``seed`` (a real data
    set of :mod:`benchmarks._family`: min(n, its size) points)."""
    name, p = _parse(spec)
    if name == "digitlike":
        X, y = _digitlike(n, p["d"], p["c"], np.random.default_rng(seed))
    elif name == "mnist5000-pca50":
        X, y = _mnist_pca50(n, seed, data_dir)
    else:
        return points(spec, n, seed, data_dir)
    return standardize(np.asarray(X, dtype=float))[0], np.asarray(y)


def family_problem(spec: str, n: int, seed: int, data_dir=None):
    """Linear LMNN (k = :data:`K`, γ = :data:`GAMMA`) on :func:`family_points`."""
    from cvxkml.declare.lmnn import LMNNProblem

    X, y = family_points(spec, n, seed, data_dir)
    return LMNNProblem.linear(X, y, k=K, gamma=GAMMA)


def _sizes(spec: str, sizes, real_sizes: dict) -> tuple:
    """The sizes a member runs at: ``real_sizes[name]`` for a real data set listed there,
    else ``sizes``."""
    return tuple(real_sizes.get(_parse(spec)[0], sizes))


def family_rows(
    specs=LMNN_FAMILY,
    sizes=GENERATOR_SIZES,
    seeds=(0, 1, 2, 3, 4),
    tol: float = 1e-4,
    cpu_cap: float = 120.0,
    real_sizes=None,
    data_dir=None,
    report=None,
) -> list[dict]:
    """One certified solve (``LMNNProblem.solve(tol)``, default options, one BLAS thread) per
    member, size and seed, stopped after ``cpu_cap`` CPU seconds (then not certified).

    Parameters
    ----------
    specs : sequence of str
        The members (module doc).
    sizes : sequence of int
        Points of the generated members.
    seeds : sequence of int
        One instance per seed (a real data set: a different stratified subsample per seed;
        at its full size every seed is the same data, and the rows measure the timing spread).
    tol : float, default 1e-4
        The certified relative gap asked.
    cpu_cap : float, default 120
        CPU seconds after which a solve is stopped at its next check.
    real_sizes : dict or None
        Sizes per real data set (default :data:`REAL_SIZES`); a size above the data set's is
        skipped.
    data_dir, report
        The data folder; ``report(row)`` is called as each row is measured.

    Returns
    -------
    list of dict
        spec, n, seed, d, triplets, cpu and wall seconds, iterations, certified relative gap,
        converged, status, active-set rounds and final set size, 1-NN training accuracy
        before and after (leave-one-out, a sanity check of the learned metric).
    """
    from cvxkml._config import blas_limit

    real_sizes = REAL_SIZES if real_sizes is None else real_sizes
    _warm_up()
    rows = []
    for spec in specs:
        for n in _sizes(spec, sizes, real_sizes):
            for seed in seeds:
                prob = family_problem(spec, n, seed, data_dir)
                if prob.Z.shape[0] < n and _parse(spec)[0] not in GENERATORS:
                    break  # the data set holds fewer points
                rows.append(_one(spec, seed, prob, tol, cpu_cap, blas_limit))
                if report is not None:
                    report(rows[-1])
    return rows


def _one(spec, seed, prob, tol, cpu_cap, blas_limit) -> dict:
    """One timed, CPU-capped solve of ``prob`` and its row."""
    c0, t0 = time.process_time(), time.perf_counter()

    def stop(info):
        return time.process_time() - c0 > cpu_cap

    with blas_limit(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an unconverged row says so in its status
        sol = prob.solve(tol=tol, max_iter=10**6, callback=stop)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    F, g = float(sol.objective), float(sol.dual_value)
    info = sol.info
    return dict(
        spec=spec,
        n=int(prob.Z.shape[0]),
        seed=seed,
        d=int(prob.Z.shape[1]),
        triplets=int(prob.n_triplets),
        cpu=cpu,
        wall=wall,
        iterations=int(sol.n_iter),
        objective=F,
        gap=(F - g) / max(1.0, abs(F)),
        converged=bool(sol.converged),
        status=sol.status,
        rounds=info.get("rounds"),
        set_size=(info.get("set_sizes") or [None])[-1],
    )


def _warm_up() -> None:
    """Compile the Numba kernels of the all-triplet and active-set paths on a small instance
    (excluded from every timing)."""
    from cvxkml.declare.lmnn import LMNNProblem

    rng = np.random.default_rng(0)
    y = np.arange(24) % 2
    prob = LMNNProblem.linear(rng.normal(size=(24, 3)) + y[:, None], y, k=2, gamma=GAMMA)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for impostors in ("all", "active"):
            prob.solve(tol=1e-3, impostors=impostors)


def family_report(rows, target_n: int | None = None, target: float = 10.0) -> list[str]:
    """The rows' summary per member and size (median / max CPU s and iterations, worst gap,
    growth exponent of the median CPU in n) and, with ``target_n``, the verdict of the
    instances of that size against ``target`` CPU seconds, as printable lines."""
    from .._report import format_table

    summary = summarize(rows, by="spec", worst=("gap",))
    table = format_table(
        ["member", "n", "certified", "median CPU s", "max CPU s", "median its", "max its", "max gap", "growth in n"],
        [
            [
                s["spec"],
                str(s["n"]),
                f"{s['certified']}/{s['instances']}",
                f"{s['median_cpu']:.3g}",
                f"{s['max_cpu']:.3g}",
                f"{s['median_iterations']:.0f}",
                str(s["max_iterations"]),
                f"{s['max_gap']:.1e}",
                "-" if not np.isfinite(s["growth_exponent"]) else f"{s['growth_exponent']:.2f}",
            ]
            for s in summary
        ],
    )
    lines = [table, ""]
    if target_n is not None:
        v = family_verdict(rows, target_n, target)
        if v["instances"]:
            lines.append(
                f"n = {target_n}: {v['certified']}/{v['instances']} certified, worst {v['worst']:.3g} CPU s "
                f"({v['worst_spec']}, seed {v['worst_seed']}) against {target:g} s: {'met' if v['met'] else 'NOT met'}"
            )
    return lines


def command(args) -> int:
    """``python -m benchmarks.bench._lmnn_family``: :func:`family_rows`, then the summary."""
    from .._report import finish, row_line, start, write_numbers

    check_specs(args.family)
    t_start = start(
        "python -m benchmarks.bench._lmnn_family",
        False,
        f"one BLAS thread, CPU seconds (time.process_time), load average {os.getloadavg()[0]:.2f}",
    )
    real = {name: tuple(args.real_sizes) for name in REAL_SIZES} if args.real_sizes else None
    rows = family_rows(
        tuple(args.family),
        tuple(args.sizes),
        tuple(range(args.seed, args.seed + args.seeds)),
        tol=args.tol,
        cpu_cap=args.cpu_cap,
        real_sizes=real,
        report=lambda r: print(row_line(r), flush=True),
    )
    print()
    print("\n".join(family_report(rows, args.target_n, args.target)))
    write_numbers(args.json, {"rows": rows, "summary": summarize(rows, by="spec", worst=("gap",))})
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return finish("bench", t_start)


#: the options of ``python -m benchmarks.bench._lmnn_family``
OPTIONS = (
    opt("--family", nargs="+", default=list(LMNN_FAMILY), help="member specifications (default: LMNN_FAMILY)"),
    opt("--sizes", type=int, nargs="+", default=list(GENERATOR_SIZES), help="points of the generated members"),
    opt("--real-sizes", type=int, nargs="+", default=None, help="points of the real members (default: REAL_SIZES)"),
    opt("--seeds", type=int, default=5, help="seeds per member and size, from --seed (default 5)"),
    opt("--seed", type=int, default=0, help="first seed (default 0)"),
    opt("--tol", type=float, default=1e-4, help="certified relative gap (default 1e-4)"),
    opt("--cpu-cap", type=float, default=120.0, help="CPU seconds after which a solve stops (default 120)"),
    opt("--target-n", type=int, default=10992, help="the size whose worst instance is held to --target"),
    opt("--target", type=float, default=10.0, help="CPU seconds the worst instance of --target-n must meet"),
    opt("--json", default=None, help="write the rows and the summary as JSON to this file"),
)


def main(argv=None) -> int:
    """``python -m benchmarks.bench._lmnn_family [options]``."""
    return script("python -m benchmarks.bench._lmnn_family", command, OPTIONS, None, argv)


if __name__ == "__main__":
    raise SystemExit(main())
