"""Metric learning with multiple kernels (Wang, Do, Woznica & Kalousis, NIPS 2011):
the kernel-weight steps and the alternation of Algorithm 1.

With kernels K_1 … K_m on the same n points and k_μ = Σ_l μ_l k_l (μ ≥ 0, Σ μ_l = 1),
a metric A (n × n) on the empirical kernel map gives (eq. 5–7)

    d²_{A,μ}(i, j) = μᵀ B_ij A B_ijᵀ μ = tr(P Q_ij),   Q_ij = B_ij A B_ijᵀ,  P = μμᵀ,

with B_ij the m × n matrix of kernel-column differences (K_l^i − K_l^j)ᵀ.  For fixed A
every pair distance is *linear in P* (:func:`pair_kernel_quadratics` builds the Q_ij) and
*convex quadratic in μ*.

* :class:`RankOneWeightStep` — ML_h-MKL_P (eq. 8, 15–17) by convex iteration, for any h
  linear in P; certified by the Lagrange dual of its convex relaxation.
* :class:`MuWeightStep` — ML_h-MKL_μ (eq. 6, Lemma 2) for any h convex in μ.  LMNN is not
  convex in μ (§5): :class:`LMNNMuMajorizer` is its convex majorizer at a reference μ_k and
  :func:`lmnn_mu_step` iterates it (convex–concave procedure).
* :func:`alternate` — Algorithm 1: weight step, then the LMNN metric step on
  K_μ = Σ μ_l K_l, until μ and the objective F(A, μ) (:func:`joint_objective`, the LMNN
  objective of :mod:`cvxkml.formulas.lmnn` on the distances tr(P Q_ij)) stop changing.
* NR-ML-MKL (eq. 12–14) is LMNN on the concatenated maps:
  :meth:`cvxkml.declare.lmnn.LMNNProblem.multiple_kernels`.

This module is the family's face and holds Algorithm 1; the parts live in private modules
of one responsibility each, re-exported here: the objectives h and their data
(``_mkl_objectives``), the MKL_P step (``_mkl_rank_one``), the MKL_μ step and LMNN's
majorizer (``_mkl_mu``).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from .._validation import (
    as_float_array,
    check_choice,
    check_int,
    check_labels,
    check_positive,
)
from ..errors import ConvergenceWarning, InvalidInputError
from ..formulas.lmnn import LMNNTriplets, lmnn_objective, ordered_pair_distances
from ..kernels import kernel_sq_distances
from ._mkl_mu import (  # noqa: F401 (private names kept importable from here)
    LMNNMuMajorizer,
    MuWeightStep,
    _simplex,
    _simplex_violations,
    _sqrt_psd_rows,
    lmnn_mu_step,
)
from ._mkl_objectives import (  # noqa: F401 (private names kept importable from here)
    CallablePObjective,
    LinearPObjective,
    LMNNWeightObjective,
    _check_mu,
    _check_triplets,
    combine_kernels,
    mu_from_P,
    pair_kernel_quadratics,
)
from ._mkl_rank_one import (  # noqa: F401 (private names kept importable from here)
    W_GRID,
    RankOneWeightStep,
    WeightStepSolution,
    _feasible_set,
    _set_bound,
    _set_violations,
)
from .lmnn import LMNNProblem, _check_gamma, check_kernel_list

__all__ = [
    "pair_kernel_quadratics",
    "LinearPObjective",
    "LMNNWeightObjective",
    "CallablePObjective",
    "RankOneWeightStep",
    "WeightStepSolution",
    "mu_from_P",
    "MuWeightStep",
    "LMNNMuMajorizer",
    "lmnn_mu_step",
    "alternate",
    "MKLResult",
    "combine_kernels",
    "W_GRID",
]


# --------------------------------------------------------------------------- Algorithm 1
@dataclass
class MKLResult:
    """Result of :func:`alternate` (Algorithm 1).

    mu : final weights.  A : final metric (n × n) on K_μ's columns.  objective : F(A, μ).
    history : one dict per outer iteration (objective after the weight step and after the
    metric step, μ, w, LMNN iterations, convergence flags).  n_outer : iterations.
    converged : μ and F stopped changing within tolerance before max_outer.
    weight_results : the :class:`WeightStepSolution` of each weight step that ran (a step is
        skipped, ``history[i]["weights_skipped"]``, when F(A, μ) is already at most ``tol``·
        max(1, F): F >= 0, so no μ could lower it by more than the outer threshold).
    """

    mu: np.ndarray
    A: np.ndarray
    objective: float
    history: list
    n_outer: int
    converged: bool
    triplets: LMNNTriplets
    time: float
    metric_solution: object = None
    metric_problem: object = None
    weight_results: list = field(default_factory=list)


def joint_objective(Ks, A, mu, triplets: LMNNTriplets, gamma: float) -> float:
    """F(A, μ): the LMNN objective of eq. 18 with d(i, j) = μᵀ B_ij A B_ijᵀ μ =
    (K_μ^i − K_μ^j)ᵀ A (K_μ^i − K_μ^j)."""
    p = ordered_pair_distances(combine_kernels(Ks, mu), A, triplets.pi, triplets.pj)
    return lmnn_objective(p, triplets, gamma)


def _reemit(records, keep=ConvergenceWarning):
    """Re-emit recorded warnings except those of category ``keep``."""
    for r in records:
        if not issubclass(r.category, keep):
            warnings.warn_explicit(r.message, r.category, r.filename, r.lineno)


def alternate(
    Ks,
    y,
    variant: str = "P",
    k: int = 5,
    gamma: float = 0.5,
    mu0=None,
    A0=None,
    triplets: LMNNTriplets | None = None,
    max_outer: int = 20,
    tol: float = 1e-5,
    mu_tol: float = 1e-4,
    lmnn_options: dict | None = None,
    weight_options: dict | None = None,
    small_classes: str = "raise",
) -> MKLResult:
    """Algorithm 1 (Wang et al.): alternate the kernel-weight step and the LMNN metric step.

    Parameters
    ----------
    Ks : list of ndarray of shape (n, n)
        The m base kernel matrices, PSD, all of the same size.
    y : array-like of shape (n,)
        Class labels.
    variant : {"P", "mu"}
        "P": :class:`RankOneWeightStep` on :class:`LMNNWeightObjective` (LMNN-MKL_P);
        "mu": :func:`lmnn_mu_step` (majorized MKL_μ; LMNN is not convex in μ).
    k, gamma : int, float
        LMNN's number of target neighbours and hinge weight (paper: 5, 0.5).
    mu0 : array-like of shape (m,) or None
        Initial kernel weights (default uniform, the paper's choice).
    A0 : ndarray or None
        Initial metric (default I, the paper's choice).
    triplets : LMNNTriplets or None
        The target/impostor structure (default: target neighbours by the feature-space
        distance of K_{μ0}, fixed for the whole run).
    max_outer : int
        Outer iterations.
    tol, mu_tol : float
        Stop when |ΔF| <= tol·max(1, F) and ‖Δμ‖_1 <= mu_tol.
    lmnn_options : dict or None
        Keyword arguments of :meth:`LMNNProblem.solve` (metric step).
    weight_options : dict or None
        Keyword arguments of :class:`RankOneWeightStep` ("P") or of :func:`lmnn_mu_step`
        ("mu").
    small_classes : {"raise", "shrink"}, default="raise"
        Classes with fewer than k + 1 members (:func:`cvxkml.formulas.lmnn.target_neighbors`).

    Returns
    -------
    MKLResult
        After the first iteration the P step starts from W = I − uuᵀ, u ∝ μ of the
        previous iteration, and a weight step that would increase F is rejected (μ
        kept), so F(A, μ) never increases beyond the metric solver's tolerance.
    """
    t0 = time.perf_counter()
    check_choice(variant, "variant", ("P", "mu"))
    max_outer = check_int(max_outer, "max_outer", minimum=1)
    tol = check_positive(tol, "tol")
    mu_tol = check_positive(mu_tol, "mu_tol")
    Ks, mu, triplets, A, gamma = _alternate_start(
        Ks, y, k, gamma, mu0, A0, triplets, lmnn_options, weight_options, small_classes
    )
    m = Ks.shape[0]
    lmnn_options = dict(lmnn_options or {})
    weight_options = dict(weight_options or {})
    labels = np.asarray(triplets.codes)
    F = joint_objective(Ks, A, mu, triplets, gamma)
    prob = None
    history = [{"iteration": 0, "objective": F, "mu": mu.copy()}]
    weight_results = []
    sol = None
    converged = False
    it = 0
    for it in range(1, max_outer + 1):
        # weight step (A fixed)
        h = LMNNWeightObjective.from_kernels(Ks, A, triplets, gamma)
        F_before = h.value_mu(mu)
        skip = it > 1 and F_before <= tol * max(1.0, abs(F_before))
        wres = _weight_step(h, mu, m, it, skip, variant, weight_options)
        if wres is not None:
            weight_results.append(wres)
        accepted = (
            wres is not None
            and wres.objective <= F_before + 1e-9 * max(1.0, abs(F_before))
            and (variant == "mu" or wres.rank_one)
        )
        mu_new = wres.mu if accepted else mu
        F_mu = h.value_mu(mu_new)
        # metric step (μ fixed), warm-started from A
        prob = LMNNProblem(combine_kernels(Ks, mu_new), labels, gamma=gamma, triplets=triplets)
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            sol = prob.solve(A0=A, **lmnn_options)  # best iterate: F_new <= F(A, μ_new)
        _reemit(rec)
        F_new = sol.objective
        dmu = float(np.abs(mu_new - mu).sum())
        history.append(_history_entry(it, F_mu, F_new, mu_new, wres, skip, accepted, sol, dmu))
        done = abs(F - F_new) <= tol * max(1.0, abs(F)) and dmu <= mu_tol
        mu, A, F = mu_new, sol.matrix, F_new
        if done:
            converged = True
            break
    if not converged:
        warnings.warn(
            f"Algorithm 1 stopped after max_outer={max_outer} iterations without μ and the "
            "objective settling; raise max_outer.",
            ConvergenceWarning,
            stacklevel=2,
        )
    return MKLResult(
        mu=mu,
        A=A,
        objective=F,
        history=history,
        n_outer=it,
        converged=converged,
        triplets=triplets,
        time=time.perf_counter() - t0,
        metric_solution=sol,
        metric_problem=prob,
        weight_results=weight_results,
    )


def _alternate_start(Ks, y, k, gamma, mu0, A0, triplets, lmnn_options, weight_options, small_classes):
    """The checked start of :func:`alternate`: (Ks as an (m, n, n) array, μ0, the triplets,
    A0, γ), defaults filled in (μ0 uniform, A0 = I, the triplets by K_{μ0}'s distances)."""
    for name, opts in (("lmnn_options", lmnn_options), ("weight_options", weight_options)):
        if opts is not None and not isinstance(opts, dict):
            raise InvalidInputError(f"{name} must be a dict of keyword arguments or None; got {opts!r}.")
    Ks = np.asarray(check_kernel_list(Ks))
    m, n, _ = Ks.shape
    gamma = _check_gamma(gamma)
    mu = np.full(m, 1.0 / m) if mu0 is None else _check_mu(mu0, m, "mu0")
    if triplets is None:
        y = check_labels(y, "y", n)
        k = check_int(k, "k", minimum=1)
        check_choice(small_classes, "small_classes", ("raise", "shrink"))
        triplets = LMNNTriplets.from_labels(
            y, k, sq_dist=kernel_sq_distances(combine_kernels(Ks, mu)), small_classes=small_classes
        )
    else:
        _check_triplets(triplets, n)
    A = np.eye(n) if A0 is None else as_float_array(A0, "A0", ndim=2)
    if A.shape != (n, n):
        raise InvalidInputError(f"A0 must be {n} × {n}; got {A.shape}.")
    return Ks, mu, triplets, A, gamma


def _weight_step(h, mu, m: int, it: int, skip: bool, variant: str, weight_options: dict):
    """One weight step of :func:`alternate` (A fixed) on h: the MKL_P step warm-started from
    W = I − uuᵀ (u ∝ μ) after the first iteration, or LMNN's μ step; None when skipped.
    Its warnings are re-emitted, ConvergenceWarning left out (the outer loop judges it)."""
    if skip:
        # F >= 0 for every μ (A ⪰ 0), so no weight step can lower F by more than F_before,
        # which is already below the outer stopping threshold: μ is kept (a full-rank
        # kernel collapses the classes and the metric step reaches F = 0)
        return None
    if variant == "P":
        W0 = None
        if it > 1:
            u = mu / np.linalg.norm(mu)
            W0 = np.eye(m) - np.outer(u, u)
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            wres = RankOneWeightStep(h, **weight_options).solve(warm_start=W0)
        _reemit(rec)
        return wres
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        wres = lmnn_mu_step(h, mu, **weight_options)
    _reemit(rec)
    return wres


def _history_entry(it, F_mu, F_new, mu_new, wres, skip, accepted, sol, dmu) -> dict:
    """The record of one outer iteration of :func:`alternate` (``MKLResult.history``)."""
    return {
        "iteration": it,
        "objective_after_weights": F_mu,
        "objective": F_new,
        "mu": mu_new.copy(),
        "w": None if skip else wres.w,
        "rank_one": None if skip else wres.rank_one,
        "weights_skipped": bool(skip),
        "weights_accepted": bool(accepted),
        "lmnn_iterations": sol.n_iter,
        "lmnn_converged": sol.converged,
        "mu_change": dmu,
    }
