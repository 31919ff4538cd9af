"""Instance families for the MNIST-shape targets of ``bench lowrank`` and ``bench vonneumann``:
a target holds when the worst instance of a family meets it, not one instance a benchmark chose.

A member is a specification string (:func:`benchmarks._family.parse_spec`), turned into a rank-r
input factor G0 (n × r, K0 = G0 G0ᵀ) and labels by :func:`family_factor`:

* ``"blobs:d=100:c=10"``, ``"classification:d=100:c=10:sep=1"`` — the generators of
  :func:`benchmarks._family.points` with d = r features (standardized): G0 is the feature matrix;
* a data set of the offline folder (``"mnist5000"``, ``"pendigits"``, …) — its features of rank r
  (:func:`_rank_r_features`: the top r principal components of the centred features when there
  are at least r of them, as the workload of Kulis et al. §7.2 does with MNIST; otherwise r random
  Fourier features of a Gaussian kernel on the standardized features, a rank-r approximation of
  that kernel), rows permuted by the seed and stacked with noise up to n rows.

Per member, size n and seed, the constraints are the workload's random label pairs (ITML scheme,
5th / 95th-percentile bounds, :func:`benchmarks.bench.lowrank._workload_pairs`).
:func:`lowrank_family_rows` runs the certified low-rank LogDet solve on each,
:func:`vonneumann_family_rows` the certified von Neumann Algorithm 3; :func:`family_command`
prints the rows, the per-member summary (median and max CPU seconds and sweeps, the worst
certificate, the growth exponent in n) and the verdict of the worst instance at the largest n.

``python -m benchmarks.bench.lowrank_family {lowrank,vonneumann} [options]`` runs it (:func:`main`);
:func:`lowrank_command` and :func:`vonneumann_command` are the ``bench lowrank`` and ``bench
vonneumann`` commands with a ``family`` mode (``python -m benchmarks bench lowrank family``) for
command rows that carry :data:`FAMILY_OPTIONS`.
"""

from __future__ import annotations

import time

import numpy as np

from cvxkml._config import blas_limit

from .._commands import CommandError, opt, script, use
from .._family import family_verdict, parse_spec, points, summarize
from .._report import row_line, write_json
from .._runner import median_sq_distance, quiet
from .._runner import timed as _timed
from . import lowrank, vonneumann
from .lowrank import _workload_pairs, warm_up_lowrank
from .vonneumann import _orthonormal_factor, warm_up_vonneumann

__all__ = [
    "DEFAULT_FAMILY",
    "DEFAULTS",
    "family_factor",
    "lowrank_family_rows",
    "vonneumann_family_rows",
    "family_command",
    "lowrank_command",
    "vonneumann_command",
    "FAMILY_OPTIONS",
    "data_sets",
    "main",
]

#: two generators (well separated Gaussian classes; scikit-learn's make_classification, one
#: cluster per class) and two real data sets of handwritten digits (Kulis et al. used MNIST-like
#: digits): MNIST's 5 000 images (PCA) and pendigits (random Fourier features)
DEFAULT_FAMILY = ("blobs:d=100:c=10", "classification:d=100:c=10:sep=1", "mnist5000", "pendigits")

#: per solver: the constraint count of its target row, the sizes (the target at the largest),
#: and the CPU seconds the worst instance at the largest size must meet
DEFAULTS = {
    "lowrank": dict(constraints=1_000_000, sizes=(15_000, 60_000), target=60.0, cpu_cap=None),
    "vonneumann": dict(constraints=100_000, sizes=(15_000, 60_000), target=30.0, cpu_cap=600.0),
}

#: points (a seeded subsample) whose median squared distance sets the Gaussian width
WIDTH_POINTS = 2000

#: Gaussian noise of the stacked copies of a data set, × each feature's standard deviation
NOISE = 0.1


def _rank_r_features(X, r: int, rng) -> tuple[np.ndarray, str]:
    """Features of rank ``r`` of the raw data matrix ``X`` and a description of the map."""
    X = np.asarray(X, dtype=np.float64)
    if X.shape[1] >= r:
        Xc = X - X.mean(axis=0)
        _, V = np.linalg.eigh(Xc.T @ Xc)
        return Xc @ V[:, ::-1][:, :r], f"PCA-{r}"
    mu, sd = X.mean(axis=0), X.std(axis=0)
    Z = (X - mu) / np.where(sd > 0, sd, 1.0)
    sub = rng.choice(Z.shape[0], min(Z.shape[0], WIDTH_POINTS), replace=False)
    gamma = 1.0 / median_sq_distance(Z[sub])
    Omega = rng.normal(scale=np.sqrt(2.0 * gamma), size=(Z.shape[1], r))
    phase = rng.uniform(0.0, 2.0 * np.pi, size=r)
    return np.sqrt(2.0 / r) * np.cos(Z @ Omega + phase), f"{r} random Fourier features of exp(-|x-y|^2/median)"


