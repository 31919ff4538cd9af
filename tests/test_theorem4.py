"""Theorem 4 of Jain et al. (2012) for every regularizer, with the fast solvers, on
Hypothesis-drawn instances; and the bad inputs of the framework.

With explicit features Φ = Xᵀ (n points, d > n, full column rank of Φ), the metric problem
(13) and the kernel problem (12) on K0 = XXᵀ have the same optimum: K* = ΦᵀW*Φ, W* = αI +
ΦSΦᵀ with S = K0⁻¹(K* − αK0)K0⁻¹, and the learned kernel on new points is
ακ0(z1, z2) + k1ᵀSk2 (eq. 18).  Checked to 1e-6 (relative to the largest entry) for
LogDet, VonNeumann (hard and slack), Frobenius (POLA), TraceNorm and LinearLogDet (eq. 24).

``tests/test_spectral.py`` already checks the exact models of the four spectral
regularizers (three fixed seeds, conic accuracy) and the fast LogDet / von Neumann solvers
on one instance; this file adds the Hypothesis draws for every fast solver, LinearLogDet,
and the inputs Theorem 4 cannot take.

LinearLogDet is not spectral (its objective involves C0; with the variational form (25) the
inner function −γ log det W has f_s(x) = −γ log x, which has no minimizer): in feature
space with d > rank Φ, (24) is unbounded along null(Φᵀ) (SDPLogDetMetric raises).  The
kernel form SDPLogDetKernel solves it on range(K0); it equals the metric problem with W
fixed to the identity on null(Φᵀ), W* = I − QQᵀ + QA*Qᵀ (Φ = QR, A* the metric optimum on
the coordinates R of the points), i.e. eq. 18 with α = 1 — which is what is checked.
"""

import numpy as np
import pytest
from budget import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cvxkml.declare import Frobenius, LogDet, LogDetKernel, SpectralKernel, SpectralMetric, TraceNorm, VonNeumann
from cvxkml.declare.regularizers import Regularizer
from cvxkml.declare.sdp import LinearLogDet, SDPLogDetKernel, SDPLogDetMetric, UnboundedError
from cvxkml.errors import InfeasibleError, InvalidInputError
from cvxkml.kernels import Kernel
from cvxkml.learned import LearnedKernel, kernel_S
from cvxkml.sideinfo import LinearConstraints, PairConstraints
from cvxkml.testing import forest_pairs as _forest_pairs
from cvxkml.testing import random_pairs as _random_pairs
from cvxkml.testing import solve_fast_honestly

EXAMPLES = examples(20)
TOL = 1e-6
FAST = dict(tol=1e-12, max_iter=50_000)
REGS = {"LogDet": LogDet, "VonNeumann": VonNeumann, "Frobenius": Frobenius, "TraceNorm": lambda: TraceNorm(0.5)}


def _solve(problem, **kw):
    """Fast solve; a non-converged solve must warn (honesty) and is not counted."""
    sol = solve_fast_honestly(problem, **kw)
    assume(sol.converged)
    return sol


def _features(seed, n, extra):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n + extra)) * rng.uniform(0.5, 2.0, size=n + extra)
    return rng, X


def _pairs(rng, X, m, hard):
    """Forest pairs (hard: any positive distances are attainable with rank K0 = n) or random
    pairs (slack), similar pairs bounded below their distance, dissimilar ones above."""
    n = X.shape[0]
    i, j = _forest_pairs(rng, n, m) if hard else _random_pairs(rng, n, m)
    y = rng.choice([-1.0, 1.0], size=i.size)
    if np.all(y > 0):
        y[0] = -1.0  # α = 0 regularizers: only similar pairs give K* = 0
    D = X[i] - X[j]
    d0 = np.einsum("ij,ij->i", D, D)
    scale = np.where(y > 0, rng.uniform(0.2, 0.9, i.size), rng.uniform(1.2, 3.0, i.size))
    return PairConstraints(i, j, y, scale * d0)


