"""The exact working-set finish of the LMNN solver, for fits on which the PDHG stalls above the
optimum (the Wang et al. inner-CV fits of reference/wang2011-mkl.md).

What the solver promises (:mod:`cvxkml.solvers._lmnn_exact`): the interior-point method on the
working set returns a primal point and multipliers whose objective and Lagrange bound, each
recomputed here from the returned arrays by the formulas of :mod:`cvxkml.formulas.lmnn`, bracket
the exact model's optimum; on the whole triplet set they meet it; and a stalled fit ends
certified."""

import numpy as np
import pytest
from budget import examples
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from wang_fits import assert_fit_certifies, iris_inner_cv_poly, recomputed_gap, two_class_poly

from cvxkml.errors import InvalidInputError
from cvxkml.formulas.lmnn import (
    laplacian_quadratic,
    lmnn_dual_value,
    lmnn_objective,
    pair_weights,
    psd_pair_distances,
    pull_basis,
    reaches_null,
)
from cvxkml.solvers._lmnn_exact import exact_finish, working_set_ipm
from cvxkml.solvers.lmnn import _Ops
from cvxkml.testing import reference_or_discard

TOL = 1e-5

# Iris, the Wang et al. full protocol (reference/wang2011-mkl.md): fold 2 (index 1) of the 10
# stratified folds (seed 0), the first inner half of LMNN-MKL_CV, rows of sklearn's Iris
IRIS_FOLD1_TEST = [3, 20, 24, 26, 34, 57, 63, 70, 77, 78, 106, 125, 131, 133, 147]
IRIS_FOLD1_HALF = [
    0, 4, 6, 8, 9, 10, 12, 16, 17, 18, 19, 21, 22, 23, 29, 31, 35, 38, 41, 43, 44, 45, 50, 51,
    53, 55, 58, 62, 66, 72, 73, 75, 80, 81, 82, 83, 84, 88, 89, 93, 95, 97, 98, 99, 100, 101,
    102, 103, 104, 108, 109, 112, 114, 115, 116, 117, 118, 123, 124, 128, 129, 132, 135, 136,
    144, 148,
]  # fmt: skip


def test_stalled_iris_degree9_inner_cv_fit_ends_certified():
    """Iris fold 2, first half, polynomial degree 9 (r = 55, 14 520 triplets, about 5 000 of
    them within 1e-3 of the margin): the full-protocol run stalled at F = 0.0254527, bound
    0.0254370 (gap 1.6e-5 > 1e-5) and so did every recovery; the exact finish ends at
    F = 0.0254469 with a gap of 4e-8."""
    assert_fit_certifies(iris_inner_cv_poly(9, IRIS_FOLD1_TEST, IRIS_FOLD1_HALF), TOL)


@settings(max_examples=examples(6), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(10, 14), degree=st.sampled_from([1, 2, 3]))
@example(seed=192727, n=12, degree=1)
@example(seed=192727, n=14, degree=2)
@example(seed=13, n=12, degree=2)
def test_ipm_on_every_triplet_meets_the_exact_model(seed, n, degree):
    """With every triplet in the working set (nothing held, nothing dropped) the working-set
    problem is eq. 18 itself.  Set up as the finish sets it up — in the coordinates of
    :func:`pull_basis`, on range(G(0)) (a kernel with an offset has its constant direction in
    G(0)'s null space, which no pair sees: on the whole space X̂ is free along it and the
    method's end point drifted there, F 2.7e-7 above the optimum on the second example) — the
    interior-point answer, recomputed (F of its PSD part on every triplet, the Lagrange bound
    of its multipliers), brackets the trusted conic optimum and closes the gap to 1e-7.  The
    first example (a fuzz find) had Σα 2e-13 above F by round-off, and the bound had been
    zeroed as if its allowance were not round-off; on the third (another fuzz find) the method
    stopped where the hinge rows began to drift, 1.4e-7 relative from the optimum, until Δμ was
    taken from those rows (now 3.3e-8)."""
    prob = two_class_poly(seed, n, degree)
    ref = reference_or_discard(prob)
    tr, gamma, U = prob.triplets, prob.gamma, prob.U
    basis = pull_basis(U, tr, gamma)
    R = ~basis.null
    # the triplets that reach the null space are free, so the problem on range(G(0)) is eq. 18
    # only when there are none (the finish's null-space step handles them; tested elsewhere)
    assume(not (basis.null.any() and reaches_null(U, tr, basis.VN).any()))
    Uf = U @ basis.W
    C = laplacian_quadratic(Uf, tr, pair_weights(tr, np.zeros(tr.n_triplets), gamma))[np.ix_(R, R)]
    Du = (Uf[tr.pi] - Uf[tr.pj])[:, R]
    X, alpha, steps = working_set_ipm(C, Du[tr.tt], Du[tr.ti], gamma, 1e-10 * max(1.0, ref.objective))
    assert 0 < steps <= 100
    assert np.all((alpha > 0.0) & (alpha < gamma))
    lam, V = np.linalg.eigh(0.5 * (X + X.T))
    Xf = np.zeros((U.shape[1], U.shape[1]))
    Xf[np.ix_(R, R)] = (V * np.maximum(lam, 0.0)) @ V.T
    Xp = basis.W @ Xf @ basis.W.T
    F = lmnn_objective(psd_pair_distances(U, Xp, tr.pi, tr.pj), tr, gamma)
    g = lmnn_dual_value(U, tr, alpha, gamma, objective_bound=F)
    scale = max(1.0, ref.objective)
    assert g <= ref.objective + 1e-7 * scale  # weak duality against the trusted optimum
    assert F >= ref.objective - 1e-7 * scale
    assert F - g <= 1e-7 * scale


