"""Singular and nearly singular target pulls: the pull matrix keeps its small
directions, :func:`cvxkml.formulas.lmnn.pull_basis` tells a real pull (however small) from
G(0)'s null space, and fits on either kind end certified.

Each check recomputes what it asserts from the arrays: the pull of a direction from the pair
differences themselves, the objective of a returned metric through its factor, the bound by
the problem's own :meth:`LMNNProblem.dual_value`."""

import numpy as np
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_wine
from wang_fits import assert_fit_certifies, inner_cv_poly, recomputed_gap

from cvxkml.declare.lmnn import LMNNProblem
from cvxkml.formulas.lmnn import (
    NULL_RTOL,
    LMNNTriplets,
    free_triplets,
    laplacian_quadratic,
    lmnn_dual_value,
    lmnn_objective,
    ordered_pair_distances,
    pair_weights,
    psd_pair_distances,
    pull_basis,
    pull_null_space,
    pull_spectrum,
    pull_whitening,
    reaches_null,
)
from cvxkml.solvers._lmnn_exact import null_scale

TOL = 1e-5
SEED = st.integers(0, 2**31 - 1)


def offset_points(seed, n, offset, wobble):
    """Three classes in 4-D; the last feature is ``offset``·class plus ``wobble``·noise, so the
    target differences along it are about ``wobble`` while the points are about ``offset``."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    X = rng.normal(size=(n, 4))
    X[:, :3] += 0.7 * y[:, None]
    X[:, 3] = offset * y + wobble * rng.normal(size=n)
    return X, y


def _trip(X, y, k=2):
    sq = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    return LMNNTriplets.from_labels(y, k=k, sq_dist=sq)


@settings(max_examples=examples(20), deadline=None)
@given(seed=SEED, wobble=st.sampled_from([1e-4, 1e-6, 1e-8]), gamma=st.floats(0.1, 0.9))
def test_pull_matrix_keeps_a_direction_the_points_dwarf(seed, wobble, gamma):
    """Σ_p w_p u_p u_pᵀ along the last feature against the sum of the squared differences
    there: the points are 1e6 along it, their target differences ``wobble``; the pull there
    is recomputed to 1e-9 relative (an uncentred Laplacian form loses ε·1e12 to it)."""
    X, y = offset_points(seed, 30, 1e6, wobble)
    tr = _trip(X, y)
    rng = np.random.default_rng(seed)
    for alpha in (np.zeros(tr.n_triplets), rng.uniform(0.0, gamma, tr.n_triplets)):
        w = pair_weights(tr, alpha, gamma)
        G = laplacian_quadratic(X, tr, w)
        d = X[tr.pi] - X[tr.pj]
        exact = (d.T * w) @ d
        # the last feature, and the whole matrix to the round-off of its own terms
        assert abs(G[3, 3] - exact[3, 3]) <= 1e-9 * np.sum(np.abs(w) * d[:, 3] ** 2)
        assert np.allclose(G, exact, rtol=0, atol=1e-12 * np.sum(np.abs(w)[:, None] * d**2))


@settings(max_examples=examples(20), deadline=None)
@given(seed=SEED, wobble=st.sampled_from([1e-5, 1e-7]))
def test_a_tiny_real_pull_is_range_and_becomes_the_identity(seed, wobble):
    """A pull direction at about wobble² of the largest (1e-10, 1e-14: below the eigensolver's
    1e3·ε) is real: pull_basis scales it, and G(0) recomputed in U·W is the identity."""
    X, y = offset_points(seed, 30, 1.0, wobble)
    tr = _trip(X, y)
    basis = pull_basis(X, tr, 0.5)
    assert not basis.null.any()
    G = laplacian_quadratic(X @ basis.W, tr, pair_weights(tr, np.zeros(tr.n_triplets), 0.5))
    lam = np.linalg.eigvalsh(G)
    assert lam[0] >= 1 - 1e-6 and lam[-1] <= 1 + 1e-6


@settings(max_examples=examples(20), deadline=None)
@given(seed=SEED, share=st.sampled_from([1e-6, 1e-12]))
def test_coincident_points_reach_no_null_space_whatever_their_rounding(seed, share):
    """Point 1 is a copy of point 0 in another class (coincident images, as Zernike moments make
    of a 6 and a 9), its coordinates rounded differently, as a change of basis U·W rounds
    rows: the pair's difference is noise of about ε·‖u_0‖, pointing anywhere.  It reaches no
    subspace (its share there is round-off); a pair with a real share of 1e-6 or 1e-12 of its
    squared length on the subspace still reaches it."""
    rng = np.random.default_rng(seed)
    y = np.arange(24) % 3
    X = rng.normal(size=(24, 6)) * 1e3
    X[1] = X[0] * (1.0 + np.finfo(float).eps * rng.choice([-4.0, 4.0], size=6))
    v = rng.normal(size=6)
    v /= np.linalg.norm(v)
    # point 2: point 3 moved by a real step with the given share along v
    step = rng.normal(size=6)
    step -= (step @ v) * v
    X[2] = X[3] + step + np.sqrt(share / (1.0 - share)) * np.linalg.norm(step) * v
    tr = LMNNTriplets.from_labels(y, k=2, sq_dist=((X[:, None] - X[None]) ** 2).sum(-1))
    reach = reaches_null(X, tr, v[:, None])
    impostor = np.sort(np.stack([tr.pi[tr.ti], tr.pj[tr.ti]], axis=1), axis=1)
    coincident, real = (impostor == (0, 1)).all(1), (impostor == (2, 3)).all(1)
    assert coincident.any() and real.any()
    np.testing.assert_array_equal(reach[coincident], False)
    np.testing.assert_array_equal(reach[real], True)


@settings(max_examples=examples(20), deadline=None)
@given(seed=SEED)
def test_an_exact_null_direction_and_the_pairs_that_reach_it(seed):
    """The last feature constant within each class: no target difference sees it (G(0)'s null
    space, one dimension, orthonormal in W), every impostor pair does (its share of the squared
    length is far above NULL_RTOL), and the rest of G(0) is the identity in U·W."""
    X, y = offset_points(seed, 30, 1.0, 0.0)
    tr = _trip(X, y)
    basis = pull_basis(X, tr, 0.5)
    assert basis.null.sum() == 1
    v = basis.VN[:, 0]
    assert abs(np.linalg.norm(v) - 1) <= 1e-12 and abs(abs(v[3]) - 1) <= 1e-9
    free = reaches_null(X, tr, basis.VN)
    d = X[tr.pi] - X[tr.pj]
    share = d[:, 3] ** 2 / np.einsum("ij,ij->i", d, d)
    np.testing.assert_array_equal(free, share[tr.ti] > NULL_RTOL)
    assert free.all()
    G = laplacian_quadratic(X @ basis.W, tr, pair_weights(tr, np.zeros(tr.n_triplets), 0.5))
    R = ~basis.null
    assert np.allclose(G[np.ix_(R, R)], np.eye(int(R.sum())), atol=1e-9)
    assert np.abs(G[:, basis.null]).max() <= 1e-12


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_impostor_reaching_the_null_space_gives_f_star_zero(seed):
    """The class-constant feature separates every impostor pair at no pull cost, so inf F = 0
    (a metric c·v vᵀ, c → ∞).  The solve returns such a metric: F recomputed from the matrix
    through its factor is <= tol, the bound is 0, and no hinge is active beyond round-off."""
    X, y = offset_points(seed, 30, 1.0, 0.0)
    prob = LMNNProblem.linear(X, y, k=2, gamma=0.5)
    sol = prob.solve(tol=TOL)
    assert sol.converged
    F, g = recomputed_gap(prob, sol.info["X"], sol.dual)
    assert 0.0 <= g <= F <= TOL
    assert abs(F - sol.objective) <= 1e-9
    tr = prob.triplets
    p = psd_pair_distances(prob.U, sol.info["X"], tr.pi, tr.pj)
    assert np.all(1 + p[tr.tt] - p[tr.ti] <= 1e-9)  # on the margin at most, to round-off


# Wine, the Wang et al. full protocol (reference/wang2011-mkl.md): fold 4 (index 3) of the 10
# stratified folds (seed 0), the second inner half of LMNN-MKL_CV, rows of sklearn's Wine
WINE_FOLD3_TEST = [1, 3, 18, 30, 54, 55, 72, 73, 76, 87, 108, 112, 127, 136, 150, 164, 169, 177]
WINE_FOLD3_HALF = [
    0, 2, 6, 9, 10, 12, 13, 19, 20, 23, 31, 36, 37, 39, 40, 41, 43, 44, 45, 46, 47, 49, 51, 52,
    56, 57, 58, 59, 62, 65, 66, 70, 71, 77, 78, 81, 82, 83, 84, 85, 86, 91, 92, 93, 96, 97, 98,
    102, 105, 107, 111, 115, 116, 118, 120, 122, 124, 128, 129, 133, 134, 135, 138, 139, 142,
    143, 146, 147, 152, 153, 155, 158, 159, 165, 166, 168, 171, 172, 173, 175, 176,
]  # fmt: skip


def test_wine_degree10_fit_with_a_pull_at_3e_14_ends_certified():
    """Wine fold 4, second half, polynomial degree 10 (r = 78, 21 620 triplets): G(0) has one
    direction at 3.4e-14 of its largest eigenvalue, reached by every near-margin impostor pair.
    Counted as null (the eigensolver's 1e3·ε) it left the bound 3.1e-5 below F = 0.1140 and the
    full-protocol fit uncertified; recomputed from the differences it is a real pull, and the
    fit certifies.  F* = 0.11400448 to 1e-8 (a solve certified at 7.6e-9 relative): the answer
    is within its certified gap above it and its bound below it."""
    prob = inner_cv_poly(load_wine, 10, WINE_FOLD3_TEST, WINE_FOLD3_HALF)
    basis = pull_basis(prob.U, prob.triplets, prob.gamma)
    assert not basis.null.any()
    sol = assert_fit_certifies(prob, TOL)
    f_star = 0.11400448
    assert f_star - 1e-8 <= sol.objective <= f_star + TOL * max(1.0, f_star)
    assert sol.dual_value <= f_star + 1e-8


@settings(max_examples=examples(20), deadline=None)
@given(seed=SEED, wobble=st.sampled_from([1e-5, 1e-7, 0.0]), spread=st.sampled_from([1e-3, 1.0, 1e6]))
def test_bound_is_below_the_objective_of_any_metric_on_tiny_and_null_pulls(seed, wobble, spread):
    """Weak duality where the pull-basis coordinates are most extreme: a pull direction at
    wobble² of the largest (scaled up by 1/wobble there, so the impostor pairs are 1/wobble
    long along it) or exactly null (wobble = 0), random multipliers, random metrics with a
    large component along that direction: g(α) <= F(X) every time (F through the factor)."""
    X, y = offset_points(seed, 24, 1.0, wobble)
    tr = _trip(X, y)
    rng = np.random.default_rng(seed)
    alpha = rng.uniform(0.0, 0.5, tr.n_triplets) * (rng.random(tr.n_triplets) < 0.5)
    g = lmnn_dual_value(X, tr, alpha, 0.5)
    for _ in range(5):
        B = rng.normal(size=(4, 4))
        A = B @ B.T
        A[3, 3] += spread * rng.uniform()
        F = lmnn_objective(psd_pair_distances(X, A, tr.pi, tr.pj), tr, 0.5)
        assert g <= F + 1e-9 * max(1.0, F)


def near_constant_feature(seed, n=30, gap=1e-8, wobble=1e-6):
    """Two classes in 3-D: a feature 1 + ``gap``·class (constant on every target pair: G(0)'s
    null direction, which each impostor pair reaches by a share of about gap² of its squared
    length), a feature 0.5·class + ``wobble``·noise (a pull about wobble² of the largest, which
    :func:`pull_whitening` stretches about 1/wobble-fold) and a noise feature."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    X = np.column_stack([1.0 + gap * y, 0.5 * y + wobble * rng.normal(size=n), rng.normal(size=n)])
    return X, y


@settings(max_examples=examples(10), deadline=None)
@given(seed=SEED, wobble=st.sampled_from([1e-6, 1e-7]), level=st.sampled_from([1e-12, 1e-8, 1e-4]))
def test_triplets_free_in_the_problems_coordinates_count_in_no_bound(seed, wobble, level):
    """Every impostor pair reaches G(0)'s null space in the problem's coordinates, so F* = 0
    (c·P_N, c → ∞, satisfies every triplet).  In the whitened coordinates the bound is
    evaluated in, the impostor pairs are about 1/wobble² longer and no longer reach N: counted
    there, multipliers of ``level`` gave g up to 2.3e-10 above F(1e18·P_N) = 2e-14.  The problem's
    bound decides the free triplets in its own coordinates: g = 0 <= F of the metric along N."""
    X, y = near_constant_feature(seed, wobble=wobble)
    prob = LMNNProblem.linear(X, y, k=2, gamma=0.5)
    tr, U = prob.triplets, prob.U
    free = free_triplets(U, tr, 0.5)
    white = pull_whitening(U, tr.target_i, tr.target_j, 0.5)
    assert free is not None and free.all() and white is not None
    Uw = U @ white[0]
    # the premise: the whitened coordinates hide them (same null space, longer pairs)
    assert not reaches_null(Uw, tr, pull_null_space(Uw, tr, 0.5)[1]).any()
    VN = pull_null_space(U, tr, 0.5)[1]
    F = min(
        lmnn_objective(ordered_pair_distances(U, None, tr.pi, tr.pj, factor=np.sqrt(c) * VN), tr, 0.5)
        for c in (1e17, 1e18, 1e19)
    )
    assert F <= 1e-12
    alpha = np.full(tr.n_triplets, level)
    assert prob.dual_value(alpha) <= F
    assert prob.dual_value(alpha, objective_bound=F) <= F
    assert lmnn_dual_value(Uw, tr, alpha, 0.5, free=free) == 0.0


@settings(max_examples=examples(10), deadline=None)
@given(seed=SEED)
def test_a_real_pull_below_null_rtol_is_range_and_the_fit_certifies(seed):
    """A feature 1 + 1e-9·class + 1e-11·noise: its target pull is about 3e-22 of the largest,
    below ``NULL_RTOL`` but far above the round-off of an exactly null one, and every impostor
    pair has a real part along it.  Called null, its pairs' parts there were taken for
    round-off and the fit ended uncertified (F = 4.14e-3, bound 0, seed 0); as range (whitened
    3e8-fold) it certifies (F = 3.27e-3), with a bound below F of every metric c·v vᵀ along it."""
    rng = np.random.default_rng(seed)
    y = np.arange(30) % 2
    X = np.column_stack([1.0 + 1e-9 * y + 1e-11 * rng.normal(size=30), rng.normal(size=(30, 2))])
    prob = LMNNProblem.linear(X, y, k=2, gamma=0.5)
    tr = prob.triplets
    V, mu, top, null = pull_spectrum(prob.U, tr.target_i, tr.target_j, 0.5)
    assert mu.min() < NULL_RTOL * top and not null.any()
    assert pull_null_space(prob.U, tr, 0.5) is None
    sol = prob.solve(tol=1e-6)
    assert sol.converged
    # F through the answer's factor (the formed X̂ spans 1e17 and rounds it), g by the problem
    L = sol.info["X_factor"]
    F = lmnn_objective(ordered_pair_distances(prob.U, None, tr.pi, tr.pj, factor=L), tr, 0.5)
    g = prob.dual_value(sol.dual, objective_bound=F)
    assert abs(F - sol.objective) <= 1e-9 * max(1.0, F)
    assert g <= F and F - g <= 1e-6 * max(1.0, F)
    v = V[:, np.argmin(mu)]
    for c in 10.0 ** np.arange(10, 30, 2):
        Fc = lmnn_objective(ordered_pair_distances(prob.U, None, tr.pi, tr.pj, factor=np.sqrt(c) * v[:, None]), tr, 0.5)
        assert g <= Fc


def _null_lengths_with_round_off(seed, n=40, tiny_length=1e-17):
    """Triplets on 40 points, pair distances 0 off N (every hinge active) and squared
    lengths in N of 1e-3 to 1e-2 for most pairs, ``tiny_length`` (still real) for a fifth of
    them, 1e-8 of that for the target pairs: F(c) falls steeply, then by 1e-14 of that
    before it rises."""
    rng = np.random.default_rng(seed)
    X, y = rng.normal(size=(n, 3)), np.arange(n) % 3
    tr = _trip(X, y, k=3)
    n_N = rng.uniform(1e-3, 1e-2, tr.n_pairs)
    tiny = rng.random(tr.n_pairs) < 0.2
    n_N[tiny] = tiny_length * (1.0 + 1e-3 * rng.random(int(tiny.sum())))
    n_N[tr.target_pair] = 1e-8 * tiny_length
    return tr, np.zeros(tr.n_pairs), n_N


def test_null_scale_walks_past_a_slope_below_the_running_sums_round_off():
    """A running sum of the slope stops at half of these draws where F is still falling."""
    for seed in range(8):
        tr, p_R, n_N = _null_lengths_with_round_off(seed)
        F = lambda c: lmnn_objective(p_R + c * n_N, tr, 0.5)  # noqa: E731,B023
        c = null_scale(p_R, n_N, tr, 0.5)
        best = min(F(g) for g in np.geomspace(1e-2, 1e22, 2000))
        assert c > 1e16  # past the tiny lengths' breakpoints
        assert F(c) <= best + 1e-9 * max(1.0, best)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_null_scale_counts_no_length_of_a_pair_that_does_not_reach(seed):
    """Pairs marked as not reaching N have a length there of round-off (here 1e-31): a scale
    that switched their violated triplets off would be 1e31, every distance round-off · c."""
    tr, p_R, n_N = _null_lengths_with_round_off(seed)
    n_N[n_N < 1e-15] = 1e-31
    n_N[tr.target_pair] = 0.0
    reach = n_N > 1e-20
    c = null_scale(p_R, n_N, tr, 0.5, reach)
    assert c == null_scale(p_R, np.where(reach, n_N, 0.0), tr, 0.5)
    assert 0.0 < c <= 1.0 / n_N[reach].min()
    assert null_scale(p_R, n_N, tr, 0.5) > 1e30  # counted, they would set the scale


def test_two_runs_whose_bounds_contradict_certify_nothing():
    """The whole run's bound above the null-space run's objective (the numbers of a Multiple
    Features fit whose null direction counted as range: g = 7.8296, while c·P_N reached
    F = 2.5e-5) breaks weak duality: the better-of step keeps the lower objective, a bound
    consistent with it (the other run's, else 0), and does not certify."""
    from cvxkml.formulas.lmnn import CONTRADICTED
    from cvxkml.solvers._lmnn.pdhg import lmnn_result
    from cvxkml.solvers.lmnn import _better_of
    from cvxkml.solvers.result import OK

    info = {"null_dim": 1, "free_triplets": 3}
    a_lam, b_lam = np.full(3, 0.1), np.full(3, 0.5)
    off = lmnn_result(np.eye(2), a_lam, 2.5e-5, 0.0, 10, "max_iter reached", 0.0, [], info)
    whole = lmnn_result(2 * np.eye(2), b_lam, 7.8301, 7.8296, 20, "stalled", 0.0, [], {})
    r = _better_of(off, whole, None, None, 0.5, 1e-5)
    assert r.code != OK and r.extra["status"] == CONTRADICTED
    assert r.extra["objective"] == 2.5e-5 and r.extra["dual_value"] == 0.0
    assert np.array_equal(r.lam, a_lam) and np.array_equal(r.matrix, np.eye(2))
    # neither bound consistent: the bound of α = 0
    off_bad = lmnn_result(np.eye(2), a_lam, 2.5e-5, 1.0, 10, "max_iter reached", 0.0, [], info)
    r = _better_of(off_bad, whole, None, None, 0.5, 1e-5)
    assert r.extra["status"] == CONTRADICTED and r.extra["dual_value"] == 0.0 and not np.any(r.lam)
    # consistent runs: the lower objective and the higher bound, certified within tol
    whole_ok = lmnn_result(2 * np.eye(2), b_lam, 7.8301, 2.5e-5 - 1e-7, 20, "stalled", 0.0, [], {})
    r = _better_of(off, whole_ok, None, None, 0.5, 1e-5)
    assert r.code == OK and r.extra["dual_value"] == 2.5e-5 - 1e-7 and np.array_equal(r.lam, b_lam)
