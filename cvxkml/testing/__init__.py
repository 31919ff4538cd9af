"""Tools to validate a fast solver against the exact model (public; used by cvxkml's own tests).

The rules they enforce:

* **Ground truth is trustworthy or unused.**  :func:`trusted_reference` returns a conic
  solution only when it is ``optimal`` and certified, re-solving with the other conic solver
  before giving up with :class:`UntrustedReference`; inside a Hypothesis test
  :func:`reference_or_discard` discards such a draw and counts it (:func:`discards`).
* **``converged`` means certified.**  :func:`solve_fast_honestly` checks that a fast solve
  warns (:class:`~cvxkml.errors.ConvergenceWarning`) exactly when it says
  ``converged=False``.
* **Recompute, never trust.**  :func:`validate_answer` evaluates what a solver returns
  through the problem's own formulas and checks the matrix; a reported number that disagrees
  with its recomputation is a failure.  ``problem.evaluate(M, duals)`` wraps a bare answer;
  :func:`cross_check` and :func:`assert_matches_reference` take one.
* **Compare like the field.**  :func:`compare` runs several solvers at growing iteration
  budgets and records suboptimality and violation, each point recomputed;
  :func:`plot_comparison` draws it (``plots`` extra).
* **Certificates are the arbiter.**  :func:`assert_matches_reference` compares a certified
  fast solution with a trusted reference through both certificates.

Examples
--------
>>> import numpy as np
>>> from cvxkml import ITML
>>> from cvxkml.sideinfo import PairConstraints, baseline_metric
>>> from cvxkml.testing import solve_fast_honestly, trusted_reference, assert_matches_reference
>>> rng = np.random.default_rng(0)
>>> X, y = rng.normal(size=(20, 3)), rng.integers(0, 2, 20)
>>> pairs = PairConstraints.from_labels(y, baseline_metric(X), n_similar=10, n_dissimilar=10,
...                                     random_state=0)
>>> problem = ITML(X, pairs, gamma=1.0)
>>> fast = solve_fast_honestly(problem, tol=1e-12)     # warns exactly when not converged
>>> exact = trusted_reference(problem)                 # the conic answer, only if certified
>>> report = assert_matches_reference(problem, fast, exact, rtol=1e-6)
>>> fast.converged, exact.status
(True, 'optimal')
"""

from __future__ import annotations

from ._compare import compare, default_budgets, plot_comparison
from ._contract import check_contract, check_regularizer, contract_cases, cross_check, register_contract_case
from ._instances import (
    factor_instance,
    feasible_instance,
    forest_pairs,
    kernel_instance,
    make_random_instance,
    metric_instance,
    problems,
    random_pairs,
    triplets,
    variant_instance,
)
from ._optima import list_optima, load_optimum
from ._reference import (
    UntrustedReference,
    assert_matches_reference,
    discards,
    reference_or_discard,
    relative_violation,
    solve_fast_honestly,
    trusted_reference,
)
from ._validate import as_solution, distance_bound, strong_convexity, validate_answer

__all__ = [
    "UntrustedReference",
    "trusted_reference",
    "reference_or_discard",
    "discards",
    "solve_fast_honestly",
    "assert_matches_reference",
    "relative_violation",
    "check_regularizer",
    "check_contract",
    "contract_cases",
    "register_contract_case",
    "metric_instance",
    "kernel_instance",
    "factor_instance",
    "random_pairs",
    "forest_pairs",
    "triplets",
    "variant_instance",
    "feasible_instance",
    "problems",
    "make_random_instance",
    "cross_check",
    "load_optimum",
    "list_optima",
    "validate_answer",
    "as_solution",
    "strong_convexity",
    "distance_bound",
    "compare",
    "plot_comparison",
    "default_budgets",
]