def _check_equivalence(rng, X, Wm, Km, Wobj, Kobj, alpha):
    """K* = ΦᵀW*Φ, equal optima, W* = αI + ΦSΦᵀ and eq. 18 on new points, to TOL."""
    K0 = X @ X.T
    kscale = max(1.0, np.abs(Km).max())
    assert np.abs(X @ Wm @ X.T - Km).max() <= TOL * kscale
    assert abs(Wobj - Kobj) <= TOL * max(1.0, abs(Kobj))
    S = kernel_S(K0, Km, alpha=alpha)
    W_thm = alpha * np.eye(X.shape[1]) + X.T @ S @ X
    assert np.abs(W_thm - Wm).max() <= TOL * max(1.0, np.abs(Wm).max())
    lk = LearnedKernel.from_solution(Kernel("linear"), X, K0, Km, alpha=alpha)
    d = X.shape[1]
    Z1, Z2 = rng.normal(size=(5, d)), rng.normal(size=(5, d))
    ref = Z1 @ Wm @ Z2.T
    assert np.abs(lk(Z1, Z2) - ref).max() <= TOL * max(1.0, np.abs(ref).max())
    D = Z1 - Z2
    dist = np.einsum("ij,jk,ik->i", D, Wm, D)
    assert np.abs(lk.pair_sq_distances(Z1, Z2) - dist).max() <= TOL * max(1.0, dist.max())


# --------------------------------------------------------------------------- spectral
@settings(max_examples=EXAMPLES)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(3, 8),
    extra=st.integers(1, 4),
    m=st.integers(1, 10),
    name=st.sampled_from(sorted(REGS)),
    gamma=st.sampled_from([None, None, 0.3, 3.0]),
)
def test_theorem4_fast_every_spectral_regularizer(seed, n, extra, m, name, gamma):
    """SpectralMetric(X, …) vs SpectralKernel(XXᵀ, …) with the fast solver of each
    regularizer (LogDet: Bregman, von Neumann: Algorithm 3, Frobenius: POLA dual,
    TraceNorm: Uzawa); slack only where the regularizer has one."""
    reg = REGS[name]()
    if gamma is not None and not reg.has_slack:
        gamma = None
    rng, X = _features(seed, n, extra)
    pc = _pairs(rng, X, m, hard=gamma is None)
    W = _solve(SpectralMetric(X, pc, reg, gamma=gamma, space="features"), **FAST)
    K = _solve(SpectralKernel(X @ X.T, pc, reg, gamma=gamma), **FAST)
    _check_equivalence(rng, X, W.matrix, K.matrix, W.objective, K.objective, reg.alpha)


# --------------------------------------------------------------------------- LinearLogDet
def _pd(rng, n, ridge=0.1):
    B = rng.normal(size=(n, n))
    return B @ B.T / n + ridge * np.eye(n)


@settings(max_examples=EXAMPLES)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(3, 8),
    extra=st.integers(1, 4),
    m=st.integers(1, 8),
    gamma=st.sampled_from([0.1, 1.0, 10.0]),
)
def test_theorem4_linear_logdet(seed, n, extra, m, gamma):
    """(24) with d > n: the feature-space problem is unbounded along null(Φᵀ) (raises); the
    kernel form on K0 = XXᵀ equals the metric problem with W = I on null(Φᵀ) — the metric
    problem on the coordinates R (Φ = QR) — and its eq. 18 extension (α = 1) reproduces
    W* = I − QQᵀ + QA*Qᵀ on new points; both fast (barrier Bregman), to 1e-6."""
    rng, X = _features(seed, n, extra)
    pc = _pairs(rng, X, m, hard=True)
    C0 = _pd(rng, n)
    with pytest.raises(UnboundedError, match="null"):
        SDPLogDetMetric(X, pc, C0, gamma)
    Q, R = np.linalg.qr(X.T)  # Φ = Xᵀ = QR, Q d × n
    A = _solve(SDPLogDetMetric(R.T, pc, C0, gamma), **FAST)
    K = _solve(SDPLogDetKernel(X @ X.T, pc, C0, gamma), **FAST)
    W = np.eye(X.shape[1]) - Q @ Q.T + Q @ A.matrix @ Q.T
    _check_equivalence(rng, X, W, K.matrix, A.objective, K.objective, 1.0)
    assert K.info["linear_objective"] == pytest.approx(A.info["linear_objective"], rel=TOL, abs=TOL)


