"""``extend(term=…, constraints=…)`` on the non-spectral families (LMNN, KCR, the MKL weight
steps, Yeung's two QPs) and the guard against a fast solver answering the parent problem.

Each extended exact answer is checked against an independently written CVXPY model of the
same extended problem (objective within ``RTOL`` relative, extra constraints satisfied), its
certificate against that optimum (the conic dual objective is a lower bound on it, the gap
closes), and its reported objective against a recomputation at the returned point.
"""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest
from budget import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.linalg import null_space

from cvxkml.declare import (
    KCR,
    EmbeddingWeightProblem,
    ExtendedProblem,
    LMNNProblem,
    MuWeightStep,
    RankOneWeightStep,
    SpectralReweighting,
)
from cvxkml.declare.extend import check_fast_solver_applies
from cvxkml.declare.mkl import CallablePObjective, WeightStepSolution
from cvxkml.errors import ConvergenceWarning, InvalidInputError
from cvxkml.kernels import gaussian_kernel

#: relative agreement asked of the extended exact answer and the independent model
RTOL = 1e-6
#: KCR: Clarabel on the reduced model stops 1e-7 … 1e-6 from the optimum (its inaccurate_rtol is 1e-4)
KCR_RTOL = 1e-5


def _labelled(seed, n, d=3, shift=0.8):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    return rng.normal(size=(n, d)) + shift * y[:, None], y


def _lmnn_literal(Z, prob, term, cons):
    """Eq. 18 written over A ⪰ 0 (D × D) on the raw features, plus term and constraints."""
    tr = prob.triplets
    A = cp.Variable((Z.shape[1], Z.shape[1]), PSD=True)
    Zp = Z[tr.pi] - Z[tr.pj]
    d = cp.sum(cp.multiply(Zp @ A, Zp), axis=1)
    xi = cp.Variable(tr.n_triplets, nonneg=True)
    obj = (1 - prob.gamma) * (tr.target_weight @ d) + prob.gamma * cp.sum(xi) + term(A)
    p = cp.Problem(cp.Minimize(obj), [d[tr.ti] - d[tr.tt] + xi >= 1] + cons(A))
    p.solve(solver="CLARABEL")
    return p.value


# --------------------------------------------------------------------------- the families
def case_lmnn(rank_deficient=False):
    X, y = _labelled(0, 14)
    if rank_deficient:  # a 4th feature = x1 + x2: A has a complement block
        X = np.hstack([X, X[:, :1] + X[:, 1:2]])
    prob = LMNNProblem.linear(X, y, 2, 0.5)
    term = lambda A: 0.5 * cp.trace(A)
    cons = lambda A: [A[0, 0] <= 0.3]
    return prob, term, cons, lambda: _lmnn_literal(X, prob, term, cons), (lambda s: (s.matrix,))


def case_kcr():
    X, y = _labelled(1, 10, shift=1.0)
    K = gaussian_kernel(X, sigma=1.5)
    prob = KCR(K, y, 1.0)
    term = lambda S: 0.2 * cp.sum(cp.abs(S))
    cons = lambda S: [cp.trace(S) <= 0.5]

    def independent():
        # eq. 9 as printed (explicit double loop), Σ = V M Vᵀ with V from scipy's null space of 1ᵀ
        n = K.shape[0]
        V = null_space(np.ones((1, n)))
        M = cp.Variable((n - 1, n - 1), PSD=True)
        h = cp.Variable()
        S = V @ M @ V.T
        B = K @ S @ K
        same = y[:, None] == y[None, :]
        rows = []
        for i in range(n):
            inner = [cp.pos(1 + (1 if same[i, j] else -1) * (B[i, i] + B[j, j] - 2 * B[i, j] - h)) for j in range(n)]
            rows.append(cp.pos(2 - int(same[i].sum()) + sum(inner)))
        p = cp.Problem(cp.Minimize(sum(rows) + cp.trace(K @ S) + term(S)), [h >= 1e-6] + cons(S))
        p.solve(solver="CLARABEL")
        return p.value

    return prob, term, cons, independent, (lambda s: (s.matrix, s.info["h"]))


