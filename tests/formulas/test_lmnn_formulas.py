"""cvxkml.formulas.lmnn (Weinberger & Saul 2009; Wang et al. 2011, eq. 18) against what each
formula promises, evaluated independently: target neighbours and triplets by brute force, the
objective by the printed double sum over (z_i − z_j)ᵀA(z_i − z_j), the Lagrangian identity of
the pair weights, the dual value below the objective at every X ⪰ 0 and below a CVXPY optimum
of tiny instances (weak duality), and the changes of coordinates (orthonormal factor, pull
whitening) that must leave every learned distance unchanged."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from budget import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cvxkml.errors import InvalidInputError
from cvxkml.formulas.lmnn import (
    LMNNTriplets,
    count_triplets,
    feature_target_neighbors,
    from_pull_coordinates,
    full_triplet_index,
    laplacian_quadratic,
    lmnn_dual_value,
    lmnn_objective,
    lmnn_slack,
    ordered_pair_distances,
    orthonormal_factor,
    pair_quadratic,
    pair_weights,
    psd_factor,
    psd_pair_distances,
    pull_basis,
    pull_factor,
    pull_null_space,
    pull_spectrum,
    pull_whitening,
    sorted_unique,
    target_neighbors,
    to_pull_coordinates,
)

SEED = st.integers(0, 2**31 - 1)


def _instance(seed, n_max=10, d_max=4):
    """Features Z (n × d), labels (every class with >= k + 1 members), k, triplets, a PSD A."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 3))
    n_classes = int(rng.integers(2, 4))
    y = np.concatenate([np.repeat(np.arange(n_classes), k + 1), rng.integers(0, n_classes, rng.integers(0, n_max))])
    y = rng.permutation(y)
    Z = rng.normal(size=(y.size, int(rng.integers(1, d_max + 1))))
    sq = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    trip = LMNNTriplets.from_labels(y, k=k, sq_dist=sq)
    B = rng.normal(size=(Z.shape[1], Z.shape[1]))
    return rng, Z, y, k, sq, trip, B @ B.T * rng.uniform(0.01, 1.0)


def _d(Z, A, i, j):
    z = Z[i] - Z[j]
    return float(z @ A @ z)


def _loop_objective(Z, A, y, ti, tj, gamma):
    """Eq. 18 with the optimal slack, by the printed sums."""
    pull = sum(_d(Z, A, i, j) for i, j in zip(ti, tj, strict=True))
    push = 0.0
    for i, j in zip(ti, tj, strict=True):
        for l in range(len(y)):
            if y[l] != y[i]:
                push += max(0.0, 1.0 + _d(Z, A, i, j) - _d(Z, A, i, l))
    return (1.0 - gamma) * pull + gamma * push


# --------------------------------------------------------------------------- structure
@settings(max_examples=examples(25))
@given(seed=SEED)
def test_targets_and_triplets_against_brute_force(seed):
    """Targets: for every i, the k nearest other points of its class (ties to the smaller
    index); triplets: every (i, j, l) with j a target of i and y_l ≠ y_i, once; the pair
    indices name the right points; count_triplets and full_triplet_index agree."""
    _, Z, y, k, sq, trip, _ = _instance(seed)
    n = y.size
    ti, tj = target_neighbors(sq, y, k)
    want = []
    for i in range(n):
        same = sorted((sq[i, j], j) for j in range(n) if j != i and y[j] == y[i])
        want += [(i, j) for _, j in same[:k]]
    assert sorted(zip(ti.tolist(), tj.tolist(), strict=True)) == sorted(want)
    got = set(zip(trip.trip_i.tolist(), trip.trip_j.tolist(), trip.trip_l.tolist(), strict=True))
    brute = {(i, j, l) for i, j in want for l in range(n) if y[l] != y[i]}
    assert got == brute and trip.n_triplets == len(brute) == count_triplets(trip.codes, trip.target_i)
    for pairs, a, b in ((trip.tt, trip.trip_i, trip.trip_j), (trip.ti, trip.trip_i, trip.trip_l)):
        assert np.array_equal(trip.pi[pairs], np.minimum(a, b)) and np.array_equal(trip.pj[pairs], np.maximum(a, b))
    assert np.all(trip.pi < trip.pj)
    e = np.repeat(np.arange(trip.target_i.size), 1)  # every target entry against each impostor
    q = [(ei, l) for ei in e for l in range(n) if y[l] != y[trip.target_i[ei]]]
    entries = np.array([a for a, _ in q])
    imps = np.array([b for _, b in q])
    idx = full_triplet_index(trip.codes, trip.target_i, entries, imps)
    np.testing.assert_array_equal(trip.trip_i[idx], trip.target_i[entries])
    np.testing.assert_array_equal(trip.trip_j[idx], trip.target_j[entries])
    np.testing.assert_array_equal(trip.trip_l[idx], imps)


