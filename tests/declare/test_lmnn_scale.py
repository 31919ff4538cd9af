"""LMNN at scale: the active impostor set against the full
triplet list, the impostor scan against brute force, the certificate on a singular target pull
against the exact CVXPY model, and the span space against the feature space.

Every test checks a property that the scale machinery could break: the active-set solve must reach the
same certified optimum as the all-triplet solve and its multipliers, mapped into the full
triplet order, must give the same Lagrange bound; the scan must find exactly the triplets a
full enumeration finds; the range-restricted dual point must certify the singular-pull
instance's exact optimum (the plain bound of the same multipliers collapses); span and
features must give the same point, multipliers and bound.
"""

import warnings

import numpy as np
import pytest
from budget import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cvxkml.declare.lmnn import LMNNProblem
from cvxkml.errors import InvalidInputError
from cvxkml.formulas.lmnn import count_triplets, full_triplet_index, lmnn_dual_value, psd_pair_distances
from cvxkml.solvers.lmnn import impostor_scan

TOL = 1e-5


def points(seed, n, n_classes, d, shift=0.8):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % n_classes
    rng.shuffle(y)
    return rng.normal(size=(n, d)) + shift * y[:, None], y


@settings(max_examples=examples(10), deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(16, 160),
    n_classes=st.integers(2, 4),
    k=st.integers(1, 3),
    margin=st.sampled_from([0.0, 0.3, 2.0, np.inf]),
    cap=st.sampled_from([None, 0, 1, 3, 20]),
)
@example(seed=0, n=16, n_classes=4, k=3, margin=0.0, cap=None)  # fuzz seed 11: smallest classes of k + 1
@example(seed=3, n=40, n_classes=2, k=3, margin=np.inf, cap=3)  # the first set's nearest impostors
@example(seed=4, n=400, n_classes=2, k=2, margin=np.inf, cap=1)  # trimmed while scanning (> 64 candidates)
@example(seed=5, n=160, n_classes=3, k=2, margin=2.0, cap=20)  # trimmed at 80 candidates
@example(seed=6, n=400, n_classes=3, k=3, margin=0.3, cap=3)  # a point's k entries trimmed in the same pass
def test_impostor_scan_matches_the_full_enumeration(seed, n, n_classes, k, margin, cap):
    """Every triplet with z > −margin (less the known ones, at most cap per entry, the largest
    z, ties to the smaller impostor index) and Σ[z]_+ over all triplets, as the full list gives
    them."""
    X, y = points(seed, n, n_classes, 3)
    prob = LMNNProblem.linear(X, y, k)
    tr = prob.triplets
    rng = np.random.default_rng(seed + 1)
    Lf = rng.normal(size=(3, 3)) * rng.uniform(0.1, 2.0)
    W = X @ Lf
    p = np.einsum("ij,ij->i", W[tr.pi] - W[tr.pj], W[tr.pi] - W[tr.pj])
    z = 1.0 + p[tr.tt] - p[tr.ti]
    t_i, t_j = prob.targets
    assert np.all(np.diff(t_i) >= 0)
    all_e = np.repeat(np.arange(t_i.size), n)
    all_l = np.tile(np.arange(n), t_i.size)
    other = prob.codes[t_i[all_e]] != prob.codes[all_l]
    idx = full_triplet_index(prob.codes, t_i, all_e[other], all_l[other])
    assert np.array_equal(np.sort(idx), np.arange(tr.n_triplets))
    assert count_triplets(prob.codes, t_i) == tr.n_triplets
    known_sel = rng.random(tr.n_triplets) < 0.3
    ke, kl = all_e[other][np.argsort(idx)], all_l[other][np.argsort(idx)]  # full order
    known = np.sort(ke[known_sel] * n + kl[known_sel])
    e, l, zz, hinge, total = impostor_scan(W, prob.codes, t_i, t_j, margin, cap, known=known)
    assert hinge == pytest.approx(np.maximum(z, 0).sum(), rel=1e-10, abs=1e-10)
    assert total == int(np.sum(z > -margin))
    got = full_triplet_index(prob.codes, t_i, e, l)
    np.testing.assert_allclose(zz, z[got], rtol=1e-10, atol=1e-10)
    want = np.flatnonzero((z > -margin) & ~known_sel)
    if cap is None:
        assert np.array_equal(np.sort(got), want)
    else:
        ent = ke[want]
        per = np.bincount(ent, minlength=t_i.size)
        assert np.array_equal(np.bincount(e, minlength=t_i.size), np.minimum(per, cap))
        assert set(got) <= set(want)
        for q in np.unique(e):  # the largest z of each entry
            mine = zz[e == q]
            rest = z[want[ent == q]]
            assert mine.min() >= np.sort(rest)[::-1][len(mine) - 1] - 1e-12
        # exactly the entry's cap largest (z descending, then impostor ascending), in index order
        pick = []
        for q in range(t_i.size):
            cand = want[ent == q]
            cand = cand[np.lexsort((kl[cand], -z[cand]))][:cap]
            pick.append(np.sort(ke[cand] * n + kl[cand]))
        assert np.array_equal(e * n + l, np.concatenate(pick) if pick else np.zeros(0, np.int64))