def _quadratic(seed=2, m=3):
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(m, m + 2))
    return G @ G.T / (m + 2) + 0.1 * np.eye(m), rng.normal(size=m)


def case_rank_one():
    C, _ = _quadratic()
    prob = RankOneWeightStep(CallablePObjective(3, lambda P: cp.sum(cp.multiply(C, P)), lambda P: float(np.sum(C * P))))
    term = lambda P: 0.3 * cp.trace(P)
    cons = lambda P: [P[0, 0] <= 0.1]

    def independent():
        P = cp.Variable((3, 3), PSD=True)
        p = cp.Problem(cp.Minimize(cp.trace(C @ P) + term(P)), [cp.sum(P) == 1, P >= 0] + cons(P))
        p.solve(solver="CLARABEL")
        return p.value

    return prob, term, cons, independent, (lambda s: (s.matrix,))


def case_mu():
    C, c = _quadratic()
    prob = MuWeightStep(lambda mu: cp.quad_form(mu, C) + c @ mu, m=3)
    term = lambda mu: 0.2 * cp.norm1(mu - 1.0 / 3.0)
    cons = lambda mu: [mu[1] >= 0.3]

    def independent():
        mu = cp.Variable(3, nonneg=True)
        p = cp.Problem(cp.Minimize(cp.quad_form(mu, C) + c @ mu + term(mu)), [cp.sum(mu) == 1] + cons(mu))
        p.solve(solver="CLARABEL")
        return p.value

    return prob, term, cons, independent, (lambda s: (s.matrix,))


def case_reweighting():
    X, _ = _labelled(3, 12, shift=1.0)
    pairs = np.array([[0, 2], [1, 3], [4, 6], [5, 7], [8, 10]])
    prob = SpectralReweighting.from_kernel(gaussian_kernel(X, sigma=2.0), pairs)
    term = lambda b: 0.1 * cp.norm1(b)
    cons = lambda b: [b >= 0.01]

    def independent():
        b = cp.Variable(prob.n_components)
        p = cp.Problem(
            cp.Minimize(cp.sum(cp.multiply(prob.d, cp.square(b))) + term(b)), [cp.sum(b) == prob.c] + cons(b)
        )
        p.solve(solver="CLARABEL")
        return p.value

    return prob, term, cons, independent, (lambda s: (s.info["beta"],))


def case_embedding():
    rng = np.random.default_rng(4)
    A = rng.normal(size=(5, 3))
    prob = EmbeddingWeightProblem(A @ A.T + 0.1 * np.eye(5))
    term = lambda w: 0.5 * cp.norm1(w)
    cons = lambda w: [w >= 0]

    def independent():
        w = cp.Variable(5)
        p = cp.Problem(cp.Minimize(cp.quad_form(w, prob.G_eff) + term(w)), [cp.sum(w) == 1] + cons(w))
        p.solve(solver="CLARABEL")
        return p.value

    return prob, term, cons, independent, (lambda s: (s.matrix,))


CASES = {
    "lmnn": case_lmnn,
    "lmnn-rank-deficient": lambda: case_lmnn(rank_deficient=True),
    "kcr": case_kcr,
    "mkl-P": case_rank_one,
    "mkl-mu": case_mu,
    "yeung-beta": case_reweighting,
    "yeung-w": case_embedding,
}