@settings(max_examples=examples(25))
@given(seed=SEED, dup=st.integers(0, 4), k=st.integers(1, 3))
def test_feature_targets_are_the_brute_force_targets_with_exact_ties(seed, dup, k):
    """Class by class, from the features: for every i the k nearest others of its class by
    the sum of squared differences, ties (duplicated rows: exactly equal distances) to the
    smaller index; the same as :func:`target_neighbors` on the full matrix of those distances."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 16))
    y = np.arange(n) % 2
    Z = np.round(rng.normal(size=(n, 3)), 1)  # coarse values: many equal distances
    for _ in range(dup):  # duplicated rows within a class
        a, b = rng.choice(n // 2, 2, replace=False) * 2 + int(rng.integers(0, 2))
        Z[b] = Z[a]
    ti, tj = feature_target_neighbors(Z, y, k)
    want = []
    for i in range(n):
        same = sorted((float(np.sum((Z[i] - Z[j]) ** 2)), j) for j in range(n) if j != i and y[j] == y[i])
        want += [(i, j) for _, j in same[:k]]
    assert list(zip(ti.tolist(), tj.tolist(), strict=True)) == want
    full = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    assert [a.tolist() for a in target_neighbors(full, y, k)] == [ti.tolist(), tj.tolist()]
    with pytest.raises(InvalidInputError, match="rows to match y"):
        feature_target_neighbors(Z[:-1], y, k)


def test_structure_refuses_small_classes_and_single_class():
    sq = np.ones((4, 4))
    with pytest.raises(InvalidInputError, match="k \\+ 1"):
        target_neighbors(sq, [0, 0, 0, 1], 1)
    with pytest.raises(InvalidInputError, match="2 classes"):
        target_neighbors(sq, [0, 0, 0, 0], 1)
    i, j = target_neighbors(sq, [0, 0, 0, 1], 1, small_classes="shrink")
    assert 3 not in i.tolist()  # the singleton has no target and still serves as impostor


@settings(max_examples=examples(25))
@given(
    parts=st.lists(st.lists(st.integers(-(2**62), 2**62), max_size=40), max_size=4),
    small=st.lists(st.integers(0, 5), max_size=40),
)
def test_sorted_unique_is_numpy_unique_of_the_concatenation(parts, small):
    """The active-set rounds' key sets: sorted_unique(a, b, ...) == np.unique(concatenate),
    int64, for wide keys, many repeats (``small``) and empty inputs."""
    arrays = [np.array(p, dtype=np.int64) for p in parts] + [np.array(small, dtype=np.int64)]
    got = sorted_unique(*arrays)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.unique(np.concatenate(arrays)))
    assert sorted_unique().size == 0


# --------------------------------------------------------------------------- values
@settings(max_examples=examples(25))
@given(seed=SEED, gamma=st.floats(0.0, 1.0))
def test_objective_is_the_printed_sum_of_the_learned_distances(seed, gamma):
    """lmnn_objective(d) with d from pair_quadratic or psd_pair_distances equals eq. 18 by a
    loop over (z_i − z_j)ᵀA(z_i − z_j); lmnn_slack is the hinge of every triplet; the objective
    is unchanged by a rotation of the features with the metric rotated along (Z Q, QᵀAQ)."""
    rng, Z, y, _, _, trip, A = _instance(seed)
    want = _loop_objective(Z, A, y, trip.target_i, trip.target_j, gamma)
    d = pair_quadratic(Z, A, trip.pi, trip.pj)
    d_f = psd_pair_distances(Z, A, trip.pi, trip.pj)
    np.testing.assert_allclose(d, [_d(Z, A, i, j) for i, j in zip(trip.pi, trip.pj, strict=True)], rtol=1e-10)
    np.testing.assert_allclose(d_f, d, rtol=1e-9, atol=1e-12 * max(1.0, d.max()))
    assert np.all(d_f >= 0)
    tol = 1e-9 * max(1.0, want)
    assert lmnn_objective(d, trip, gamma) == pytest.approx(want, abs=tol)
    xi = lmnn_slack(d, trip)
    for t in range(trip.n_triplets):
        i, j, l = trip.trip_i[t], trip.trip_j[t], trip.trip_l[t]
        assert xi[t] == pytest.approx(max(0.0, 1.0 + _d(Z, A, i, j) - _d(Z, A, i, l)), abs=1e-10 * max(1.0, d.max()))
    Q, _ = np.linalg.qr(rng.normal(size=(Z.shape[1],) * 2))
    d_rot = pair_quadratic(Z @ Q, Q.T @ A @ Q, trip.pi, trip.pj)
    assert lmnn_objective(d_rot, trip, gamma) == pytest.approx(want, abs=tol)


@settings(max_examples=examples(25))
@given(seed=SEED, gamma=st.floats(0.05, 0.95))
def test_pair_weights_give_the_lagrangian_and_its_matrix(seed, gamma):
    """For any α: Σ α_t + Σ_p w_p(α) d_p = (1 − γ) pull + Σ_t α_t (1 + d_ij − d_il) (the
    Lagrangian), and laplacian_quadratic(U, w) = Σ_p w_p u_p u_pᵀ, so ⟨G(α), A⟩ = Σ_p w_p d_p."""
    rng, Z, _, _, _, trip, A = _instance(seed)
    alpha = rng.uniform(0, gamma, trip.n_triplets)
    d = pair_quadratic(Z, A, trip.pi, trip.pj)
    w = pair_weights(trip, alpha, gamma)
    lhs = alpha.sum() + w @ d
    rhs = (1 - gamma) * d[trip.target_pair].sum() + np.sum(alpha * (1 + d[trip.tt] - d[trip.ti]))
    assert lhs == pytest.approx(rhs, rel=1e-10, abs=1e-10)
    G = laplacian_quadratic(Z, trip, w)
    want = sum(wp * np.outer(Z[i] - Z[j], Z[i] - Z[j]) for wp, i, j in zip(w, trip.pi, trip.pj, strict=True))
    np.testing.assert_allclose(G, want, atol=1e-10 * max(1.0, np.abs(want).max()))
    assert np.sum(G * A) == pytest.approx(w @ d, rel=1e-9, abs=1e-9)


@settings(max_examples=examples(25))
@given(seed=SEED, far=st.sampled_from([1e4, 1e6, 1e8]))
def test_laplacian_quadratic_keeps_close_pairs_of_points_far_from_their_means(seed, far):
    """Two points of different classes that (nearly) coincide while their classes sit ``far``
    apart along one direction (a 6 and a 9 under rotation-invariant features, in coordinates
    that scale up a direction separating the classes), weighted beside short same-class
    pairs: G = Σ_p w_p u_p u_pᵀ must match the sum over the differences to their own
    round-off — the Laplacian form alone is off by about ε·far² there."""
    rng = np.random.default_rng(seed)
    n_a, n_b, d = 6, 3, 3
    y = np.array([0] * (n_a + 1) + [1] * (n_b + 1))
    Z = rng.normal(size=(y.size, d))
    Z[:n_a, 0] += far  # class 0 far along e1, class 1 at −far, one point of each near 0
    Z[n_a + 1 : n_a + 1 + n_b, 0] -= far
    a, b = n_a, n_a + 1 + n_b
    Z[b] = Z[a] + 1e-3 * rng.normal(size=d)
    sq = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    trip = LMNNTriplets.from_labels(y, k=1, sq_dist=sq)
    close = ((trip.pi == a) & (trip.pj == b)) | ((trip.pi == b) & (trip.pj == a))
    assert close.sum() == 1  # the pair (a, b) is an impostor pair of a triplet
    D = Z[trip.pi] - Z[trip.pj]
    short = np.einsum("ij,ij->i", D, D) < 100.0  # the close pair and same-class pairs within a cluster
    w = np.where(short, rng.uniform(0.1, 1.0, trip.n_pairs), 0.0)
    G = laplacian_quadratic(Z, trip, w)
    want = (D.T * w) @ D
    scale = np.sum(w * np.einsum("ij,ij->i", D, D))
    np.testing.assert_allclose(G, 0.5 * (want + want.T), rtol=0, atol=1e-12 * scale)


@settings(max_examples=examples(25))
@given(seed=SEED, gamma=st.floats(0.05, 0.95), spread=st.sampled_from([0.5, 1.0, 3.0]), singular=st.booleans())
def test_dual_value_is_below_the_objective_at_every_metric(seed, gamma, spread, singular):
    """Weak duality: lmnn_dual_value(U, α) <= F(X) for random X ⪰ 0 (U = the orthonormal factor
    of Z, X in its coordinates, up to 1e3 in scale) for any α (out-of-box values are clipped),
    also when a feature is constant within each class (the target pull G(0) is singular, the
    case its null-space restriction handles); it is invariant under a rotation of U (G(α)
    rotates, its spectrum does not)."""
    rng, Z, y, _, _, trip, _ = _instance(seed)
    if singular:
        Z = np.hstack([Z, rng.normal(size=3)[y % 3][:, None] * rng.uniform(0.1, 5.0)])
    U, _, _ = orthonormal_factor(Z)
    r = U.shape[1]
    alpha = rng.uniform(-0.5 * gamma, (0.5 + spread) * gamma, trip.n_triplets)
    g = lmnn_dual_value(U, trip, alpha, gamma)
    assert 0.0 <= g <= np.clip(alpha, 0, gamma).sum() + 1e-12
    for _ in range(20):
        B = rng.normal(size=(r, int(rng.integers(1, r + 1)))) * 10.0 ** rng.uniform(-2, 3)
        F = lmnn_objective(pair_quadratic(U, B @ B.T, trip.pi, trip.pj), trip, gamma)
        assert g <= F + 1e-9 * max(1.0, F)
    Q, _ = np.linalg.qr(rng.normal(size=(r, r)))
    assert lmnn_dual_value(U @ Q, trip, alpha, gamma) == pytest.approx(g, rel=1e-6, abs=1e-9)


@settings(max_examples=examples(8))
@given(seed=SEED, gamma=st.sampled_from([0.3, 0.5, 0.8]), singular=st.booleans())
def test_dual_value_against_a_cvxpy_optimum(seed, gamma, singular):
    """On tiny instances: g(α) <= F* for random α, and at the conic solver's own multipliers
    of the margin constraints g is F* (the bound is tight) — also when a feature is constant on
    the classes 0 and 1 and different on class 2: the target pull is singular along it and
    the impostor pairs of class 2 see that direction (without the null-space restriction the
    bound collapses there, e.g. 0.48 instead of 24)."""
    rng, Z, y, _, _, trip, _ = _instance(seed, n_max=3, d_max=2)
    if singular:
        a, b = rng.normal(size=2)
        Z = np.hstack([Z, np.where(y == 2, b, a)[:, None]])
    U, _, _ = orthonormal_factor(Z)
    r = U.shape[1]
    X = cp.Variable((r, r), PSD=True)
    P = U[trip.pi] - U[trip.pj]
    d = cp.hstack([cp.sum(cp.multiply(X, np.outer(P[p], P[p]))) for p in range(trip.n_pairs)])
    xi = cp.Variable(trip.n_triplets, nonneg=True)
    margin = xi >= 1 + d[trip.tt] - d[trip.ti]
    prob = cp.Problem(cp.Minimize((1 - gamma) * cp.sum(d[trip.target_pair]) + gamma * cp.sum(xi)), [margin])
    prob.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    f_star = prob.value
    scale = max(1.0, abs(f_star))
    for _ in range(10):
        assert lmnn_dual_value(U, trip, rng.uniform(0, gamma, trip.n_triplets), gamma) <= f_star + 1e-7 * scale
    g = lmnn_dual_value(U, trip, np.ravel(margin.dual_value), gamma)
    assert g <= f_star + 1e-7 * scale
    assert g >= f_star - 1e-5 * scale


# --------------------------------------------------------------------------- coordinates
@settings(max_examples=examples(20))
@given(seed=SEED)
def test_orthonormal_factor_and_psd_factor_keep_every_distance(seed):
    """Z = U diag(s) Vt: the distances of A with features Z are those of
    X̂ = diag(s) Vt A Vtᵀ diag(s) with features U; psd_factor(X) L Lᵀ = X."""
    rng, Z, _, _, _, trip, A = _instance(seed)
    Z = np.hstack([Z, Z[:, :1] * 2.0])  # a dependent column: one singular value dropped
    A = np.pad(A, ((0, 1), (0, 1))) + 0.1 * np.eye(A.shape[0] + 1)
    U, s, Vt = orthonormal_factor(Z)
    assert U.shape[1] == Z.shape[1] - 1 or s[-1] > 0
    np.testing.assert_allclose((U * s) @ Vt, Z, atol=1e-10 * np.abs(Z).max())
    np.testing.assert_allclose(U.T @ U, np.eye(U.shape[1]), atol=1e-12)
    Xh = (s[:, None] * Vt) @ A @ (Vt.T * s)
    np.testing.assert_allclose(
        pair_quadratic(U, Xh, trip.pi, trip.pj), pair_quadratic(Z, A, trip.pi, trip.pj), rtol=1e-9, atol=1e-10
    )
    L = psd_factor(Xh)
    np.testing.assert_allclose(L @ L.T, Xh, atol=1e-10 * np.abs(Xh).max())
    with pytest.raises(InvalidInputError, match="zero"):
        orthonormal_factor(np.zeros((3, 2)))


@settings(max_examples=examples(20))
@given(seed=SEED, copies=st.integers(1, 3))
def test_orthonormal_factor_gives_copies_of_a_point_one_coordinate(seed, copies):
    """Rows of Z that are equal (a point given twice: two digits a rotation-invariant feature
    cannot tell apart) get bitwise equal rows of U, so every metric gives them distance 0 — the
    SVD alone leaves them round-off apart; the factor still reproduces Z."""
    rng, Z, _, _, _, _, _ = _instance(seed)
    Z = np.vstack([Z, np.repeat(Z[:1], copies, axis=0)])
    U, s, Vt = orthonormal_factor(Z)
    for i in range(Z.shape[0] - copies, Z.shape[0]):
        assert np.array_equal(U[i], U[0])
    np.testing.assert_allclose((U * s) @ Vt, Z, atol=1e-10 * np.abs(Z).max())


@settings(max_examples=examples(20))
@given(seed=SEED, magnitude=st.sampled_from([1e-3, 1.0, 1e9]))
def test_ordered_pair_distances_are_the_solvers_own_to_the_bit(seed, magnitude):
    """ordered_pair_distances is pair_quadratic (psd=False) and psd_pair_distances (psd=True)
    to round-off, and bitwise the LMNN solvers' Numba pair distances, whose F a declared
    problem recomputes from the solver's X̂."""
    from cvxkml.solvers.lmnn import pair_distances

    rng, Z, _, _, _, trip, A = _instance(seed)
    A = magnitude * A
    for psd, formula in ((False, pair_quadratic), (True, psd_pair_distances)):
        got = ordered_pair_distances(Z, A, trip.pi, trip.pj, psd=psd)
        assert np.array_equal(got, pair_distances(Z, A, trip.pi, trip.pj, psd=psd))
        want = formula(Z, A, trip.pi, trip.pj)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12 * magnitude * np.abs(Z).max() ** 2)


