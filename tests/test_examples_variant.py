"""examples/declare_a_variant.py: each declared variant gets exact and fast Solutions that
agree to 1e-6 relative with certified gaps; the user's solver passes cross_check."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from cvxkml.testing import assert_matches_reference, check_regularizer

_PATH = Path(__file__).parents[1] / "examples" / "declare_a_variant.py"
spec = importlib.util.spec_from_file_location("declare_a_variant", _PATH)
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)


@pytest.mark.parametrize("variant", ["variant_a", "variant_b", "variant_c"])
def test_variant_exact_and_fast_agree(variant):
    problem, exact, fast = getattr(example, variant)()
    assert exact.status == "optimal" and fast.converged
    assert fast.solver.startswith("dual-newton")
    scale = max(1.0, abs(exact.objective))
    assert abs(exact.gap) <= 1e-6 * scale and -1e-9 * scale <= fast.gap <= 1e-6 * scale
    assert_matches_reference(problem, fast, exact, rtol=1e-6)


def test_the_new_regularizer_is_checked():
    reg = example.LogDetFrobenius(0.3)
    check_regularizer(reg)
    reg.conj_grad_s = lambda mu: 1.01 * reg._x(mu)          # a wrong conjugate gradient
    with pytest.raises(AssertionError):
        check_regularizer(reg)


def test_validate_my_solver():
    tally = example.validate_my_solver(n_draws=4)
    assert tally["checked"] == 4 and not tally["failures"]


def test_variant_d_extension_is_certified_by_the_conic_dual():
    import cvxpy as cp

    from cvxkml.errors import InvalidInputError
    problem, exact = example.variant_d()
    scale = max(1.0, abs(exact.objective))
    assert exact.status == "optimal" and 0 <= exact.gap <= 1e-6 * scale
    # the objective includes the term, evaluated on the returned matrix
    W = exact.matrix
    off = np.abs(W - np.diag(np.diag(W))).sum()
    assert exact.objective == pytest.approx(problem.base.objective(W, exact.slack) + 0.5 * off, rel=1e-12)
    assert exact.info["term"] == pytest.approx(0.5 * off, rel=1e-10)
    # the term changes the optimum, and a zero term gives back the base optimum
    base = problem.base.solve_reference()
    assert exact.objective > base.objective + 1e-3
    zero = problem.base.extend(term=lambda W: 0 * cp.sum(cp.abs(W))).solve_reference()
    assert zero.objective == pytest.approx(base.objective, rel=1e-6)
    # the extension's contract: no fast solver, DCP terms only, constraints listed in violations
    with pytest.raises(InvalidInputError, match="no fast solver"):
        problem.solve()
    with pytest.raises(InvalidInputError, match="convex scalar"):
        problem.base.extend(term=lambda W: -cp.sum(cp.abs(W)))
    capped = problem.base.extend(constraints=lambda W: [cp.trace(W) <= 0.5 * np.trace(base.matrix)])
    sol = capped.solve_reference()
    assert np.trace(sol.matrix) <= 0.5 * np.trace(base.matrix) * (1 + 1e-6)
    assert sol.violations.size == problem.base.n_constraints + 1 and sol.max_violation <= 1e-6
    assert sol.dual_value <= sol.objective + 1e-6 * max(1.0, abs(sol.objective))