def test_theorem4_plain_sdp_value():
    """γ = 0 (the SDP (23), exact models): the feature-space SDP with d > n is bounded and
    has the same optimal value as the kernel SDP (its solution set is not a singleton, so
    only values are compared)."""
    rng, X = _features(3, 6, 3)
    pc = _pairs(rng, X, 5, hard=True)
    C0 = _pd(rng, 6)
    W = SDPLogDetMetric(X, pc, C0, 0.0).solve_reference()
    K = SDPLogDetKernel(X @ X.T, pc, C0, 0.0).solve_reference()
    assert W.objective == pytest.approx(K.objective, rel=1e-6, abs=1e-7)
    assert W.objective > 0


# --------------------------------------------------------------------------- bad inputs
class _Quadratic(Regularizer):
    """f_s(x) = (x − c)², minimizer max(c, 0); ``alpha`` declared separately."""

    name = "Quadratic"

    def __init__(self, c, alpha):
        self.c, self.alpha = c, alpha

    def f_s(self, x):
        return (x - self.c) ** 2

    def conj_s(self, mu):  # pragma: no cover - not used
        raise NotImplementedError

    def cvx(self, X):  # pragma: no cover - not used
        raise NotImplementedError


class _Barrier(Regularizer):
    """f_s(x) = x − 2 log x − … declared with α = 0 (outside the domain x > 0)."""

    name = "Barrier"
    alpha = 0.0

    def f_s(self, x):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(x > 0, x - 2.0 * np.log(np.where(x > 0, x, 1.0)), np.inf)


@pytest.mark.parametrize(
    "reg, match",
    [
        (_Quadratic(-1.0, -1.0), "negative"),  # the minimizer over ℝ is < 0
        (_Quadratic(1.0, np.inf), "not a finite number"),
        (_Quadratic(1.0, np.nan), "not a finite number"),
        (_Quadratic(1.0, None), "not a finite number"),
        (_Quadratic(2.0, 1.0), "not the minimizer"),  # declared α wrong
        (_Quadratic(-1.0, 0.5), "not the minimizer"),  # true minimizer on x >= 0 is 0
        (_Barrier(), "outside the"),
        (LinearLogDet(np.eye(4), 1.0), "not a spectral regularizer"),
        (VonNeumann(prior=np.ones(4)), "not a spectral function"),
    ],
    ids=[
        "alpha<0",
        "alpha=inf",
        "alpha=nan",
        "alpha=None",
        "wrong-alpha",
        "wrong-alpha-boundary",
        "alpha-outside-domain",
        "LinearLogDet",
        "VonNeumann-prior",
    ],
)
def test_theorem4_rejects_regularizers_without_a_valid_alpha(reg, match):
    """Theorem 4 needs f_s to attain its minimum over x >= 0 at a finite α >= 0 in its
    domain: both problem classes raise, saying why."""
    X = np.random.default_rng(0).normal(size=(4, 6))
    pc = PairConstraints([0, 1], [1, 2], [1, -1], [0.5, 20.0])
    for make in (lambda: SpectralMetric(X, pc, reg), lambda: SpectralKernel(X @ X.T, pc, reg)):
        with pytest.raises(InvalidInputError, match=match):
            make()


def test_declared_alphas_of_the_library_are_minimizers():
    """The built-in regularizers pass the check (α = 1, 1, 0, 0) and their f_s is minimal
    at α on a fine grid of x >= 0."""
    x = np.linspace(0.0, 5.0, 5001)
    for reg in (LogDet(), VonNeumann(), Frobenius(), TraceNorm(0.3)):
        reg.check_theorem4()
        with np.errstate(divide="ignore", invalid="ignore"):
            fx = reg.f_s(x)
        fa = float(reg.f_s(np.array([reg.alpha]))[0])
        assert np.all(fx[np.isfinite(fx)] >= fa - 1e-12)


def _lowrank(seed, n, r):
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(n, r))
    null = np.linalg.svd(G.T)[2][r:]  # rows span null(K0)
    return rng, G, G @ G.T, null