def family_factor(spec: str, n: int, r: int, seed: int, data_dir=None) -> tuple[np.ndarray, np.ndarray, str]:
    """``(G0, y, description)``: the rank-``r`` input factor (n × r, C-contiguous) and labels of
    the family member ``spec`` at size ``n`` and seed ``seed`` (see the module doc).

    Raises
    ------
    ValueError
        A generator with d ≠ r features, or an unknown specification.
    """
    name, params = parse_spec(spec)
    if name in ("blobs", "classification"):
        if params["d"] != r:
            raise ValueError(f"family spec {spec!r}: d must equal the rank r = {r}")
        X, y = points(spec, n, seed, data_dir)
        return np.ascontiguousarray(X), np.asarray(y), spec
    from cvxkml.datasets import load_dataset

    rng = np.random.default_rng(seed)
    X, y = load_dataset(name, data_dir)
    with blas_limit(1):
        Z, how = _rank_r_features(X, r, rng)
    order = rng.permutation(len(y))
    Z, y = Z[order], np.asarray(y)[order]
    copies = -(-int(n) // len(y))
    sd = Z.std(axis=0)
    G0 = np.concatenate([Z] + [Z + NOISE * sd * rng.standard_normal(Z.shape) for _ in range(copies - 1)])[:n]
    desc = f"{name}: {how}, rows permuted, {copies} cop{'y' if copies == 1 else 'ies'} (noise {NOISE:g} sd)"
    return np.ascontiguousarray(G0), np.tile(y, copies)[:n], desc


def _instances(specs, sizes, seeds, r, constraints, data_dir):
    """(spec, n, seed, G0, pair constraints, build CPU seconds, description) of every member."""
    for n in sizes:
        for spec in specs:
            for seed in seeds:
                c0 = time.process_time()
                with blas_limit(1):
                    G0, y, desc = family_factor(spec, n, r, seed, data_dir)
                    pairs = _workload_pairs(G0, y, constraints, seed)
                yield spec, int(n), int(seed), G0, pairs, time.process_time() - c0, desc


def lowrank_family_rows(
    specs=DEFAULT_FAMILY,
    sizes=(15_000, 60_000),
    seeds=(0, 1, 2, 3, 4),
    r: int = 100,
    constraints: int = 1_000_000,
    tol: float = 1e-3,
    gamma: float = 1.0,
    max_iter: int = 100_000,
    data_dir=None,
    report=None,
) -> list[dict]:
    """One certified ``LowRankLogDet(G0, pairs, gamma).solve(tol)`` per member, size and seed, one
    BLAS thread.  A row: spec, n, seed, r, constraints, pairs, build_cpu (factor + constraints),
    cpu and wall seconds of the solve, iterations (sweeps), projections, converged (the
    problem's certificate), rel_gap, abs_rel_gap, max_rel_violation, objective, source.
    ``report(row)`` is called as each row is measured."""
    from cvxkml.declare import LowRankLogDet

    warm_up_lowrank()
    rows = []
    for spec, n, seed, G0, pairs, build, desc in _instances(specs, sizes, seeds, r, constraints, data_dir):
        prob = LowRankLogDet(G0, pairs, gamma=gamma)
        c0 = time.process_time()
        with blas_limit(1):
            sol, wall = _timed(quiet, prob.solve, tol=tol, max_iter=max_iter)
        cpu = time.process_time() - c0
        gap = sol.gap / max(1.0, abs(sol.objective)) if sol.gap is not None else np.inf
        _add_row(
            rows,
            report,
            (spec, n, seed, r, constraints, pairs, build, cpu, wall),
            iterations=int(sol.n_iter),
            projections=int(sol.info["projections"]),
            converged=bool(sol.converged),
            rel_gap=float(gap),
            abs_rel_gap=abs(float(gap)),
            max_rel_violation=float(sol.info["max_relative_violation"]),
            objective=float(sol.objective),
            source=desc,
        )
    return rows


def _add_row(rows, report, head, **fields):
    """Append a row: the instance (spec, n, seed, r, constraints, pairs, build CPU, CPU, wall),
    then ``fields``."""
    spec, n, seed, r, constraints, pairs, build, cpu, wall = head
    row = dict(spec=spec, n=n, seed=seed, r=r, constraints=int(constraints), pairs=len(pairs))
    row.update(build_cpu=build, cpu=cpu, wall=wall, **fields)
    rows.append(row)
    if report is not None:
        report(row)


def vonneumann_family_rows(
    specs=DEFAULT_FAMILY,
    sizes=(15_000, 60_000),
    seeds=(0, 1, 2, 3, 4),
    r: int = 100,
    constraints: int = 100_000,
    tol: float = 1e-3,
    gamma: float = 1.0,
    max_iter: int = 100_000,
    cpu_cap: float | None = 600.0,
    data_dir=None,
    report=None,
    stop: str = "certificate",
    violated_passes: int = vonneumann._VIOLATED_PASSES,
) -> list[dict]:
    """One certified von Neumann solve (Kulis et al. Algorithm 3, ``vonneumann_pairs``) per
    member, size and seed, with the rule of the bench's target line by default: stopped on the
    certificate alone, with up to ``violated_passes`` passes over the constraints it finds
    violated after a full sweep (``stop="both", violated_passes=0``: the plain cyclic rule of
    the dual change and the certificate).  One BLAS thread, stopped after ``cpu_cap`` CPU
    seconds (checked after each sweep; then ``finished`` is False), then ``certificate()`` of
    the end point.  A row: spec, n, seed, r, constraints, pairs, build_cpu, cpu, wall,
    iterations (full sweeps), projections (those that ran the root finder), violated_passes
    (the passes run), stop, finished, converged (|rel_gap| and the relative violation <=
    max(tol, 1e-6)), rel_gap, abs_rel_gap, max_rel_violation, objective, cpu_gflops
    (projections × 2r³ per CPU second), source."""
    from cvxkml.solvers.bregman import NONFINITE
    from cvxkml.solvers.vonneumann import certificate, vonneumann_pairs

    warm_up_vonneumann()
    cert_tol = max(tol, 1e-6)
    rows = []
    for spec, n, seed, G0, pairs, build, desc in _instances(specs, sizes, seeds, r, constraints, data_dir):
        with blas_limit(1):
            F, q0 = _orthonormal_factor(G0)
            I, J = np.ascontiguousarray(pairs.i, dtype=np.int64), np.ascontiguousarray(pairs.j, dtype=np.int64)
            delta, bound = np.ascontiguousarray(pairs.y, dtype=np.float64), np.array(pairs.bound, dtype=np.float64)
            c0 = time.process_time()
            capped = [False]

            def capper(info, c0=c0, capped=capped):
                capped[0] = cpu_cap is not None and time.process_time() - c0 > cpu_cap
                return capped[0]

            res, wall = _timed(
                vonneumann_pairs,
                F,
                q0,
                I,
                J,
                delta,
                bound,
                gamma,
                tol,
                max_iter,
                stop=stop,
                violated_passes=violated_passes,
                callback=capper,
            )
            cpu = time.process_time() - c0
            if res.code == NONFINITE:
                raise RuntimeError(f"von Neumann family {spec} n={n} seed={seed}: non-finite iterate")
            c = certificate(F, q0, I, J, delta, bound, res.xi, res.lam, res.extra["W"], res.extra["q"], gamma)
        proj = int(res.extra["projections"])
        ok = bool(np.isfinite(c["rel_gap"]) and abs(c["rel_gap"]) <= cert_tol and c["rel_violation"] <= cert_tol)
        _add_row(
            rows,
            report,
            (spec, n, seed, r, constraints, pairs, build, cpu, wall),
            iterations=int(res.sweeps),
            projections=proj,
            violated_passes=int(res.extra.get("violated_passes", 0)),
            stop=stop,
            finished=not capped[0],
            converged=ok,
            rel_gap=float(c["rel_gap"]),
            abs_rel_gap=abs(float(c["rel_gap"])),
            max_rel_violation=float(c["rel_violation"]),
            objective=float(c["objective"]),
            cpu_gflops=proj * 2.0 * r**3 / max(cpu, 1e-12) / 1e9,
            source=desc,
        )
    return rows


def _load() -> str:
    try:
        import os

        return "load average " + " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:  # pragma: no cover - not on every platform
        return "load average unknown"


def family_command(args, solver: str) -> int:
    """Run the family of ``solver`` ("lowrank" or "vonneumann") as ``args`` ask, print every
    row, the per-member summary and the verdict at the largest size; write them as JSON with
    ``--json``.  Returns 0."""

    d = DEFAULTS[solver]
    counts = getattr(args, "constraints", None)
    if counts is not None and len(counts) != 1:
        raise CommandError(f"family: give one constraint count; got {len(counts)}")
    m = d["constraints"] if counts is None else int(counts[0])
    sizes = tuple(d["sizes"] if args.sizes is None else args.sizes)
    target = d["target"] if args.target is None else args.target
    for spec in args.family:
        try:
            name, params = parse_spec(spec)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if name in ("blobs", "classification") and params["d"] != args.rank:
            raise CommandError(f"family spec {spec!r}: d must equal --rank ({args.rank})")
    if min(sizes) < 2 * args.rank:
        raise CommandError(f"family: --sizes must be at least 2 x --rank = {2 * args.rank}; got {min(sizes)}")
    seeds = tuple(range(args.seed, args.seed + args.seeds))
    what = "low-rank LogDet" if solver == "lowrank" else "von Neumann Algorithm 3"
    print(
        f"{what}, certified tol 1e-3, slack gamma = 1, r = {args.rank}, {m} constraints, sizes {sizes}, "
        f"seeds {seeds}, one BLAS thread; {_load()} at the start:",
        flush=True,
    )
    common = dict(
        r=args.rank, constraints=m, data_dir=getattr(args, "data_dir", None), report=lambda r: print(row_line(r))
    )
    if solver == "lowrank":
        rows = lowrank_family_rows(tuple(args.family), sizes, seeds, **common)
    else:
        cap = d["cpu_cap"] if args.cpu_cap is None else args.cpu_cap
        rows = vonneumann_family_rows(tuple(args.family), sizes, seeds, cpu_cap=cap, **common)
    summary = summarize(rows, "cpu", by="spec", worst=("abs_rel_gap", "max_rel_violation"))
    verdict = family_verdict(rows, max(sizes), target)
    print(f" per member (CPU seconds of the solve; {_load()} at the end):", flush=True)
    for r in summary:
        print(row_line(r))
    print(f" worst instance at n = {max(sizes)} against {target:g} CPU s (met when the max meets it):")
    print(row_line(verdict), flush=True)
    if args.json:
        write_json(args.json, dict(solver=solver, constraints=m, rows=rows, summary=summary, verdict=verdict))
    return 0


#: the options a command row needs for its family mode (besides ``--seed``, ``--data-dir`` and
#: ``--constraints``, which the workload rows already have): its ``what`` and the family's own
FAMILY_OPTIONS = (
    opt(
        "what",
        nargs="?",
        default="all",
        choices=("all", "family"),
        help="all: the command's rates and workload; family: the instance family of its target row",
    ),
    opt(
        "--family",
        nargs="+",
        default=list(DEFAULT_FAMILY),
        help="family: members (blobs:d=100:c=10, classification:d=100:c=10:sep=1 with d = --rank, or a data "
        "set of the data folder such as mnist5000, pendigits; default: " + ", ".join(DEFAULT_FAMILY) + ")",
    ),
    opt("--sizes", type=int, nargs="+", help="family: numbers of points (default 15000 60000)"),
    opt("--seeds", type=int, default=5, help="family: seeds per member, from --seed (default 5)"),
    opt("--rank", type=int, default=100, help="family: the rank r of K0 (default 100)"),
    opt(
        "--target",
        type=float,
        help="family: CPU seconds the worst instance at the largest size must meet "
        "(default 60 low-rank, 30 von Neumann)",
    ),
    opt(
        "--cpu-cap",
        type=float,
        help="family, von Neumann: CPU seconds after which a solve stops uncertified (default 600)",
    ),
    use("json", "family: write the rows, the summary and the verdict as JSON"),
)


def lowrank_command(args) -> int:
    """``python -m benchmarks bench lowrank [all|family]``: :func:`.lowrank.command`, or with
    ``args.what == "family"`` the family of its target row (:func:`family_command`)."""
    if getattr(args, "what", "all") == "family":
        return family_command(args, "lowrank")
    return lowrank.command(args)


def vonneumann_command(args) -> int:
    """``python -m benchmarks bench vonneumann [all|family]``: :func:`.vonneumann.command`, or with
    ``args.what == "family"`` the family of its target row (:func:`family_command`)."""
    if getattr(args, "what", "all") == "family":
        return family_command(args, "vonneumann")
    return vonneumann.command(args)


def _run(args) -> int:
    return family_command(args, args.solver)


#: the options of :func:`main`
SCRIPT_OPTIONS = (
    opt("solver", choices=("lowrank", "vonneumann")),
    opt(
        "--constraints",
        type=int,
        nargs=1,
        help="the constraint count (default 1000000 low-rank, 100000 von Neumann)",
    ),
    use("seed", "first seed (default 0)"),
    use("data_dir", "folder holding the data sets of the family"),
) + FAMILY_OPTIONS[1:]


def data_sets(args) -> tuple:
    """The data sets among the family's members, checked before a family runs (none for a
    command row's other mode)."""
    if getattr(args, "what", "family") != "family":
        return ()
    return tuple(s for s in args.family if _generator(s) not in (None, "blobs", "classification"))


def _generator(spec):
    """The generator name of ``spec``, or None when it does not parse."""
    try:
        return parse_spec(spec)[0]
    except ValueError:
        return None


def main(argv=None) -> int:
    """``python -m benchmarks.bench.lowrank_family {lowrank,vonneumann} [options]``."""
    return script("python -m benchmarks.bench.lowrank_family", _run, SCRIPT_OPTIONS, data_sets, argv)


if __name__ == "__main__":
    raise SystemExit(main())
