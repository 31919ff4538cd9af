"""cvxkml.formulas.penalties against their definitions: each soft penalty is the conjugate of
½ quad·λ² on its box (checked by brute force over λ), equals its closed form (hinge C·ρ₊,
C·|ρ|, squared (C/2)·ρ₊², (C/2)·ρ²), and the pair satisfies Fenchel–Young."""

from __future__ import annotations

import numpy as np
import pytest

from cvxkml.formulas.penalties import dual_penalty, hard_violation, penalty

INF = np.inf
C = 2.5
#: name: (lower, upper, quad, closed form of the penalty)
FAMILIES = {
    "hinge": (0.0, C, 0.0, lambda r: C * np.maximum(r, 0.0)),
    "hinge equality": (-C, C, 0.0, lambda r: C * np.abs(r)),
    "squared hinge": (0.0, INF, 1.0 / C, lambda r: 0.5 * C * np.maximum(r, 0.0) ** 2),
    "squared equality": (-INF, INF, 1.0 / C, lambda r: 0.5 * C * r**2),
    "hard inequality": (0.0, INF, 0.0, lambda r: np.zeros_like(r)),
    "hard equality": (-INF, INF, 0.0, lambda r: np.zeros_like(r)),
}
RHO = np.concatenate([np.linspace(-3.0, 3.0, 61), [0.0, -1e-12, 1e-12, 40.0, -40.0]])


def _arrays(name, size):
    lo, up, q, _ = FAMILIES[name]
    return np.full(size, lo), np.full(size, up), np.full(size, q)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_penalty_is_its_closed_form(name):
    lo, up, q = _arrays(name, RHO.size)
    np.testing.assert_allclose(penalty(RHO, lo, up, q), FAMILIES[name][3](RHO), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", [n for n in sorted(FAMILIES) if not n.startswith("hard")])
def test_penalty_is_the_conjugate_of_the_dual_term_on_its_box(name):
    """φ(ρ) = sup_{λ in box} λρ − ½ quad λ², by brute force over a fine grid of the box
    (clipped to |λ| <= 100 where it is unbounded)."""
    lo, up, q, _ = FAMILIES[name]
    grid = np.linspace(max(lo, -100.0), min(up, 100.0), 100_001)
    brute = np.max(np.outer(RHO, grid) - 0.5 * q * grid**2, axis=1)
    lo_a, up_a, q_a = _arrays(name, RHO.size)
    got = penalty(RHO, lo_a, up_a, q_a)
    assert np.all(got >= brute - 1e-9)
    np.testing.assert_allclose(got, brute, atol=1e-6)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_fenchel_young(name):
    """φ(ρ) + φ*(λ) >= λρ for every λ in the box (the certificate's weak duality), with
    equality at the maximizing λ; φ*(λ) = +inf outside the box."""
    rng = np.random.default_rng(7)
    lo, up, q, _ = FAMILIES[name]
    hard = q == 0 and (np.isinf(lo) or np.isinf(up))
    for rho in RHO:
        for lam in np.clip(rng.standard_normal(50) * 5, max(lo, -1e3), min(up, 1e3)):
            phi = 0.0 if hard else float(penalty(np.array([rho]), *(np.array([v]) for v in (lo, up, q)))[0])
            star = dual_penalty(np.array([lam]), lo, up, q)
            # a hard side: the penalty is 0 and feasibility (ρ <= 0 or = 0) carries the bound
            if hard and rho * lam > 0:
                continue
            assert phi + star >= lam * rho - 1e-9
        if not hard and q > 0:
            lam_star = float(np.clip(rho / q, lo, up))
            phi = float(penalty(np.array([rho]), *(np.array([v]) for v in (lo, up, q)))[0])
            assert phi + dual_penalty(np.array([lam_star]), lo, up, q) == pytest.approx(lam_star * rho, abs=1e-12)
    if np.isfinite(up):
        assert dual_penalty(np.array([up + 1e-9]), lo, up, q) == np.inf
    if np.isfinite(lo):
        assert dual_penalty(np.array([lo - 1e-9]), lo, up, q) == np.inf


def test_hard_violation_is_the_violated_hard_side_only():
    rho = np.array([-2.0, -0.5, 0.0, 0.5, 2.0])
    cases = {
        "hard inequality": np.maximum(rho, 0.0),
        "hard equality": np.abs(rho),
        "hinge": np.zeros(5),
        "squared hinge": np.zeros(5),
        "squared equality": np.zeros(5),
    }
    for name, expected in cases.items():
        np.testing.assert_array_equal(hard_violation(rho, *_arrays(name, 5)), expected)
    # one-sided hard equality-from-below: lower = −inf, upper finite box of a hinge side
    np.testing.assert_array_equal(
        hard_violation(rho, np.full(5, -INF), np.full(5, C), np.zeros(5)), np.maximum(-rho, 0.0)
    )


def test_mixed_rows_are_evaluated_per_constraint():
    names = sorted(FAMILIES)
    lo = np.array([FAMILIES[n][0] for n in names])
    up = np.array([FAMILIES[n][1] for n in names])
    q = np.array([FAMILIES[n][2] for n in names])
    rho = np.linspace(-1.5, 1.7, len(names))
    expected = np.array([FAMILIES[n][3](np.array([r]))[0] for n, r in zip(names, rho)])
    np.testing.assert_allclose(penalty(rho, lo, up, q), expected, rtol=1e-12)
    lam = np.array([min(max(0.3, l), u) for l, u in zip(lo, up)])
    assert dual_penalty(lam, lo, up, q) == pytest.approx(0.5 * np.sum(q * lam**2))
