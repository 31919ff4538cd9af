"""cvxkml.solvers.lowrank (Kulis, Sustik & Dhillon 2009, §5.1, Algorithms 1–2) against what
its kernels and its entry point promise, checked directly:

* CHOLUPDATEMULT (and its transposed form) is a Cholesky update: B L is *the* Cholesky factor
  of B (I + α x xᵀ) Bᵀ, as a fresh factorization computes it, also after a chain of updates;
* every iterate of :func:`lowrank_logdet` started at B = I is a Bregman LogDet iterate:
  (B Bᵀ)⁻¹ = I + Σ_pairs δ_c λ_c v_c v_cᵀ + Σ_rank-two λ_c Â_c, whatever the schedule or the
  number of sweeps (the identity each rank-one / rank-two projection update maintains);
* one projection lands on its constraint (distance or rank-two);
* a converged hard-constraint answer satisfies the KKT conditions recomputed here (λ >= 0,
  feasible, complementary), its divergence from I is below the one of a known feasible
  point, and rotating the features rotates every iterate (LogDet from I is O(r)-equivariant).
"""

from __future__ import annotations

import numpy as np
import pytest
from budget import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cvxkml.solvers.lowrank import PAIR, RANK2, cholupdatemult, cholupdatemult_t, lowrank_logdet
from cvxkml.solvers.result import OK

SEED = st.integers(0, 2**31 - 1)


def _lower(rng, r):
    """A well-conditioned lower-triangular factor with a positive diagonal (a Cholesky factor;
    random triangular matrices are exponentially ill-conditioned, and then the *fresh*
    factorization is the inaccurate one)."""
    B = np.tril(rng.normal(size=(r, r)), -1) / np.sqrt(r)
    np.fill_diagonal(B, rng.uniform(1.0, 2.0, r))
    return B


def _alpha(rng, x, edge):
    """α with 1 + α‖x‖² > 0: from a factor 1e-3 of the PD edge up to a large positive step."""
    return (rng.uniform(-(1.0 - edge), 3.0)) / float(x @ x)


# --------------------------------------------------------------------------- CHOLUPDATEMULT
@settings(max_examples=examples(30))
@given(seed=SEED, r=st.integers(1, 40), n_updates=st.integers(1, 4), edge=st.sampled_from([0.5, 1e-2, 1e-3]))
def test_cholupdatemult_is_a_fresh_cholesky_factorization(seed, r, n_updates, edge):
    """After updates α_k, x_k: B is lower triangular with a positive diagonal and equals
    numpy's Cholesky factor of B₀ Π(I + α_k x_k x_kᵀ) B₀ᵀ (the factor is unique); the transposed
    kernel (R = Bᵀ, both of its loops: r below and above 32) gives the same matrix."""
    rng = np.random.default_rng(seed)
    B = _lower(rng, r)
    M = B @ B.T
    R = B.T.copy()  # never a view of B (for r = 1, B.T is contiguous already)
    h, s, acoef = np.empty(r), np.empty(r), np.empty(r + 1)
    cond = 1.0
    for _ in range(n_updates):
        x = rng.normal(size=r)
        a = _alpha(rng, x, edge)
        Bv = B @ x  # before the update: M ← M + α (Bx)(Bx)ᵀ
        M = M + a * np.outer(Bv, Bv)
        cholupdatemult(a, x, B)
        cholupdatemult_t(a, x, R, h, acoef, s)
        cond *= max(1.0, 1.0 / (1.0 + a * (x @ x)))
    M = 0.5 * (M + M.T)
    fresh = np.linalg.cholesky(M)
    tol = 1e-11 * np.sqrt(cond) * max(1.0, np.abs(fresh).max()) * r
    assert np.array_equal(B, np.tril(B)) and np.all(np.diag(B) > 0)
    np.testing.assert_allclose(B, fresh, atol=tol, rtol=0)
    np.testing.assert_allclose(R.T, fresh, atol=tol, rtol=0)


