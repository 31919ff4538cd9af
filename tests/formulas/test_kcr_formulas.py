"""cvxkml.formulas.kcr (Sriperumbudur, Lang & Lanckriet 2008, eq. 9) against what each formula
promises, evaluated independently: the nested hinge by a double loop, distances from their
definition (k_i − k_j)ᵀΣ(k_i − k_j), the Lagrangian of :func:`dual_objective` below the
objective for every dual weight in the box (weak duality), the certified bound below every
point of the set it is computed over, the projection onto N by its variational inequality,
and the invariances of the problem (permutation of the points, renaming of the classes,
scaling of distances and bandwidth in the rule)."""

from __future__ import annotations

import numpy as np
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from cvxkml.errors import InvalidInputError
from cvxkml.formulas.kcr import (
    basis_orthogonal_to_ones,
    class_counts,
    cross_sq_distances,
    dual_lower_bound,
    dual_objective,
    dual_weights_from_epigraph,
    h_upper_bound,
    kcr_loss,
    kcr_objective,
    label_structure,
    project_onto_N,
    rule_predict,
    sq_distances_from_gram,
    whitening,
)

SEED = st.integers(0, 2**31 - 1)


def _labels(rng, n, n_classes):
    """n labels over n_classes classes, every class with >= 2 members (c_i <= 0)."""
    y = np.repeat(np.arange(n_classes), 2)
    y = np.concatenate([y, rng.integers(0, n_classes, max(n - y.size, 0))])
    return rng.permutation(y)


def _instance(seed, n=None, r=None):
    """Random whitened features F (n × r), labels, tau, c, a PSD X (r × r) and h."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 10)) if n is None else n
    r = int(rng.integers(1, 5)) if r is None else r
    y = _labels(rng, n, int(rng.integers(2, min(4, n // 2) + 1)))
    F = rng.normal(size=(n, r))
    A = rng.normal(size=(r, int(rng.integers(1, r + 1)))) * rng.uniform(0.05, 1.0)
    return rng, F, y, A @ A.T


def _loop_loss(D, h, y):
    """Eq. 9's data term by the printed double sum, j over all points (j = i included)."""
    n = len(y)
    total = 0.0
    for i in range(n):
        n_plus = sum(1 for j in range(n) if y[j] == y[i])
        inner = 0.0
        for j in range(n):
            t = 1.0 if y[i] == y[j] else -1.0
            inner += max(0.0, 1.0 + t * (D[i, j] - h))
        total += max(0.0, 2.0 - n_plus + inner)
    return total


def _loop_distances(F, X):
    n = F.shape[0]
    D = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            z = F[i] - F[j]
            D[i, j] = z @ X @ z
    return D


# --------------------------------------------------------------------------- labels, distances
@settings(max_examples=examples(20))
@given(seed=SEED)
def test_label_structure_against_loops_and_a_renaming_of_the_classes(seed):
    """tau_ij = +1 iff y_i = y_j, c_i = 2 − |class of i|; renaming the classes (any injective
    map of the labels) changes neither."""
    rng = np.random.default_rng(seed)
    y = _labels(rng, int(rng.integers(4, 12)), int(rng.integers(2, 4)))
    classes, codes, tau, c = label_structure(y)
    n = y.size
    for i in range(n):
        assert classes[codes[i]] == y[i]
        assert c[i] == 2 - np.sum(y == y[i])
        for j in range(n):
            assert tau[i, j] == (1.0 if y[i] == y[j] else -1.0)
    renamed = np.array([f"class-{int(v) * 7 + 3}" for v in rng.permutation(np.unique(y))])[
        np.searchsorted(np.unique(y), y)
    ]
    _, _, tau2, c2 = label_structure(renamed)
    np.testing.assert_array_equal(tau2, tau)
    np.testing.assert_array_equal(c2, c)


def test_label_structure_refuses_a_matrix():
    with pytest.raises(InvalidInputError, match="one-dimensional"):
        label_structure(np.zeros((3, 2)))