@settings(max_examples=examples(6), deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(15, 40), n_classes=st.integers(2, 3), d=st.integers(2, 5))
@example(seed=570, n=31, n_classes=2, d=5)  # fuzz seed 44: the all-triplet PDHG stalls at 7.9e-4
def test_active_set_solve_matches_the_all_triplet_solve(seed, n, n_classes, d):
    """Same certified optimum (when both certify; weak duality across the two always); the
    active set's multipliers, in the full order, give its bound."""
    X, y = points(seed, n, n_classes, d)
    prob = LMNNProblem.linear(X, y, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = prob.solve(tol=TOL, impostors="active")
        b = prob.solve(tol=TOL, impostors="all")
    assert a.converged
    scale = max(1.0, abs(b.objective))
    if b.converged:
        assert abs(a.objective - b.objective) <= 2 * TOL * scale
    assert a.objective == pytest.approx(prob.objective_whitened(a.info["X"]), rel=1e-10, abs=1e-10)
    assert a.dual.shape == (prob.triplets.n_triplets,)
    assert prob.dual_value(a.dual, a.objective) == pytest.approx(a.dual_value, rel=1e-9, abs=1e-9)
    assert a.dual_value <= b.objective + 1e-9 * scale and b.dual_value <= a.objective + 1e-9 * scale


@settings(max_examples=examples(4), deadline=None)
@given(seed=st.integers(0, 10_000), n_classes=st.integers(2, 3), k=st.integers(1, 3))
def test_active_set_solve_reaches_the_exact_models_optimum(seed, n_classes, k):
    """The impostor scan's sets and objective carry the active-set solve to the optimum of the
    exact model (every triplet, CVXPY), certified: F within the tolerance, bound below F*."""
    X, y = points(seed, 24, n_classes, 3)
    prob = LMNNProblem.linear(X, y, k)
    ref = prob.solve_reference()
    if not ref.converged:
        pytest.skip("the conic reference did not certify")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = prob.solve(tol=TOL, impostors="active")
    assert fast.converged and fast.info["rounds"] >= 1
    scale = max(1.0, abs(ref.objective))
    assert abs(fast.objective - ref.objective) <= 1e-4 * scale
    assert fast.dual_value <= ref.objective + 1e-6 * scale
    assert fast.objective == pytest.approx(prob.objective_whitened(fast.info["X"]), rel=1e-10, abs=1e-10)


def test_active_set_takes_no_start_multipliers():
    X, y = points(0, 20, 2, 3)
    prob = LMNNProblem.linear(X, y, 2)
    with pytest.raises(InvalidInputError, match="impostors='active'"):
        prob.solve(impostors="active", alpha0=np.zeros(prob.triplets.n_triplets))
    with pytest.raises(InvalidInputError, match="impostors"):
        prob.solve(impostors="some")


def singular_pull_problem(seed):
    """The third feature is constant within every class, so no target difference sees it:
    G(0) is singular, and every triplet whose impostor is of class 2 can be satisfied for free."""
    rng = np.random.default_rng(seed)
    n = 24
    y = np.arange(n) % 3
    X = rng.normal(size=(n, 3))
    X[:, :2] += 0.7 * y[:, None]
    X[:, 2] = (y == 2).astype(float)
    return LMNNProblem.linear(X, y, k=2, gamma=0.5)


@pytest.mark.parametrize("seed", [0, 1])
def test_singular_pull_certifies_against_the_exact_model(seed):
    prob = singular_pull_problem(seed)
    tr = prob.triplets
    from cvxkml.formulas.lmnn import laplacian_quadratic, pair_weights

    G0 = laplacian_quadratic(prob.U, tr, pair_weights(tr, np.zeros(tr.n_triplets), 0.5))
    lam = np.linalg.eigvalsh(G0)
    assert lam[0] <= 1e-12 * lam[-1]  # the target pull is singular
    ref = prob.solve_reference()
    assert ref.converged
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = prob.solve(tol=TOL)
    assert fast.converged
    scale = max(1.0, abs(ref.objective))
    assert abs(fast.objective - ref.objective) <= 1e-4 * scale
    assert fast.dual_value <= ref.objective + 1e-6 * scale
    # the exact model's own multipliers certify it only through the range restriction
    g_plain = lmnn_dual_value(prob.U, tr, ref.dual, 0.5, objective_bound=ref.objective, restrict_null=False)
    g = lmnn_dual_value(prob.U, tr, ref.dual, 0.5, objective_bound=ref.objective)
    assert g >= g_plain
    assert ref.objective - g <= 1e-5 * scale
    assert g <= ref.objective + 1e-6 * scale


@settings(max_examples=examples(8), deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(12, 30), d=st.sampled_from([2, 4, 40, 60]))
@example(seed=0, n=12, d=40)
def test_span_and_feature_spaces_give_the_same_answer(seed, n, d):
    X, y = points(seed, n, 2, d, shift=0.5)
    a = LMNNProblem.linear(X, y, 2, space="features")
    b = LMNNProblem.linear(X, y, 2, space="span")
    assert LMNNProblem.linear(X, y, 2).space == ("span" if d > n else "features")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sa, sb = a.solve(tol=TOL), b.solve(tol=TOL)
    assert sb.matrix.shape == (b.rank, b.rank) and sa.matrix.shape == (d, d)
    assert sa.converged == sb.converged
    assert sa.objective == pytest.approx(sb.objective, rel=1e-9, abs=1e-9)
    assert sa.dual_value == pytest.approx(sb.dual_value, rel=1e-9, abs=1e-9)
    np.testing.assert_allclose(sa.dual, sb.dual, atol=1e-9)
    W = b.learned_metric(sb)
    A = W.get_mahalanobis_matrix()
    np.testing.assert_allclose(A, sa.matrix, atol=1e-8 * max(1.0, np.abs(sa.matrix).max()))
    # distances through the factored metric are the problem's distances
    tr = b.triplets
    p = psd_pair_distances(b.U, sb.info["X"], tr.pi, tr.pj)
    np.testing.assert_allclose(W.pair_sq_distances(X[tr.pi], X[tr.pj]), p, rtol=1e-7, atol=1e-9)


def test_an_uncertified_singular_pull_solve_states_the_reason():
    prob = singular_pull_problem(0)
    with pytest.warns(Warning, match="target pull G\\(0\\) is singular"):
        sol = prob.solve(tol=1e-12, max_iter=3)
    assert not sol.converged and sol.info["pull_null_dim"] == 1
