"""Metric learning with multiple kernels (Wang, Do, Woznica & Kalousis, NIPS 2011):
the kernel-weight steps and the alternation of Algorithm 1.

With kernels K_1 … K_m on the same n points and k_μ = Σ_l μ_l k_l (μ ≥ 0, Σ μ_l = 1),
a metric A (n × n) on the empirical kernel map gives (eq. 5–7)

    d²_{A,μ}(i, j) = μᵀ B_ij A B_ijᵀ μ = tr(P Q_ij),   Q_ij = B_ij A B_ijᵀ,  P = μμᵀ,

with B_ij the m × n matrix of kernel-column differences (K_l^i − K_l^j)ᵀ.  For fixed A
every pair distance is *linear in P* (:func:`pair_kernel_quadratics` builds the Q_ij) and
*convex quadratic in μ*.

* :class:`RankOneWeightStep` — ML_h-MKL_P, eq. 8 and 15–17: for any objective h linear
  in P (an :class:`LinearPObjective`), alternate

      P* = argmin_P  h(P) + w·tr(PᵀW)   s.t.  P ⪰ 0, Σ_ij P_ij = 1, P_ij >= 0     (15)
      W  = U Uᵀ,  U = eigenvectors of P* for its m − 1 smallest eigenvalues      (16)

  until Σ_{i>=2} λ_i(P*) ≈ 0 (17), with w the smallest of {10^0, …, 10^8} that reaches
  the rank-one point; then μ = √λ_1 v_1.  The step is declarative: any h with a CVXPY
  form in P (``cvx``) and a numpy value (``value``) works; h that are "linear part +
  convex piecewise-linear part with a sub-gradient oracle" (as LMNN) can also be solved
  by cutting planes, exactly to a certified tolerance, however many hinge terms they
  have; h that offer ``hinge_terms()`` (linear part + hinges, as LMNN) are solved by
  default without CVXPY, by the working-set interior-point method of
  :mod:`cvxkml.solvers.mkl` (30–1000× faster per solve than the CVXPY models with the
  paper's 20 kernels; certified by the same Lagrange bound).  It keeps the
  :class:`~cvxkml.declare.problem.Problem` contract with an honest certificate: the
  rank constraint of eq. 8 is nonconvex, so ``solve_reference`` solves the convex
  relaxation ((15) with W = 0) and ``solve``'s ``dual_value`` is that relaxation's
  Lagrange dual value — a lower bound on min_μ h(μμᵀ), which makes ``gap`` a bound on
  the rank-one answer's suboptimality, closed only when the relaxation is tight.
* :class:`MuWeightStep` — ML_h-MKL_μ, eq. 6 and Lemma 2: min h(μ) over the simplex for
  any h convex in μ, as a CVXPY model (DCP-checked), certified by the conic solver's dual
  objective.  Both steps return a :class:`WeightStepSolution` (a
  :class:`~cvxkml.solution.Solution`).  LMNN is not convex in μ (the
  impostor distances enter with a minus sign, §5); :class:`LMNNMuMajorizer` is its convex
  majorizer at a reference μ_k (impostor distances linearized), and :func:`lmnn_mu_step`
  iterates it (convex–concave procedure: each step is a convex model, F never increases).
* :func:`alternate` — Algorithm 1: weight step, then the LMNN metric step on
  K_μ = Σ μ_l K_l warm-started from the previous A, until μ and the objective stop
  changing.  The objective F(A, μ) of both half-steps is the LMNN objective of
  :mod:`cvxkml.formulas.lmnn` on the pair distances tr(P Q_ij) (one formula).
* NR-ML-MKL (eq. 12–14) is LMNN on the concatenated maps:
  :meth:`cvxkml.declare.lmnn.LMNNProblem.multiple_kernels`.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np

from .._validation import (
    as_float_array,
    check_choice,
    check_conic_options,
    check_int,
    check_labels,
    check_number,
    check_positive,
)
from ..errors import ConvergenceWarning, InvalidInputError, SolverError
from ..formulas.lmnn import LMNNTriplets, lmnn_objective, ordered_pair_distances
from ..formulas.mkl import HingeTerms
from ..kernels import kernel_sq_distances
from ..solution import Solution
from ._conic import solve_conic, solve_conic_bound
from .lmnn import LMNNProblem, _check_gamma, check_kernel_list
from .problem import CALLBACK_STOP, Problem

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

#: The paper's grid for w in (15): {10^i, i = 0 … 8}.
W_GRID = tuple(10.0**i for i in range(9))


# --------------------------------------------------------------------------- data
def combine_kernels(Ks, mu) -> np.ndarray:
    """K_μ = Σ_l μ_l K_l."""
    mu = np.asarray(mu, dtype=float)
    return np.tensordot(mu, np.asarray(Ks, dtype=float), axes=1)


def _check_triplets(triplets, n: int | None = None) -> None:
    if not isinstance(triplets, LMNNTriplets) or (n is not None and triplets.n != n):
        raise InvalidInputError(
            "triplets must be an LMNNTriplets (LMNNTriplets.from_labels)"
            + (f" built for the kernels' {n} points" if n is not None else "")
            + f"; got {type(triplets).__name__}"
            + (f" for {triplets.n} points" if isinstance(triplets, LMNNTriplets) else "")
            + "."
        )


def _check_mu(mu, m: int, name: str = "mu") -> np.ndarray:
    mu = as_float_array(mu, name, ndim=1)
    if mu.size != m:
        raise InvalidInputError(f"{name} must have one weight per kernel ({m}); got {mu.size}.")
    if np.any(mu < -1e-12) or abs(mu.sum() - 1.0) > 1e-8:
        raise InvalidInputError(f"{name} must lie on the simplex (μ >= 0, Σ μ = 1); got {mu}.")
    return np.maximum(mu, 0.0) / np.maximum(mu, 0.0).sum()


def pair_kernel_quadratics(Ks, A, pi, pj, chunk: int = 2048) -> np.ndarray:
    """Q_p = B_p A B_pᵀ (m × m) for the index pairs p = (pi, pj): Q_p[l, l'] =
    (K_l^i − K_l^j)ᵀ A (K_l'^i − K_l'^j), so that d²_{A,P}(i, j) = tr(P Q_p) (eq. 7).

    Computed from a factor A = L Lᵀ (eigendecomposition, negative round-off clipped):
    F_l = K_l L, then Q_p = R_p R_pᵀ with R_p[l] = F_l[i] − F_l[j], in chunks of pairs.

    Returns
    -------
    Q : ndarray of shape (P, m, m)
    """
    Ks = np.asarray(Ks, dtype=float)
    m, n, _ = Ks.shape
    A = as_float_array(A, "A", ndim=2)
    if A.shape != (n, n):
        raise InvalidInputError(f"A must be {n} × {n} to match the kernels; got {A.shape}.")
    w, V = np.linalg.eigh(0.5 * (A + A.T))
    keep = w > 1e-12 * max(float(np.abs(w).max()), np.finfo(float).tiny)
    L = V[:, keep] * np.sqrt(w[keep])
    F = np.stack([K @ L for K in Ks])  # (m, n, r)
    pi = np.asarray(pi, dtype=np.int64)
    pj = np.asarray(pj, dtype=np.int64)
    Q = np.empty((pi.size, m, m))
    for s in range(0, pi.size, chunk):
        R = (F[:, pi[s : s + chunk]] - F[:, pj[s : s + chunk]]).transpose(1, 0, 2)  # (c, m, r)
        Q[s : s + chunk] = R @ R.transpose(0, 2, 1)
    return 0.5 * (Q + Q.transpose(0, 2, 1))


def mu_from_P(P) -> np.ndarray:
    """μ from a (numerically) rank-one P = μμᵀ: √λ_1 v_1 with the sign making Σ μ > 0,
    round-off negatives clipped and Σ μ = 1 restored (for P ≥ 0 entrywise the Perron
    vector is non-negative)."""
    P = as_float_array(P, "P", ndim=2)
    lam, V = np.linalg.eigh(0.5 * (P + P.T))
    mu = np.sqrt(max(float(lam[-1]), 0.0)) * V[:, -1]
    if mu.sum() < 0:
        mu = -mu
    mu = np.maximum(mu, 0.0)
    s = mu.sum()
    if not s > 0:
        raise InvalidInputError("P has no positive eigen-direction; it is not a weight matrix μμᵀ.")
    return mu / s


# --------------------------------------------------------------------------- h linear in P
class LinearPObjective:
    """An objective h(P) linear in P (Lemma 3), possibly with auxiliary variables.

    Subclasses implement ``cvx(P) -> (expression, constraints)`` for a CVXPY variable P
    (m × m) and ``value(P) -> float`` (the same h in numpy, minimized over its auxiliary
    variables).  To enable the cutting-plane solver they also implement
    ``linear_part() -> C`` and ``cut(P) -> (a, G)`` where h(P') = ⟨C, P'⟩ + φ(P'), φ convex,
    and φ(P') >= a + ⟨G, P'⟩ for all P' with equality at P (plus ``initial_cuts()``).
    To enable the interior-point solver (the fast default) they implement
    ``hinge_terms() -> HingeTerms``: the same h as ⟨C, P⟩ + Σ_t c_t [b_t + ⟨D_t, P⟩]_+
    (:class:`cvxkml.solvers.mkl.HingeTerms`, NumPy only).
    """

    m: int

    def cvx(self, P):  # pragma: no cover - interface
        raise NotImplementedError

    def value(self, P) -> float:  # pragma: no cover - interface
        raise NotImplementedError

    def value_mu(self, mu) -> float:
        """h(μμᵀ)."""
        mu = np.asarray(mu, dtype=float)
        return self.value(np.outer(mu, mu))

    @property
    def supports_cuts(self) -> bool:
        return all(hasattr(self, a) for a in ("linear_part", "cut", "initial_cuts"))

    @property
    def supports_ipm(self) -> bool:
        """Whether h offers ``hinge_terms()`` (the interior-point method of (15))."""
        return callable(getattr(self, "hinge_terms", None))

    def minorant(self, cons, scale: float = 1.0, idx=None):
        """An affine minorant of h read from the Lagrange multipliers of its own CVXPY
        constraints after a solve: (a, G) with h(P') >= a + ⟨G, P'⟩ for *every* P'.

        Parameters
        ----------
        cons : list
            The constraints ``cvx`` (or ``cvx_subset``) returned, solved as part of a model
            whose objective was multiplied by ``scale``.
        scale : float
            That factor (the multipliers are divided by it).
        idx : array of int or None
            The hinge terms of ``cvx_subset`` (None: ``cvx``).

        Returns
        -------
        (a, G) or None
            None (this default): h has no closed-form Lagrange dual, and the weight steps
            certify with the conic solver's dual objective instead.
        """
        return None

    @property
    def has_minorant(self) -> bool:
        """Whether :meth:`minorant` is implemented (the closed-form certificate)."""
        return type(self).minorant is not LinearPObjective.minorant


class CallablePObjective(LinearPObjective):
    """Wrap user functions as an h linear in P.

    Parameters
    ----------
    m : number of kernels.
    cvx : callable P -> expression or (expression, constraints); P a CVXPY m × m variable.
    value : callable P (ndarray) -> float, the same h in numpy (needed for the rank-one
        diagnostics and the brute-force checks); default: solve the CVXPY form with P fixed.
    """

    def __init__(self, m: int, cvx, value=None):
        self.m = int(m)
        self._cvx = cvx
        self._value = value

    def cvx(self, P):
        out = self._cvx(P)
        if isinstance(out, tuple):
            expr, cons = out
            return expr, list(cons)
        return out, []

    def value(self, P) -> float:
        if self._value is not None:
            return float(self._value(np.asarray(P, dtype=float)))
        Pv = cp.Variable((self.m, self.m), symmetric=True)
        expr, cons = self.cvx(Pv)
        prob = cp.Problem(cp.Minimize(expr), cons + [Pv == np.asarray(P, dtype=float)])
        solve_conic(prob, "CLARABEL", None, True, "evaluation of h")
        return float(prob.value)


class LMNNWeightObjective(LinearPObjective):
    """LMNN's h(P) for a fixed metric A (eq. 18 with d(p) = tr(P Q_p)): linear in P.

        h(P) = (1 − γ) Σ_S tr(P Q_ij) + γ Σ_t [1 + tr(P Q_ij) − tr(P Q_il)]_+

    Parameters
    ----------
    Q : ndarray of shape (P, m, m)
        Q_p per pair of ``triplets`` (:func:`pair_kernel_quadratics`).
    triplets : LMNNTriplets
    gamma : float in (0, 1]
    """

    def __init__(self, Q, triplets: LMNNTriplets, gamma: float = 0.5):
        _check_triplets(triplets)
        Q = as_float_array(Q, "Q")
        if Q.ndim != 3 or Q.shape[1] != Q.shape[2] or Q.shape[0] != triplets.n_pairs:
            raise InvalidInputError(f"Q must have shape (n_pairs={triplets.n_pairs}, m, m); got {Q.shape}.")
        self.Q = Q
        self.m = Q.shape[1]
        self.triplets = triplets
        self.gamma = _check_gamma(gamma)
        self._Qflat = Q.reshape(Q.shape[0], -1)

    @classmethod
    def from_kernels(cls, Ks, A, triplets: LMNNTriplets, gamma: float = 0.5) -> "LMNNWeightObjective":
        """Build the Q_p from the kernels K_l and the metric A (eq. 7)."""
        _check_triplets(triplets)
        Ks = np.asarray(check_kernel_list(Ks))
        A = as_float_array(A, "A", ndim=2)
        if A.shape != Ks.shape[1:]:
            raise InvalidInputError(f"A must be {Ks.shape[1]} × {Ks.shape[1]} (one row per point); got {A.shape}.")
        return cls(pair_kernel_quadratics(Ks, A, triplets.pi, triplets.pj), triplets, gamma)

    def pair_values(self, P) -> np.ndarray:
        """tr(P Q_p) for every pair."""
        return self._Qflat @ np.asarray(P, dtype=float).ravel()

    def value(self, P) -> float:
        return lmnn_objective(self.pair_values(P), self.triplets, self.gamma)

    def cvx(self, P):
        tr = self.triplets
        p = self._Qflat @ cp.vec(P, order="C")
        xi = cp.Variable(tr.n_triplets, nonneg=True, name="xi")
        expr = (1.0 - self.gamma) * (tr.target_weight @ p) + self.gamma * cp.sum(xi)
        return expr, [p[tr.ti] - p[tr.tt] + xi >= 1.0]

    def hinge_terms(self) -> HingeTerms:
        """h as ⟨C, P⟩ + Σ_t γ [1 + ⟨Q_tt − Q_ti, P⟩]_+ for the interior-point solver of
        (15) (:func:`cvxkml.solvers.mkl.weight_step_ipm`); built once and cached."""
        if getattr(self, "_hinge_terms", None) is None:
            tr = self.triplets
            self._hinge_terms = HingeTerms(self.linear_part(), self.Q, tr.tt, tr.ti, 1.0, self.gamma)
        return self._hinge_terms

    # cutting-plane oracle: h = ⟨C, P⟩ + γ Σ_t [1 + ⟨Q_tt − Q_ti, P⟩]_+
    def linear_part(self) -> np.ndarray:
        return (1.0 - self.gamma) * np.tensordot(self.triplets.target_weight, self.Q, axes=1)

    def cut(self, P):
        tr = self.triplets
        p = self.pair_values(P)
        act = (1.0 + p[tr.tt] - p[tr.ti]) > 0.0
        n_act = int(act.sum())
        if n_act == 0:
            return 0.0, np.zeros((self.m, self.m))
        w = (np.bincount(tr.tt[act], minlength=tr.n_pairs) - np.bincount(tr.ti[act], minlength=tr.n_pairs)).astype(
            float
        )
        nz = np.flatnonzero(w)
        G = np.tensordot(w[nz], self.Q[nz], axes=1)
        return self.gamma * n_act, self.gamma * G

    def initial_cuts(self):
        return [(0.0, np.zeros((self.m, self.m)))]  # the hinge sum is >= 0

    def minorant(self, cons, scale: float = 1.0, idx=None):
        """(a, G) with h(P') >= a + ⟨G, P'⟩ for every P', from the multipliers α_t of the
        hinge constraints ξ_t >= 1 + ⟨Q_tt − Q_ti, P⟩ (of :meth:`cvx`, or of
        :meth:`cvx_subset` for the terms ``idx``): each hinge γ[1 + ⟨D_t, P⟩]_+ is at least
        α_t(1 + ⟨D_t, P⟩) for α_t ∈ [0, γ], so

            a = Σ_t α_t,   G = (1 − γ) Σ_S Q_ij + Σ_t α_t (Q_tt − Q_ti)

        (α clipped to [0, γ], hinges outside ``idx`` at α = 0).  Valid for any multipliers;
        tight at the optimum of (15), where α are its Lagrange multipliers.  None when the
        solver returned no multipliers."""
        tr = self.triplets
        idx = np.arange(tr.n_triplets) if idx is None else np.asarray(idx, dtype=np.int64)
        if idx.size == 0:
            alpha = np.zeros(0)
        else:
            dual = cons[0].dual_value if cons else None
            if dual is None:
                return None
            alpha = np.clip(np.ravel(np.asarray(dual, dtype=float)) / scale, 0.0, self.gamma)
        w = np.bincount(tr.tt[idx], weights=alpha, minlength=tr.n_pairs) - np.bincount(
            tr.ti[idx], weights=alpha, minlength=tr.n_pairs
        )
        return float(alpha.sum()), self.linear_part() + np.tensordot(w, self.Q, axes=1)

    # active-set oracle: h_S = ⟨C, P⟩ + γ Σ_{t ∈ S} [1 + ⟨Q_tt − Q_ti, P⟩]_+ <= h for every S
    @property
    def n_terms(self) -> int:
        return self.triplets.n_triplets

    def hinge_arguments(self, P) -> np.ndarray:
        """1 + tr(P Q_ij) − tr(P Q_il) for every triplet (the hinge is active where > 0)."""
        p = self.pair_values(P)
        return 1.0 + p[self.triplets.tt] - p[self.triplets.ti]

    def cvx_subset(self, P, idx):
        """h_S(P) with only the hinge terms ``idx`` (a lower bound on h, equal to h at every P
        where the other hinges are inactive); returns (expression, constraints)."""
        tr = self.triplets
        idx = np.asarray(idx, dtype=np.int64)
        vecP = cp.vec(P, order="C")
        expr = cp.sum(cp.multiply(self.linear_part(), P))
        if idx.size == 0:
            return expr, []
        D = self._Qflat[tr.tt[idx]] - self._Qflat[tr.ti[idx]]
        xi = cp.Variable(idx.size, nonneg=True, name="xi")
        return expr + self.gamma * cp.sum(xi), [D @ vecP + 1.0 <= xi]


# --------------------------------------------------------------------------- results
class WeightStepSolution(Solution):
    """The :class:`~cvxkml.solution.Solution` of a kernel-weight step, with read-only views
    of what the step learned (all of them are in ``info`` too).

    ``matrix`` is the step's primal point: P (m × m) for the MKL_P step — μμᵀ from
    :meth:`RankOneWeightStep.solve`, the relaxation's P from
    :meth:`RankOneWeightStep.solve_reference` — and μ (m,) for the MKL_μ step.
    """

    @property
    def mu(self) -> np.ndarray:
        """The kernel weights μ (on the simplex)."""
        return self.info["mu"]

    @property
    def P(self) -> np.ndarray:
        """The P step's P*: of the last convex iteration (numerically rank one when
        ``rank_one``), or the relaxation's from ``solve_reference``; μμᵀ for the μ step."""
        return self.info["P"]

    @property
    def relaxed(self) -> float | None:
        """h at the relaxation's P (eq. 15 with W = 0), or None."""
        return self.info.get("relaxed")

    @property
    def w(self) -> float | None:
        """The weight w of (15) that reached the rank-one point (P step), or None."""
        return self.info.get("w")

    @property
    def rank_one(self) -> bool:
        """Whether (17) was reached (always True for the μ step)."""
        return bool(self.info.get("rank_one", True))

    @property
    def history(self) -> list:
        """Per convex iteration (w, iteration, h(P*), tr(P*W), Σ_{i>=2} λ_i) (P step), or
        per CCP iteration (iteration, h) (:func:`lmnn_mu_step`)."""
        return self.info.get("history", [])

    @property
    def n_solves(self) -> int:
        """Solves of (15) made (conic or interior-point)."""
        return int(self.info.get("n_solves", 0))


# --------------------------------------------------------------------------- MKL_P step
def _feasible_set(P) -> list:
    """The constraints of eq. 8 / 15 on P besides P ⪰ 0 (a PSD variable): Σ_ij P_ij = 1 and
    P >= 0, in this order.  Every model of the P step states them through this function
    (:func:`_set_bound` reads their multipliers by position); :func:`_set_violations` is
    their NumPy side."""
    return [cp.sum(P) == 1.0, P >= 0.0]


def _set_violations(P) -> np.ndarray:
    """Violations of the convex constraints of eq. 8 / 15 at P: [max(0, −λ_min(P)),
    |Σ_ij P_ij − 1|, max(0, −min_ij P_ij)] (all relative to Σ P = 1)."""
    P = np.asarray(P, dtype=float)
    lam_min = float(np.linalg.eigvalsh(0.5 * (P + P.T))[0])
    return np.array([max(0.0, -lam_min), abs(float(P.sum()) - 1.0), max(0.0, -float(P.min()))])


def _set_bound(a: float, G, cons, scale: float) -> float:
    """A Lagrange lower bound on min_{P ∈ S} a + ⟨G, P⟩, S = {P ⪰ 0, P >= 0, Σ P = 1}, from
    the multipliers of the :func:`_feasible_set` constraints ``cons`` of a model whose
    objective was multiplied by ``scale``:

        a + ν + min(0, λ_min(G − ν 11ᵀ − N)),   ν = −y / scale,  N = max(Z, 0) / scale,

    y and Z CVXPY's duals of Σ P = 1 and P >= 0.  Valid for any ν and N >= 0: on S,
    ⟨G, P⟩ = ν + ⟨N, P⟩ + ⟨R, P⟩ with ⟨N, P⟩ >= 0 and ⟨R, P⟩ >= min(0, λ_min(R))·tr P,
    0 <= tr P <= Σ_ij P_ij = 1; so round-off in the multipliers only loosens the bound.
    NaN when the solver returned no multipliers."""
    y, Z = cons[0].dual_value, cons[1].dual_value
    if y is None or Z is None:
        return float("nan")
    nu = -float(np.ravel(y)[0]) / scale
    R = np.asarray(G, dtype=float) - nu - np.maximum(np.asarray(Z, dtype=float), 0.0) / scale
    return float(a + nu + min(0.0, float(np.linalg.eigvalsh(0.5 * (R + R.T))[0])))


class RankOneWeightStep(Problem):
    """The rank-one kernel-weight step ML_h-MKL_P (Wang et al. eq. 8, 15–17) for any h
    linear in P:

        min_P  h(P)   s.t.  P ⪰ 0,  Σ_ij P_ij = 1,  P >= 0,  rank P = 1        (8)

    (P = μμᵀ, μ on the simplex).  The rank constraint makes (8) nonconvex; it is solved by
    the convex iteration (15)–(17).  What is certified, and what is not:

    * :meth:`solve_reference` solves the *convex relaxation* of (8) — (15) with W = 0, i.e.
      (8) without the rank constraint — with a conic solver and its Lagrange dual: a
      certified lower bound on min_μ h(μμᵀ), which equals it when the relaxation's P is
      rank one (``info["rank_one"]``).
    * :meth:`solve` runs the convex iteration and returns a rank-one point μμᵀ (an upper
      bound on the optimum of (8)); its ``dual_value`` is the relaxation's Lagrange dual
      value, so ``gap`` = h(μμᵀ) − dual_value >= 0 bounds how far μ can be from the global
      optimum of (8).  ``converged=True`` only when the rank-one point (17) was reached *and*
      the gap is within ``tol``: when the relaxation is not tight the gap stays positive —
      the convex iteration is a local method (§4.1) with no global certificate — and the
      answer is honestly reported as not certified (``converged=False``, a
      :class:`ConvergenceWarning`) even when it is a good point.

    Parameters
    ----------
    h : LinearPObjective
        The objective for fixed A (e.g. :class:`LMNNWeightObjective`,
        :class:`CallablePObjective`).
    w_grid : sequence of float, default=(1, 10, …, 1e8)
        Values of w tried in increasing order; the first that reaches the rank-one
        point (17) is used (the paper's rule).
    rank_tol : float, default=1e-6
        Rank one means Σ_{i>=2} λ_i(P*) <= rank_tol · λ_1(P*) (eq. 17).
    max_convex_iter : int, default=50
        Iterations (15)–(16) per value of w (the default of ``solve(max_iter=...)``).
    method : {"auto", "interior-point", "full", "cutting-plane", "active-set"}, default="auto"
        How (15) is solved: "interior-point" (no CVXPY) is
        :func:`cvxkml.solvers.mkl.weight_step_ipm`, a primal–dual interior-point method on
        the m × m doubly non-negative block with a working set of hinges (exact: the
        hinges outside it are linearized or dropped, both lower bounds of h, and any whose
        sign is wrong at the solution joins it), warm-started at the previous P* of the
        convex iteration; it needs ``h.hinge_terms()`` (LMNN has it).  "full" builds
        the whole CVXPY model of h (practical while h has a few thousand terms);
        "cutting-plane" keeps h's linear part exact and replaces its piecewise part by
        the maximum of sub-gradient cuts (Kelley's method), re-solving a small CVXPY
        master problem (m × m PSD block + one row per cut) until the true value and the
        master bound agree to ``tol``; cuts are valid for every W and w, so they are kept
        across the whole convex iteration.
        "active-set" solves (15) with the hinge terms of a working set only and adds the
        hinges active at the solution until none is left out (exact: the restricted h
        is a lower bound on h that agrees with it at the final point).  "auto":
        interior-point when h offers ``hinge_terms`` (LMNN does); otherwise full when h
        has at most 2000 triplets, else active-set when h offers ``hinge_arguments`` /
        ``cvx_subset``, else cutting planes.
    tol : float, default=1e-7
        Relative gap of the cutting-plane solves.
    solver : str or None, default="CLARABEL"
        The conic solver of (15) (None: :meth:`default_solver`, Clarabel up to m = 40
        kernels); the default of :meth:`solve_reference` too.
    max_cuts : int, default=2000
        Cutting-plane budget per solve.
    active_buffer : float, default=0.5
        "active-set": hinges with argument > −active_buffer join the working set.

    Notes
    -----
    The certificate's lower bound comes from :func:`_set_bound` applied to an affine
    minorant of h (for "interior-point": the same bound,
    :func:`cvxkml.solvers.mkl.lagrange_bound`, at the interior-point multipliers α_t of
    every hinge, ν and N): with :meth:`LinearPObjective.minorant` (LMNN: the hinge
    multipliers) or the cutting-plane master's cut multipliers it is a closed-form Lagrange dual value,
    valid for whatever multipliers the solver returns; for an h without one (a
    :class:`CallablePObjective`) it is the conic solver's dual objective (Clarabel / SCS;
    with another solver there is no certificate, ``info["no_certificate"]`` says so).
    """

    def __init__(
        self,
        h: LinearPObjective,
        w_grid=W_GRID,
        rank_tol: float = 1e-6,
        max_convex_iter: int = 50,
        method: str = "auto",
        tol: float = 1e-7,
        solver: str = "CLARABEL",
        max_cuts: int = 2000,
        active_buffer: float = 0.5,
    ):
        if not isinstance(h, LinearPObjective):
            raise InvalidInputError(
                "h must be a LinearPObjective (e.g. LMNNWeightObjective, or CallablePObjective "
                "wrapping a CVXPY expression linear in P)."
            )
        self.h = h
        self.m = check_int(h.m, "h.m (the number of kernels)", minimum=1)
        grid = as_float_array(w_grid, "w_grid", finite=False) if not isinstance(w_grid, (str, bytes)) else None
        if grid is None or grid.ndim != 1 or grid.size == 0 or not np.all(np.isfinite(grid) & (grid > 0)):
            raise InvalidInputError(f"w_grid must be a non-empty sequence of positive numbers; got {w_grid!r}.")
        self.w_grid = tuple(float(w) for w in grid)
        self.rank_tol = check_positive(rank_tol, "rank_tol")
        self.max_convex_iter = check_int(max_convex_iter, "max_convex_iter", minimum=1)
        check_choice(method, "method", ("auto", "interior-point", "full", "cutting-plane", "active-set"))
        if method == "cutting-plane" and not h.supports_cuts:
            raise InvalidInputError(
                "method='cutting-plane' needs h.linear_part(), h.cut() and h.initial_cuts(); use method='full'."
            )
        has_active = all(hasattr(h, a) for a in ("hinge_arguments", "cvx_subset"))
        if method == "active-set" and not has_active:
            raise InvalidInputError(
                "method='active-set' needs h.hinge_arguments() and h.cvx_subset(); use method='full'."
            )
        if method == "interior-point" and not h.supports_ipm:
            raise InvalidInputError(
                "method='interior-point' needs h.hinge_terms() (a HingeTerms form of h); use method='full'."
            )
        if method == "auto" and h.supports_ipm:
            method = "interior-point"
        elif method == "auto":
            n_terms = getattr(getattr(h, "triplets", None), "n_triplets", 0)
            if n_terms <= 2000:
                method = "full"
            elif has_active:
                method = "active-set"
            else:
                method = "cutting-plane" if h.supports_cuts else "full"
        self.method = method
        self.tol = check_positive(tol, "tol")
        self.solver = check_conic_options(solver, None)[0] or self.default_solver()
        self.max_cuts = check_int(max_cuts, "max_cuts", minimum=1)
        self._model = None  # (cvxpy.Problem, h's constraints) of "full" / "active-set"
        self._cuts = None
        self._active = None
        self._relaxation = None  # (P, h(P), (bound, how)) of (15) with W = 0
        self._unsettled = 0  # cutting-plane solves stopped at max_cuts
        self._last_solver = self.solver  # the solver of the last solve (SCS after a fallback)
        self.active_buffer = check_number(active_buffer, "active_buffer", low=0.0)
        self.n_solves = 0
        self._ipm_start = None  # the point the interior point classifies hinges at
        self._ipm_stats = []  # per interior-point solve: (seconds, rounds, iterations, kept)

    # ------------------------------------------------------------------ numpy side
    def exact_size(self) -> int:
        """m, the side of the PSD variable P (the number of kernels)."""
        return self.m

    def _matrix(self, P, name: str = "P") -> np.ndarray:
        P = as_float_array(P, name, ndim=2)
        if P.shape != (self.m, self.m):
            raise InvalidInputError(f"{name} must be {self.m} × {self.m} (one row per kernel); got {P.shape}.")
        return P

    def objective(self, P) -> float:
        """h(P), the objective of (8) and of (15) with W = 0 (for P = μμᵀ: h(μμᵀ))."""
        return float(self.h.value(self._matrix(P)))

    def violations(self, P) -> np.ndarray:
        """The convex constraints of (8) / (15) at P: [max(0, −λ_min(P)), |Σ P − 1|,
        max(0, −min P_ij)] (:func:`_set_violations`).  The rank constraint of (8) is measured
        by :meth:`rank_gap` (eq. 17)."""
        return _set_violations(self._matrix(P))

    # ------------------------------------------------------------------ the certificate of an answer
    def check_answer(self, sol, *, symmetric_tol: float, psd_tol: float) -> None:
        """P is a finite, symmetric, PSD m × m matrix."""
        from .._answer import check_primal_matrix

        check_primal_matrix(sol.matrix, self.m, what="matrix P", symmetric_tol=symmetric_tol, psd_tol=psd_tol)

    def dual_value_unverified(self) -> str | None:
        """The weight step's bound is its solver's (kept as reported, flagged)."""
        return "the weight step's bound is not a function of returned duals"

    def rank_gap(self, P) -> float:
        """Σ_{i>=2} λ_i(P) / λ_1(P), the rank-one measure of eq. 17 (0 for P = μμᵀ)."""
        return self._tail(self._matrix(P))[1]

    # ------------------------------------------------------------------ models
    def _full_model(self):
        """(the full model of (15), h's own constraints)."""
        P = cp.Variable((self.m, self.m), PSD=True, name="P")
        wW = cp.Parameter((self.m, self.m), symmetric=True, name="wW", value=np.zeros((self.m, self.m)))
        scale = cp.Parameter(nonneg=True, name="s", value=1.0)
        expr, cons = self.h.cvx(P)
        prob = cp.Problem(cp.Minimize(scale * expr + cp.sum(cp.multiply(wW, P))), _feasible_set(P) + list(cons))
        return prob, list(cons)

    # ------------------------------------------------------------------ extension
    #: model methods besides to_cvxpy / objective / violations (see
    #: :func:`cvxkml.declare.extend.check_fast_solver_applies`)
    _model_methods = ("_full_model",)

    def extend(self, term=None, constraints=None):
        """The convex relaxation of (8) — the exact model of :meth:`solve_reference`, (15)
        with W = 0 — plus a convex term and/or constraints on P (m × m), written in CVXPY:
        an :class:`~cvxkml.declare.extend.ExtendedProblem`.

        Parameters
        ----------
        term : callable P -> cvxpy scalar expression, optional
            Added to h(P); convex (DCP) in P, e.g. ``lambda P: 0.1 * cp.trace(P)``.
        constraints : callable P -> list of cvxpy constraints, optional
            Extra constraints on P, e.g. ``lambda P: [P[0, 0] <= 0.2]``.

        Its ``solve_reference()`` returns a :class:`WeightStepSolution` (``info["mu"]``,
        ``info["rank_one"]`` as :meth:`solve_reference`) certified by the conic solver's
        dual objective; its ``solve()`` raises (the convex iteration answers (8) only).
        """
        from .extend import ExtendedProblem

        return ExtendedProblem(self, term=term, constraints=constraints)

    def extension_probe(self):
        """(a symmetric m × m CVXPY variable, "P"): the primal the extension's term sees."""
        return cp.Variable((self.m, self.m), symmetric=True, name="P"), "P"

    def extension_model(self):
        """The exact model for :meth:`extend`: :meth:`to_cvxpy` at wW = 0, s = 1."""
        from .extend import ExtensionModel, ExtensionPoint

        prob, _ = self._full_model()
        P = prob.var_dict["P"]

        def read():
            Pv = np.asarray(P.value, dtype=float)
            Pv = 0.5 * (Pv + Pv.T)
            viol = self.violations(Pv)
            mu = mu_from_P(Pv)
            rank_gap = self._tail(Pv)[1]
            return ExtensionPoint(
                primal=Pv,
                objective=self.objective(Pv),
                violations=viol,
                relative_violation=float(np.max(viol)),
                matrix=Pv,
                info={
                    "mu": mu,
                    "P": Pv,
                    "relaxation": True,
                    "n_solves": 1,
                    "rank_one": rank_gap <= self.rank_tol,
                    "rank_gap": rank_gap,
                },
            )

        return ExtensionModel(problem=prob, primal=P, read=read, solution_type=WeightStepSolution)

    def to_cvxpy(self) -> cp.Problem:
        """Problem (15) as a ``cvxpy.Problem`` with variable ``"P"`` and parameters ``"wW"``
        (= s·w·W) and ``"s"`` (a positive scale): min s·h(P) + tr(wW·P) s.t. P ⪰ 0,
        Σ_ij P_ij = 1, P >= 0.  With s = 1 it is (15) as printed, and with wW = 0 (the
        values it is built with) the convex relaxation of (8); the solver uses
        s = 1 / max(1, w) so that large w (up to 1e8) stay well scaled.  Parameters keep
        the model DPP, so re-solves skip the compilation."""
        return self._full_model()[0]

    def _solve(self, prob, what, want_bound: bool = False) -> float:
        """Solve with the chosen solver, falling back to SCS when it fails; returns the
        solver's dual objective (NaN unless ``want_bound``)."""
        run = solve_conic_bound if want_bound else solve_conic
        try:
            out = run(prob, self.solver, None, True, what)
            self._last_solver = self.solver
        except SolverError:
            if self.solver.upper() == "SCS":
                raise
            out = run(prob, "SCS", 1e-8, True, what)
            self._last_solver = "SCS"
        self.n_solves += 1
        return float(out[3]) if want_bound else float("nan")

    def _certificate(self, prob, cons, s, wW, raw, idx=None):
        """(lower bound on (15) for the solved model, how it was obtained); the bound is None
        when there is none.  ``prob`` starts with the :func:`_feasible_set` constraints."""
        mino = self.h.minorant(cons, s, idx) if cons is not None else None
        if mino is not None:
            a, G = mino
            bound = _set_bound(a, G + wW, prob.constraints[:2], s)
            if np.isfinite(bound):
                return bound, "Lagrange dual of (15) (multipliers of h's constraints and of the feasible set)"
        if np.isfinite(raw):
            return raw / s, f"{self._last_solver} dual objective of (15) (no closed-form dual for this h)"
        return None, (
            f"{self._last_solver} returned neither multipliers for a closed-form Lagrange "
            "dual of h (LinearPObjective.minorant) nor a dual objective; use "
            "solver='CLARABEL' or 'SCS'"
        )

    def _library_solver(self, task: str, **options):
        """Run ``task`` ("relaxation", "convex_iteration") of the library's own registered
        solver of this step (the first non-user spec that accepts it: a user's solver answers
        :meth:`solve`, not these sub-problems of the convex iteration)."""
        from .registry import SolveRequest, call, registered

        spec = next((s for s in registered() if not s.user and not s.generic and s.refusal(self) is None), None)
        if spec is None:
            raise InvalidInputError(
                f"No solver of the library takes {type(self).__name__}: import cvxkml (which registers the "
                "built-in solvers) before solving, or use solve_reference()."
            )
        return call(
            spec, self, self.tol, self.max_convex_iter, SolveRequest(1.0, 1.0, options=dict(task=task, **options))
        )

    def solve_relaxation(self, W=None, w: float = 1.0) -> tuple[np.ndarray, float]:
        """Solve (15) for a direction matrix W (default 0) and weight w; returns (P*, value)."""
        W = np.zeros((self.m, self.m)) if W is None else self._matrix(W, "W")
        res = self._library_solver("relaxation", W=W, w=float(w))
        if res.extra["unsettled"]:
            warnings.warn(
                f"Cutting planes stopped at max_cuts={self.max_cuts} before the gap closed "
                f"to tol={self.tol:g}; raise max_cuts.",
                ConvergenceWarning,
                stacklevel=2,
            )
        return res.matrix, res.extra["value"]

    @staticmethod
    def direction(P) -> np.ndarray:
        """Eq. 16 in closed form: W = U Uᵀ, U the eigenvectors of P for its m − 1 smallest
        eigenvalues (the optimum of min tr(PᵀW) s.t. 0 ⪯ W ⪯ I, tr W = m − 1)."""
        lam, V = np.linalg.eigh(0.5 * (P + P.T))
        U = V[:, :-1]
        return U @ U.T

    @staticmethod
    def _tail(P) -> tuple[float, float]:
        """(Σ_{i>=2} λ_i(P), the same over λ_1(P)): eq. 17's tail, absolute and relative."""
        lam = np.linalg.eigvalsh(0.5 * (P + P.T))
        tail = float(np.sum(lam[:-1]))
        return tail, tail / max(float(lam[-1]), np.finfo(float).tiny)

    def convex_iteration(self, w: float, W0=None) -> tuple[np.ndarray, bool, list, np.ndarray]:
        """Alternate (15) and (16) for one w from W0 (default 0) until (17) holds
        (Σ_{i>=2} λ_i <= rank_tol·λ_1) or (15)'s value stops decreasing.

        Returns (P, reached, history rows (w, it, h(P), tr(PW), tail), W) with W the
        direction matrix of the last solve: P minimizes h(P') + w·tr(P'W) over all
        feasible P', which is what certifies the point (see :meth:`solve`)."""
        res = self._library_solver("convex_iteration", w=w, W0=W0)
        return res.matrix, res.extra["rank_one"], res.extra["history"], res.extra["W"]

    def _start_direction(self, warm_start, W0):
        """The start direction W of the convex iteration from ``warm_start`` (or the
        deprecated ``W0``), validated."""
        if W0 is not None:
            if warm_start is not None:
                raise InvalidInputError(
                    "Give the start direction once: pass warm_start=... (W0 is its deprecated former name), not both."
                )
            warnings.warn(
                "solve(W0=...) is deprecated and will be removed in the next release; use warm_start=...",
                DeprecationWarning,
                stacklevel=3,
            )
            warm_start = W0
        if warm_start is None:
            return None
        m = self.m
        arr = as_float_array(warm_start, "warm_start")
        if arr.shape == (m, m):
            return arr
        if arr.shape == (m,):
            if np.any(arr < 0) or not arr.sum() > 0:
                raise InvalidInputError(
                    f"warm_start as weights must be {m} non-negative numbers, not all zero (e.g. the "
                    f"previous μ); got {arr}."
                )
            u = arr / np.linalg.norm(arr)
            return np.eye(m) - np.outer(u, u)
        raise InvalidInputError(
            f"warm_start must be the start direction W of eq. 16, an {m} × {m} matrix (e.g. a "
            f"previous solution's info['W']), or previous weights μ, {m} non-negative numbers "
            f"(then W = I − uuᵀ, u = μ/‖μ‖); got shape {arr.shape}."
        )

    def solve_reference(
        self, solver: str | None = None, eps: float | None = None, accept_inaccurate: bool = False, **opts
    ) -> WeightStepSolution:
        """The convex relaxation of (8) — (15) with W = 0, no rank constraint — by a conic
        solver at high accuracy (the exact model the P step has; (8) itself is nonconvex).

        Parameters
        ----------
        solver : str or None
            A CVXPY solver (default: the constructor's, Clarabel).
        eps : float or None
            Its tolerance (Clarabel 1e-8, SCS 1e-9 by default).
        accept_inaccurate : bool
            Accept ``optimal_inaccurate`` without the certificate vouching for it.
        **opts
            Passed to the solver.

        Returns
        -------
        WeightStepSolution
            ``matrix`` = the relaxation's P, ``objective`` = h(P), ``dual_value`` its
            Lagrange dual value (a certified lower bound on min_μ h(μμᵀ); ``gap`` certifies
            the relaxation), ``info["rank_one"]`` whether P is rank one (eq. 17, then it is
            the global optimum of (8)), ``info["mu"]`` its top-eigenvector weights and
            ``info["rank_one_objective"]`` = h(μμᵀ) for them (an upper bound on the optimum
            of (8)), ``info["certificate"]`` how the bound was obtained.

        Raises
        ------
        SolverError
            The solver failed, or returned ``optimal_inaccurate`` that the certificate does
            not vouch for (:meth:`~cvxkml.declare.Problem._accept_reference`).
        """
        solver, eps = check_conic_options(solver, eps)
        solver = solver or self.solver
        prob, cons = self._full_model()
        elapsed, status, iters, raw = solve_conic_bound(
            prob, solver, eps, True, what="relaxation (15) of the MKL_P weight step (W = 0)", **opts
        )
        self._last_solver = solver
        P = np.asarray(prob.var_dict["P"].value, dtype=float)
        P = 0.5 * (P + P.T)
        bound, how = self._certificate(prob, cons, 1.0, 0.0, raw)
        viol = self.violations(P)
        mu = mu_from_P(P)
        rank_gap = self._tail(P)[1]
        info = {
            "mu": mu,
            "P": P,
            "relaxed": self.objective(P),
            "relaxation": True,
            "rank_one": rank_gap <= self.rank_tol,
            "rank_gap": rank_gap,
            "rank_one_objective": self.objective(np.outer(mu, mu)),
            "n_solves": 1,
            "solver_objective": float(prob.value),
            "solver_dual_objective": raw,
            "max_relative_violation": float(np.max(viol)),
        }
        info["certificate" if bound is not None else "no_certificate"] = how
        sol = WeightStepSolution.from_conic(
            status,
            solver,
            elapsed,
            iters,
            matrix=P,
            objective=self.objective(P),
            dual=None,
            slack=None,
            violations=viol,
            dual_value=bound,
            info=info,
        )
        sol = self._accept_reference(sol, status, accept_inaccurate, what="relaxation (15) of the MKL_P weight step")
        sol.converged = status == cp.OPTIMAL or bool(sol.info.get("accepted_by_certificate"))
        return sol

    def solve(
        self, tol: float = 1e-6, max_iter: int | None = None, callback=None, warm_start=None, *, W0=None
    ) -> WeightStepSolution:
        """The weight step: the convex iteration (15)–(16) for w = w_grid[0], w_grid[1], …
        until one reaches the rank-one point (17); μ from that P, certified against the
        relaxation's Lagrange dual value.

        Parameters
        ----------
        tol : float, default=1e-6
            The certificate asked: ``converged`` when the rank-one point was reached and
            the relative gap (h(μμᵀ) − dual_value) / max(1, |h(μμᵀ)|) lies in [−tol, tol].
        max_iter : int or None
            Iterations (15)–(16) per value of w (default: ``max_convex_iter``).
        callback : callable or None
            Called after every solve of (15) in the convex iteration with a dict:
            ``iteration`` (solves so far), ``w``, ``convex_iteration`` (index for this w),
            ``objective`` (h(μμᵀ) for μ from the current P*), ``relaxed_objective``
            (h(P*)), ``rank_gap`` (Σ_{i>=2} λ_i / λ_1), ``rank_one`` (17 reached),
            ``lower_bound`` (the relaxation's Lagrange bound; None while unknown: with a
            warm start it is computed at the end) and ``gap`` (relative, or None).  A truthy
            return stops the solve (``status="stopped by callback"``, ``converged=False``)
            unless that solve reached the rank-one point, which ends it anyway.
        warm_start : array-like, optional
            The start direction W (m × m; default 0, the paper's choice), e.g. a previous
            ``info["W"]``, or previous weights μ (m,), which start at W = I − uuᵀ, u ∝ μ:
            then h(μμᵀ) cannot exceed h(μ_prev μ_prevᵀ) when the rank-one point is reached
            (the values of (15) never increase).
        W0 : array-like, optional
            Deprecated name of an m × m ``warm_start``.

        Returns
        -------
        WeightStepSolution
            ``matrix`` = μμᵀ, ``objective`` = h(μμᵀ), ``dual_value`` = the Lagrange dual value
            of the relaxation (15) with W = 0 (a lower bound on min_μ h(μμᵀ), so ``gap`` >= 0
            up to rounding bounds μ's suboptimality), ``info``: ``mu``, ``P`` (the last P*),
            ``relaxed`` (h at the relaxation's P), ``relaxation_rank_one`` (the relaxation is
            tight: its P is rank one), ``w``, ``rank_one``, ``history``, ``n_solves``,
            ``W`` (the last direction), ``certificate``.

        Notes
        -----
        Besides the global gap, the final P minimizes h(P') + w·tr(P'W) over every
        feasible P', so the rank-one point satisfies h(μμᵀ) <= h(μ'μ'ᵀ) + w·μ'ᵀWμ' for every
        μ' on the simplex (a local-optimality certificate; the convex iteration is a local
        method, §4.1).  When no w reaches rank one, μ comes from the top eigenvector of the
        last P (``rank_one=False``).  Every unconverged return warns once
        (:class:`ConvergenceWarning`).

        This is the certified-solve pipeline (:meth:`~cvxkml.declare.problem.Problem.run_pipeline`):
        the solver registered for the class runs (the library's ``mkl-convex-iteration``, or a
        user's :func:`~cvxkml.declare.register_fast_solver` first), and its P is read back
        and certified by this class's hooks (:meth:`solution_from_fast`, :meth:`certify`).
        """
        from .extend import check_fast_solver_applies

        check_fast_solver_applies(self)
        tol = check_positive(tol, "tol")
        max_iter = self.max_convex_iter if max_iter is None else self._iteration_limit(max_iter)
        callback = self._check_callback(callback)
        W0 = self._start_direction(warm_start, W0)
        return self.run_pipeline(tol, max_iter, tol, tol, warm_start=W0, callback=callback)

    # ------------------------------------------------------------------ the pipeline's hooks
    def _relaxation_bound(self):
        """(the relaxation's P, h there, Lagrange bound or None, how): (15) with W = 0 by the
        exact model (:meth:`solve_reference`), the step's own certificate of an answer that
        does not come from the library's convex iteration."""
        try:
            ref = self.solve_reference(accept_inaccurate=True)
        except SolverError as exc:
            return None, None, None, f"the relaxation (15) with W = 0 failed: {exc}"
        how = ref.info.get("certificate", ref.info.get("no_certificate"))
        return ref.matrix, ref.objective, ref.dual_value, f"the exact relaxation (15) with W = 0: {how}"

    def solution_from_fast(self, res, spec, gap_tol: float):
        """The answer μ = √λ_1 v_1 of the solver's P (:func:`mu_from_P`), and every number
        recomputed at μμᵀ: h, the violations, the rank-one measure (17).  The lower bound is
        the relaxation's Lagrange bound: the one the library's convex iteration computed by
        the step's formulas (its multipliers of (15) with W = 0), and for a user's solver
        the exact relaxation's (:meth:`solve_reference`), never a bound the solver claims."""
        P = self._matrix(res.matrix, f"the matrix P of {spec.name}")
        P = 0.5 * (P + P.T)
        extra = dict(res.extra)
        if spec.user:
            P_rel, relaxed, bound, how = self._relaxation_bound()
        else:
            P_rel, relaxed, bound, how = (
                extra.get(k) for k in ("relaxation_P", "relaxed", "lower_bound", "certificate_how")
            )
        mu = mu_from_P(P)
        Pmu = np.outer(mu, mu)
        obj = self.objective(Pmu)
        viol = self.violations(Pmu)
        history = list(extra.get("history", []))
        info = {
            "mu": mu,
            "P": P,
            "relaxed": relaxed,
            "w": extra.get("w"),
            "rank_one": bool(self.rank_gap(P) <= self.rank_tol),
            "relaxation_rank_one": bool(P_rel is not None and self.rank_gap(P_rel) <= self.rank_tol),
            "history": history,
            "n_solves": int(extra.get("n_solves", 0)),
            "method": extra.get("method", spec.name),
            "W": extra.get("W"),
            "rank_gap": self.rank_gap(P),
            "gap_tol": gap_tol,
            "max_relative_violation": float(np.max(viol)),
        }
        info["certificate" if bound is not None else "no_certificate"] = how
        if extra.get("unsettled"):
            info["unsettled_cutting_plane_solves"] = extra["unsettled"]
        if extra.get("interior_point"):
            info["interior_point"] = extra["interior_point"]
        return WeightStepSolution(
            matrix=Pmu,
            objective=obj,
            dual=None,
            slack=None,
            violations=viol,
            n_iter=int(res.sweeps),
            converged=True,
            time=float(res.time),
            status="converged",
            solver=str(extra.get("solver", spec.name)),
            dual_value=None if bound is None else float(bound),
            info=info,
        )

    def certify(self, sol, res, gap_tol: float, viol_tol: float) -> bool:
        """Certified when the rank-one point (17) was reached, not stopped by the callback,
        and h(μμᵀ) − bound lies in ±``gap_tol``·max(1, |h(μμᵀ)|) (and the violation within
        ``viol_tol``)."""
        gap = sol.gap
        scale = max(1.0, abs(sol.objective))
        within = gap is not None and -gap_tol * scale <= gap <= gap_tol * scale
        ok_viol = sol.info["max_relative_violation"] <= viol_tol
        return bool(sol.info["rank_one"] and within and ok_viol and not res.extra.get("stopped"))

    def unconverged_status(self, sol, res) -> str:
        if res.extra.get("stopped"):
            return CALLBACK_STOP
        return "rank one, not certified" if sol.info["rank_one"] else "rank one not reached"

    def unconverged_message(self, sol, res, spec, gap_tol: float, viol_tol: float) -> str:
        gap = sol.gap
        how = sol.info.get("certificate", sol.info.get("no_certificate"))
        scale = max(1.0, abs(sol.objective))
        gap_txt = f"n/a (no certificate: {how})" if gap is None else f"{gap / scale:.3g}"
        history = sol.info["history"]
        w_used = sol.info["w"]
        if res.extra.get("stopped"):
            return (
                f"The callback stopped the convex iteration after {sol.n_iter} solve(s) of (15), "
                f"before the rank-one point; relative gap {gap_txt}."
            )
        if not sol.info["rank_one"]:
            last = f"{history[-1][4]:.3g}" if history else f"{sol.info['rank_gap']:.3g} (relative)"
            return (
                f"The convex iteration (eq. 15–16) did not reach a rank-one P for any w in "
                f"{self.w_grid} (last tail Σλ_i≥2 = {last}); μ is taken from the top "
                "eigenvector. Extend w_grid or raise max_iter (max_convex_iter)."
            )
        where = "" if w_used is None else f" (w = {w_used:g})"
        if gap is None:
            return f"The rank-one point{where} carries no certificate: {how}."
        if sol.info["max_relative_violation"] > viol_tol:
            return (
                f"The rank-one point{where} is not certified: its relative violation "
                f"{sol.info['max_relative_violation']:.3g} exceeds {viol_tol:.3g}."
            )
        return (
            f"The rank-one point{where} is not certified optimal: its relative gap "
            f"{gap_txt} to the relaxation's lower bound lies outside ±tol = {gap_tol:.3g}. The "
            "relaxation (15) with W = 0 is not tight here or the convex iteration stopped at a "
            "local point (§4.1); the point may still be optimal. Compare solve_reference(), "
            "or loosen tol."
        )


# --------------------------------------------------------------------------- MKL_μ step
def _simplex(mu) -> list:
    """The constraint of eq. 6 on μ besides μ >= 0 (a nonneg variable): Σ_l μ_l = 1.  The
    model states it through this function; :func:`_simplex_violations` is its NumPy side."""
    return [cp.sum(mu) == 1.0]


def _simplex_violations(mu) -> np.ndarray:
    """[max(0, −min μ), |Σ μ − 1|]: the simplex constraints of eq. 6 at μ."""
    mu = np.asarray(mu, dtype=float)
    return np.array([max(0.0, -float(mu.min(initial=0.0))), abs(float(mu.sum()) - 1.0)])


class MuWeightStep(Problem):
    """The kernel-weight step ML_h-MKL_μ (Wang et al. eq. 6, Lemma 2):

        min_μ  h(μ)   s.t.  μ >= 0,  Σ_l μ_l = 1                                   (6)

    for an h convex in μ, as a CVXPY model (DCP-checked).  The problem is convex, so the
    conic solve is certified: ``dual_value`` is the conic solver's dual objective (the
    Lagrange dual value of the canonicalized model at the solver's multipliers; there is
    no closed-form dual for an arbitrary h) and ``gap`` closes to the solver's tolerance.

    Parameters
    ----------
    h : object with ``cvx_mu(mu) -> expression or (expression, constraints)``, or a
        callable with the same signature; ``mu`` is a CVXPY variable of length m.
        Squared distances are convex quadratics of μ (d = ‖R_p μ‖², R_pᵀR_p = Q_p), so
        objectives that only *increase* with distances (compactness, hinge losses on
        similar pairs) are convex; anything decreasing in a distance is not (CVXPY's DCP
        check then raises a clear error).  An optional ``value_mu(mu) -> float`` gives
        the NumPy value (:meth:`objective`; otherwise the CVXPY form is evaluated).
    m : number of kernels (taken from ``h.m`` when present).
    solver : str, default="CLARABEL"
        The conic solver (Clarabel or SCS for a certificate).
    """

    clarabel_max_size = 10**9  # no PSD block: Clarabel at every size

    def __init__(self, h, m: int | None = None, solver: str = "CLARABEL"):
        if not callable(getattr(h, "cvx_mu", h)):
            raise InvalidInputError(
                "h must have a method cvx_mu(mu) or be a callable mu -> CVXPY expression (convex in "
                f"mu); got {type(h).__name__}."
            )
        self.h = h
        m = m if m is not None else getattr(h, "m", None)
        if m is None:
            raise InvalidInputError("Give m, the number of kernels (or an h with an attribute m).")
        self.m = check_int(m, "m (the number of kernels)", minimum=1)
        self.solver = check_conic_options(solver, None)[0] or self.default_solver()

    def exact_size(self) -> int:
        """m, the number of weights (the model has no PSD block; its cones are h's)."""
        return self.m

    def _h_form(self, mu):
        """(expression, constraints) of h at the CVXPY variable ``mu``."""
        fn = self.h.cvx_mu if hasattr(self.h, "cvx_mu") else self.h
        out = fn(mu)
        expr, cons = out if isinstance(out, tuple) else (out, [])
        return expr, list(cons)

    # ------------------------------------------------------------------ numpy side
    def _weights(self, mu) -> np.ndarray:
        mu = as_float_array(mu, "mu", ndim=1)
        if mu.size != self.m:
            raise InvalidInputError(f"mu must have one weight per kernel ({self.m}); got {mu.size}.")
        return mu

    def objective(self, mu) -> float:
        """h(μ): ``h.value_mu`` when h has it, else h's CVXPY form evaluated at μ (minimized
        over its auxiliary variables, if any, by a conic solve with μ fixed)."""
        mu = self._weights(mu)
        if hasattr(self.h, "value_mu"):
            return float(self.h.value_mu(mu))
        var = cp.Variable(self.m, name="mu")
        var.value = mu
        expr, cons = self._h_form(var)
        aux = {v.id for c in [expr, *cons] for v in c.variables()} - {var.id}
        if not aux:
            return float(expr.value)
        prob = cp.Problem(cp.Minimize(expr), cons + [var == mu])
        solve_conic(prob, "CLARABEL", None, True, "evaluation of h(μ)")
        return float(prob.value)

    def violations(self, mu) -> np.ndarray:
        """The constraints of (6) at μ: [max(0, −min μ), |Σ μ − 1|] (:func:`_simplex_violations`)."""
        return _simplex_violations(self._weights(mu))

    # ------------------------------------------------------------------ the certificate of an answer
    def check_answer(self, sol, *, symmetric_tol: float, psd_tol: float) -> None:
        """The weights μ: a finite vector of m entries."""
        from .._answer import check_primal_vector

        check_primal_vector(sol.matrix, self.m, what="weights μ")

    def dual_value_unverified(self) -> str | None:
        """The weight step's bound is its solver's (kept as reported, flagged)."""
        return "the weight step's bound is not a function of returned duals"

    # ------------------------------------------------------------------ extension
    #: model methods besides to_cvxpy / objective / violations (see
    #: :func:`cvxkml.declare.extend.check_fast_solver_applies`)
    _model_methods = ("_h_form",)

    def extend(self, term=None, constraints=None):
        """Model (6) plus a convex term and/or constraints on μ (length m), written in CVXPY:
        an :class:`~cvxkml.declare.extend.ExtendedProblem`.

        Parameters
        ----------
        term : callable μ -> cvxpy scalar expression, optional
            Added to h(μ); convex (DCP) in μ, e.g. ``lambda mu: 0.1 * cp.sum_squares(mu)``.
        constraints : callable μ -> list of cvxpy constraints, optional
            Extra constraints on μ, e.g. ``lambda mu: [mu[0] <= 0.5]``.

        Its ``solve_reference()`` returns a :class:`WeightStepSolution` certified by the
        conic solver's dual objective; its ``solve()`` raises (use ``solve_reference()``).
        """
        from .extend import ExtendedProblem

        return ExtendedProblem(self, term=term, constraints=constraints)

    def extension_probe(self):
        """(a CVXPY variable of length m, "mu"): the primal the extension's term sees."""
        return cp.Variable(self.m, name="mu"), "mu"

    def extension_model(self):
        """The exact model for :meth:`extend`: :meth:`to_cvxpy`; μ is read back as
        :meth:`solve_reference` does (round-off negatives clipped, Σ μ = 1 restored)."""
        from .extend import ExtensionModel, ExtensionPoint

        prob = self.to_cvxpy()
        var = prob.var_dict["mu"]

        def read():
            raw = np.asarray(var.value, dtype=float)
            mu = np.maximum(raw, 0.0)
            mu = mu / mu.sum()
            viol = self.violations(mu)
            return ExtensionPoint(
                primal=mu,
                objective=self.objective(mu),
                violations=viol,
                relative_violation=float(np.max(viol)),
                matrix=mu,
                info={
                    "mu": mu,
                    "P": np.outer(mu, mu),
                    "n_solves": 1,
                    "solver_violation": float(np.max(_simplex_violations(raw))),
                },
            )

        return ExtensionModel(problem=prob, primal=var, read=read, solution_type=WeightStepSolution)

    # ------------------------------------------------------------------ CVXPY side
    def to_cvxpy(self) -> cp.Problem:
        """Model (6): variable ``"mu"`` (nonneg), min h(μ) s.t. Σ μ = 1 (+ h's constraints)."""
        mu = cp.Variable(self.m, nonneg=True, name="mu")
        expr, cons = self._h_form(mu)
        prob = cp.Problem(cp.Minimize(expr), _simplex(mu) + cons)
        if not prob.is_dcp():
            raise InvalidInputError(
                "The MKL_μ weight step needs an h convex in μ (Lemma 2); this h is not (CVXPY's "
                "DCP check failed). Objectives that decrease with a distance, like LMNN's "
                "impostor terms, are not convex in μ: use the P variant (RankOneWeightStep) or "
                "the majorizer LMNNMuMajorizer / lmnn_mu_step."
            )
        return prob

    def solve_reference(
        self, solver: str | None = None, eps: float | None = None, accept_inaccurate: bool = False, **opts
    ) -> WeightStepSolution:
        """Solve (6) by a conic solver at high accuracy, certified by its dual objective.

        Parameters
        ----------
        solver : str or None
            A CVXPY solver (default: the constructor's, Clarabel); only Clarabel and SCS
            report the dual objective the certificate needs (others: ``dual_value`` None,
            ``info["no_certificate"]``).
        eps : float or None
            Its tolerance (Clarabel 1e-8, SCS 1e-9 by default).
        accept_inaccurate : bool
            Accept ``optimal_inaccurate`` without the certificate vouching for it.
        **opts
            Passed to the solver.

        Returns
        -------
        WeightStepSolution
            ``matrix`` = μ (the solver's μ with round-off negatives clipped and Σ μ = 1
            restored), ``objective`` = h(μ), ``dual_value`` the solver's dual objective,
            ``info["mu"]``, ``info["P"]`` = μμᵀ, ``info["solver_violation"]`` (the largest
            violation of (6) at the solver's own μ).
        """
        solver, eps = check_conic_options(solver, eps)
        solver = solver or self.solver
        prob = self.to_cvxpy()
        elapsed, status, iters, bound = solve_conic_bound(
            prob, solver, eps, True, what="MKL_μ weight step (eq. 6)", **opts
        )
        raw = np.asarray(prob.var_dict["mu"].value, dtype=float)
        mu = np.maximum(raw, 0.0)
        mu = mu / mu.sum()
        viol = self.violations(mu)
        info = {
            "mu": mu,
            "P": np.outer(mu, mu),
            "n_solves": 1,
            "solver_objective": float(prob.value),
            "solver_violation": float(np.max(_simplex_violations(raw))),
            "max_relative_violation": float(np.max(viol)),
        }
        if np.isfinite(bound):
            info["certificate"] = (
                f"{solver} dual objective of (6) (the Lagrange dual value of the "
                "conic model at the solver's multipliers)"
            )
        else:
            info["no_certificate"] = (
                f"{solver} reports no dual objective; use solver='CLARABEL' or 'SCS' for a certificate"
            )
        sol = WeightStepSolution.from_conic(
            status,
            solver,
            elapsed,
            iters,
            matrix=mu,
            objective=self.objective(mu),
            dual=None,
            slack=None,
            violations=viol,
            dual_value=float(bound) if np.isfinite(bound) else None,
            info=info,
        )
        sol = self._accept_reference(sol, status, accept_inaccurate, what="MKL_μ weight step (eq. 6)")
        sol.converged = status == cp.OPTIMAL or bool(sol.info.get("accepted_by_certificate"))
        return sol

    def solve(
        self, tol: float = 1e-6, max_iter: int | None = None, callback=None, warm_start=None
    ) -> WeightStepSolution:
        """Solve (6) and check its certificate against ``tol``.  The μ step has no fast
        algorithm of its own: this is the conic model of :meth:`solve_reference` (the
        constructor's solver, ``optimal_inaccurate`` accepted and judged by the certificate).

        Parameters
        ----------
        tol : float, default=1e-6
            ``converged`` when the relative gap (h(μ) − dual_value) / max(1, |h(μ)|) lies in
            [−tol, tol] and the relative violation is at most tol.
        max_iter : int or None
            The conic solver's iteration cap (Clarabel ``max_iter``, SCS ``max_iters``;
            default: Clarabel's 200, SCS 200 000).  Clarabel stopped by it returns no point:
            a :class:`SolverError` that says to raise it.
        callback : callable or None
            Called once with the certificate (``iteration`` = solver iterations,
            ``objective``, ``lower_bound``, ``gap`` (relative), ``violation``); a truthy
            return marks an uncertified solve ``"stopped by callback"``.
        warm_start : None
            Not supported (an interior-point solve from scratch); anything else raises.

        Returns
        -------
        WeightStepSolution
            As :meth:`solve_reference`; unconverged solves warn (:class:`ConvergenceWarning`).
        """
        from .extend import check_fast_solver_applies

        check_fast_solver_applies(self)
        tol = check_positive(tol, "tol")
        callback = self._check_callback(callback)
        if warm_start is not None:
            raise InvalidInputError(
                "The MKL_μ step is one interior-point conic solve from scratch and takes no "
                "warm_start; pass warm_start=None."
            )
        if max_iter is not None:
            max_iter = self._iteration_limit(max_iter)
        return self.run_pipeline(
            tol, 10_000 if max_iter is None else max_iter, tol, tol, callback=callback, options={"max_iter": max_iter}
        )

    # ------------------------------------------------------------------ the pipeline's hooks
    def solution_from_fast(self, res, spec, gap_tol: float):
        """The answer μ (checked: m finite weights), h(μ) and the violations of (6)
        recomputed; the lower bound is the conic solver's dual objective (no closed form for
        an arbitrary h: :meth:`dual_value_unverified`) — for a user's solver the step's own
        exact model's (:meth:`solve_reference`), never a bound the solver claims."""
        from .._answer import check_primal_vector

        mu = np.asarray(res.matrix, dtype=float)
        check_primal_vector(mu, self.m, what=f"weights μ of {spec.name}")
        extra = dict(res.extra)
        info = dict(extra.get("info", {}))
        bound = extra.get("lower_bound")
        if spec.user:
            ref = self.solve_reference(accept_inaccurate=True)
            bound = ref.dual_value
            info = {k: v for k, v in ref.info.items() if k in ("certificate", "no_certificate")}
        viol = self.violations(mu)
        info.update(mu=mu, P=np.outer(mu, mu), max_relative_violation=float(np.max(viol)), gap_tol=gap_tol)
        info.setdefault("n_solves", 1)
        return WeightStepSolution(
            matrix=mu,
            objective=self.objective(mu),
            dual=None,
            slack=None,
            violations=viol,
            n_iter=int(res.sweeps),
            converged=True,
            time=float(res.time),
            status="converged",
            solver=str(extra.get("solver", spec.name)),
            dual_value=None if bound is None else float(bound),
            info=info,
        )

    def certify(self, sol, res, gap_tol: float, viol_tol: float) -> bool:
        """Certified when (h(μ) − bound) / max(1, |h(μ)|) lies in ±``gap_tol`` and the
        relative violation is at most ``viol_tol``."""
        gap = sol.gap
        rel_gap = None if gap is None else gap / max(1.0, abs(sol.objective))
        return bool(rel_gap is not None and abs(rel_gap) <= gap_tol and sol.info["max_relative_violation"] <= viol_tol)

    def unconverged_message(self, sol, res, spec, gap_tol: float, viol_tol: float) -> str:
        gap = sol.gap
        rel_gap = None if gap is None else gap / max(1.0, abs(sol.objective))
        gap_txt = "n/a (" + sol.info.get("no_certificate", "") + ")" if rel_gap is None else f"{rel_gap:.3g}"
        return (
            f"The MKL_μ step (6) is not certified: relative gap {gap_txt}, "
            f"relative violation {sol.info['max_relative_violation']:.3g} (tol {gap_tol:.3g}). Use solver='CLARABEL', "
            "a smaller eps through solve_reference(), or loosen tol."
        )


def _sqrt_psd_rows(Q) -> np.ndarray:
    """R_p with R_pᵀ R_p = Q_p for a stack of PSD m × m matrices (eigen square roots)."""
    lam, V = np.linalg.eigh(Q)
    lam = np.maximum(lam, 0.0)
    return (V * np.sqrt(lam)[:, None, :]).transpose(0, 2, 1)  # (P, m, m): rows √λ_k v_kᵀ


class LMNNMuMajorizer:
    """A convex majorizer of LMNN's h(μμᵀ) at a reference μ_k (for the MKL_μ step).

    h(μ) = (1 − γ) Σ_S μᵀQ_ijμ + γ Σ_t [1 + μᵀQ_ijμ − μᵀQ_ilμ]_+ is not convex in μ; the
    concave part −μᵀQ_ilμ is replaced by its tangent −(2 μ_kᵀQ_il μ − μ_kᵀQ_il μ_k) >=
    −μᵀQ_ilμ, which gives a convex upper bound, exact at μ_k.

    Parameters
    ----------
    weights : LMNNWeightObjective (the Q_p, triplets and γ).
    mu_ref : the reference weights μ_k.
    """

    def __init__(self, weights: LMNNWeightObjective, mu_ref):
        self.weights = weights
        self.m = weights.m
        self.mu_ref = _check_mu(mu_ref, self.m, "mu_ref")
        tr = weights.triplets
        self._tpairs = np.flatnonzero(tr.target_weight > 0)
        pos = np.full(tr.n_pairs, -1, dtype=np.int64)
        pos[self._tpairs] = np.arange(self._tpairs.size)
        self._tt_pos = pos[tr.tt]
        self._R = _sqrt_psd_rows(weights.Q[self._tpairs])
        Qmu = weights.Q @ self.mu_ref  # (P, m)
        self._grad = 2.0 * Qmu  # tangent slope per pair
        self._const = np.einsum("pm,m->p", Qmu, self.mu_ref)  # μ_kᵀ Q_p μ_k

    def value_mu(self, mu) -> float:
        """The majorizer's value (>= h(μμᵀ), equal at μ_k)."""
        mu = np.asarray(mu, dtype=float)
        tr, g = self.weights.triplets, self.weights.gamma
        d_t = np.einsum("pm,m->p", self.weights.Q[self._tpairs] @ mu, mu)
        lin = self._grad @ mu - self._const
        hinge = np.maximum(0.0, 1.0 + d_t[self._tt_pos] - lin[tr.ti])
        return float((1.0 - g) * (tr.target_weight[self._tpairs] @ d_t) + g * hinge.sum())

    def cvx_mu(self, mu):
        tr, g = self.weights.triplets, self.weights.gamma
        npair = self._tpairs.size
        Rbig = self._R.reshape(npair * self.m, self.m)
        d_t = cp.sum(cp.square(cp.reshape(Rbig @ mu, (npair, self.m), order="C")), axis=1)
        lin = self._grad @ mu - self._const
        hinge = cp.pos(1.0 + d_t[self._tt_pos] - lin[tr.ti])
        return (1.0 - g) * (tr.target_weight[self._tpairs] @ d_t) + g * cp.sum(hinge)


def lmnn_mu_step(
    weights: LMNNWeightObjective, mu0, max_iter: int = 30, tol: float = 1e-7, solver: str = "CLARABEL"
) -> WeightStepSolution:
    """LMNN's MKL_μ weight step by the convex–concave procedure: repeatedly minimize the
    convex majorizer :class:`LMNNMuMajorizer` at the current μ over the simplex (each the
    conic model (6) of a :class:`MuWeightStep`), until h(μμᵀ) decreases by less than
    ``tol`` (relative).  h never increases; the limit is a stationary point (not
    necessarily global).

    Returns
    -------
    WeightStepSolution
        ``matrix`` = μ, ``objective`` = h(μμᵀ); no certificate (``dual_value`` None,
        ``info["no_certificate"]``: LMNN is not convex in μ, §5).  ``converged`` means the
        decrease rule was met within ``max_iter`` (a stationary point, not a certified
        optimum); otherwise a :class:`ConvergenceWarning`.  ``info``: ``mu``, ``P`` = μμᵀ,
        ``history`` ((iteration, h) per step), ``n_solves``, ``method`` = "ccp".
    """
    t0 = time.perf_counter()
    mu = _check_mu(mu0, weights.m, "mu0")
    f = weights.value_mu(mu)
    history = [(0, f)]
    done = False
    for it in range(1, int(max_iter) + 1):
        res = MuWeightStep(LMNNMuMajorizer(weights, mu), solver=solver).solve_reference(accept_inaccurate=True)
        f_new = weights.value_mu(res.mu)
        if f_new <= f:
            mu_new = res.mu
        else:  # round-off of the conic solve: keep the better point
            mu_new, f_new = mu, f
        history.append((it, f_new))
        done = f - f_new <= tol * max(1.0, abs(f))
        mu, f = mu_new, f_new
        if done:
            break
    sol = WeightStepSolution(
        matrix=mu,
        objective=f,
        dual=None,
        slack=None,
        violations=_simplex_violations(mu),
        n_iter=len(history) - 1,
        converged=bool(done),
        time=time.perf_counter() - t0,
        status="stationary" if done else "max_iter reached",
        solver="ccp-lmnn-mu",
        dual_value=None,
        info={
            "mu": mu,
            "P": np.outer(mu, mu),
            "history": history,
            "n_solves": len(history) - 1,
            "method": "ccp",
            "no_certificate": "LMNN's h(μμᵀ) is not convex in μ (§5): the convex–concave "
            "procedure reaches a stationary point and carries no optimality "
            "certificate",
        },
    )
    if not done:
        warnings.warn(
            f"The convex–concave procedure of the MKL_μ step did not settle in max_iter="
            f"{int(max_iter)} steps (last decrease above tol {tol:g}, relative); raise "
            "max_iter.",
            ConvergenceWarning,
            stacklevel=2,
        )
    return sol


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
        if skip:
            # F >= 0 for every μ (A ⪰ 0), so no weight step can lower F by more than F_before,
            # which is already below the outer stopping threshold: μ is kept (a full-rank
            # kernel collapses the classes and the metric step reaches F = 0)
            wres = None
        elif variant == "P":
            W0 = None
            if it > 1:
                u = mu / np.linalg.norm(mu)
                W0 = np.eye(m) - np.outer(u, u)
            with warnings.catch_warnings(record=True) as rec:
                warnings.simplefilter("always")
                wres = RankOneWeightStep(h, **weight_options).solve(warm_start=W0)
            _reemit(rec)
        else:
            with warnings.catch_warnings(record=True) as rec:
                warnings.simplefilter("always")
                wres = lmnn_mu_step(h, mu, **weight_options)
            _reemit(rec)
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
        history.append(
            {
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
        )
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