def _tiny_and_null_pull(seed, tiny):
    """Features whose target pull has a direction at about tiny² of its largest (a real pull
    below the eigensolver's ε resolution for tiny = 1e-8, yet orders above ``NULL_RTOL``) and
    one exactly null direction (a class-constant column: every target pair has the same value
    there)."""
    rng, Z, y, k, sq, trip, _ = _instance(seed, n_max=14, d_max=3)
    U = np.hstack([Z, tiny * rng.normal(size=(y.size, 1)), y[:, None].astype(float)])  # any full-rank factor
    assume(y.size >= U.shape[1] + 4)  # enough points that the tiny column is a direction of its own
    return rng, U, y, trip


@settings(max_examples=examples(20))
@given(seed=SEED, tiny=st.sampled_from([1e-5, 1e-6, 1e-8]))
def test_pull_spectrum_resolves_pulls_below_the_eigensolver_error(seed, tiny):
    """pull_spectrum's eigenvalues match the squared singular values of the target differences
    D (an SVD resolves σ² down to ε²·σ²_max) for every real pull — also at about 1e-16 of
    the largest, where an eigendecomposition of DᵀD returns round-off of ±ε; the exactly null
    direction is at most NULL_RTOL, and pull_basis, pull_null_space and pull_whitening agree on
    it: one null space N, the tiny pull rescaled by pull_whitening and pull_basis, not null."""
    rng, U, y, trip = _tiny_and_null_pull(seed, tiny)
    gamma = 0.5
    D = U[trip.target_i] - U[trip.target_j]
    sv = np.linalg.svd(D, compute_uv=False)
    V, mu, top, _ = pull_spectrum(U, trip.target_i, trip.target_j, gamma)
    want = np.sort((1 - gamma) * sv**2)
    got = np.sort(mu)
    real = want > 1e-24 * want[-1]
    assert got[real] == pytest.approx(want[real], rel=1e-6)
    np.testing.assert_allclose(V.T @ V, np.eye(V.shape[1]), atol=1e-12)
    null = mu <= 1e-20 * top
    assert null.sum() == (~real).sum() >= 1
    VR, VN = pull_null_space(U, trip, gamma)
    basis = pull_basis(U, trip, gamma)
    assert VN.shape[1] == basis.null.sum() == null.sum()
    # the same N: each basis's projector agrees
    np.testing.assert_allclose(VN @ VN.T, basis.VN @ basis.VN.T, atol=1e-10)
    np.testing.assert_allclose(VR.T @ VN, 0.0, atol=1e-12)
    assert np.linalg.norm(D @ VN) <= 1e-12 * np.linalg.norm(D)
    wh = pull_whitening(U, trip.target_i, trip.target_j, gamma)
    assert wh is not None
    W = wh[0]
    # W is the identity on N and caps the conditioning of the pull at 1e4 off N
    np.testing.assert_allclose(W @ VN, VN, atol=1e-9)
    G0 = (1 - gamma) * (D @ W).T @ (D @ W)
    lw = np.linalg.eigvalsh(VR.T @ G0 @ VR)
    assert lw.min() >= (1e-4 - 1e-6) * lw.max()


