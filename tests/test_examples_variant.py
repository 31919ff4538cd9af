"""examples/declare_a_variant.py: each declared variant gets exact and fast Solutions that
agree to 1e-6 relative with certified gaps; the user's solver passes cross_check."""

import numpy as np
import pytest
from examples_loader import load

from cvxkml.testing import assert_matches_reference, check_regularizer

example = load("declare_a_variant")


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
    reg.conj_grad_s = lambda mu: 1.01 * reg._x(mu)  # a wrong conjugate gradient
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


# ---------------------------------------------------------------- examples/scale_a_variant.py
def _load_scale_example():
    return load("scale_a_variant")


def test_scale_example_quick_is_certified_at_every_size(capsys):
    """``--quick``: dense n = 60, 100 and factored n = 2 000 (r = 100) certified; each answer
    recomputed from its primal and duals (never trusted); the factored solve works on r × r."""
    from cvxkml.testing import validate_answer

    scale = _load_scale_example()
    rows = scale.main(["--quick"])
    out = capsys.readouterr().out
    assert [r["label"] for r in rows] == ["dense n = 60", "dense n = 100", "factored n = 2000, r = 100"]
    for r in rows:
        assert r["converged"] and -1e-9 <= r["rel_gap"] <= 1e-6 and r["max_violation"] <= 1e-6, r
        assert r["label"] in out and f"{r['iterations']:>5} it." in out
        checked = validate_answer(r["problem"], r["solution"])
        assert abs(checked.objective - r["objective"]) <= 1e-8 * max(1.0, abs(r["objective"]))
    fact = rows[-1]
    assert fact["solution"].matrix.shape == (100, 100) and fact["m"] > 1_000  # pairs + triplets
    assert type(fact["problem"]).__name__ == "FactoredSpectralKernel"
    assert fact["objective"] > 0  # the constraints move K off K0


def test_scale_example_regularizer_is_the_benchs():
    """The example declares its own Jeffreys (as a user would); the bench defines it once
    more: both must be the same function, conjugate and CVXPY form."""
    from benchmarks.bench.variants import Jeffreys

    scale = _load_scale_example()
    mine, bench = scale.Jeffreys(0.5), Jeffreys(0.5)
    check_regularizer(mine)
    x = np.array([0.05, 0.3, 1.0, 2.0, 40.0, -1.0])
    mu = np.array([-50.0, -1.0, 0.0, 1.0, 1.4, 1.5, 2.0])
    for f in ("f_s", "conj_s", "conj_grad_s", "conj_hess_s"):
        arg = x if f == "f_s" else mu
        np.testing.assert_allclose(getattr(mine, f)(arg), getattr(bench, f)(arg), rtol=1e-14)
    assert mine.f_s(np.array([1.0]))[0] == 0 and np.isinf(mine.conj_s(np.array([1.5]))[0])
    assert (mine.alpha, mine.implies_psd) == (bench.alpha, bench.implies_psd)
    import cvxpy as cp

    A = np.array([[2.0, 0.3, 0.0], [0.3, 1.0, 0.1], [0.0, 0.1, 0.5]])
    w = np.linalg.eigvalsh(A)
    assert mine.cvx(cp.Constant(A)).value == pytest.approx(bench.cvx(cp.Constant(A)).value, rel=1e-12)
    assert mine.cvx(cp.Constant(A)).value == pytest.approx(np.sum(mine.f_s(w)), rel=1e-10)


def test_scale_example_builds_the_benchs_instances():
    """The example's dense and factored problems are the ``bench variants --scale`` rows'
    (same K0 or G0, same constraints): the sheet's numbers are the example's."""
    from benchmarks.bench.variants import scale_problem

    scale = _load_scale_example()
    a, b = scale.dense_problem(60), scale_problem("jeffreys+hinge-pairs", 60)
    np.testing.assert_array_equal(a.M0, b.M0)
    for f in ("i", "j", "y", "bound"):
        np.testing.assert_array_equal(getattr(a.pairs, f), getattr(b.pairs, f))
    a = scale.factored_problem(1_000, n_pairs=1_000, n_triplets=100)
    b = scale_problem("jeffreys+hinge-pairs+triplets, factored r=100", 1_000, quick=True)
    np.testing.assert_allclose(a.G0, b.G0, rtol=0, atol=0)
    for f in ("i", "j", "y", "bound"):
        np.testing.assert_array_equal(getattr(a.pairs, f), getattr(b.pairs, f))
    for f in ("i", "j", "k", "margin"):
        np.testing.assert_array_equal(getattr(a.relative, f), getattr(b.relative, f))
    assert a.n_constraints == b.n_constraints == len(a.pairs) + 100
