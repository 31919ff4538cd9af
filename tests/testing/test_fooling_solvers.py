"""The catalogue of fooling solvers: each wrong answer is caught, with its message, through
``cross_check``, ``assert_matches_reference`` and ``check_contract``, on a library regularizer
(LogDet), on a user's regularizer the library does not ship (Jeffreys, defined here), on a
user's constraint family (``NormBounds``, a ``ConstraintAtom`` written outside the package in
tests/user_parts.py: the generic dual solver answers it) and on a user's problem class (Xing
et al.'s MMC of the gallery, whose ``solve()`` is the inherited ``Problem`` pipeline); the
honest solver (the exact model's answer wrapped by ``problem.evaluate``) passes all three."""

import copy
import dataclasses
import re
import warnings

import cvxpy as cp
import numpy as np
import pytest
from examples_loader import load
from scipy.special import wrightomega
from user_parts import NormBounds

from cvxkml.declare import LogDet, Regularizer, SpectralKernel
from cvxkml.errors import InvalidInputError
from cvxkml.sideinfo import Hinge
from cvxkml.solution import Solution
from cvxkml.testing import (
    assert_matches_reference,
    check_contract,
    cross_check,
    kernel_instance,
    trusted_reference,
    validate_answer,
    variant_instance,
)

_tutorial = load("add_a_problem_class")
MMC, random_mmc = _tutorial.MMC, _tutorial.random_mmc


class Jeffreys(Regularizer):
    """A user's regularizer: the Jeffreys (symmetrized KL) divergence f_s(x) = (x − 1) log x,
    D_J(X, I) = tr((X − I) log X), α = 1.  Conjugate over x >= 0: f_s'(x) = log x + 1 − 1/x
    = μ has the root x = 1/ω(1 − μ) (ω the Wright omega function), so
    f*_s'(μ) = 1/ω(1 − μ) and f*_s''(μ) = 1/(ω(1 + ω))."""

    name = "Jeffreys"
    alpha = 1.0
    implies_psd = True

    def f_s(self, x):
        x = np.asarray(x, dtype=float)
        return np.where(x > 0, (x - 1.0) * np.log(np.where(x > 0, x, 1.0)), np.inf)

    def cvx(self, X):
        return -cp.von_neumann_entr(X) - cp.log_det(X)

    def _omega(self, mu):
        return np.real(wrightomega(1.0 - np.asarray(mu, dtype=float)))

    def conj_grad_s(self, mu):
        return 1.0 / self._omega(mu)

    def conj_s(self, mu):
        x = self.conj_grad_s(mu)
        return x * np.asarray(mu, dtype=float) - (x - 1.0) * np.log(x)

    def conj_hess_s(self, mu):
        w = self._omega(mu)
        return 1.0 / (w * (1.0 + w))


_REGS = {"LogDet": LogDet, "Jeffreys": Jeffreys}


def _kernel(seed, reg="LogDet", hard_pairs=False):
    return variant_instance(seed, n=8, m=6, regularizer=_REGS[reg](), kernel=True, hard_pairs=hard_pairs)


def _user_family(seed, caps_only=False):
    """LogDet kernel learning under soft pairs and the user's hard NormBounds (the caps
    alone for the negative-certificate fool: the prior K0 breaks them at objective 0)."""
    K0, pc = kernel_instance(seed, 8, 6, hard=False)
    i = np.array([0, 3, 6])
    caps = NormBounds(i, 0.7 * np.diag(K0)[i])
    return SpectralKernel(K0, [caps] if caps_only else [Hinge(pc, 1.0), caps], LogDet())


#: name -> (seed -> problem, the problem of the negative-certificate fool or None: the same)
CASES = {
    "LogDet": (lambda s: _kernel(s, "LogDet"), lambda: _kernel(0, "LogDet", hard_pairs=True)),
    "Jeffreys": (lambda s: _kernel(s, "Jeffreys"), lambda: _kernel(0, "Jeffreys", hard_pairs=True)),
    "user family": (_user_family, lambda: _user_family(0, caps_only=True)),
    "MMC": (random_mmc, None),
}
_CASE_OF = {}  # id(problem) -> its case


def _make(case, seed):
    p = CASES[case][0](seed)
    _CASE_OF[id(p)] = (case, p)  # (the problem kept alive: ids stay unique)
    return p


def _metric(seed):
    return variant_instance(seed, n=8, m=6, regularizer=LogDet(), kernel=False, hard_pairs=False)


