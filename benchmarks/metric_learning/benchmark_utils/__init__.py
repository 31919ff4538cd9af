"""Shared pieces of the metric-learning benchmark: the declared problems, their certified
optima and the recomputed scores (everything here goes through cvxkml's own formulas)."""

import warnings

import numpy as np
from benchopt.stopping_criterion import SufficientProgressCriterion

from cvxkml.declare import ITML, LMNNProblem
from cvxkml.errors import CvxkmlError
from cvxkml.sideinfo import PairConstraints, baseline_metric
from cvxkml.testing import (
    UntrustedReference,
    relative_violation,
    solve_fast_honestly,
    strong_convexity,
    trusted_reference,
    validate_answer,
)

#: The merit (|suboptimality| + violation) of a budget at which a solver gave no answer, or an
#: answer that failed validation.  Finite so that benchopt's divergence test (a jump of 1e5)
#: does not end a curve at a conic solver's first iteration caps.
NO_ANSWER = 1e4

#: An answer is ``certified`` when its recomputed relative gap lies in [-CERT_TOL, CERT_TOL] and
#: its recomputed relative violation is at most CERT_TOL.
CERT_TOL = 1e-7

#: Fast-solver tolerances tried in turn for the certified optimum (first certified one wins).
CERTIFY_TOLS = (1e-12, 1e-10, 1e-9)

_OPTIMA = {}


