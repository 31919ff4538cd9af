"""``python -m benchmarks bench variants``: the generic certified dual solver
(:mod:`cvxkml.solvers.dual_newton`) against the exact conic model on declared variants.

Each row is one spectral kernel-learning problem on n points (Gaussian K0, so the whitened
matrix is n × n): hard forest pairs plus hinge-slack triplets (:class:`~cvxkml.sideinfo.Hinge`),
or a von Neumann problem with a trace budget.  Timed in the same run with one BLAS thread:
Clarabel (eps 1e-8, the default exact solver up to n = 40, forced here at every n), SciPy's
L-BFGS-B dual (:func:`cvxkml.declare.solve_dual`) and ``problem.solve(method="dual")``
(best of ``repeats`` after a warm-up).  Reported next to each time: the objective's relative
difference from Clarabel's and each solution's relative certificate (gap / max(1, |f|)).

``--scale`` (:func:`scale_rows`): the generic solver at size, one BLAS thread, one timed solve
per row after a small warm-up solve of each family: a user regularizer (:class:`Jeffreys`) with
m = 2n hinge pairs, dense, n = 100 … 2 000; the same factored (r = 100 Nyström factor,
10 000 hinge pairs + 1 000 hinge triplets, n = 15 000 … 60 000); built-in LogDet with hinge
pairs, n = 200 … 800; time to a certificate at 1e-6, Newton iterations, the certificate, and
the fitted growth exponent of time in n per family (reference/variant-scale.md).  Then the
instance family (:func:`family_rows`): two user regularizers (:class:`Jeffreys`,
:class:`AlphaPower` p = 3/2) × two point generators (Gaussian blobs, ``make_classification``
with 6 features; :func:`family_points`) × seeds (``--repeats``, default 5, from ``--seed``) at
n = 1 000 and 3 000 (quick: 60, 120), m = 2n hinge pairs, Gaussian K0 of median width:
median and maximum time per regularizer and size (:func:`family_summary`) — a target holds
for the family's worst instance.  Last, the ``GridSearchCV`` row
(:mod:`benchmarks.bench.variants_grid`): the user regularizers in
:class:`~cvxkml.estimators.SpectralMetricLearner` + 5-NN, C = 10^-2 … 10^2, 5-fold, on digits:
CPU seconds and certificate of every fit.
"""

from __future__ import annotations

import time

import numpy as np

from cvxkml.declare import Regularizer

from .._family import summarize
from .._report import columns, finish, start
from .._runner import growth_exponent, median_sq_distance

__all__ = [
    "variant_problem",
    "variant_rows",
    "Jeffreys",
    "AlphaPower",
    "scale_problem",
    "scale_rows",
    "family_problem",
    "family_rows",
    "family_summary",
    "growth_exponent",
    "command",
]

EXACT_VN_MAX_N = 20  # the exact von Neumann model (von_neumann_entr cone) takes minutes beyond

VARIANTS = (
    "logdet+hinge-triplets",
    "vonneumann+hinge-triplets",
    "frobenius+hinge-triplets",
    "tracenorm+hinge-triplets",
    "vonneumann+trace-budget",
)


def variant_problem(name: str, n: int, seed: int = 0):
    """One benchmark problem (see the module doc)."""
    from cvxkml.declare import Frobenius, LogDet, SpectralKernel, TraceNorm, VonNeumann
    from cvxkml.sideinfo import Hinge, LinearConstraints
    from cvxkml.testing import variant_instance

    regs = {"logdet": LogDet(), "vonneumann": VonNeumann(), "frobenius": Frobenius(), "tracenorm": TraceNorm(0.5)}
    reg_name, kind = name.split("+", 1)
    m = n // 2
    prob = variant_instance(seed, n, m, regs[reg_name], kernel=True, hard_pairs=True, C=1.0)
    if kind == "trace-budget":
        cons = [
            prob.pairs,
            Hinge(prob.relative, prob.upper[len(prob.pairs) :]),
            LinearConstraints(b=[0.9 * n], C=np.eye(n)[None]),
        ]
        prob = SpectralKernel(prob.M0, cons, regs[reg_name])
    return prob