@pytest.mark.parametrize("name", list(CASES))
def test_extended_exact_answer_matches_an_independent_model(name):
    prob, term, cons, independent, args_of = CASES[name]()
    ext = prob.extend(term=term, constraints=cons)
    assert isinstance(ext, ExtendedProblem) and ext.to_cvxpy().is_dcp()
    sol = ext.solve_reference()
    rtol = KCR_RTOL if name == "kcr" else RTOL
    want = independent()
    scale = max(1.0, abs(want))
    assert sol.converged and sol.status == "optimal", sol
    assert abs(sol.objective - want) <= rtol * scale, (sol.objective, want)
    # the certificate: the conic dual objective bounds the true optimum from below, and closes
    assert sol.dual_value <= want + rtol * scale
    assert -rtol * scale <= sol.gap <= rtol * scale
    assert sol.info["relative_gap"] <= ext.inaccurate_rtol
    # the reported objective is the base objective plus the term at the returned point
    args = args_of(sol)
    assert sol.objective == pytest.approx(ext.objective(*args), rel=1e-9, abs=1e-12)
    assert sol.info["term"] == pytest.approx(ext.term_value(args[0]), rel=1e-9, abs=1e-12)
    assert sol.objective == pytest.approx(prob.objective(*args) + sol.info["term"], rel=1e-9, abs=1e-12)
    # the extra constraints are listed after the family's and hold at the answer
    base_viol = prob.violations(*args)
    assert sol.violations.size == base_viol.size + len(cons(ext.extension_probe()[0]))
    assert sol.max_violation <= rtol * scale
    # the extension changed the problem: its optimum is above the parent's
    parent = prob.solve_reference()
    assert sol.objective > parent.objective + 1e-3 * max(1.0, abs(parent.objective))
    if isinstance(prob, (RankOneWeightStep, MuWeightStep)):
        assert isinstance(sol, WeightStepSolution) and sol.mu.shape == (3,)
    # never the parent's fast answer
    with pytest.raises(
        InvalidInputError,
        match=rf"An extended {type(prob).__name__} has no fast solver: "
        rf"{type(prob).__name__}\.solve\(\) answers the {type(prob).__name__} problem "
        r"without the extra term and constraints\. Use solve_reference\(\)",
    ):
        ext.solve()


def test_lmnn_extension_models_the_complement_of_the_row_space():
    """With a rank-deficient Z the term tr(A) sees the block of A no distance sees: the
    extension must set it to 0 (the literal model's optimum), not keep the whitened start I."""
    prob, term, cons, independent, _ = case_lmnn(rank_deficient=True)
    assert prob.rank < prob.dim
    sol = prob.extend(term=term).solve_reference()
    Q, _ = prob._full_basis()
    N = Q[:, prob.rank :]
    assert np.abs(N.T @ sol.matrix @ N).max() <= 1e-6
    assert np.linalg.eigvalsh(sol.matrix)[0] >= -1e-8


# --------------------------------------------------------------------------- subclasses
def _subclass_instances():
    """One subclass per family that adds a term to the model (objective and to_cvxpy) but
    keeps the inherited fast solve()."""
    X, y = _labelled(0, 14)

    class LMNNPlusTrace(LMNNProblem):
        def objective(self, A):
            return super().objective(A) + 0.5 * float(np.trace(A))

        def to_cvxpy(self, whiten=True):
            p = super().to_cvxpy(whiten=False)
            return cp.Problem(cp.Minimize(p.objective.args[0] + 0.5 * cp.trace(p.var_dict["A"])), p.constraints)

    Xk, yk = _labelled(1, 10, shift=1.0)

    class KCRPlusL1(KCR):
        def objective(self, Sigma, h):
            return super().objective(Sigma, h) + 0.2 * float(np.abs(Sigma).sum())

    C, c = _quadratic()

    class RankOnePlus(RankOneWeightStep):
        def to_cvxpy(self):
            p = super().to_cvxpy()
            return cp.Problem(cp.Minimize(p.objective.args[0] + cp.trace(p.var_dict["P"])), p.constraints)

    class MuPlus(MuWeightStep):
        def objective(self, mu):
            return super().objective(mu) + float(np.abs(mu).sum())

    class ReweightPlus(SpectralReweighting):
        def objective(self, beta):
            return super().objective(beta) + 0.1 * float(np.abs(beta).sum())

    class EmbeddingPlus(EmbeddingWeightProblem):
        def violations(self, w):
            return np.append(super().violations(w), max(0.0, -float(np.min(w))))

    rng = np.random.default_rng(4)
    A = rng.normal(size=(5, 3))
    pairs = np.array([[0, 2], [1, 3], [4, 6], [5, 7], [8, 10]])
    return [
        (LMNNPlusTrace.linear(X, y, 2, 0.5), r"to_cvxpy\(\), objective", "LMNNProblem"),
        (KCRPlusL1(gaussian_kernel(Xk, sigma=1.5), yk, 1.0), "objective", "KCR"),
        (
            RankOnePlus(CallablePObjective(3, lambda P: cp.trace(C @ P), lambda P: float(np.sum(C * P)))),
            r"to_cvxpy",
            "RankOneWeightStep",
        ),
        (MuPlus(lambda mu: cp.quad_form(mu, C) + c @ mu, m=3), "objective", "MuWeightStep"),
        (
            ReweightPlus.from_kernel(gaussian_kernel(_labelled(3, 12)[0], sigma=2.0), pairs),
            "objective",
            "SpectralReweighting",
        ),
        (EmbeddingPlus(A @ A.T + 0.1 * np.eye(5)), "violations", "EmbeddingWeightProblem"),
    ]


