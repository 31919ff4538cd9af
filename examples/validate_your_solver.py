"""
Validate your solver: planted bugs caught
=========================================

A solver's numbers are claims. ``cvxkml.testing`` checks a solver without trusting it:
every check recomputes the objective and the violations from the matrix it returns and the
Lagrange dual value from the multipliers it returns, with the problem's own formulas.

* ``validate_answer(problem, answer)`` checks one answer: the matrix is finite, of the right
  shape, symmetric and PSD; every reported number equals its recomputation; weak duality
  holds; and ``converged=True`` is accepted only when the recomputed certificate (gap and
  violation) holds — no exact solve needed.
* ``cross_check(make, n_draws=…, solver=f)`` runs ``f`` on many random problems
  ``make(seed)`` against the trusted exact CVXPY model (used only when its own Lagrange
  certificate vouches for it) and tallies agreement, through both certificates and, where the
  optimum is unique (a strongly convex regularizer), the distance ‖K − K*‖_F / ‖K*‖_F.

The solver under test is a user's own: projected gradient ascent on the Lagrange dual of
von Neumann kernel learning (any regularizer with a conjugate would do; see "Add a fast
solver and register it"), returning ``problem.evaluate(K, λ)`` — the answer wrapped with the
problem's formulas. Then three planted bugs, each a one-line change a real solver could make:
multipliers 1 % too large, a matrix perturbed by 1e-4, and ``converged=True`` unearned.

Run it yourself::

    python examples/validate_your_solver.py
"""

import dataclasses

import numpy as np

from cvxkml.declare import VonNeumann
from cvxkml.declare.terms import constraint_terms
from cvxkml.testing import cross_check, validate_answer, variant_instance


def my_solver(problem, tol=1e-10, max_iter=20_000):
    """Projected gradient ascent on g(λ) = −f*(−Σ λ_c Â_c) − λᵀt over the dual box;
    returns problem.evaluate(K, λ) (converged only if the recomputed certificate holds)."""
    terms = constraint_terms(problem)
    U, w, t, owner = terms.U, terms.w, terms.t, terms.owner()
    lower = np.zeros(terms.m) if terms.lower is None else terms.lower
    upper = np.full(terms.m, np.inf) if terms.upper is None else terms.upper
    reg = problem.regularizer

    def dual(lam):
        mu, V = np.linalg.eigh(-(U.T * (w * lam[owner])) @ U)
        Xh = (V * reg.conj_grad_s(mu)) @ V.T
        resid = np.bincount(owner, w * np.einsum("ij,jk,ik->i", U, Xh, U), terms.m) - t
        return -np.sum(reg.conj_s(mu)) - lam @ t, resid, Xh

    lam, step = np.clip(np.zeros(terms.m), lower, upper), 1.0
    g, grad, Xh = dual(lam)
    it = 0
    while it < max_iter:
        it += 1
        while True:
            new = np.clip(lam + step * grad, lower, upper)
            d = new - lam
            g_new, grad_new, Xh_new = dual(new)
            if g_new >= g + grad @ d - (d @ d) / (2 * step):
                break
            step *= 0.5
        lam, g, grad, Xh, step = new, g_new, grad_new, Xh_new, 1.5 * step
        if np.max(np.abs(d)) <= tol * max(1.0, np.max(np.abs(lam))):
            break
    return problem.evaluate(problem.matrix_from_whitened(Xh), lam, solver="my-dual-ascent", n_iter=it)


# --------------------------------------------------------------------------- planted bugs
# Each returns a bare answer (matrix, multipliers), which claims nothing: the checks
# recompute every number from it.
def scaled_multipliers(problem):
    """Bug 1: the multipliers returned 1 % too small (an off-by-a-factor in a dual update)."""
    sol = my_solver(problem)
    return sol.matrix, 0.99 * sol.dual


def perturbed_matrix(problem):
    """Bug 2: the matrix 1e-4 (relative, Frobenius) off the optimum (a stale iterate)."""
    sol = my_solver(problem)
    E = np.random.default_rng(0).normal(size=sol.matrix.shape)
    E = (E + E.T) / np.linalg.norm(E + E.T)
    return sol.matrix + 1e-4 * np.linalg.norm(sol.matrix) * E, sol.dual


def early_stop(problem):
    """Bug 3: the iteration loop exits after five iterations."""
    sol = my_solver(problem, max_iter=5)
    return sol.matrix, sol.dual


BUGS = {"multipliers x 0.99": scaled_multipliers, "matrix + 1e-4": perturbed_matrix, "5 iterations": early_stop}


def claiming_converged(bug):
    """The same bug in a solver that says converged=True (it trusted its own stopping rule)."""

    def solver(problem):
        return dataclasses.replace(problem.evaluate(*bug(problem)), converged=True, status="converged")

    return solver


def make(seed):
    """Von Neumann metric learning, 12 points in 3-D: hinge pairs and hinge triplets."""
    return variant_instance(seed, n=12, m=10, regularizer=VonNeumann(), hard_pairs=False)


def verdict(problem, solver):
    """validate_answer's one line on ``solver(problem)`` ("passes" when it passes)."""
    try:
        validate_answer(problem, solver(problem))
    except AssertionError as exc:
        return str(exc)
    return "passes"


def tally_line(tally):
    """The tally in one line, and the first failure without the Solution reprs."""
    line = (
        f"{tally['checked']}/{tally['draws']} agree, {len(tally['failures'])} failures, {tally['discarded']} discarded"
    )
    if tally["checked"]:
        line += (
            f", max objective difference {tally['max_gap']:.1e}, max distance {tally.get('max_distance', np.nan):.1e}"
        )
    if tally["failures"]:
        line += "\n    first failure: " + tally["failures"][0][1].split(": fast=Solution")[0]
    return line


if __name__ == "__main__":
    # %%
    # 1. One answer, no exact solve: validate_answer recomputes it. The correct answer passes;
    # each bug, in a solver that claims converged=True, is refused by its own recomputed
    # certificate.
    problem = make(0)
    sol = validate_answer(problem, my_solver(problem))
    print(
        f"my_solver: objective {sol.objective:.10f}, recomputed gap {sol.gap:.1e}, converged {sol.converged}, "
        f"{sol.n_iter} iterations; the gap is judged {sol.info['certificate']['scale_rule']}"
    )
    for name, bug in BUGS.items():
        print(f"  {name:<19} validate_answer: {verdict(problem, claiming_converged(bug))}")

    # %%
    # 2. Many draws against the trusted exact model. Here the bugs return bare answers that
    # claim nothing — honest but wrong — and are still caught: by their own certificate, or by
    # the exact optimum.
    print("cross_check against the exact model (rtol 1e-6):")
    print(f"  {'my_solver':<19} {tally_line(cross_check(make, n_draws=6, solver=my_solver))}")
    for name, bug in BUGS.items():
        print(f"  {name:<19} {tally_line(cross_check(make, n_draws=3, solver=bug))}")