# --------------------------------------------------------------------------- instances
def _instance(seed, n=8, r=3, m_pair=6, m_rank2=3, hard=True):
    """Features G0 (n × r), a feasible PD X* (r × r) and constraints that X* satisfies
    strictly: PAIR rows (δ = +1: d <= u, δ = −1: d >= l) and relative rank-two rows
    d(i, j) − d(i, k) <= t.  Returns the argument arrays of lowrank_logdet, X* and the
    (v, Â) of every row for the checks."""
    rng = np.random.default_rng(seed)
    G0 = rng.normal(size=(n, r))
    C = rng.normal(size=(r, r))
    Xs = C @ C.T + 0.3 * np.eye(r)
    kind, I, J, Kx, cu, cv, delta, target, mats = [], [], [], [], [], [], [], [], []
    for _ in range(m_pair):
        i, j = rng.choice(n, 2, replace=False)
        v = G0[i] - G0[j]
        d_star = float(v @ Xs @ v)
        dl = float(rng.choice([-1.0, 1.0]))
        kind.append(PAIR), I.append(i), J.append(j), Kx.append(j)
        cu.append([0.0, 0.0]), cv.append([0.0, 0.0]), delta.append(dl)
        target.append(d_star * (rng.uniform(1.02, 1.3) if dl > 0 else rng.uniform(0.7, 0.98)))
        mats.append(dl * np.outer(v, v))
    for _ in range(m_rank2):
        i, j, k = rng.choice(n, 3, replace=False)
        u, w = G0[i] - G0[j], G0[i] - G0[k]
        Ah = np.outer(u, u) - np.outer(w, w)
        q = float(np.sum(Ah * Xs))
        kind.append(RANK2), I.append(i), J.append(j), Kx.append(k)
        cu.append([1.0, -1.0]), cv.append([1.0, -1.0]), delta.append(1.0)
        target.append(q + 0.1 * abs(q) + 0.01)
        mats.append(Ah)
    args = tuple(np.array(a) for a in (kind, I, J, Kx, cu, cv, delta, target))
    return G0, args, Xs, np.array(mats)


def _constraint_values(X, args, mats):
    """⟨Â_c, X⟩ − target_c signed so that <= 0 means satisfied (δ folded into Â for pairs)."""
    kind, delta, target = args[0], args[6], args[7]
    vals = np.einsum("cij,ij->c", mats, X)
    return np.where(kind == PAIR, vals - delta * target, vals - target)


def _inverse_identity(lam, mats, r):
    """I + Σ_c λ_c Â_c with Â_c = δ_c v vᵀ for pairs: the inverse every Bregman iterate from
    X₀ = I has."""
    return np.eye(r) + np.einsum("c,cij->ij", lam, mats)


# --------------------------------------------------------------------------- projections
@pytest.mark.parametrize("which", ["similar", "dissimilar", "rank2"])
@pytest.mark.parametrize("seed", range(4))
def test_one_projection_lands_on_its_constraint(which, seed):
    """One violated hard constraint, one projection from B = I: the constraint holds with
    equality, λ >= 0, and X⁻¹ − I = λ Â (the Bregman projection X⁻¹ ← X⁻¹ + λÂ)."""
    rng = np.random.default_rng(seed)
    r, n = int(rng.integers(1, 6)), 6
    G0 = rng.normal(size=(n, r))
    if which == "rank2":
        if r == 1:
            r, G0 = 2, rng.normal(size=(n, 2))
        u, w = G0[0] - G0[1], G0[0] - G0[2]
        Ah = np.outer(u, u) - np.outer(w, w)
        t = float(np.trace(Ah)) - 0.5 * abs(float(np.trace(Ah))) - 0.1  # violated at X = I
        args = ([RANK2], [0], [1], [2], [[1.0, -1.0]], [[1.0, -1.0]], [1.0], [t])
    else:
        v = G0[0] - G0[1]
        d = 1.0 if which == "similar" else -1.0
        Ah = d * np.outer(v, v)
        t = float(v @ v) * (0.5 if d > 0 else 2.0)  # violated at X = I
        args = ([PAIR], [0], [1], [1], [[0.0, 0.0]], [[0.0, 0.0]], [d], [t])
    B, lam, *_ = lowrank_logdet(G0, *args, tol=1e-12, max_iter=1, order="cyclic", active_set=False)
    X = B @ B.T
    value = float(np.sum(Ah * X))
    want = t if which == "rank2" else d * t
    assert value == pytest.approx(want, rel=1e-9, abs=1e-12)
    assert lam[0] > 0
    np.testing.assert_allclose(np.linalg.inv(X), np.eye(r) + lam[0] * Ah, rtol=1e-8, atol=1e-9)
    assert np.array_equal(B, np.tril(B))


@settings(max_examples=examples(20))
@given(
    seed=SEED,
    r=st.one_of(st.integers(1, 5), st.sampled_from([33, 40])),  # both loops of the passes (r < 32, r >= 32)
    sweeps=st.sampled_from([1, 2, 7, 500]),
    gamma=st.sampled_from([None, 0.5, 10.0]),
    order=st.sampled_from(["cyclic", "shuffle"]),
    active=st.booleans(),
)
def test_every_iterate_is_a_bregman_logdet_iterate(seed, r, sweeps, gamma, order, active):
    """Whatever the schedule and the number of sweeps, B stays lower triangular and
    (B Bᵀ)⁻¹ = I + Σ_c λ_c Â_c (pairs: Â = δ v vᵀ; rank-two: u uᵀ − w wᵀ) with λ >= 0:
    each rank-one and rank-two update changes X⁻¹ by exactly its multiplier's change times
    its constraint matrix (the dual correction keeps λ >= 0)."""
    G0, args, _, mats = _instance(seed, r=r, m_rank2=0 if r == 1 else 3)
    B, lam, *_ = lowrank_logdet(
        G0, *args, gamma=gamma, tol=1e-12, max_iter=sweeps, order=order, active_set=active, detect_infeasible=False
    )
    assert np.array_equal(B, np.tril(B))
    assert np.all(lam >= 0)
    X = B @ B.T
    Minv = _inverse_identity(lam, mats, G0.shape[1])
    scale = max(1.0, np.abs(Minv).max())
    np.testing.assert_allclose(X @ Minv, np.eye(G0.shape[1]), atol=1e-7 * scale * np.linalg.cond(X))