def test_a_subclass_that_changes_the_model_cannot_use_the_parents_fast_solver():
    for prob, method, parent in _subclass_instances():
        sub = type(prob).__name__
        with pytest.raises(
            InvalidInputError,
            match=(
                rf"^{sub} redefines {method}\(\) but inherits solve\(\) from {parent}, whose fast "
                rf"solver answers {parent}'s own problem only \(it would return and certify the "
                rf"parent's optimum\)\. Use {parent}\(\.\.\.\)\.extend\(term=\.\.\., constraints=\.\.\.\) "
                r"and its solve_reference\(\) \(the exact model\), or override solve\(\)"
            ),
        ):
            prob.solve()


def test_lmnn_subclass_with_a_term_is_refused_where_the_parent_answer_is_below_the_optimum():
    """A subclass that adds a term must not inherit a wrong certified answer: the inherited fast
    solve answered the parent problem with converged=True below the extended problem's exact optimum.
    Here the parent's certified answer is below the extension's exact optimum too, and the
    subclass's solve() is now a typed error instead."""
    prob, _, _, _, _ = case_lmnn()
    sub = _subclass_instances()[0][0]
    term = lambda A: 0.5 * cp.trace(A)
    parent = prob.solve(tol=1e-7)
    exact = prob.extend(term=term).solve_reference()
    assert parent.converged and exact.converged
    assert parent.objective < exact.objective - 1e-3 * exact.objective  # the wrong answer it gave
    # the subclass's own objective agrees with the extension (same problem) …
    assert sub.objective(exact.matrix) == pytest.approx(exact.objective, rel=1e-7)
    # … and its inherited fast solve refuses instead of answering the parent
    with pytest.raises(InvalidInputError, match="inherits solve\\(\\) from LMNNProblem"):
        sub.solve()

    # a subclass that states its solve() answers its model is the user's call, and passes
    class Stated(type(sub)):
        def solve(self, *a, **kw):
            return "own solver"

    stated = object.__new__(Stated)
    stated.__dict__.update(sub.__dict__)
    check_fast_solver_applies(stated)
    assert stated.solve() == "own solver"


# --------------------------------------------------------------------------- contract edges
def _itml_case():
    from cvxkml import ITML
    from cvxkml.testing import metric_instance

    X, pc = metric_instance(5, 8, 3, 10, hard=False)
    return ITML(X, pc, gamma=1.0), (lambda W: 0.3 * cp.trace(W)), (lambda W: [W[0, 0] <= 0.5])


@pytest.mark.parametrize("name", ["lmnn", "kcr", "yeung-w", "itml"])
def test_extending_an_extension_keeps_both(name):
    """e.extend(t2, c2) of e = p.extend(t1, c1) is p with t1 + t2 and c1 then c2 (it used to
    reach p.extend through the attribute pass-through and drop t1 and c1)."""
    prob, term, cons, *_ = _itml_case() if name == "itml" else CASES[name]()
    half = lambda X: 0.5 * term(X)
    once = prob.extend(term=term, constraints=cons)
    a = once.solve_reference()
    X = a.matrix
    for e in (
        prob.extend(term=half, constraints=cons).extend(term=half),
        prob.extend(term=half).extend(constraints=cons).extend(term=half),
    ):
        assert isinstance(e, ExtendedProblem) and e.base is prob
        assert e.term_value(X) == pytest.approx(once.term_value(X), rel=1e-12)
        assert e.extra_violations(X).size == once.extra_violations(X).size > 0
    b = e.solve_reference()
    assert a.converged and b.converged
    assert b.objective == pytest.approx(a.objective, rel=1e-6, abs=1e-9)
    with pytest.raises(InvalidInputError, match="must return a convex scalar CVXPY expression"):
        once.extend(term=lambda X: -cp.sum(cp.abs(X)))