def _rel(sol):
    return abs(sol.gap) / max(1.0, abs(sol.objective)) if sol.gap is not None else float("nan")


def variant_rows(
    quick: bool = False, repeats: int | None = None, seed: int = 0, sizes=None, progress=None
) -> list[dict]:
    """Rows of (variant, n, m, times, accuracies, ratios); see the module doc."""
    import warnings

    from cvxkml.declare import solve_dual

    repeats = (1 if quick else 3) if repeats is None else int(repeats)
    sizes = sizes or ((12,) if quick else (20, 60))
    rows = []
    for n in sizes:
        for name in VARIANTS:
            prob = variant_problem(name, n, seed)
            prob.solve(tol=1e-9, method="dual")  # warm-up
            fast_t = np.inf
            for _ in range(repeats):
                t0 = time.perf_counter()
                fast = prob.solve(tol=1e-9, method="dual")
                fast_t = min(fast_t, time.perf_counter() - t0)
            if name.startswith("vonneumann") and n > EXACT_VN_MAX_N:
                exact, exact_t = None, np.nan
            else:
                t0 = time.perf_counter()
                exact = prob.solve_reference(solver="CLARABEL", accept_inaccurate=True)
                exact_t = time.perf_counter() - t0
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                scipy_sol = solve_dual(prob, tol=1e-10)
            scipy_t = time.perf_counter() - t0
            ref = exact if exact is not None else fast
            scale = max(1.0, abs(ref.objective))
            row = dict(
                variant=name,
                n=n,
                m=prob.n_constraints,
                clarabel_s=exact_t,
                clarabel_status="skipped" if exact is None else exact.status,
                clarabel_cert=np.nan if exact is None else _rel(exact),
                scipy_s=scipy_t,
                scipy_diff=abs(scipy_sol.objective - ref.objective) / scale,
                fast_s=fast_t,
                fast_iters=fast.n_iter,
                fast_converged=fast.converged,
                fast_cert=_rel(fast),
                fast_diff=abs(fast.objective - ref.objective) / scale,
                ratio=exact_t / fast_t,
                scipy_ratio=scipy_t / fast_t,
            )
            rows.append(row)
            if progress is not None:
                progress(row)
    return rows


# ---------------------------------------------------------------- --scale: the generic solver at size
class Jeffreys(Regularizer):
    """The symmetrized LogDet ("Jeffreys") regularizer, declared as a user would:
    f_s(x) = x − log x − 1 + c(x + 1/x − 2); x(μ) = (f_s')⁻¹(μ) =
    (1 + √(1 + 4c(1 + c − μ))) / (2(1 + c − μ)) for μ < 1 + c; f*_s(μ) = x μ − f_s(x),
    (f*_s)' = x(μ), (f*_s)'' = 1 / f_s''(x), f_s''(x) = 1/x² + 2c/x³.

    examples/scale_a_variant.py declares its own copy on purpose (it shows a user writing
    one); tests/test_examples_variant.py checks that the two agree.
    """

    name = "Jeffreys"
    alpha = 1.0
    implies_psd = True

    def __init__(self, c: float = 0.5):
        self.c = float(c)

    def f_s(self, x):
        x = np.asarray(x, dtype=float)
        pos = x > 0
        xs = np.where(pos, x, 1.0)
        return np.where(pos, xs - np.log(xs) - 1 + self.c * (xs + 1 / xs - 2), np.inf)

    def _x(self, mu):
        a = 1 + self.c - np.asarray(mu, dtype=float)
        ok = a > 0
        a_s = np.where(ok, a, 1.0)
        return np.where(ok, (1 + np.sqrt(1 + 4 * self.c * a_s)) / (2 * a_s), np.inf)

    def conj_s(self, mu):
        x = self._x(mu)
        fin = np.isfinite(x)
        xs = np.where(fin, x, 1.0)
        return np.where(fin, xs * np.asarray(mu, dtype=float) - self.f_s(xs), np.inf)

    def conj_grad_s(self, mu):
        return self._x(mu)

    def conj_hess_s(self, mu):
        x = self._x(mu)
        with np.errstate(divide="ignore", invalid="ignore"):
            return 1.0 / (1 / x**2 + 2 * self.c / x**3)

    def cvx(self, X):
        import cvxpy as cp

        n = X.shape[0]
        return (1 + self.c) * cp.trace(X) - cp.log_det(X) - n + self.c * (cp.tr_inv(X) - 2 * n)