@settings(max_examples=examples(15))
@given(seed=SEED, r=st.integers(2, 5))
def test_converged_answer_passes_the_kkt_conditions_recomputed_here(seed, r):
    """A certified hard-constraint solve: λ >= 0, every constraint holds (1e-7 relative),
    λ_c · slack_c ≈ 0, (BBᵀ)⁻¹ = I + Σ λ_c Â_c — the optimality conditions of
    min D_ld(X, I) over the constraints, so X is the optimum; and its divergence is at most the
    one of X*, a feasible point."""
    G0, args, Xs, mats = _instance(seed, r=r)
    B, lam, _xi, _sweeps, _change, code, _bad, _t = lowrank_logdet(
        G0, *args, tol=1e-11, max_iter=50_000, gap_tol=1e-9, viol_tol=1e-9
    )
    assert code == OK
    X = B @ B.T
    res = _constraint_values(X, args, mats)
    scale = np.maximum(1.0, np.abs(args[7]))
    assert np.all(lam >= 0)
    assert np.max(res / scale) <= 1e-7
    assert np.max(np.abs(lam * res) / scale) <= 1e-6 * max(1.0, lam.max())
    np.testing.assert_allclose(np.linalg.inv(X), _inverse_identity(lam, mats, r), rtol=1e-6, atol=1e-6)

    def div(Y):
        return float(np.trace(Y) - np.linalg.slogdet(Y)[1] - r)

    assert div(X) <= div(Xs) + 1e-9
    assert np.max(_constraint_values(Xs, args, mats)) < 0  # X* is feasible indeed


@settings(max_examples=examples(10))
@given(seed=SEED, r=st.integers(2, 5), sweeps=st.sampled_from([1, 3, 40]), gamma=st.sampled_from([None, 1.0]))
@example(seed=25254, r=3, sweeps=40, gamma=None)  # 20 000 sweeps short of a 1e-11 certificate (honestly)
def test_rotating_the_features_rotates_every_iterate(seed, r, sweeps, gamma):
    """G0 → G0 Q (Q orthogonal) maps every constraint matrix to QᵀÂQ; every scalar a projection
    uses (distances, 2 × 2 Gram matrices, roots) is unchanged, so after the same sweeps the
    iterate is QᵀXQ (LogDet from I is O(r)-equivariant), converged or not."""
    G0, args, _, _ = _instance(seed, r=r)
    Q, _ = np.linalg.qr(np.random.default_rng(seed + 1).normal(size=(r, r)))
    kw = dict(gamma=gamma, tol=0.0, max_iter=sweeps, order="cyclic", active_set=False, detect_infeasible=False)
    B1, lam1, _, s1, _, _, _, _ = lowrank_logdet(G0, *args, **kw)
    B2, lam2, _, s2, _, _, _, _ = lowrank_logdet(G0 @ Q, *args, **kw)
    assert s1 == s2
    X1, X2 = B1 @ B1.T, B2 @ B2.T
    np.testing.assert_allclose(X2, Q.T @ X1 @ Q, atol=1e-8 * max(1.0, np.abs(X1).max()) * np.linalg.cond(X1))
    np.testing.assert_allclose(lam2, lam1, atol=1e-8 * max(1.0, lam1.max()))


@pytest.mark.parametrize("B0", [np.array([[1.0]]), np.asfortranarray(np.eye(1))], ids=["1x1", "fortran"])
def test_lowrank_logdet_leaves_the_callers_B0_alone(B0):
    """A 1 × 1 or Fortran-ordered B0 made the transposed start a view of the caller's array,
    which the sweeps then updated in place (the resume path passes the previous attempt's B)."""
    G0 = np.array([[0.0], [1.0], [3.0]])
    before = B0.copy()
    lowrank_logdet(G0, [PAIR], [0], [2], [2], [[0, 0]], [[0, 0]], [1.0], [4.0], B0=B0, max_iter=10)
    np.testing.assert_array_equal(B0, before)


def test_lowrank_logdet_leaves_a_fortran_square_B0_alone():
    G0 = np.random.default_rng(0).normal(size=(6, 3))
    B0 = np.asfortranarray(np.eye(3))
    lowrank_logdet(G0, [PAIR], [0], [5], [5], [[0, 0]], [[0, 0]], [1.0], [0.01], B0=B0, max_iter=10)
    np.testing.assert_array_equal(B0, np.eye(3))