def test_extend_rejects_what_it_cannot_model():
    prob, *_ = case_kcr()
    with pytest.raises(
        InvalidInputError,
        match=r"term\(Sigma\) must return a convex scalar CVXPY "
        r"expression of the 10 × 10 matrix Sigma \(DCP\)",
    ):
        prob.extend(term=lambda S: -cp.sum(cp.abs(S)))
    with pytest.raises(InvalidInputError, match=r"constraints\(mu\) must return a list of CVXPY constraints"):
        case_mu()[0].extend(constraints=lambda mu: mu[0] <= 0.5)
    with pytest.raises(InvalidInputError, match="needs a term, constraints, or both"):
        case_embedding()[0].extend()
    with pytest.raises(InvalidInputError, match=r"term must be a function of the learned vector beta"):
        case_reweighting()[0].extend(term=3.0)
    with pytest.raises(InvalidInputError, match="use solver='CLARABEL' or 'SCS'"):
        case_embedding()[0].extend(term=lambda w: cp.norm1(w)).solve_reference(solver="ECOS")


def test_converged_only_when_the_certificate_holds(monkeypatch):
    """Status optimal is not enough: a conic dual objective that does not close the gap
    gives converged=False, the reason in info and one ConvergenceWarning."""
    import cvxkml.declare.extend as extend_mod

    real = extend_mod.solve_conic_bound

    def loose(*a, **kw):
        elapsed, status, iters, bound = real(*a, **kw)
        return elapsed, status, iters, bound - 1.0

    monkeypatch.setattr(extend_mod, "solve_conic_bound", loose)
    prob, term, cons, *_ = case_mu()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        sol = prob.extend(term=term, constraints=cons).solve_reference()
    assert sol.status == "optimal" and not sol.converged
    assert sol.info["certificate_failed"].startswith("relative gap")
    assert [w.category for w in rec].count(ConvergenceWarning) == 1