class AlphaPower(Regularizer):
    """The alpha-power divergence to I, declared as a user would (examples/add_a_regularizer.py):
    f_s(x) = (x^p − p x + p − 1)/(p(p − 1)), p = 3/2; x(μ) = (1 + (p − 1)μ)₊^{1/(p−1)},
    f*_s(μ) = x μ − f_s(x), (f*_s)' = x(μ), (f*_s)'' = (1 + (p − 1)μ)₊^{1/(p−1) − 1}.  Finite
    for every μ (no barrier): the dual has no domain to stay in, and X̂ is singular where
    μ <= −1/(p − 1)."""

    name = "alpha-power(1.5)"
    alpha = 1.0
    implies_psd = True
    p = 1.5

    def f_s(self, x):
        p, x = self.p, np.asarray(x, dtype=float)
        with np.errstate(invalid="ignore"):
            return np.where(x >= 0, (np.abs(x) ** p - p * x + p - 1) / (p * (p - 1)), np.inf)

    def _x(self, mu):
        return np.maximum(1 + (self.p - 1) * np.asarray(mu, dtype=float), 0.0) ** (1 / (self.p - 1))

    def conj_s(self, mu):
        x = self._x(mu)
        return x * mu - self.f_s(x)

    def conj_grad_s(self, mu):
        return self._x(mu)

    def conj_hess_s(self, mu):
        return np.maximum(1 + (self.p - 1) * np.asarray(mu, dtype=float), 0.0) ** (1 / (self.p - 1) - 1)

    def cvx(self, X):
        import cvxpy as cp

        r = X.shape[0]
        Z = cp.Variable((r, r), symmetric=True)
        W = cp.Variable((r, r), symmetric=True)
        lmis = [cp.bmat([[Z, X], [X, W]]) >> 0, cp.bmat([[X, W], [W, np.eye(r)]]) >> 0]
        return (cp.trace(Z) - 1.5 * cp.trace(X) + 0.5 * r) / 0.75, lmis


#: the instance family of ``--scale``: regularizers × point generators × seeds at each size
FAMILY_REGULARIZERS = {"jeffreys": Jeffreys, "alpha-power(1.5)": AlphaPower}
FAMILY_GENERATORS = ("blobs", "classification")
FAMILY_SIZES = ((1_000, 3_000), (60, 120))  # (full, quick)


def family_points(generator: str, n: int, seed: int):
    """(X, y) of one generator: ``"blobs"`` — :func:`sklearn.datasets.make_blobs`, 3 Gaussian
    blobs in 5-d (cluster sd 2, so they overlap); ``"classification"`` —
    :func:`sklearn.datasets.make_classification` with 6 features (4 informative, 1 redundant),
    3 classes; ``"normal"`` — standard normal points in 5-d with 3 random labels (the
    historical ``scale_problem`` instance)."""
    from sklearn.datasets import make_blobs, make_classification

    if generator == "blobs":
        return make_blobs(n_samples=n, n_features=5, centers=3, cluster_std=2.0, random_state=seed)
    if generator == "classification":
        return make_classification(
            n_samples=n, n_features=6, n_informative=4, n_redundant=1, n_classes=3, random_state=seed
        )
    if generator == "normal":
        rng = np.random.default_rng(seed)
        return rng.normal(size=(n, 5)), rng.integers(0, 3, n)
    raise ValueError(f"unknown generator {generator!r}; expected one of {FAMILY_GENERATORS + ('normal',)}")


