"""Open constraint families: atoms declared outside the package — the quadruplets of the
gallery tutorial (examples/add_a_constraint_family.py) and a bound on learned norms defined
here — work exactly like the built-in families: every space, hard or under Hinge / Squared,
several objects of one family in a problem, exact model against the certified fast solve."""

import warnings

import cvxpy as cp
import numpy as np
import pytest
from budget import examples
from examples_loader import load
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from user_parts import NormBounds

from cvxkml.declare import FactoredSpectralKernel, Frobenius, LogDet, SpectralKernel, SpectralMetric, VonNeumann
from cvxkml.declare.registry import select
from cvxkml.errors import ConvergenceWarning, InfeasibleError, InvalidInputError
from cvxkml.sideinfo import (
    ConstraintAtom,
    Hinge,
    PairConstraints,
    RelativeConstraints,
    Squared,
    atom_family,
)
from cvxkml.testing import (
    assert_matches_reference,
    factor_instance,
    kernel_instance,
    metric_instance,
    reference_or_discard,
    solve_fast_honestly,
)

_tutorial = load("add_a_constraint_family")
Quadruplets = _tutorial.Quadruplets


def _instance(seed, space):
    """(problem class, its leading args, soft pairs, F-space norms of the points, n)."""
    if space == "metric":
        X, pc = metric_instance(seed, 10, 3, 8, hard=False)
        return (lambda cons, reg: SpectralMetric(X, cons, reg)), pc, np.einsum("ij,ij->i", X, X), 10
    if space == "kernel":
        K0, pc = kernel_instance(seed, 9, 8, hard=False)
        return (lambda cons, reg: SpectralKernel(K0, cons, reg)), pc, np.diag(K0).copy(), 9
    G0, pc = factor_instance(seed, 10, 3, 8, hard=False)
    return (lambda cons, reg: FactoredSpectralKernel(G0, cons, reg)), pc, np.einsum("ij,ij->i", G0, G0), 10


def _family(kind, rng, n, norms):
    if kind == "quadruplets":
        return _tutorial.random_quadruplets(rng, n, 4, margin=0.1 * float(np.median(norms)))
    i = rng.choice(n, 3, replace=False)
    return NormBounds(i, 0.7 * norms[i])


WRAP = {"hard": lambda a: a, "hinge": lambda a: Hinge(a, 0.7), "squared": lambda a: Squared(a, 2.0)}


def _check(problem, infeasible_ok=False):
    if infeasible_ok:
        try:
            exact = reference_or_discard(problem)
        except InfeasibleError:
            # the hard families may contradict each other (random quadruplets): the fast path
            # must then never certify an answer, and the draw is discarded
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                try:
                    fast = problem.solve(tol=1e-9)
                except InfeasibleError:
                    assume(False)
            assert not fast.converged, "the exact model is infeasible but the fast solve certified"
            assume(False)
        return exact, _check_fast(problem, exact)
    exact = reference_or_discard(problem)
    return exact, _check_fast(problem, exact)


def _check_fast(problem, exact):
    fast = solve_fast_honestly(problem, tol=1e-9)
    assert fast.converged, fast.info
    assert_matches_reference(problem, fast, exact, rtol=1e-6, viol=1e-6)
    return fast


@pytest.mark.parametrize("space", ["kernel", "metric", "factored"])
@pytest.mark.parametrize("kind", ["quadruplets", "norms"])
@pytest.mark.parametrize("penalty", ["hard", "hinge", "squared"])
def test_user_family_matches_the_exact_model(space, kind, penalty):
    make, pc, norms, n = _instance(3, space)
    rng = np.random.default_rng(7)
    atom = _family(kind, rng, n, norms)
    problem = make([Hinge(pc, 1.0), WRAP[penalty](atom)], LogDet())
    assert problem.fast_solver().generic  # no native solver knows the family
    exact, fast = _check(problem)
    # the family's own values, read back through the problem's residuals
    start = len(pc)
    np.testing.assert_allclose(
        problem.residuals(fast.matrix)[start:], atom.values(problem, fast.matrix) - atom.targets(), atol=1e-12
    )
    if penalty == "hard":
        assert np.all(atom.values(problem, fast.matrix) - atom.targets() <= 1e-6 * np.maximum(1, abs(atom.targets())))
    else:
        assert np.all(fast.dual[start:] >= -1e-12)
        if penalty == "hinge":
            assert np.all(fast.dual[start:] <= 0.7 + 1e-9)


@settings(max_examples=examples(6), deadline=None)
@given(
    seed=st.integers(0, 2**20),
    space=st.sampled_from(["kernel", "metric", "factored"]),
    reg=st.sampled_from(["logdet", "frobenius", "vonneumann"]),
    penalties=st.tuples(st.sampled_from(list(WRAP)), st.sampled_from(list(WRAP))),
)
# fuzz seed 101: two hard quadruplet objects that contradict each other (exact: infeasible)
@example(seed=0, space="metric", reg="logdet", penalties=("hard", "hard"))
def test_several_objects_of_user_families_in_one_problem(seed, space, reg, penalties):
    """Two quadruplet objects and a norm bound beside soft pairs, any regularizer."""
    make, pc, norms, n = _instance(seed % 50, space)
    rng = np.random.default_rng(seed)
    regularizer = {"logdet": LogDet(), "frobenius": Frobenius(), "vonneumann": VonNeumann()}[reg]
    cons = [
        Hinge(pc, 1.0),
        WRAP[penalties[0]](_family("quadruplets", rng, n, norms)),
        WRAP[penalties[1]](_family("quadruplets", rng, n, norms)),
        Hinge(_family("norms", rng, n, norms), 0.5),
    ]
    problem = make(cons, regularizer)
    assert problem.n_constraints == len(pc) + 4 + 4 + 3
    assert [type(a).__name__ for a in problem._families()][1:] == ["Quadruplets", "Quadruplets", "NormBounds"]
    _check(problem, infeasible_ok=True)


