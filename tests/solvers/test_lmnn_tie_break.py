"""The least-norm tie-break of LMNN's zero face (``LMNNProblem.solve(tie_break="min-norm")``,
:mod:`cvxkml.formulas._lmnn_face`): when F* = 0 is attained by many metrics the selection is
the same metric whatever path the solver took (start, triplet order, phase), it is the
optimum of its own exact model, and it leaves problems with F* > 0 alone.

Every tolerance below sits well above the certified distance √(2·FACE_RTOL) ≈ 1.4e-5 of a
selection to the unique least-norm metric (TB5), and the paths' own answers differ by tens
of percent, so no assertion sits at a round-off edge."""

import warnings

import cvxpy as cp
import numpy as np
import pytest
from budget import examples
from hypothesis import event, given, settings
from hypothesis import strategies as st

from cvxkml.declare.lmnn import LMNNProblem
from cvxkml.errors import ConvergenceWarning, InvalidInputError
from cvxkml.formulas._lmnn_face import FACE_RTOL, min_norm_on_zero_face
from cvxkml.formulas.lmnn import LMNNTriplets, pull_basis
from cvxkml.mkl_kernels import nr_kernels

SEED = st.integers(0, 2**31 - 1)
#: relative distance two tie-broken answers may be apart: 7× the sum of their certified bounds
AGREE = 2e-4


