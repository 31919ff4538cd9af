"""One contract test over every declared problem class: the exact model is DCP and
trustworthy, bad options are typed errors, the fast solve is honest and certified and agrees
with the exact optimum through both certificates (``cvxkml.testing.check_contract``)."""

import inspect
import warnings

import numpy as np
import pytest
from budget import examples

import cvxkml.declare as declare
from cvxkml.declare.problem import Problem
from cvxkml.errors import InfeasibleError
from cvxkml.testing import UntrustedReference, check_contract, contract_cases

CASES = contract_cases()
SEEDS = range(max(3, examples(3)))
# abstract bases exported for subclassing, not problems one can build
ABSTRACT = {declare.Problem}


def _declared_problem_classes():
    return sorted(
        (
            getattr(declare, n)
            for n in declare.__all__
            if inspect.isclass(getattr(declare, n))
            and issubclass(getattr(declare, n), Problem)
            and getattr(declare, n) not in ABSTRACT
        ),
        key=lambda c: c.__name__,
    )


def test_every_declared_problem_is_a_problem_with_a_contract_case():
    """Every class of cvxkml.declare with a solve() is a Problem and has a registered case,
    so a new family cannot skip the contract test."""
    solvable = [
        getattr(declare, n)
        for n in declare.__all__
        if inspect.isclass(getattr(declare, n)) and hasattr(getattr(declare, n), "solve")
    ]
    not_problems = [c.__name__ for c in solvable if not issubclass(c, Problem)]
    assert not not_problems, f"not cvxkml.declare.Problem subclasses: {not_problems}"
    missing = [c.__name__ for c in _declared_problem_classes() if c not in CASES]
    assert not missing, f"no contract case registered for {missing}"


@pytest.mark.parametrize("cls", [c for c in _declared_problem_classes() if c in CASES], ids=lambda c: c.__name__)
def test_contract(cls):
    """Each family on several seeds: at least two draws checked (a family cannot pass by
    discarding its draws), every checked draw within the case's rtol."""
    case = CASES[cls]
    checked, discarded = [], []
    for seed in SEEDS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # (IPLR drops pairs it cannot use)
            problem = case["factory"](seed)
        assert isinstance(problem, cls)
        try:
            checked.append(check_contract(problem, case["solve_kw"], case["rtol"], case["fast"]))
        except (UntrustedReference, InfeasibleError) as exc:
            discarded.append(f"seed {seed}: {exc}")
    assert len(checked) >= 2, f"{cls.__name__}: only {len(checked)} draws checked; discarded: {discarded}"
    for out in checked:
        assert out["exact_gap"] >= -1e-7 and out["exact_gap"] <= 1e-7
        if case["fast"]:
            assert out["rel_diff"] <= case["rtol"]
            assert np.isfinite(out["fast_gap"])


class _OverclaimingITML(declare.ITML):
    """A broken fast solver: it returns its solution scaled by 1.01 and still says
    'converged' with the old certificate."""

    def solve(self, *args, **kwargs):
        sol = super().solve(*args, **kwargs)  # (validates the options)
        sol.matrix = 1.01 * sol.matrix
        sol.objective = self.objective(sol.matrix)
        sol.violations = self.violations(sol.matrix)
        return sol


class _SilentITML(declare.ITML):
    """A broken fast solver: it stops after 2 sweeps, says converged=False, but does not warn."""

    def solve(self, *args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return super().solve(*args, **{**kwargs, "max_iter": 2})


@pytest.mark.parametrize(
    "cls, match", [(_OverclaimingITML, "lower bound|infeasible|fast objective|disagrees"), (_SilentITML, "must warn")]
)
def test_check_contract_cannot_be_fooled(cls, match):
    """check_contract rejects a solver that overclaims and one that hides non-convergence."""
    from cvxkml.testing import metric_instance

    X, pc = metric_instance(0, 8, 3, 6, hard=False)
    with pytest.raises(AssertionError, match=match):
        check_contract(cls(X, pc, gamma=1.0), {"tol": 1e-10})


@pytest.mark.parametrize(
    "make, alpha",
    [
        (lambda K0, pc: declare.LogDetKernel(K0, pc), 1.0),
        (lambda K0, pc: declare.SpectralKernel(K0, pc, declare.VonNeumann()), 1.0),
        (lambda K0, pc: declare.SpectralKernel(K0, pc, declare.Frobenius()), 0.0),
        (lambda K0, pc: declare.VonNeumannKernel(K0, pc), 0.0),
        (lambda K0, pc: declare.TraceSSIKDR(K0, pc, tau=1.0), 0.0),
    ],
    ids=["logdet", "jain-vn", "frobenius", "kulis-vn", "trace"],
)
def test_learned_kernel_picks_alpha_and_reproduces_the_solution(make, alpha):
    """problem.learned_kernel(solution, base, X) uses the α of eq. 18 (Theorem 4; 0 for
    Kulis' von Neumann problem) and, on the training points, gives back K* itself."""
    from cvxkml.kernels import Kernel
    from cvxkml.sideinfo import PairConstraints

    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, 3))
    base = Kernel("gaussian", {"gamma": 0.3})
    K0 = base(X, X)
    pc = PairConstraints([0, 1, 2], [3, 4, 5], [1, -1, 1], [0.5, 1.5, 0.4])
    problem = make(K0, pc)
    sol = problem.solve(tol=1e-10)
    lk = problem.learned_kernel(sol, base, X)
    assert lk.alpha == alpha
    np.testing.assert_allclose(lk(X), sol.matrix, atol=1e-9 * np.abs(sol.matrix).max())
    Z = rng.normal(size=(4, 3))
    np.testing.assert_allclose(lk(Z, X), lk(X, Z).T, atol=1e-12)


def test_learned_kernel_refuses_what_it_cannot_extend():
    from cvxkml.errors import InvalidInputError
    from cvxkml.kernels import Kernel
    from cvxkml.testing import kernel_instance, metric_instance

    X, pc = metric_instance(0, 8, 3, 4, hard=True)
    itml = declare.ITML(X, pc)
    with pytest.raises(InvalidInputError, match="LearnedMetric"):
        itml.learned_kernel(itml.solve(), Kernel("linear"), X)
    K0, kpc = kernel_instance(0, 7, 4, hard=False)
    sdp = declare.SDPLogDetKernel(K0, kpc, np.eye(7), 1.0)
    with pytest.raises(InvalidInputError, match="no extension of its learned kernel"):
        sdp.learned_kernel(sdp.solve(), Kernel("linear"), np.eye(7))
    lk = declare.LogDetKernel(K0, kpc, gamma=1.0)
    with pytest.raises(InvalidInputError, match="training points"):
        lk.learned_kernel(lk.solve(), Kernel("linear"), np.eye(5))
