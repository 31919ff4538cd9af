"""The certificate rules of cvxkml.testing that need no reference solution, and the ones that
judge small objectives and user regularizers: each check is shown failing a planted wrong
answer that the rule it replaced let through."""

import dataclasses
import warnings

import numpy as np
import pytest
from test_fooling_solvers import Jeffreys

from cvxkml.declare import ITML, Frobenius, LogDet, Regularizer, TraceNorm, VonNeumann
from cvxkml.sideinfo import PairConstraints
from cvxkml.testing import (
    assert_matches_reference,
    compare,
    cross_check,
    solve_fast_honestly,
    strong_convexity,
    trusted_reference,
    validate_answer,
    variant_instance,
)


def _problem(reg=None, seed=0):
    return variant_instance(seed, n=8, m=6, regularizer=reg or LogDet(), kernel=True, hard_pairs=False)


@pytest.fixture(scope="module")
def solved():
    p = _problem()
    return p, trusted_reference(p)


def _first_iterate(p):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return p.solve(max_iter=1)


def test_unearned_converged_fails_without_a_reference(solved):
    """converged=True at a large recomputed gap, every number honestly reported: refused with
    no trusted optimum given (the old rule only refused a missing or negative certificate)."""
    p, _ = solved
    early = _first_iterate(p)
    rel = early.gap / abs(early.objective)
    assert rel > 1e-2  # a real gap, honestly reported
    claim = dataclasses.replace(early, converged=True)
    with pytest.raises(AssertionError, match="converged=True but its recomputed certificate does not certify"):
        validate_answer(p, claim)
    validate_answer(p, early)  # the honest unconverged answer passes
    with pytest.raises(AssertionError, match="does not certify"):
        solve_fast_honestly(
            type("Claims", (), {"solve": lambda self, **kw: claim, "__getattr__": lambda s, n: getattr(p, n)})()
        )


def test_evaluate_sets_converged_from_the_certificate(solved):
    p, ref = solved
    assert p.evaluate(ref.matrix, ref.dual).converged
    early = _first_iterate(p)
    sol = p.evaluate(early.matrix, early.dual)
    assert np.isfinite(sol.dual_value) and not sol.converged  # a finite bound is not a certificate
    assert not p.evaluate(early.matrix, early.dual, converged=True).converged  # a claim cannot overrule it
    assert not p.evaluate(ref.matrix, ref.dual, converged=False).converged  # False wins
    assert p.evaluate(early.matrix, early.dual, atol=2 * early.gap).converged  # the user's absolute tolerance
    assert sol.info["certificate"]["scale_rule"].startswith("relative to max(|f|, |g|")


def test_compare_rows_do_not_show_unearned_convergence(solved):
    p, ref = solved
    rows = compare(p, {"bare": lambda q, k: (lambda s: (s.matrix, s.dual))(q.solve(max_iter=k, tol=1e-10))}, [1, 1000])
    assert not rows[0]["converged"] and rows[0]["gap"] > 1e-2
    assert rows[1]["converged"] and rows[1]["scale_rule"]
    liar = compare(
        p, {"claims": lambda q, k: dataclasses.replace(_first_iterate(q), converged=True)}, [1], optimum=ref.objective
    )
    assert liar[0]["refuted"] and not liar[0]["converged"]


@pytest.mark.parametrize(
    ("reg", "expect"),
    [
        (LogDet(), lambda L: 1 / L**2),
        (VonNeumann(), lambda L: 1 / L),
        (Frobenius(), lambda L: 1.0),
        (TraceNorm(0.5), lambda L: 2.0),
        (Jeffreys(), lambda L: 1 / L + 1 / L**2),
    ],
    ids=lambda r: getattr(r, "name", ""),
)
def test_strong_convexity_from_the_regularizers_own_derivatives(reg, expect):
    """σ = min f_s'' on the spectrum's range, from conj_hess_s: no table of known classes."""
    p = _problem(reg)
    for L in (0.5, 2.0, 7.0):
        assert strong_convexity(p, L, lower=0.1) == pytest.approx(expect(L), rel=1e-6)


class _Power(Regularizer):
    """The alpha-power divergence f_s(x) = (x^p − p x + p − 1)/(p(p − 1)), p = 1.5, giving only
    its second derivative f_s''(x) = x^(p − 2) (``hess_s``)."""

    name, alpha, p = "Power", 1.0, 1.5

    def f_s(self, x):
        return (x**self.p - self.p * x + self.p - 1) / (self.p * (self.p - 1))

    def hess_s(self, x):
        return x ** (self.p - 2)


def test_strong_convexity_from_a_second_derivative_and_its_absence():
    p = _problem()
    p.regularizer = _Power()  # only the geometry is asked of it
    assert strong_convexity(p, 4.0, lower=1.0) == pytest.approx(0.5)
    p.regularizer = Regularizer()
    assert strong_convexity(p, 4.0) is None