def test_two_objects_of_a_builtin_family_go_to_the_dual_solver_and_agree():
    """Two RelativeConstraints objects: no native solver takes them (they take one object per
    family); the generic dual solver does, and matches the exact model."""
    K0, pc = kernel_instance(1, 9, 8, hard=False)
    rel = [RelativeConstraints([0, 1], [2, 3], [4, 5], [0.01, 0.01]), RelativeConstraints([6], [7], [8], [0.02])]
    problem = SpectralKernel(K0, [pc, *rel], LogDet(), gamma=1.0)
    spec, refused = select(problem, "auto")
    assert spec.generic
    assert "one object per constraint family" in refused["bregman-kernel"]
    _check(problem)


class LabelledPairs(PairConstraints):
    """A user subclass that keeps the pair family's formulas (only a constructor added)."""

    @classmethod
    def everything_similar(cls, n, bound):
        i, j = np.triu_indices(n, 1)
        return cls(i, j, np.ones(i.size), bound)


class WeightedPairs(PairConstraints):
    """A user subclass that changes the formulas: twice the distance."""

    def values(self, space, M):
        return 2.0 * super().values(space, M)

    def terms(self, F, T):
        U, w, c = super().terms(F, T)
        return U, 2.0 * w, c

    def cvx_values(self, F, T, X):
        return 2.0 * super().cvx_values(F, T, X)


def test_subclass_of_a_builtin_family_keeps_its_native_solver_unless_it_changes_the_formulas():
    K0, pc = kernel_instance(2, 8, 6, hard=False)
    same = LabelledPairs(pc.i, pc.j, pc.y, pc.bound)
    assert atom_family(same) is PairConstraints
    assert SpectralKernel(K0, same, LogDet(), gamma=1.0).fast_solver().name == "bregman-kernel"
    changed = WeightedPairs(pc.i, pc.j, pc.y, pc.bound)
    assert atom_family(changed) is WeightedPairs
    # the pair family's own treatment (bound-scaled rows, gamma) stays with built-in pairs
    problem = SpectralKernel(K0, [Hinge(changed, 1.0)], LogDet())
    assert problem.pairs is None and problem.fast_solver().generic
    exact, fast = _check(problem)
    np.testing.assert_allclose(problem.residuals(fast.matrix), changed.values(problem, fast.matrix) - changed.targets())


def test_an_incomplete_atom_is_refused_in_one_line():
    class Half(ConstraintAtom):
        def __len__(self):
            return 1

        def targets(self):
            return np.zeros(1)

    K0, pc = kernel_instance(0, 6, 4, hard=False)
    with pytest.raises(InvalidInputError, match=r"Half is a ConstraintAtom without values, terms, cvx_values"):
        SpectralKernel(K0, [pc, Half()], LogDet())
    with pytest.raises(InvalidInputError, match=r"Half is a ConstraintAtom without"):
        Hinge(Half(), 1.0)

    class NaNTargets(NormBounds):
        pass

    with pytest.raises(InvalidInputError, match=r"targets\(\) must return 1 finite numbers"):
        SpectralKernel(K0, [pc, NaNTargets(np.array([0]), np.array([np.nan]))], LogDet())
    with pytest.raises(InvalidInputError, match=r"Unsupported constraint object str"):
        SpectralKernel(K0, [pc, "pairs"], LogDet())


def test_a_family_may_bring_auxiliary_variables_to_the_exact_model():
    """cvx_values may return (expression, constraints): here the norm bound written through an
    epigraph variable s >= x_iᵀ X̂ x_i, the same optimum as the direct form."""

    class EpigraphNorms(NormBounds):
        def cvx_values(self, F, T, X):
            s = cp.Variable(len(self))
            return s, [s >= cp.sum(cp.multiply(F[self.i] @ X, F[self.i]), axis=1)]

    K0, pc = kernel_instance(4, 8, 6, hard=False)
    norms = np.diag(K0)
    plain = SpectralKernel(K0, [Hinge(pc), NormBounds(np.arange(3), 0.6 * norms[:3])], LogDet())
    epi = SpectralKernel(K0, [Hinge(pc), EpigraphNorms(np.arange(3), 0.6 * norms[:3])], LogDet())
    a, b = plain.solve_reference(), epi.solve_reference()
    assert abs(a.objective - b.objective) <= 1e-6 * max(1.0, abs(a.objective))
    assert b.gap is not None and abs(b.gap) <= 1e-6 * max(1.0, abs(b.objective))
    with pytest.raises(InvalidInputError, match=r"must return a CVXPY expression or a pair"):

        class Bad(NormBounds):
            def cvx_values(self, F, T, X):
                return (1, 2, 3)

        SpectralKernel(K0, [Hinge(pc), Bad(np.arange(2), norms[:2])], LogDet()).to_cvxpy()