def stratified(y, n, seed):
    """Indices of a class-stratified sample of about ``n`` points (``n // c`` per class)."""
    rng = np.random.default_rng(seed)
    classes = np.unique(y)
    per = max(2, n // len(classes))
    return np.sort(
        np.concatenate(
            [rng.choice(np.flatnonzero(y == c), min(per, int(np.sum(y == c))), replace=False) for c in classes]
        )
    )


def standardize(X):
    """Columns centred and scaled to unit variance (constant columns left at zero)."""
    X = np.asarray(X, dtype=float)
    return (X - X.mean(0)) / np.maximum(X.std(0), 1e-12)


def build_problem(kind, X, y, *, n_pairs=40, gamma=1.0, lmnn_n=30, lmnn_dim=3, k=2, mu=0.5, seed=0):
    """The declared cvxkml problem of the benchmark.

    ``"itml"``: ITML (LogDet metric learning, Jain et al. eq. 7) on all points, ``n_pairs``
    ITML-style label pairs with 5/95-percentile bounds, LogDet slack ``gamma``.
    ``"lmnn"``: linear LMNN (k target neighbours, push weight ``mu``) on a stratified subset
    of ``lmnn_n`` points projected on their first ``lmnn_dim`` principal directions (the
    exact LMNN model is an SDP with one hinge per triplet: kept small for the conic solvers).
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    if kind == "itml":
        pc = PairConstraints.from_labels(
            y, baseline_metric(X), scheme="itml", n_constraints=n_pairs, percentiles=(5.0, 95.0), random_state=seed
        )
        return ITML(X, pc, gamma=gamma)
    if kind == "lmnn":
        idx = stratified(y, lmnn_n, seed + 1)
        Xl = X[idx] - X[idx].mean(0)
        U = np.linalg.svd(Xl, full_matrices=False)[2][:lmnn_dim]
        return LMNNProblem.linear(Xl @ U.T, y[idx], k, mu)
    raise ValueError(f"unknown problem {kind!r}: expected 'itml' or 'lmnn'")


def _key(kind, X, y, params):
    return (
        kind,
        X.shape,
        hash(np.ascontiguousarray(X).tobytes()),
        hash(np.asarray(y).tobytes()),
        tuple(sorted(params.items())),
    )


def certified_optimum(problem, key=None):
    """f* and M* from cvxkml's fast solver at a tight tolerance, certified by its own Lagrange
    dual (checked by ``solve_fast_honestly``: recomputed objective, violations and dual value);
    if no tolerance of :data:`CERTIFY_TOLS` certifies, the trusted conic reference
    (``trusted_reference``).  Memoized per ``key`` (computed once per data set and problem).

    Returns
    -------
    dict with ``objective``, ``matrix``, ``gap`` (relative certificate) and ``source``.
    """
    if key is not None and key in _OPTIMA:
        return _OPTIMA[key]
    best = None
    for tol in CERTIFY_TOLS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sol = solve_fast_honestly(problem, tol=tol, max_iter=200_000)
        if sol.converged:
            best = dict(
                objective=float(sol.objective),
                matrix=sol.matrix,
                gap=float(sol.gap) / max(1.0, abs(sol.objective)),
                source=f"fast tol={tol:g}",
            )
            break
    if best is None:
        try:
            ref = trusted_reference(problem)
        except UntrustedReference as exc:
            raise RuntimeError(f"no certified optimum for this problem: {exc}") from exc
        best = dict(
            objective=float(ref.objective),
            matrix=ref.matrix,
            gap=float(ref.gap) / max(1.0, abs(ref.objective)),
            source="trusted conic reference",
        )
    if key is not None:
        _OPTIMA[key] = best
    return best


def score(problem, answer, optimum):
    """The benchmark's metrics of one answer, every number recomputed from the returned matrix
    and duals (``validate_answer``), never the solver's claims.

    ``value``: objective f(M); ``suboptimality``: (f − f*) / max(1, |f*|); ``violation``: max
    relative constraint violation; ``gap``: the answer's own relative certificate (NaN without
    duals); ``certified``: 1 when that gap is within ±:data:`CERT_TOL` and the violation at most
    :data:`CERT_TOL`, else 0; ``distance``: ‖M − M*‖_F / ‖M*‖_F where the objective is strictly convex (ITML),
    else NaN; ``merit``: |suboptimality| + violation (what the stopping rule monitors; it is
    :data:`NO_ANSWER` when there is no valid answer); ``answered`` / ``valid`` / ``converged``:
    0 or 1 (``converged`` is the solver's own claim).
    """
    out = dict(
        value=np.nan,
        suboptimality=np.nan,
        violation=np.nan,
        gap=np.nan,
        distance=np.nan,
        merit=NO_ANSWER,
        answered=float(answer is not None),
        valid=0.0,
        certified=0.0,
        converged=0.0,
    )
    if answer is None:
        return out
    try:
        sol = validate_answer(problem, answer, gap_rtol=np.inf)  # iterates may be infeasible
    except (AssertionError, CvxkmlError, ValueError, FloatingPointError):
        return out
    f_star = optimum["objective"]
    sub = (float(sol.objective) - f_star) / max(1.0, abs(f_star))
    viol = float(relative_violation(problem, sol))
    if not (np.isfinite(sub) and np.isfinite(viol)):
        return out
    out.update(
        value=float(sol.objective),
        suboptimality=sub,
        violation=viol,
        valid=1.0,
        converged=float(bool(sol.converged)),
        merit=min(abs(sub) + viol, NO_ANSWER),
    )
    if sol.gap is not None and np.isfinite(sol.gap):
        out["gap"] = float(sol.gap) / max(1.0, abs(float(sol.objective)))
        out["certified"] = float(abs(out["gap"]) <= CERT_TOL and viol <= CERT_TOL)
    if strong_convexity(problem, 1.0) is not None:
        M_star = optimum["matrix"]
        out["distance"] = float(np.linalg.norm(sol.matrix - M_star) / np.linalg.norm(M_star))
    return out


class AnsweredProgressCriterion(SufficientProgressCriterion):
    """When to stop a solver's curve (benchopt's ``SufficientProgressCriterion`` on ``merit``,
    adapted to certified solvers):

    * budgets at which the solver gave no valid answer (a conic solver stopped at its cap
      before it had a point, e.g. Clarabel's ``user_limit``) do not count as a lack of
      progress: the curve goes on until a first answer;
    * ``n_certified`` consecutive points certified by their own recomputed duals
      (``certified`` = 1) end the curve: further budgets cannot move the answer beyond the
      certificate;
    * otherwise no progress of ``merit`` for ``patience`` points ends it (the default patience
      is larger than benchopt's 3: PDHG and SCS iterates are not monotone), as do
      ``--max-runs`` and ``--timeout``."""

    def __init__(
        self, eps=1e-10, patience=8, n_certified=3, strategy="iteration", key_to_monitor="merit", minimize=True
    ):
        super().__init__(
            eps=eps, patience=patience, strategy=strategy, key_to_monitor=key_to_monitor, minimize=minimize
        )
        self.kwargs["n_certified"] = n_certified
        self.n_certified = n_certified

    def check_convergence(self, objective_list):
        if not any(r.get("objective_valid", 0.0) for r in objective_list):
            return False, 0.0
        last = objective_list[-self.n_certified :]
        stop, progress = super().check_convergence(objective_list)
        if len(last) == self.n_certified and all(r.get("objective_certified", 0.0) for r in last):
            return True, 1.0
        return stop, progress