@pytest.mark.parametrize("reg", [LogDet(), Jeffreys()], ids=lambda r: r.name)
def test_user_regularizer_distance_is_checked_like_a_library_one(reg):
    """A matrix 1e-4 off the optimum, with the optimum's duals: its objective is within rtol, so
    only the distance to the unique optimum catches it — on the user's regularizer as on LogDet
    (the old table knew four classes and skipped the rest silently)."""
    make = lambda s: _problem(reg, s)  # noqa: E731
    out = cross_check(
        make,
        n_draws=4,
        solver=lambda q: (lambda r: (r.matrix * (1 + 1e-4), r.dual))(trusted_reference(q)),
        distance_rtol=5e-5,
    )
    assert out["checked"] == 0 and len(out["failures"]) == 4, out
    # caught by the distance, or (where the curvature is larger) already by the objective
    assert all("away from the unique optimum" in m or "above the best lower bound" in m for _, m in out["failures"])
    assert any("away from the unique optimum" in m for _, m in out["failures"])
    honest = cross_check(make, n_draws=2, solver=lambda q: trusted_reference(q), distance_rtol=5e-5)
    assert honest["checked"] == 2 and honest["max_distance"] <= 5e-5 and not honest["distance_unchecked"]


def test_unchecked_distance_is_reported():
    class Flat(Regularizer):  # a user's regularizer with no curvature information
        name, alpha = "Flat", 0.0

        def f_s(self, x):
            return 0.5 * x * x

        def conj_s(self, mu):
            return 0.5 * np.maximum(mu, 0.0) ** 2

        def cvx(self, X):
            import cvxpy as cp

            return 0.5 * cp.sum_squares(X)

    p = _problem(Flat())
    ref = trusted_reference(p)
    res = assert_matches_reference(p, ref, ref)
    assert res["distance"] is None and "neither hess_s" in res["distance_note"]
    out = cross_check([p], solver=lambda q: ref)
    assert list(out["distance_unchecked"].values()) == [1] and "distance not checked" in next(
        iter(out["distance_unchecked"])
    )


def _small_objective_itml():
    """ITML whose bounds ask 0.5 % less than the baseline distances: f* ≈ 3.4e-5."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12, 3))
    i, j = np.array([0, 2, 4, 6]), np.array([1, 3, 5, 7])
    d = np.sum((X[i] - X[j]) ** 2, axis=1)
    pc = PairConstraints(i, j, np.ones(4), 0.995 * d)
    return ITML(X, pc, gamma=None)


def _mmc(seed):
    """Xing et al.'s MMC from the gallery tutorial: an objective in data units (f* ≈ 2e-3)."""
    from examples_loader import load

    return load("add_a_problem_class").random_mmc(seed)


def test_small_objective_is_judged_on_its_problems_own_scale():
    """Gaps are judged on max(|f|, |g|, objective_scale()), never on a fixed 1 that every problem
    shares.  A problem in data units (MMC, f* ≈ 2e-3) has no unit of its own (a round-off floor):
    1.0001 × W* is within 1e-6 of f* in absolute terms — what max(1, |f|) passed — and is caught.
    A spectral problem states its unit: its objective is a divergence of the whitened X̂ from the
    prior, dimensionless (1, the fast solvers' rule), so 0.99995 × W* of an ITML with f* ≈ 3e-5
    (6.8e-7 off) is within it — and an absolute tolerance the user sets catches it, named."""
    m = _mmc(0)
    exact = trusted_reference(m)
    off = m.evaluate(exact.matrix * 1.0001, exact.dual)
    assert abs(off.objective - exact.objective) < 1e-6  # what the old floor of 1 accepted
    assert not off.converged
    with pytest.raises(AssertionError, match="does not certify"):
        validate_answer(m, dataclasses.replace(off, converged=True))
    with pytest.raises(AssertionError, match="best lower bound|differs from the reference"):
        assert_matches_reference(m, (exact.matrix * 1.0001, exact.dual), exact)

    p = _small_objective_itml()
    ref = trusted_reference(p)
    assert 1e-6 < ref.objective < 1e-2 and p.objective_scale() == 1.0
    off = p.evaluate(ref.matrix * 0.99995, ref.dual)
    assert abs(off.objective - ref.objective) < 1e-6 and off.converged
    assert "objective_scale()) = 1 " in off.info["certificate"]["scale_rule"]
    assert not p.evaluate(ref.matrix * 0.99995, ref.dual, atol=1e-9).converged
    with pytest.raises(AssertionError, match="best lower bound|differs from the reference|does not certify"):
        assert_matches_reference(p, (ref.matrix * 0.99995, ref.dual), ref, atol=1e-9)
    res = assert_matches_reference(p, p.solve(tol=1e-12), ref)
    assert "relative to max(|f|, |g|" in res["scale_rule"]
    # an absolute tolerance the user sets is honoured and named
    res = assert_matches_reference(p, (ref.matrix * 0.99995, ref.dual), ref, atol=1e-5, distance_rtol=1.0)
    assert res["scale_rule"].startswith("absolute")


def test_multipliers_outside_the_dual_box_are_named():
    """Hinge multipliers above their C make the dual −inf; a converged claim with them is refused
    with a message that names the box, not a bare "no certificate"."""
    from cvxkml.declare import LogDetKernel
    from cvxkml.sideinfo import Hinge
    from cvxkml.testing import kernel_instance

    K0, pc = kernel_instance(0, 8, 10, hard=False)
    p = LogDetKernel(K0, Hinge(pc, 0.5))
    sol = p.solve()
    lam = np.array(sol.dual, dtype=float)
    lam[0] = 0.75  # above C = 0.5
    bad = dataclasses.replace(sol, dual=lam, dual_value=-np.inf, converged=True)
    with pytest.raises(AssertionError, match=r"leave the dual box \(e.g. λ_0 = 0.75 outside \[0, 0.5\]\)"):
        validate_answer(p, bad)