@pytest.mark.parametrize("name", ["LogDet", "VonNeumann", "Frobenius", "TraceNorm", "LinearLogDet"])
def test_singular_K0_routes_to_the_range_space(name):
    """A rank-deficient K0 (no K0⁻¹): every regularizer — including those whose divergence
    is written with K0⁻¹ (LogDet, tr(KC0) − γ log det K0^-½KK0^-½) — is solved on range(K0)
    (r × r whitened variable): the fast solver matches the exact model, K keeps range(K0),
    and the problem equals the one on the r-dimensional factor (metric on G)."""
    rng, G, K0, null = _lowrank(4, 9, 4)
    i, j = _forest_pairs(rng, 9, 4)
    y = np.array([-1.0, 1.0, -1.0, 1.0])
    D = G[i] - G[j]
    d0 = np.einsum("ij,ij->i", D, D)
    pc = PairConstraints(i, j, y, np.where(y > 0, 0.5, 2.0) * d0)
    if name == "LinearLogDet":
        C0 = _pd(rng, 9)
        prob = SDPLogDetKernel(K0, pc, C0, 1.0)
        on_factor = SDPLogDetMetric(G, pc, C0, 1.0)
    else:
        prob = SpectralKernel(K0, pc, REGS[name]())
        on_factor = SpectralMetric(G, pc, REGS[name]())
    assert prob.T.shape[1] == 4
    fast = prob.solve(**FAST)
    exact = prob.solve_reference()
    assert fast.converged
    assert abs(fast.objective - exact.objective) <= 1e-6 * max(1.0, abs(exact.objective))
    assert np.abs(null @ fast.matrix @ null.T).max() <= 1e-10 * np.abs(fast.matrix).max()
    W = on_factor.solve(**FAST)
    np.testing.assert_allclose(G @ W.matrix @ G.T, fast.matrix, atol=1e-6 * np.abs(fast.matrix).max())


def test_singular_K0_constraints_outside_the_range_raise_with_the_reason():
    """K stays in range(K0): a pair whose points coincide in the factor space (zero baseline
    distance) raises at construction; a linear constraint that acts only on null(K0) and
    needs it (zᵀKz <= −1, z ∈ null(K0)) is reported infeasible by the exact model and,
    for the barrier problem, by the fast solver."""
    rng, G, K0, null = _lowrank(5, 7, 3)
    G2 = np.vstack([G, G[0]])  # point 7 duplicates point 0
    K0d = G2 @ G2.T
    for reg in (LogDet(), VonNeumann(), Frobenius(), TraceNorm(0.5)):
        with pytest.raises(InvalidInputError, match="zero distance"):
            SpectralKernel(K0d, PairConstraints([0, 1], [7, 2], [-1, 1], [2.0, 1.0]), reg)
    pc = PairConstraints([0, 1], [1, 2], [1, -1], [1.0, 30.0])
    lin = LinearConstraints(b=[-1.0], Z=null[:1])
    for reg in (LogDet(), Frobenius()):
        with pytest.raises(InfeasibleError, match="infeasible"):
            SpectralKernel(K0, [pc, lin], reg).solve_reference()
    sdp = SDPLogDetKernel(K0, [pc, lin], np.eye(7), 1.0)
    with pytest.raises(InfeasibleError, match="cannot hold for any positive definite"):
        sdp.solve()
    with pytest.raises(InfeasibleError):
        sdp.solve_reference()
    # the same constraint with b >= 0 only restates K ∈ range(K0): solvable
    ok = SDPLogDetKernel(K0, [pc, LinearConstraints(b=[1.0], Z=null[:1])], np.eye(7), 1.0)
    assert ok.solve().objective == pytest.approx(ok.solve_reference().objective, rel=1e-6)


def test_logdet_kernel_on_singular_K0_extends_with_the_pseudo_inverse():
    """LogDetKernel on a singular K0 works on the range space (no K0⁻¹ is formed), and its
    learned kernel extends with S = K0⁺(K* − K0)K0⁺ (pseudo-inverse on the range)."""
    rng, G, K0, null = _lowrank(6, 8, 3)
    pc = PairConstraints([0, 2], [1, 3], [1, -1], [0.1, 50.0])
    sol = LogDetKernel(K0, pc).solve(**FAST)
    assert sol.converged
    S = kernel_S(K0, sol.matrix)
    np.testing.assert_allclose(K0 + K0 @ S @ K0, sol.matrix, atol=1e-8 * np.abs(sol.matrix).max())