@settings(max_examples=examples(6), deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(10, 14),
    degree=st.sampled_from([1, 2, 3]),
    spread=st.sampled_from([0.0, 0.3, 1.0]),
)
def test_exact_finish_reports_what_its_arrays_say(seed, n, degree, spread):
    """From a start X̂₀ = I + spread·EEᵀ (so the working set, the held and the dropped triplets
    differ from draw to draw): the reported objective and bound are those of the returned
    matrix and multipliers, recomputed; α lies in [0, γ]; and the pair brackets the trusted
    conic optimum (weak duality, whatever split the start made)."""
    prob = two_class_poly(seed, n, degree)
    ref = reference_or_discard(prob)
    tr, gamma, U = prob.triplets, prob.gamma, prob.U
    r = U.shape[1]
    E = np.random.default_rng(seed).normal(size=(r, r))
    X0 = np.eye(r) + spread * (E @ E.T) / r
    ops = _Ops(np.ascontiguousarray(U), tr)
    out = exact_finish(U, tr, gamma, ops.distances, X0, np.inf, -np.inf, 1e-9)
    if out is None:  # nothing to finish: no triplet violated or within 0.1 of the margin at
        # X̂₀, or G(0) singular and every such triplet's impostor pair reaches its null space
        p0 = ops.distances(X0)
        assert np.all(1.0 + p0[tr.tt] - p0[tr.ti] < -0.1) or pull_basis(U, tr, gamma).null.any()
        return
    scale = max(1.0, ref.objective)
    assert out["matrix"] is not None and out["alpha"] is not None
    assert np.linalg.eigvalsh(out["matrix"])[0] >= -1e-12 * max(1.0, float(np.max(np.abs(out["matrix"]))))
    F = lmnn_objective(psd_pair_distances(U, out["matrix"], tr.pi, tr.pj), tr, gamma)
    assert abs(F - out["objective"]) <= 1e-9 * max(1.0, F)
    assert np.all((out["alpha"] >= 0.0) & (out["alpha"] <= gamma))
    g = lmnn_dual_value(U, tr, out["alpha"], gamma, objective_bound=out["objective"])
    assert g == pytest.approx(out["dual_value"], rel=1e-12, abs=1e-12)
    assert out["dual_value"] <= ref.objective + 1e-7 * scale
    assert out["objective"] >= ref.objective - 1e-7 * scale
    assert 1 <= out["rounds"] <= 4
    # an empty working set only when every triplet reaches G(0)'s null space (F* = 0 there)
    basis = pull_basis(U, tr, gamma)
    assert out["working_triplets"] >= 1 or (basis.null.any() and reaches_null(U, tr, basis.VN).all())


def test_exact_finish_flag_is_checked():
    prob = two_class_poly(0, 10, 2)
    with pytest.raises(InvalidInputError, match="exact_finish must be True or False"):
        prob.solve(exact_finish="yes")


@settings(max_examples=examples(4), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(16, 20), degree=st.sampled_from([3, 9]))
@example(seed=0, n=20, degree=9)
def test_finish_runs_before_the_stall_rule_and_certifies(seed, n, degree):
    """With the stall rule off the exact finish can only run early (once the certified gap is
    below 1e-2 with few triplets near the margin): a tolerance of 1e-9, which the PDHG alone
    reaches slowly if at all, is certified by it, and the certificate holds when recomputed
    from the returned matrix and multipliers (:func:`recomputed_gap`) and against the trusted
    conic optimum."""
    prob = two_class_poly(seed, n, degree)
    ref = reference_or_discard(prob)
    sol = prob.solve(tol=1e-9, max_iter=20_000, stall_iter=0)
    assert sol.converged, (sol.status, sol.objective, sol.dual_value)
    F, g = recomputed_gap(prob, sol.info["X"], sol.dual)
    assert abs(F - sol.objective) <= 1e-9 * max(1.0, F)
    assert g <= F and F - g <= 1e-9 * max(1.0, F)
    scale = max(1.0, ref.objective)
    assert g <= ref.objective + 1e-7 * scale and F >= ref.objective - 1e-7 * scale
    if "exact_finish" in sol.info:  # it ran (PDHG alone may certify a draw first)
        assert sol.info["exact_finish"]["working_triplets"] <= 1500
    if (seed, n, degree) == (0, 20, 9):  # a draw where it runs (77 triplets, one round)
        assert "exact_finish" in sol.info


def test_early_finish_skips_a_large_start():
    """``max_start``: a speculative finish returns None rather than solve a truncated set."""
    prob = two_class_poly(3, 14, 2)
    tr, U = prob.triplets, np.ascontiguousarray(prob.U)
    ops = _Ops(U, tr)
    X0 = 1e-3 * np.eye(U.shape[1])  # every triplet violated or near the margin
    p0 = ops.distances(X0)
    assert np.sum(1.0 + p0[tr.tt] - p0[tr.ti] >= -0.1) > 1
    assert exact_finish(U, tr, prob.gamma, ops.distances, X0, np.inf, -np.inf, 1e-9, max_start=1) is None
    assert exact_finish(U, tr, prob.gamma, ops.distances, X0, np.inf, -np.inf, 1e-9) is not None