@settings(max_examples=examples(20), deadline=None)
@given(seed=SEED, tiny=st.sampled_from([1e-5, 1e-6]))
def test_a_null_direction_keeps_no_pull_from_a_tiny_one_beside_it(seed, tiny):
    """Two exactly null directions (class indicators) and a real pull at about tiny² (1e-10
    to 1e-12) of the largest, in a rotated basis: the eigendecomposition of G(0) mixes that
    direction into the null ones by ε/tiny², so unless it is recomputed with them a null
    direction keeps a pull of 1e-21 of the largest (up to 2e-19), and with NULL_RTOL = 1e-20
    may count as range.  Each direction of N has a pull within ε²-level round-off."""
    rng = np.random.default_rng(seed)
    n, d = 60, 8
    y = np.arange(n) % 3
    X = np.hstack([rng.normal(size=(n, d)), tiny * rng.normal(size=(n, 1)), (y[:, None] == np.arange(2)).astype(float)])
    U = X @ np.linalg.qr(rng.normal(size=(d + 3, d + 3)))[0]
    trip = LMNNTriplets.from_labels(y, k=3, sq_dist=((X[:, None] - X[None]) ** 2).sum(-1))
    _, _, top, _ = pull_spectrum(U, trip.target_i, trip.target_j, 0.5)
    VR, VN = pull_null_space(U, trip, 0.5)
    assert VN.shape[1] == 2
    D = U[trip.target_i] - U[trip.target_j]
    assert 0.5 * np.einsum("ij,ij->j", D @ VN, D @ VN).max() <= 1e-26 * top