def family_problem(regularizer: str, generator: str, n: int, seed: int = 0):
    """One instance of the family: Gaussian K0 with σ = the median pairwise distance on the
    generator's points, m = 2n hinge pairs (C = 1) from its labels (ITML scheme, bounds at the
    5th / 95th percentile of K0 distances), the named user regularizer; dense
    (:class:`~cvxkml.declare.SpectralKernel`, solved on K0's numerical range)."""
    from cvxkml.declare import SpectralKernel
    from cvxkml.kernels import gaussian_kernel
    from cvxkml.sideinfo import Hinge, PairConstraints, baseline_kernel

    X, y = family_points(generator, n, seed)
    sq = np.einsum("ij,ij->i", X, X)
    D = sq[:, None] + sq[None] - 2.0 * (X @ X.T)
    sigma = float(np.sqrt(np.median(np.maximum(D[np.triu_indices(n, 1)], 0.0))))
    K0 = gaussian_kernel(X, sigma=sigma)
    pairs = PairConstraints.from_labels(
        y, baseline_kernel(K0), scheme="itml", n_constraints=2 * n, percentiles=(5, 95), random_state=seed
    )
    return SpectralKernel(K0, [Hinge(pairs, 1.0)], FAMILY_REGULARIZERS[regularizer]())


def family_rows(
    quick: bool = False,
    seeds=(0, 1, 2, 3, 4),
    sizes=None,
    regularizers=None,
    tol: float = 1e-6,
    max_iter=5_000,
    progress=None,
) -> list[dict]:
    """One timed ``problem.solve`` per (regularizer, size, generator, seed) of the family
    (:func:`family_problem`), after a warm-up solve per regularizer; the rows of
    :func:`scale_rows` plus ``generator``, ``seed`` and the whitened size ``rank``."""
    rows = []
    for reg in regularizers or FAMILY_REGULARIZERS:
        family_problem(reg, "normal", 40, 0).solve(tol=tol, max_iter=max_iter)  # warm-up
        for n in sizes or FAMILY_SIZES[bool(quick)]:
            for gen in FAMILY_GENERATORS:
                for seed in seeds:
                    prob = family_problem(reg, gen, n, seed)
                    t0, c0 = time.perf_counter(), time.process_time()
                    sol = prob.solve(tol=tol, max_iter=max_iter)
                    row = dict(
                        family=reg,
                        generator=gen,
                        seed=int(seed),
                        n=int(n),
                        m=prob.n_constraints,
                        rank=int(prob.rank),
                        seconds=time.perf_counter() - t0,
                        cpu_seconds=time.process_time() - c0,
                        iterations=int(sol.n_iter),
                        converged=bool(sol.converged),
                        rel_gap=float(sol.gap) / max(1.0, abs(sol.objective)),
                    )
                    rows.append(row)
                    if progress is not None:
                        progress(row)
    return rows


def family_summary(rows) -> list[dict]:
    """Per (regularizer, n): median and max seconds and iterations, the worst relative
    certificate and how many solves certified (:func:`benchmarks._family.summarize`)."""
    return summarize(rows, column="seconds", by="family", worst=("rel_gap",))


#: family -> (sizes, quick sizes); "factored" keeps 10 000 pairs + 1 000 triplets (quick: 1 000 + 100)
SCALE_FAMILIES = {
    "jeffreys+hinge-pairs": ((100, 200, 400, 800, 1000, 2000), (40, 80)),
    "jeffreys+hinge-pairs+triplets, factored r=100": ((15_000, 30_000, 60_000), (1_000, 2_000)),
    "logdet+hinge-pairs": ((200, 400, 800), (40, 80)),
}