@settings(max_examples=examples(15))
@given(seed=SEED)
def test_distances_are_the_learned_quadratic_forms(seed):
    """sq_distances_from_gram(F X Fᵀ) and cross_sq_distances(K_x, K, Σ) are the quadratic
    forms of their definitions; the cross distances of the training points themselves are the
    training distances (K_x = K)."""
    rng, F, _, X = _instance(seed)
    np.testing.assert_allclose(sq_distances_from_gram(F @ X @ F.T), _loop_distances(F, X), atol=1e-10)
    n = F.shape[0]
    G = rng.normal(size=(n, n))
    K = G @ G.T
    B = rng.normal(size=(n, 2))
    Sigma = B @ B.T
    Kx = rng.normal(size=(3, n))
    got = cross_sq_distances(Kx, K, Sigma)
    want = np.array([[(Kx[q] - K[i]) @ Sigma @ (Kx[q] - K[i]) for i in range(n)] for q in range(3)])
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * np.abs(want).max())
    np.testing.assert_allclose(
        cross_sq_distances(K, K, Sigma), sq_distances_from_gram(K @ Sigma @ K), atol=1e-9 * np.abs(want).max()
    )


# --------------------------------------------------------------------------- objective
@settings(max_examples=examples(30))
@given(seed=SEED, h=st.floats(0.0, 3.0), lam=st.floats(0.0, 2.0))
def test_loss_is_the_printed_double_sum_and_invariant_under_permutation(seed, h, lam):
    """kcr_loss = eq. 9's nested hinge by a plain loop; kcr_objective adds λ·tr; relabelling
    the points by a permutation π (D → D[π][:, π], y → y[π]) leaves both unchanged."""
    rng, F, y, X = _instance(seed)
    D = sq_distances_from_gram(F @ X @ F.T)
    _, _, tau, c = label_structure(y)
    want = _loop_loss(D, h, y)
    assert kcr_loss(D, h, tau, c) == pytest.approx(want, rel=1e-12, abs=1e-12)
    assert kcr_objective(D, h, tau, c, np.trace(X), lam) == pytest.approx(want + lam * np.trace(X), rel=1e-12)
    p = rng.permutation(y.size)
    _, _, tau_p, c_p = label_structure(y[p])
    assert kcr_loss(D[np.ix_(p, p)], h, tau_p, c_p) == pytest.approx(want, rel=1e-12, abs=1e-12)


@settings(max_examples=examples(40))
@given(seed=SEED, h=st.floats(0.0, 3.0), lam=st.floats(0.01, 2.0), box=st.sampled_from(["uniform", "sparse", "ones"]))
def test_lagrangian_of_any_box_weights_is_below_the_objective(seed, h, lam, box):
    """For every s ∈ [0, 1]^{n×n}, a + Σ s∘tau∘D − h̃ S + λ tr X <= f(X, h̃) with
    (a, S) = dual_objective(s, tau, c): the nested hinge is the max of its linear minorants
    (weak duality at every X ⪰ 0, every h̃)."""
    rng, F, y, X = _instance(seed)
    D = sq_distances_from_gram(F @ X @ F.T)
    _, _, tau, c = label_structure(y)
    n = y.size
    s = {
        "uniform": rng.uniform(0, 1, (n, n)),
        "sparse": rng.uniform(0, 1, (n, n)) * (rng.random((n, n)) < 0.3),
        "ones": np.ones((n, n)),
    }[box]
    a, S = dual_objective(s, tau, c)
    assert a == pytest.approx(s.sum() + np.sum(c * s.max(axis=1)), rel=1e-12)
    assert S == pytest.approx(np.sum(tau * s), rel=1e-12, abs=1e-12)
    lagrangian = a + np.sum(s * tau * D) - h * S + lam * np.trace(X)
    f = kcr_objective(D, h, tau, c, np.trace(X), lam)
    assert lagrangian <= f + 1e-9 * max(1.0, abs(f))


@settings(max_examples=examples(40))
@given(seed=SEED, lam=st.floats(0.01, 2.0), h_min=st.sampled_from([1e-6, 0.1]))
def test_certified_bound_is_below_every_point_of_its_set_and_maximizes_g(seed, lam, h_min):
    """dual_lower_bound(a, S, λ_min(Aᵀ(tau∘s)), λ, R, h_min, h_max) <= f(X, h̃) for random
    X ⪰ 0 with tr X <= R and h̃ ∈ [h_min, h_max]; it is g at the returned θ, and no θ ∈ [0, 1]
    of a grid does better (g is concave and piecewise linear: its breakpoints suffice)."""
    rng, F, y, _ = _instance(seed)
    _, _, tau, c = label_structure(y)
    n, r = F.shape
    s = rng.uniform(0, 1, (n, n)) * (rng.random((n, n)) < rng.uniform(0.2, 1.0))
    a, S = dual_objective(s, tau, c)
    W = tau * s
    Z = F[:, None, :] - F[None, :, :]
    At = np.einsum("ij,ijk,ijl->kl", W, Z, Z)  # Aᵀ(tau∘s) = Σ W_ij z_ij z_ijᵀ
    lmin = float(np.linalg.eigvalsh(At)[0])
    R = float(rng.uniform(0.1, 5.0))
    h_max = h_min + float(rng.uniform(0.5, 4.0))
    g, theta = dual_lower_bound(a, S, lmin, lam, R, h_min, h_max)

    def g_of(th):
        return th * a + R * min(0.0, lam + th * lmin) - th * S * (h_min if S <= 0 else h_max)

    assert 0.0 <= theta <= 1.0 and g == pytest.approx(g_of(theta), rel=1e-12, abs=1e-12)
    assert all(g >= g_of(th) - 1e-12 * max(1.0, abs(g)) for th in np.linspace(0, 1, 201))
    for _ in range(20):
        B = rng.normal(size=(r, int(rng.integers(1, r + 1))))
        X = B @ B.T
        X *= R * rng.uniform(0.0, 1.0) / max(np.trace(X), 1e-300)
        h = float(rng.uniform(h_min, h_max))
        D = sq_distances_from_gram(F @ X @ F.T)
        f = kcr_objective(D, h, tau, c, np.trace(X), lam)
        assert g <= f + 1e-9 * max(1.0, abs(f))