@settings(max_examples=examples(20))
@given(seed=SEED, tiny=st.sampled_from([1e-5, 1e-6, 1e-8]))
def test_pull_factor_keeps_every_scale_of_the_answer(seed, tiny):
    """A whitened answer X̃ mapped back as the factor W·L̃ (pull_factor): distances through the
    factor are those of X̃ with the solver's features U W, to relative ε·‖W‖ — also when W
    scales a tiny pull by 1e8, where the formed X̂ = W X̃ Wᵀ loses the O(1) part."""
    rng, U, y, trip = _tiny_and_null_pull(seed, tiny)
    wh = pull_whitening(U, trip.target_i, trip.target_j, 0.5)
    if wh is None:
        return
    r = U.shape[1]
    B = rng.normal(size=(r, r))
    Xt = B @ B.T / r
    L = pull_factor(Xt, wh)
    np.testing.assert_allclose(L @ L.T, from_pull_coordinates(Xt, wh), rtol=1e-8, atol=1e-10 * np.abs(L @ L.T).max())
    got = ordered_pair_distances(U, None, trip.pi, trip.pj, factor=L)
    want = psd_pair_distances(U @ wh[0], Xt, trip.pi, trip.pj)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9 * np.abs(want).max())
    assert pull_factor(Xt, None) == pytest.approx(psd_factor(Xt))