def scale_problem(family: str, n: int, seed: int = 0, quick: bool = False):
    """One ``--scale`` problem.  Dense: Gaussian K0 (σ = median distance) on n points in 5-d
    with 3 random labels, m = 2n hinge pairs (C = 1) from the labels (ITML scheme, bounds at
    the 5th/95th percentile of K0 distances).  Factored: K0 = G0 G0ᵀ, G0 the Nyström factor
    of a Gaussian kernel on 100 random landmarks (n points in 10-d, 5 overlapping classes;
    never an n × n matrix), 10 000 hinge pairs as above + 1 000 hinge triplets (j in i's
    class, k not, margin half the median pair distance); quick: 1 000 + 100."""
    from cvxkml.declare import FactoredSpectralKernel, LogDet, SpectralKernel
    from cvxkml.kernels import gaussian_kernel
    from cvxkml.sideinfo import Hinge, PairConstraints, RelativeConstraints, baseline_kernel
    from cvxkml.testing import triplets

    rng = np.random.default_rng(seed)
    reg = LogDet() if family.startswith("logdet") else Jeffreys()
    if "factored" not in family:
        X = rng.normal(size=(n, 5))
        y = rng.integers(0, 3, n)
        K0 = gaussian_kernel(X, sigma=float(np.sqrt(median_sq_distance(X))))
        pairs = PairConstraints.from_labels(
            y, baseline_kernel(K0), scheme="itml", n_constraints=2 * n, percentiles=(5, 95), random_state=seed
        )
        return SpectralKernel(K0, [Hinge(pairs, 1.0)], reg)
    n_pairs, n_triplets, r = (1_000, 100, 100) if quick else (10_000, 1_000, 100)
    y = rng.integers(0, 5, n)
    X = rng.normal(size=(n, 10))
    X[:, :5] += 1.5 * np.eye(5)[y]
    sub = X[rng.choice(n, min(n, 2_000), replace=False)]
    sigma = float(np.sqrt(median_sq_distance(sub)))
    P = np.sort(np.random.default_rng(seed).choice(n, r, replace=False))
    L = np.linalg.cholesky(gaussian_kernel(X[P], sigma=sigma) + 1e-10 * np.eye(r))
    G0 = np.linalg.solve(L, gaussian_kernel(X[P], X, sigma=sigma)).T

    def dist(i, j):
        D = G0[i] - G0[j]
        return np.einsum("ij,ij->i", D, D)

    pairs = PairConstraints.from_labels(
        y, dist, scheme="itml", n_constraints=n_pairs, percentiles=(5, 95), random_state=seed
    )
    i, j, k = triplets(rng, y, n_triplets)
    margin = np.full(i.size, 0.5 * float(np.median(dist(pairs.i, pairs.j))))
    return FactoredSpectralKernel(G0, [Hinge(pairs, 1.0), Hinge(RelativeConstraints(i, j, k, margin), 1.0)], reg)


def scale_rows(
    quick: bool = False,
    seed: int = 0,
    families=None,
    sizes=None,
    tol: float = 1e-6,
    max_iter: int = 5_000,
    progress=None,
) -> list[dict]:
    """Rows of (family, n, m, seconds, iterations, certificate) for ``--scale``: per family a
    warm-up solve at the smallest quick size (not counted), then one timed ``problem.solve``
    per size (instance building not timed).  ``sizes`` overrides every family's sizes."""
    rows = []
    for family in families or SCALE_FAMILIES:
        full, small = SCALE_FAMILIES[family]
        scale_problem(family, small[0], seed, quick=True).solve(tol=tol, max_iter=max_iter)  # warm-up
        for n in sizes or (small if quick else full):
            prob = scale_problem(family, n, seed, quick)
            t0, c0 = time.perf_counter(), time.process_time()
            sol = prob.solve(tol=tol, max_iter=max_iter)
            secs, cpu = time.perf_counter() - t0, time.process_time() - c0
            row = dict(
                family=family,
                n=int(n),
                m=prob.n_constraints,
                seconds=secs,
                cpu_seconds=cpu,
                iterations=int(sol.n_iter),
                converged=bool(sol.converged),
                rel_gap=float(sol.gap) / max(1.0, abs(sol.objective)),
                max_violation=float(sol.info.get("max_relative_violation", sol.max_violation)),
                solver=sol.solver,
            )
            rows.append(row)
            if progress is not None:
                progress(row)
    return rows