_REFS = {}


def _ref(problem):
    """The trusted exact answer of a problem (cached by identity: the fools reuse it)."""
    if id(problem) not in _REFS:
        _REFS[id(problem)] = (problem, trusted_reference(problem))
    return _REFS[id(problem)][1]


def _claims_optimum(problem, M):
    """M, claiming the optimum: the reference's objective, violations, duals and dual value."""
    return dataclasses.replace(_ref(problem), matrix=M, solver="fool")


def _skew(n, scale, seed=0):
    U = np.random.default_rng(seed).normal(size=(n, n))
    return scale * (U - U.T)


def _side(p):
    return _ref(p).matrix.shape[0]


def _prior(p):
    """A point that is not the optimum and whose objective is below it: the spectral prior
    M0 (divergence 0), or half of MMC's optimum (infeasible: Σ√d = 1/√2)."""
    return p.M0.copy() if hasattr(p, "M0") else 0.5 * _ref(p).matrix


def _flip_smallest(M):
    lam, V = np.linalg.eigh(M)
    lam[0] = -max(abs(lam[0]), 1e-3 * lam[-1])
    return (V * lam) @ V.T


_OTHER = {}


def _other(problem):
    """Another instance of the same case and size (its duals are stale for ``problem``)."""
    case = _CASE_OF[id(problem)][0]
    if case not in _OTHER:
        _OTHER[case] = _make(case, 1000)
    return _OTHER[case]


_HARD = {}


def _problem_for(name, kernel_problem):
    case = _CASE_OF[id(kernel_problem)][0]
    if name != "negative certificate" or CASES[case][1] is None:
        return kernel_problem
    if case not in _HARD:
        _HARD[case] = CASES[case][1]()
        _CASE_OF[id(_HARD[case])] = (case, _HARD[case])
    return _HARD[case]


FOOLS = {
    "liar": (lambda p: _claims_optimum(p, _prior(p)), r"reported objective .* disagrees with .* recomputed"),
    # (a bare answer: evaluate() would itself say converged=False at this gap)
    "sloppy 1e-3": (
        lambda p: (_ref(p).matrix * (1 + 1e-3), _ref(p).dual),
        # (Jeffreys curves more than LogDet: its objective is already 2e-5 above the bound;
        # the user family's hard caps are active: 1.001 K* breaks them)
        r"0.001 away from the unique optimum|above the best lower bound|fast solution infeasible",
    ),
    "wrong shape": (
        lambda p: _claims_optimum(p, _ref(p).matrix[:-1, :-1]),
        # (MMC's check_answer is Problem's default, which does not know the dimension: the
        # reference's shape, or the formulas meeting the malformed answer, catch it)
        r"has shape \((\d+), \1\)(, but .* \(\d+, \d+\)|, which the problem's formulas cannot evaluate)",
    ),
    "1-D matrix": (lambda p: _claims_optimum(p, np.diag(_ref(p).matrix)), r"has shape \(\d+,\)"),
    "None matrix": (lambda p: _claims_optimum(p, None), r"returned no matrix \(None\)"),
    "NaN": (
        lambda p: _claims_optimum(
            p, np.where(np.eye(_side(p), dtype=bool) & (np.arange(_side(p)) == 3), np.nan, _ref(p).matrix)
        ),
        r"NaN/inf entr",
    ),
    "asymmetric": (
        lambda p: _claims_optimum(p, _ref(p).matrix + _skew(_side(p), 1e-2 * np.abs(_ref(p).matrix).max())),
        r"not symmetric",
    ),
    "non-PSD": (lambda p: _claims_optimum(p, _flip_smallest(_ref(p).matrix)), r"not positive semidefinite"),
    "dual value above the optimum": (
        lambda p: dataclasses.replace(_ref(p), dual_value=_ref(p).objective + 1e-2),
        r"reported dual value .* disagrees with .* recomputed from the returned duals",
    ),
    "NaN dual value": (lambda p: dataclasses.replace(_ref(p), dual_value=np.nan), r"non-finite dual value"),
    "inf dual value": (lambda p: dataclasses.replace(_ref(p), dual_value=np.inf), r"non-finite dual value"),
    # (on the hard-pair instance: the prior violates the pairs and its divergence is below the optimum)
    # (evaluate() itself says converged=False there: the fool claims it)
    "negative certificate": (
        lambda p: dataclasses.replace(p.evaluate(_prior(p), _ref(p).dual), converged=True),
        r"Negative certificate",
    ),
    "converged without certificate": (
        lambda p: dataclasses.replace(_ref(p), dual=None, dual_value=None),
        r"converged=True but carries no certificate",
    ),
    "dual value without duals": (
        lambda p: dataclasses.replace(_ref(p), dual=None),
        r"reports a dual value .* but no duals",
    ),
    "converged=False": (lambda p: dataclasses.replace(_ref(p), converged=False), r"says converged=False"),
    "stale duals (claimed value)": (
        lambda p: dataclasses.replace(_ref(p), dual=_ref(_other(p)).dual),
        r"dual value .* recomputed from the returned duals",
    ),
    "stale duals (honest value)": (
        lambda p: p.evaluate(_ref(p).matrix, _ref(_other(p)).dual),
        r"says converged=False|own certificate does not certify",
    ),
}