@settings(max_examples=examples(25))
@given(seed=SEED, lam=st.floats(0.05, 2.0))
def test_objective_does_not_decrease_beyond_the_bandwidth_bound(seed, lam):
    """For any X with tr X <= R, f(X, h̃) is non-decreasing in h̃ from
    h_max = h_upper_bound(R, max similar ‖z_ij‖²): an optimal h̃ is at most h_max."""
    rng, F, y, X = _instance(seed)
    _, _, tau, c = label_structure(y)
    Z2 = sq_distances_from_gram(F @ F.T)
    R = float(np.trace(X)) * rng.uniform(1.0, 2.0)
    h_max = h_upper_bound(R, float(np.max(np.where(tau > 0, Z2, 0.0))))
    D = sq_distances_from_gram(F @ X @ F.T)
    hs = h_max + np.concatenate([[0.0], np.sort(rng.exponential(2.0, 10))])
    f = [kcr_objective(D, h, tau, c, np.trace(X), lam) for h in hs]
    assert np.all(np.diff(f) >= -1e-12 * max(1.0, max(f)))


@settings(max_examples=examples(25))
@given(seed=SEED)
def test_epigraph_multipliers_map_into_the_dual_box(seed):
    """Any epigraph multipliers (even outside their box, as a conic solver may return them)
    give s ∈ [0, 1]^{n×n} with max_j s_ij <= θ_i (clipped): a valid dual point; the pair share
    σ_p = w_p / (θ_i + θ_j) splits as s_ij = θ_i σ_p, s_ji = θ_j σ_p."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 8))
    I, J = np.triu_indices(n, 1)
    theta = rng.uniform(-0.2, 1.2, n)
    w = rng.uniform(-0.2, 2.5, I.size)
    omega = float(rng.uniform(-0.5, 3.0 * n))
    s = dual_weights_from_epigraph(n, I, J, theta, w, omega)
    th = np.clip(theta, 0, 1)
    assert s.shape == (n, n) and np.all((s >= 0) & (s <= 1))
    assert np.all(s.max(axis=1) <= th + 1e-15)
    for p, (i, j) in enumerate(zip(I, J, strict=True)):
        den = th[i] + th[j]
        sigma = min(1.0, max(0.0, w[p]) / den) if den > 0 else 0.0
        assert s[i, j] == pytest.approx(th[i] * sigma, abs=1e-15)
        assert s[j, i] == pytest.approx(th[j] * sigma, abs=1e-15)


# --------------------------------------------------------------------------- the set N
@pytest.mark.parametrize("n", [2, 3, 7, 20])
def test_basis_orthogonal_to_ones(n):
    V = basis_orthogonal_to_ones(n)
    assert V.shape == (n, n - 1)
    np.testing.assert_allclose(V.T @ V, np.eye(n - 1), atol=1e-13)
    np.testing.assert_allclose(V.T @ np.ones(n), 0.0, atol=1e-13)


@settings(max_examples=examples(25))
@given(seed=SEED)
def test_projection_onto_N_variational_inequality_and_permutation(seed):
    """P = project_onto_N(X) lies in N (PSD, P1 = 0) and is the nearest point:
    ⟨X − P, Y − P⟩ <= 0 for every Y ∈ N (the projection's variational inequality, checked
    on random Y = V M Vᵀ); N is invariant under permutations, so P(ΠXΠᵀ) = Π P(X) Πᵀ."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 9))
    A = rng.normal(size=(n, n))
    X = A + A.T + rng.normal() * np.ones((n, n))
    P = project_onto_N(X)
    scale = max(1.0, np.abs(X).max())
    assert np.linalg.eigvalsh(P)[0] >= -1e-12 * scale
    np.testing.assert_allclose(P @ np.ones(n), 0.0, atol=1e-12 * scale)
    V = basis_orthogonal_to_ones(n)
    for _ in range(20):
        B = rng.normal(size=(n - 1, int(rng.integers(1, n))))
        Y = V @ (B @ B.T) @ V.T
        assert np.sum((X - P) * (Y - P)) <= 1e-9 * scale * max(1.0, np.abs(Y).max())
    p = rng.permutation(n)
    np.testing.assert_allclose(project_onto_N(X[np.ix_(p, p)]), P[np.ix_(p, p)], atol=1e-10 * scale)
    np.testing.assert_allclose(project_onto_N(P), P, atol=1e-10 * scale)  # idempotent