@settings(max_examples=examples(20))
@given(seed=SEED, tiny=st.sampled_from([1e-2, 1e-3, 1e-5]))
def test_pull_whitening_is_a_change_of_coordinates(seed, tiny):
    """With a target pull G(0) of conditioning beyond 1e4, pull_whitening gives (W, W⁻¹):
    W W⁻¹ = I, X ↔ X̃ round-trips, and the distances of X̃ with features U W are those of X
    with features U (so F and every bound are the same problem's); WᵀG(0)W has conditioning
    at most 1e4 on the directions it rescaled."""
    rng, Z, y, k, sq, trip, _ = _instance(seed)
    Z = np.hstack([Z, tiny * rng.normal(size=(y.size, 1))])  # a direction the pull barely sees
    U, _, _ = orthonormal_factor(Z, rtol=1e-14)
    U = U * np.r_[np.ones(U.shape[1] - 1), tiny]  # G(0) ~ diag(…, tiny²)
    gamma = 0.5
    wh = pull_whitening(U, trip.target_i, trip.target_j, gamma)
    D = U[trip.target_i] - U[trip.target_j]
    G0 = (1 - gamma) * D.T @ D
    # G(0)'s eigenvalues from an SVD of D (accurate to ε²·μ_max, where eigvalsh of G(0) is
    # only accurate to ε·μ_max: a real pull at 1e-14 of the largest is whitened too)
    lam = np.sort((1 - gamma) * np.linalg.svd(D, compute_uv=False) ** 2)
    assume(not np.any((lam > 1e-22 * lam[-1]) & (lam <= 1e-18 * lam[-1])))  # off NULL_RTOL's edge
    if not np.any((lam > 1e-18 * lam[-1]) & (lam < 1e-4 * lam[-1])):
        assert wh is None
        return
    W, W_inv = wh
    r = U.shape[1]
    np.testing.assert_allclose(W @ W_inv, np.eye(r), atol=1e-8)
    B = rng.normal(size=(r, r))
    X = B @ B.T
    Xt = to_pull_coordinates(X, wh)
    np.testing.assert_allclose(from_pull_coordinates(Xt, wh), X, rtol=1e-8, atol=1e-8 * np.abs(X).max())
    np.testing.assert_allclose(
        pair_quadratic(U @ W, Xt, trip.pi, trip.pj), pair_quadratic(U, X, trip.pi, trip.pj), rtol=1e-7, atol=1e-9
    )
    lw = np.linalg.eigvalsh(W @ G0 @ W)
    assert lw[lw > 1e-12 * lam[-1]].min() >= (1e-4 - 1e-8) * lw[-1]
    assert to_pull_coordinates(X, None) is X and from_pull_coordinates(X, None) is X
