"""examples/declare_a_variant.py: each declared variant gets exact and fast Solutions that
agree to 1e-6 relative with certified gaps; the user's solver passes cross_check."""
import importlib.util
from pathlib import Path

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