# --------------------------------------------------------------------------- property
@settings(max_examples=examples(8), deadline=None)
@given(
    family=st.sampled_from(["lmnn", "lmnn-kernel", "kcr", "mu", "w"]),
    seed=st.integers(0, 2**31 - 1),
    weight=st.floats(0.01, 2.0),
    level=st.floats(0.2, 0.9),
)
@example(family="lmnn-kernel", seed=1546752, weight=0.01, level=0.6796875)  # F(A) 9e-9 off F(X̂)
def test_extension_agrees_with_an_independent_model_on_random_draws(family, seed, weight, level):
    """Random instance, term weight and constraint level: the extended exact answer is
    certified and equals an independent model's optimum (or both say infeasible)."""
    rng = np.random.default_rng(seed)
    if family in ("lmnn", "lmnn-kernel"):
        n = int(rng.integers(10, 15))
        X, y = _labelled(seed, n, d=int(rng.integers(2, 4)))
        if family == "lmnn":
            Z = np.hstack([X, X @ rng.normal(size=(X.shape[1], 1))]) if rng.random() < 0.5 else X
            prob = LMNNProblem.linear(Z, y, 2, 0.5)
        else:  # a linear kernel: rank d < n, A has a complement block
            Z = X @ X.T
            Z = Z / np.mean(np.diag(Z))
            prob = LMNNProblem.kernel(Z, y, 2, 0.5)
        bound = level * float(np.trace(prob.solve_reference().matrix))
        term = lambda A: weight * cp.sum(cp.abs(A))
        cons = lambda A: [cp.trace(A) <= bound]
        independent = lambda: _lmnn_literal(Z, prob, term, cons)
        args_of, rtol = (lambda s: (s.matrix,)), RTOL
    elif family == "kcr":
        X, y = _labelled(seed, 8, shift=1.0)
        prob = KCR(gaussian_kernel(X, sigma=1.5), y, 1.0)
        term = lambda S: weight * cp.sum(cp.abs(S))
        cons = lambda S: [cp.trace(S) <= level]
        K = prob.K

        def independent():
            V = null_space(np.ones((1, 8)))
            M = cp.Variable((7, 7), PSD=True)
            h = cp.Variable()
            S = V @ M @ V.T
            B = K @ S @ K
            same = y[:, None] == y[None, :]
            rows = [
                cp.pos(
                    2
                    - int(same[i].sum())
                    + sum(
                        cp.pos(1 + (1 if same[i, j] else -1) * (B[i, i] + B[j, j] - 2 * B[i, j] - h)) for j in range(8)
                    )
                )
                for i in range(8)
            ]
            p = cp.Problem(cp.Minimize(sum(rows) + cp.trace(K @ S) + term(S)), [h >= 1e-6] + cons(S))
            p.solve(solver="CLARABEL")
            return p.value

        args_of, rtol = (lambda s: (s.matrix, s.info["h"])), KCR_RTOL
    elif family == "mu":
        C, c = _quadratic(seed % 1000)
        prob = MuWeightStep(lambda mu: cp.quad_form(mu, C) + c @ mu, m=3)
        term = lambda mu: weight * cp.norm1(mu - 1.0 / 3.0)
        cons = lambda mu: [mu[int(seed % 3)] >= level * 0.5]

        def independent():
            mu = cp.Variable(3, nonneg=True)
            p = cp.Problem(cp.Minimize(cp.quad_form(mu, C) + c @ mu + term(mu)), [cp.sum(mu) == 1] + cons(mu))
            p.solve(solver="CLARABEL")
            return p.value

        args_of, rtol = (lambda s: (s.matrix,)), RTOL
    else:
        k = int(rng.integers(3, 7))
        A = rng.normal(size=(k, int(rng.integers(1, k + 1))))
        prob = EmbeddingWeightProblem(A @ A.T + 0.05 * np.eye(k))
        term = lambda w: weight * cp.norm1(w)
        cons = lambda w: [w >= -level]

        def independent():
            w = cp.Variable(k)
            p = cp.Problem(cp.Minimize(cp.quad_form(w, prob.G_eff) + term(w)), [cp.sum(w) == 1] + cons(w))
            p.solve(solver="CLARABEL")
            return p.value

        args_of, rtol = (lambda s: (s.matrix,)), RTOL
    sol = prob.extend(term=term, constraints=cons).solve_reference()
    want = independent()
    scale = max(1.0, abs(want))
    assert sol.converged, sol
    assert abs(sol.objective - want) <= rtol * scale, (sol.objective, want)
    assert sol.dual_value <= want + rtol * scale
    assert sol.max_violation <= rtol * scale
    assert sol.objective == pytest.approx(prob.objective(*args_of(sol)) + sol.info["term"], rel=1e-6)
    if family.startswith("lmnn"):  # F through A = Q Ŵ Qᵀ loses cond(S)²; through X̂'s factor it is exact
        assert sol.objective == pytest.approx(
            prob.objective_whitened(sol.info["X"]) + sol.info["term"], rel=1e-9, abs=1e-12
        )
    else:
        assert sol.objective == pytest.approx(prob.objective(*args_of(sol)) + sol.info["term"], rel=1e-9, abs=1e-12)


def test_extension_keeps_the_family_size_guard():
    """An extended KCR is as costly as KCR: the size guard uses KCR's measured limit, not
    the (larger) limit measured for spectral extensions."""
    from cvxkml.declare._limits import EXACT_LIMITS
    from cvxkml.errors import SolverError

    X, y = _labelled(5, 2 * EXACT_LIMITS["KCR"] + 4, shift=1.0)
    ext = KCR(gaussian_kernel(X, sigma=1.5), y, 1.0).extend(term=lambda S: cp.trace(S))
    assert ext.exact_limit() == EXACT_LIMITS["KCR"] < EXACT_LIMITS["ExtendedProblem"]
    with pytest.raises(SolverError, match="more than 2x the largest size"):
        ext.solve_reference()