def _cmd_scale(args, t_start) -> int:
    import os

    from cvxkml._config import blas_limit

    print(
        "--scale: one timed solve per row to a 1e-6 certificate after a warm-up solve; one BLAS thread; "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at start",
        flush=True,
    )
    with blas_limit(1):
        rows = scale_rows(
            quick=args.quick,
            seed=args.seed,
            progress=lambda r: print(f"  {r['family']} n={r['n']}: {r['seconds']:.3g} s", flush=True),
        )
    spec = [("family", "{family}"), ("n", "{n}"), ("m", "{m}"), ("time [s]", "{seconds:.3g}")]
    spec += [("cpu [s]", "{cpu_seconds:.3g}"), ("iters", "{iterations}"), ("rel. gap", "{rel_gap:.1e}")]
    spec += [("max rel. viol.", "{max_violation:.1e}"), ("converged", "{converged}"), ("solver", "{solver}")]
    print(columns(rows, spec))
    _print_growth(rows)
    n_seeds = (1 if args.quick else 5) if args.repeats is None else int(args.repeats)  # --repeats: seeds
    seeds = range(args.seed, args.seed + n_seeds)
    regs, gens = " and ".join(FAMILY_REGULARIZERS), ", ".join(FAMILY_GENERATORS)
    print(f"instance family: {regs}; generators {gens}; seeds {list(seeds)}", flush=True)
    with blas_limit(1):
        fam = family_rows(
            quick=args.quick,
            seeds=seeds,
            progress=lambda r: print(
                f"  {r['family']} {r['generator']} seed {r['seed']} n={r['n']} (r = {r['rank']}): "
                f"{r['seconds']:.3g} s, {r['iterations']} it., gap {r['rel_gap']:.1e}",
                flush=True,
            ),
        )
    spec = [("regularizer", "{family}"), ("n", "{n}"), ("solves", "{instances}"), ("certified", "{certified}")]
    spec += [("median [s]", "{median_seconds:.3g}"), ("max [s]", "{max_seconds:.3g}")]
    spec += [("median iters", "{median_iterations:.0f}"), ("max iters", "{max_iterations}")]
    print(columns(family_summary(fam), spec + [("worst rel. gap", "{max_rel_gap:.1e}")]))
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end (2 shared cores)")
    from .variants_grid import print_grid

    print_grid(args, columns, FAMILY_REGULARIZERS)
    return finish("bench", t_start)


def _print_growth(rows) -> None:
    for family in dict.fromkeys(r["family"] for r in rows):
        fam = [r for r in rows if r["family"] == family]
        print(
            f"growth exponent of time in n, {family}: "
            f"{growth_exponent([r['n'] for r in fam], [r['seconds'] for r in fam]):.2f} (cpu time: "
            f"{growth_exponent([r['n'] for r in fam], [r['cpu_seconds'] for r in fam]):.2f}) "
            f"(n = {fam[0]['n']}..{fam[-1]['n']})"
        )


def command(args) -> int:
    """``python -m benchmarks bench variants``: the generic dual solver against Clarabel and SciPy on declared
    variants, or at size with ``--scale``; returns the exit status, 0."""
    from cvxkml._config import blas_limit

    t_start = start(
        "python -m benchmarks bench variants",
        args.quick,
        "generic dual solver at size, time to a 1e-6 certificate"
        if args.scale
        else "generic dual solver vs Clarabel and SciPy "
        "L-BFGS-B (one BLAS thread, warmed up, best of repeats for the fast solver)",
    )
    if args.scale:
        return _cmd_scale(args, t_start)
    with blas_limit(1):
        rows = variant_rows(
            quick=args.quick,
            repeats=args.repeats,
            seed=args.seed,
            progress=lambda r: print(f"  {r['variant']} n={r['n']}: done", flush=True),
        )
    star = lambda r: str(r["fast_iters"]) + ("" if r["fast_converged"] else "*")
    spec = [("variant", "{variant}"), ("n", "{n}"), ("m", "{m}"), ("clarabel [s]", "{clarabel_s:.3g}")]
    spec += [("status", "{clarabel_status}"), ("cert", "{clarabel_cert:.1e}"), ("scipy dual [s]", "{scipy_s:.3g}")]
    spec += [("|Δf|", "{scipy_diff:.1e}"), ("dual-newton [s]", "{fast_s:.3g}"), ("iters", star)]
    spec += [("cert", "{fast_cert:.1e}"), ("|Δf|", "{fast_diff:.1e}"), ("clarabel/fast", "{ratio:.3g}")]
    print(columns(rows, spec + [("scipy/fast", "{scipy_ratio:.3g}")]))
    print(
        "cert = relative certificate |f − g| / max(1, |f|); |Δf| = relative objective difference "
        f"from Clarabel's (from the fast solver's where Clarabel is skipped: von Neumann beyond "
        f"n = {EXACT_VN_MAX_N}); * = not certified"
    )
    return finish("bench", t_start)