@settings(max_examples=examples(15))
@given(seed=SEED)
def test_whitened_coordinates_reproduce_the_learned_distances(seed):
    """(T, F) = whitening(K): for every X ⪰ 0, Σ = T X Tᵀ lies in N, tr(KΣ) = tr X and the
    distances of eq. 9, (k_i − k_j)ᵀΣ(k_i − k_j), are those of F X Fᵀ."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 9))
    G = rng.normal(size=(n, n + 2))
    K = G @ G.T
    T, F = whitening(K)
    r = T.shape[1]
    B = rng.normal(size=(r, r))
    X = B @ B.T
    Sigma = T @ X @ T.T
    scale = np.abs(Sigma).max()
    np.testing.assert_allclose(Sigma @ np.ones(n), 0.0, atol=1e-10 * scale)
    assert np.trace(K @ Sigma) == pytest.approx(np.trace(X), rel=1e-8)
    D_sigma = np.array([[(K[i] - K[j]) @ Sigma @ (K[i] - K[j]) for j in range(n)] for i in range(n)])
    np.testing.assert_allclose(sq_distances_from_gram(F @ X @ F.T), D_sigma, rtol=1e-8, atol=1e-8 * D_sigma.max())


def test_whitening_refuses_a_constant_kernel():
    with pytest.raises(InvalidInputError, match="constant"):
        whitening(np.ones((4, 4)))


# --------------------------------------------------------------------------- the rule
@settings(max_examples=examples(30))
@given(seed=SEED, tie_break=st.sampled_from(["nearest", "first"]))
def test_rule_against_a_loop_and_its_invariances(seed, tie_break):
    """class_counts and rule_predict against eq. 2 by a loop; with distinct distances the
    rule is unchanged by a permutation of the training points and by scaling D and h̃
    together, and (tie_break="nearest") a renaming of the classes renames the prediction."""
    rng = np.random.default_rng(seed)
    n, m, L = int(rng.integers(3, 12)), int(rng.integers(1, 8)), int(rng.integers(2, 4))
    codes = rng.integers(0, L, n)
    D = rng.uniform(0, 2, (m, n))  # distinct with probability 1
    h = float(rng.uniform(0, 2.5))
    counts = class_counts(D, codes, L, h)
    pred = rule_predict(D, codes, L, h, tie_break)
    for q in range(m):
        want = [sum(1 for i in range(n) if codes[i] == l and D[q, i] <= h) for l in range(L)]
        assert list(counts[q]) == want
        top = [l for l in range(L) if want[l] == max(want)]
        if len(top) == 1:
            assert pred[q] == top[0]
        elif tie_break == "first":
            assert pred[q] == top[0]
        else:
            near = min((i for i in range(n) if codes[i] in top), key=lambda i: D[q, i])
            assert pred[q] == codes[near]
    p = rng.permutation(n)
    np.testing.assert_array_equal(rule_predict(D[:, p], codes[p], L, h, tie_break), pred)
    k = float(rng.uniform(0.1, 10.0))
    np.testing.assert_array_equal(rule_predict(D * k, codes, L, h * k, tie_break), pred)
    if tie_break == "nearest":
        sigma = rng.permutation(L)
        np.testing.assert_array_equal(rule_predict(D, sigma[codes], L, h, tie_break), sigma[pred])


def test_rule_refuses_an_unknown_tie_break():
    with pytest.raises(InvalidInputError, match="tie_break"):
        rule_predict(np.zeros((1, 2)), np.array([0, 1]), 2, 1.0, "random")