def _honest(p):
    """The exact model through the conic solver (trusted: certified, retried at a tighter eps
    when the default does not certify, as for MMC seed 1), wrapped in one line."""
    ref = trusted_reference(p)
    return p.evaluate(ref.matrix, ref.dual)


@pytest.fixture(scope="module", params=list(CASES))
def kernel_problem(request):
    p = _make(request.param, 0)
    _ref(p)
    return p


def test_honest_solver_passes_everywhere(kernel_problem):
    case = _CASE_OF[id(kernel_problem)][0]
    out = cross_check([kernel_problem, _make(case, 1)], solver=_honest, rtol=1e-6)
    assert out["checked"] == 2 and not out["failures"], out["failures"]
    res = assert_matches_reference(kernel_problem, _honest(kernel_problem), _ref(kernel_problem), rtol=1e-6)
    if case == "MMC":  # no whitened geometry: the distance is not checked, and the report says so
        assert "max_distance" not in out and sum(out["distance_unchecked"].values()) == 2, out
        assert res["distance"] is None and "no whitened geometry" in res["distance_note"]
    else:
        assert out["max_distance"] <= 1e-3
        assert res["distance"] is not None and res["distance"] <= res["distance_bound"]
    # a bare matrix and (matrix, duals) are answers too
    ref = _ref(kernel_problem)
    assert not cross_check([kernel_problem], solver=lambda p: (ref.matrix, ref.dual))["failures"]
    assert not cross_check([kernel_problem], solver=lambda p: ref.matrix)["failures"]


@pytest.mark.parametrize("name", list(FOOLS))
def test_fool_is_caught_by_cross_check_and_assert_matches_reference(kernel_problem, name):
    make, match = FOOLS[name]
    p = _problem_for(name, kernel_problem)
    out = cross_check([p], solver=make, rtol=1e-6, distance_rtol=1e-4)
    assert out["checked"] == 0 and len(out["failures"]) == 1, out
    assert out["failures"][0][1].startswith("AssertionError")
    assert re.search(match, out["failures"][0][1]), out["failures"][0][1]
    with pytest.raises(AssertionError, match=match):
        assert_matches_reference(p, make(p), _ref(p), rtol=1e-6, distance_rtol=1e-4)


def test_default_distance_bound_is_sound_but_loose():
    """The bound derived from rtol = 1e-6 (strong convexity, docstring of distance_bound) is of
    order sqrt(rtol): the sloppy answer 1e-3 off the LogDet optimum passes it (x 2 margin),
    and is caught when a distance tolerance is asked for (test above)."""
    kernel_problem = _kernel(0)
    sloppy = FOOLS["sloppy 1e-3"][0](kernel_problem)
    res = assert_matches_reference(kernel_problem, sloppy, _ref(kernel_problem), rtol=1e-6)
    assert res["distance"] == pytest.approx(1e-3, rel=1e-6)
    assert 1e-3 < res["distance_bound"] < 0.1


def test_fools_on_a_metric_problem():
    """Metric objectives and violations only see quadratic forms: a skewed W with its
    objective computed honestly is caught by the symmetry check alone."""
    p = _metric(0)
    ref = _ref(p)
    skewed = p.evaluate(ref.matrix + 5 * _skew(3, 1.0), ref.dual)
    assert abs(skewed.objective - ref.objective) <= 1e-9 * max(1, abs(ref.objective))  # it looks right
    with pytest.raises(AssertionError, match="not symmetric"):
        assert_matches_reference(p, skewed, ref)
    out = cross_check([p], solver=lambda q: skewed)
    assert "not symmetric" in out["failures"][0][1]
    assert not cross_check([p], solver=_honest)["failures"]