def nr_problem(seed, n=24, classes=3, d=4, triplets=None, k=3, gamma=0.5, sigma=None):
    """NR-MKL LMNN (linear, (xᵀx' + 1)², Gaussian σ = 0.5 on standardized points): a full-rank
    Gaussian block makes F* = 0, attained by a whole face.  ``sigma``: kernel LMNN on one
    Gaussian kernel of that width instead (full rank, so F* = 0 too, unless the numerical
    rank drops)."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % classes
    X = rng.normal(size=(n, d)) + 0.8 * y[:, None]
    X = (X - X.mean(0)) / X.std(0)
    kw = {} if triplets is None else {"triplets": triplets}
    if sigma is not None:
        K = np.exp(-((X[:, None, :] - X[None, :, :]) ** 2).sum(-1) / (2 * sigma**2))
        return LMNNProblem.kernel(K, y, k, gamma, **kw), [K], y
    Ks = nr_kernels().fit_matrices(X)
    return LMNNProblem.multiple_kernels(Ks, y, k, gamma, **kw), Ks, y


def permuted(trip: LMNNTriplets, seed) -> LMNNTriplets:
    """The same triplets in a random order (the solver's accumulation order changes)."""
    entry = {(a, b): e for e, (a, b) in enumerate(zip(trip.target_i, trip.target_j))}
    ents = np.array([entry[(a, b)] for a, b in zip(trip.trip_i, trip.trip_j)])
    perm = np.random.default_rng(seed).permutation(trip.n_triplets)
    return LMNNTriplets.from_impostors(trip.codes, trip.k, trip.target_i, trip.target_j, ents[perm], trip.trip_l[perm])


def quiet_solve(prob, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return prob.solve(tol=1e-5, max_iter=5000, **kw)


def rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def three_paths(seed, tie_break, **kw):
    """The answers X̂ of three paths: the default solve; the PDHG alone on the triplets in a
    random order; a warm start at 3 × the default answer (with its multipliers)."""
    prob, Ks, y = nr_problem(seed, **kw)
    first = quiet_solve(prob)
    other, _, _ = nr_problem(seed, triplets=permuted(prob.triplets, seed + 1), **kw)
    sols = [
        quiet_solve(prob, tie_break=tie_break),
        quiet_solve(other, smooth=False, tie_break=tie_break),
        quiet_solve(prob, warm_start={"A": 3.0 * first.matrix, "alpha": first.dual}, tie_break=tie_break),
    ]
    return prob, sols


def test_paths_reach_different_optima_and_the_tie_break_makes_them_one():
    """Without the rule the warm-started path returns another member of the face (3× the
    default answer, both certified at F ≈ 0); with it the three paths return one metric."""
    prob, plain = three_paths(5, None)
    assert all(s.converged and s.objective <= 1e-8 for s in plain)
    assert rel(plain[2].info["X"], plain[0].info["X"]) > 0.5
    _, tied = three_paths(5, "min-norm")
    for s in tied:
        tb = s.info["tie_break"]
        assert s.converged and tb["applied"] and tb["certified"]
        assert tb["distance_bound"] <= np.sqrt(2 * FACE_RTOL) * 1.01
        assert s.objective <= 1e-8
        assert rel(s.info["X"], tied[0].info["X"]) <= AGREE
        # the selection has the least norm: never above a path's own optimum
        assert np.linalg.norm(s.info["X"]) <= min(np.linalg.norm(p.info["X"]) for p in plain) * (1 + 1e-9)


@settings(max_examples=examples(8), deadline=None)
@given(
    seed=SEED,
    per_class=st.integers(4, 8),
    classes=st.sampled_from([2, 3, 4]),
    k=st.integers(1, 3),
    gamma=st.floats(0.2, 0.8),
    sigma=st.sampled_from([None, 0.3, 0.7]),
)
def test_the_tie_break_is_path_independent(seed, per_class, classes, k, gamma, sigma):
    """On random NR-MKL and Gaussian kernel-LMNN instances the three paths' tie-broken metrics
    agree to AGREE, each certified (TB5), each with F ≈ 0 on the whole problem; where the face
    is empty (F* > 0) the answer is the path's, with the reason recorded."""
    n = per_class * classes  # every class has k + 1 members at least
    _, sols = three_paths(seed, "min-norm", n=n, classes=classes, k=k, gamma=gamma, sigma=sigma)
    applied = [s.info["tie_break"]["applied"] for s in sols]
    assert len(set(applied)) == 1  # the face is the data's: the same verdict on every path
    event("zero face: selection applied" if applied[0] else "F* > 0: answer left alone")
    for s in sols:
        if applied[0]:
            assert s.converged and s.info["tie_break"]["certified"]
            assert s.objective <= 1e-8
            assert rel(s.info["X"], sols[0].info["X"]) <= AGREE
        else:
            assert "F* > 0" in s.info["tie_break"]["reason"] and "path_objective" not in s.info


def reduced_model(prob):
    """(TB3) as a CVXPY model, independent of the working-set NNLS: Y ⪰ 0 on G(0)'s null space,
    b_pᵀ Y b_p ≥ 1 on every distinct impostor pair, min ‖Y‖_F²."""
    trip = prob.triplets
    VN = pull_basis(prob.U, trip, prob.gamma).VN
    pairs = np.unique(trip.ti)
    B = (prob.U[trip.pi[pairs]] - prob.U[trip.pj[pairs]]) @ VN
    Y = cp.Variable((VN.shape[1], VN.shape[1]), PSD=True)
    cons = [cp.sum(cp.multiply(B @ Y, B), axis=1) >= 1.0]
    cp.Problem(cp.Minimize(cp.sum_squares(Y)), cons).solve(solver="CLARABEL")
    return VN @ Y.value @ VN.T


@settings(max_examples=examples(6), deadline=None)
@given(seed=SEED, classes=st.sampled_from([2, 3, 4]))
def test_the_selection_is_the_exact_models_optimum(seed, classes):
    """The working-set least-distance solve against Clarabel on (TB3); the selection lies on
    the face (TB1): target distances at round-off, every impostor distance ≥ 1."""
    prob, _, _ = nr_problem(seed, n=6 * classes, classes=classes)
    sel = min_norm_on_zero_face(prob.U, prob.triplets, prob.gamma)
    assert sel.applies and sel.certified and sel.gap <= FACE_RTOL
    trip = prob.triplets
    d = prob.U[trip.pi] - prob.U[trip.pj]
    # Clarabel's point, scaled onto the face, is no smaller than the selection, and both lie
    # within their strong-convexity radii √(2 (f − g)) of the unique optimum (TB5): exact
    # whatever Clarabel's accuracy
    ref = reduced_model(prob)
    ref = ref / np.min(np.einsum("ij,jk,ik->i", d, ref, d)[trip.ti])
    f_ref, f_sel = 0.5 * np.sum(ref**2), 0.5 * sel.norm**2
    g_sel = f_sel * (1.0 - sel.gap)
    assert f_sel <= f_ref * (1 + 1e-12)
    radius = np.sqrt(2.0 * (f_ref - g_sel)) + np.sqrt(2.0 * (f_sel - g_sel))
    assert np.linalg.norm(sel.X - ref) <= radius + 1e-9 * sel.norm
    assert rel(sel.X, ref) <= 1e-3
    p = np.einsum("ij,jk,ik->i", d, sel.X, d)
    scale = np.linalg.norm(sel.X)
    assert np.all(np.abs(p[trip.target_pair]) <= 1e-10 * scale)
    assert np.all(p[trip.ti] >= 1.0 - 1e-9)


def test_a_positive_optimum_is_left_alone():
    """Linear LMNN on overlapping classes has F* > 0: no metric has F = 0, the answer is the
    solver's, with the reason recorded."""
    rng = np.random.default_rng(0)
    y = np.arange(30) % 2
    X = rng.normal(size=(30, 3)) + 0.3 * y[:, None]
    prob = LMNNProblem.linear(X, y, 3)
    plain = quiet_solve(prob)
    tied = quiet_solve(prob, tie_break="min-norm")
    assert plain.objective > 1.0
    assert not tied.info["tie_break"]["applied"] and "F* > 0" in tied.info["tie_break"]["reason"]
    assert tied.converged == plain.converged
    assert np.array_equal(tied.info["X"], plain.info["X"])


def test_tie_break_option_errors():
    prob, _, _ = nr_problem(0)
    with pytest.raises(InvalidInputError, match="tie_break"):
        prob.solve(tie_break="least")
    with pytest.raises(InvalidInputError, match="impostors='all'"):
        prob.solve(tie_break="min-norm", impostors="active")
