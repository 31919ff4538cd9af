"""The convergence-honesty check every fast-vs-exact test applies to a fast solve."""
import warnings

from cvxkml.errors import ConvergenceWarning


def solve_fast_honestly(problem, **kw):
    """``problem.solve(**kw)``, asserting that it warns (ConvergenceWarning) exactly when the
    returned solution says ``converged=False``."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        sol = problem.solve(**kw)
    warned = any(issubclass(w.category, ConvergenceWarning) for w in rec)
    assert warned == (not sol.converged), "a non-converged solve must warn, a converged one must not"
    return sol