_CONTRACT_FOOLS = [
    "liar",
    "wrong shape",
    "NaN",
    "asymmetric",
    "non-PSD",
    "NaN dual value",
    "negative certificate",
    "converged without certificate",
    "stale duals (claimed value)",
]


@pytest.mark.parametrize("name", _CONTRACT_FOOLS)
def test_fool_is_caught_by_check_contract(kernel_problem, name):
    """A problem whose solve() returns the fool's answer fails check_contract (the answer is
    validated by recomputation inside solve_fast_honestly)."""
    make, match = FOOLS[name]
    p = _problem_for(name, kernel_problem)

    class Fooled(type(p)):
        def solve(self, *args, **kwargs):
            super().solve(*args, **kwargs)  # validates the options like the real one
            return make(p)

    fooled = copy.copy(p)
    fooled.__class__ = Fooled
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(AssertionError, match=match):
            check_contract(fooled, {"tol": 1e-10})


def test_dual_value_above_trusted_optimum_is_refuted():
    """Where the bound cannot be recomputed from duals, a claimed lower bound above the trusted
    optimum is still refuted by weak duality."""
    from cvxkml._answer import check_certificate
    from cvxkml.errors import SolverError

    with pytest.raises(SolverError, match="above the trusted optimum"):
        check_certificate(2.0, 1.5, converged=True, gap_rtol=1e-6, optimum=1.0)
    assert check_certificate(2.0, 0.5, converged=True, gap_rtol=1e-6, optimum=1.0) == pytest.approx(0.75)


def test_validate_answer_returns_recomputed_numbers(kernel_problem):
    ref = _ref(kernel_problem)
    out = validate_answer(kernel_problem, ref)
    assert out.objective == kernel_problem.objective(ref.matrix)
    assert out.info["reported"]["objective"] == ref.objective


def test_cross_check_without_a_conjugate_is_a_typed_error():
    class NoConj(Regularizer):
        name = "NoConj"
        alpha = 0.0

        def f_s(self, x):
            return 0.5 * x * x

        def cvx(self, X):
            import cvxpy as cp

            return 0.5 * cp.sum_squares(X)

    with pytest.raises(InvalidInputError, match="NoConj regularizer does not implement"):
        cross_check(
            lambda s: variant_instance(s, n=6, m=4, regularizer=NoConj(), kernel=True, hard_pairs=False), n_draws=1
        )


def test_problem_evaluate_is_the_problems_own_formulas(kernel_problem):
    ref = _ref(kernel_problem)
    sol = kernel_problem.evaluate(ref.matrix, ref.dual, n_iter=3, time=0.5, note="x")
    assert isinstance(sol, Solution) and sol.converged and sol.n_iter == 3 and sol.info["note"] == "x"
    assert sol.objective == kernel_problem.objective(ref.matrix)
    assert sol.dual_value == kernel_problem.dual_value(ref.dual)
    np.testing.assert_array_equal(sol.violations, kernel_problem.violations(ref.matrix))
    assert not kernel_problem.evaluate(ref.matrix).converged  # no duals: no certificate


def test_compare_records_recomputed_curves(kernel_problem, tmp_path):
    """compare(): one row per (solver, budget); the fast solver's suboptimality reaches the
    certified optimum; a lying solver's rows carry its error instead of its claims."""
    from cvxkml.testing import compare, plot_comparison

    liar = FOOLS["liar"][0]
    rows = compare(
        kernel_problem,
        {
            "fast": lambda p, k: p.solve(max_iter=k, tol=1e-10),
            "exact": lambda p, k: _honest(p),
            "liar": lambda p, k: liar(p),
        },
        budgets=[1, 10, 1000],
    )
    assert [(r["solver"], r["budget"]) for r in rows][:3] == [("fast", 1), ("fast", 10), ("fast", 1000)]
    fast = [r for r in rows if r["solver"] == "fast"]
    assert all(r["error"] is None for r in fast)
    assert fast[-1]["converged"] and abs(fast[-1]["suboptimality"]) <= 1e-6 and fast[-1]["violation"] <= 1e-6
    assert fast[0]["suboptimality"] > fast[-1]["suboptimality"]
    assert all(r["error"] and "disagrees" in r["error"] for r in rows if r["solver"] == "liar")
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    ax = plot_comparison(rows, x="budget")
    assert len(ax.get_lines()) == 4  # fast and exact: suboptimality + violation
