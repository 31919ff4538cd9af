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
  have.
* :class:`MuWeightStep` — ML_h-MKL_μ, eq. 6 and Lemma 2: min h(μ) over the simplex for
  any h convex in μ, as a CVXPY model (DCP-checked).  LMNN is not convex in μ (the
  impostor distances enter with a minus sign, §5); :class:`LMNNMuMajorizer` is its convex
  majorizer at a reference μ_k (impostor distances linearized), and :func:`lmnn_mu_step`
  iterates it (convex–concave procedure: each step is a convex model, F never increases).
* :func:`alternate` — Algorithm 1: weight step, then the LMNN metric step on
  K_μ = Σ μ_l K_l warm-started from the previous A, until μ and the objective stop
  changing.  The objective F(A, μ) of both half-steps is the LMNN objective of
  :mod:`cvxkml.lmnn_terms` on the pair distances tr(P Q_ij) (one formula).
* NR-ML-MKL (eq. 12–14) is LMNN on the concatenated maps:
  :meth:`cvxkml.declare.lmnn.LMNNProblem.multiple_kernels`.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np

from .._validation import (as_float_array, check_choice, check_conic_options, check_int, check_labels,
                           check_number, check_positive)
from ..errors import ConvergenceWarning, InvalidInputError, SolverError
from ..kernels import kernel_sq_distances
from ..lmnn_terms import LMNNTriplets, lmnn_objective, pair_quadratic
from ._conic import solve_conic
from .lmnn import LMNNProblem, _check_gamma, check_kernel_list

__all__ = [
    "pair_kernel_quadratics", "LinearPObjective", "LMNNWeightObjective", "CallablePObjective",
    "RankOneWeightStep", "WeightStepResult", "mu_from_P", "MuWeightStep", "LMNNMuMajorizer",
    "lmnn_mu_step", "alternate", "MKLResult", "combine_kernels", "W_GRID",
]

#: The paper's grid for w in (15): {10^i, i = 0 … 8}.
W_GRID = tuple(10.0 ** i for i in range(9))


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
            + f"; got {type(triplets).__name__}" + (f" for {triplets.n} points" if isinstance(
                triplets, LMNNTriplets) else "") + ".")


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
    F = np.stack([K @ L for K in Ks])                 # (m, n, r)
    pi = np.asarray(pi, dtype=np.int64)
    pj = np.asarray(pj, dtype=np.int64)
    Q = np.empty((pi.size, m, m))
    for s in range(0, pi.size, chunk):
        R = (F[:, pi[s:s + chunk]] - F[:, pj[s:s + chunk]]).transpose(1, 0, 2)   # (c, m, r)
        Q[s:s + chunk] = R @ R.transpose(0, 2, 1)
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
            raise InvalidInputError(
                f"Q must have shape (n_pairs={triplets.n_pairs}, m, m); got {Q.shape}.")
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
        w = (np.bincount(tr.tt[act], minlength=tr.n_pairs)
             - np.bincount(tr.ti[act], minlength=tr.n_pairs)).astype(float)
        nz = np.flatnonzero(w)
        G = np.tensordot(w[nz], self.Q[nz], axes=1)
        return self.gamma * n_act, self.gamma * G

    def initial_cuts(self):
        return [(0.0, np.zeros((self.m, self.m)))]          # the hinge sum is >= 0

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


# --------------------------------------------------------------------------- MKL_P step
@dataclass
class WeightStepResult:
    """Result of a kernel-weight step.

    mu : the weights (simplex).  P : the final P (rank one when ``rank_one``).
    objective : h(μμᵀ).  relaxed : h at the relaxation P (W = 0), a lower bound on
    min_μ h(μμᵀ) when solved to optimality.  w : the weight w used (MKL_P).
    rank_one : (17) reached.  history : per convex iteration (w, iteration, h(P*),
    tr(P*W), Σ_{i>=2} λ_i).  n_solves : relaxations solved.  time : seconds.
    """

    mu: np.ndarray
    P: np.ndarray
    objective: float
    relaxed: float | None = None
    w: float | None = None
    rank_one: bool = True
    history: list = field(default_factory=list)
    n_solves: int = 0
    time: float = 0.0
    info: dict = field(default_factory=dict)


class RankOneWeightStep:
    """The rank-one kernel-weight step ML_h-MKL_P (Wang et al. eq. 8, 15–17) for any h
    linear in P.

    Parameters
    ----------
    h : LinearPObjective
        The objective for fixed A (e.g. :class:`LMNNWeightObjective`,
        :class:`CallablePObjective`).
    w_grid : sequence of float, default=(1, 10, …, 1e8)
        Values of w tried in increasing order; the first that reaches the rank-one
        point (17) is used (the paper's rule).
    rank_tol : float, default=1e-6
        Rank one means Σ_{i>=2} λ_i(P*) <= rank_tol · λ_1(P*).
    max_convex_iter : int, default=50
        Iterations (15)–(16) per value of w.
    method : {"auto", "full", "cutting-plane"}, default="auto"
        How (15) is solved: "full" builds the whole CVXPY model of h (practical while h
        has a few thousand terms); "cutting-plane" keeps h's linear part exact and
        replaces its piecewise part by the maximum of sub-gradient cuts (Kelley's
        method), re-solving a small CVXPY master problem (m × m PSD block + one row per
        cut) until the true value and the master bound agree to ``tol``; cuts are valid
        for every W and w, so they are kept across the whole convex iteration.  "auto":
        "active-set" solves (15) with the hinge terms of a working set only and adds the
        hinges active at the solution until none is left out (exact: the restricted h
        is a lower bound on h that agrees with it at the final point).  "auto": full when
        h has at most 2000 triplets, else active-set when h offers ``hinge_arguments`` /
        ``cvx_subset`` (LMNN does), else cutting planes.
    tol : float, default=1e-7
        Relative gap of the cutting-plane solves.
    solver : str, default="CLARABEL"
    max_cuts : int, default=2000
        Cutting-plane budget per solve.
    active_buffer : float, default=0.5
        "active-set": hinges with argument > −active_buffer join the working set.
    """

    def __init__(self, h: LinearPObjective, w_grid=W_GRID, rank_tol: float = 1e-6,
                 max_convex_iter: int = 50, method: str = "auto", tol: float = 1e-7,
                 solver: str = "CLARABEL", max_cuts: int = 2000, active_buffer: float = 0.5):
        if not isinstance(h, LinearPObjective):
            raise InvalidInputError(
                "h must be a LinearPObjective (e.g. LMNNWeightObjective, or CallablePObjective "
                "wrapping a CVXPY expression linear in P).")
        self.h = h
        self.m = check_int(h.m, "h.m (the number of kernels)", minimum=1)
        grid = as_float_array(w_grid, "w_grid", finite=False) if not isinstance(w_grid, (str, bytes)) else None
        if grid is None or grid.ndim != 1 or grid.size == 0 or not np.all(np.isfinite(grid) & (grid > 0)):
            raise InvalidInputError(f"w_grid must be a non-empty sequence of positive numbers; got {w_grid!r}.")
        self.w_grid = tuple(float(w) for w in grid)
        self.rank_tol = check_positive(rank_tol, "rank_tol")
        self.max_convex_iter = check_int(max_convex_iter, "max_convex_iter", minimum=1)
        check_choice(method, "method", ("auto", "full", "cutting-plane", "active-set"))
        if method == "cutting-plane" and not h.supports_cuts:
            raise InvalidInputError("method='cutting-plane' needs h.linear_part(), h.cut() and "
                                    "h.initial_cuts(); use method='full'.")
        has_active = all(hasattr(h, a) for a in ("hinge_arguments", "cvx_subset"))
        if method == "active-set" and not has_active:
            raise InvalidInputError("method='active-set' needs h.hinge_arguments() and h.cvx_subset(); "
                                    "use method='full'.")
        if method == "auto":
            n_terms = getattr(getattr(h, "triplets", None), "n_triplets", 0)
            if n_terms <= 2000:
                method = "full"
            elif has_active:
                method = "active-set"
            else:
                method = "cutting-plane" if h.supports_cuts else "full"
        self.method = method
        self.tol = check_positive(tol, "tol")
        self.solver = check_conic_options(solver, None)[0] or "CLARABEL"
        self.max_cuts = check_int(max_cuts, "max_cuts", minimum=1)
        self._model = None
        self._cuts = None
        self._active = None
        self._relaxation = None
        self.active_buffer = check_number(active_buffer, "active_buffer", low=0.0)
        self.n_solves = 0

    # ------------------------------------------------------------------ models
    def to_cvxpy(self) -> cp.Problem:
        """Problem (15) as a ``cvxpy.Problem`` with variable ``"P"`` and parameters ``"wW"``
        (= s·w·W) and ``"s"`` (a positive scale): min s·h(P) + tr(wW·P) s.t. P ⪰ 0,
        Σ_ij P_ij = 1, P >= 0.  With s = 1 it is (15) as printed; the solver uses
        s = 1 / max(1, w) so that large w (up to 1e8) stay well scaled.  Parameters keep
        the model DPP, so re-solves skip the compilation."""
        P = cp.Variable((self.m, self.m), PSD=True, name="P")
        wW = cp.Parameter((self.m, self.m), symmetric=True, name="wW", value=np.zeros((self.m, self.m)))
        scale = cp.Parameter(nonneg=True, name="s", value=1.0)
        expr, cons = self.h.cvx(P)
        prob = cp.Problem(cp.Minimize(scale * expr + cp.sum(cp.multiply(wW, P))),
                          [cp.sum(P) == 1.0, P >= 0.0] + list(cons))
        return prob

    def _solve(self, prob, what):
        """Solve with the chosen solver, falling back to SCS when it fails."""
        try:
            solve_conic(prob, self.solver, None, True, what)
        except SolverError:
            if self.solver.upper() == "SCS":
                raise
            solve_conic(prob, "SCS", 1e-8, True, what)
        self.n_solves += 1

    def _solve_full(self, w, W):
        if self._model is None:
            self._model = self.to_cvxpy()
        prob = self._model
        s = 1.0 / max(1.0, w)
        prob.param_dict["s"].value = s
        prob.param_dict["wW"].value = s * w * 0.5 * (W + W.T)
        self._solve(prob, "MKL_P weight step (15)")
        P = np.asarray(prob.var_dict["P"].value, dtype=float)
        P = 0.5 * (P + P.T)
        return P, self.h.value(P) + w * float(np.sum(W * P))

    def _solve_cutting_plane(self, w, W):
        """Kelley's cutting planes on h's piecewise part; returns the best P found, its
        value and the master bound (a certified lower bound on (15))."""
        m = self.m
        if self._cuts is None:
            self._cuts = list(self.h.initial_cuts())
            self._C = self.h.linear_part()
        s = 1.0 / max(1.0, w)
        C = s * (self._C + w * W)
        best_val, best_P, lower = np.inf, None, -np.inf
        for _ in range(self.max_cuts):
            a = np.array([c[0] for c in self._cuts])
            G = np.stack([c[1].ravel() for c in self._cuts])
            P = cp.Variable((m, m), PSD=True)
            xi = cp.Variable()
            prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(C, P)) + s * xi),
                              [cp.sum(P) == 1.0, P >= 0.0, a + G @ cp.vec(P, order="C") <= xi])
            self._solve(prob, "cutting-plane master of (15)")
            Pk = np.asarray(P.value, dtype=float)
            Pk = 0.5 * (Pk + Pk.T)
            lower = max(lower, float(prob.value) / s)
            val = self.h.value(Pk) + w * float(np.sum(W * Pk))
            if val < best_val:
                best_val, best_P = val, Pk
            if best_val - lower <= self.tol * max(1.0, abs(best_val)):
                return best_P, best_val, lower
            self._cuts.append(self.h.cut(Pk))
        warnings.warn(f"Cutting planes stopped at max_cuts={self.max_cuts} with relative gap "
                      f"{(best_val - lower) / max(1.0, abs(best_val)):.3g}.", ConvergenceWarning, stacklevel=3)
        return best_P, best_val, lower

    def _solve_active_set(self, w, W):
        """Constraint generation on h's hinge terms: solve (15) with the hinges of a working
        set S only (h_S <= h everywhere), then add every hinge that is active at the
        solution and outside S (plus the near-active ones, argument > −``active_buffer``);
        when none is left out, h_S = h at the solution, which is then optimal for (15)
        exactly (h_S(P') + w⟨W, P'⟩ <= h(P') + w⟨W, P'⟩ for all P').  The working set is
        kept across solves, and its compiled model is reused while it does not change."""
        s = 1.0 / max(1.0, w)
        for _ in range(100):
            if self._active is None:
                args = self.h.hinge_arguments(np.full((self.m, self.m), 1.0 / self.m ** 2))
                self._active = np.flatnonzero(args > -self.active_buffer)
                self._model = None
            if self._model is None:
                P = cp.Variable((self.m, self.m), PSD=True, name="P")
                wW = cp.Parameter((self.m, self.m), symmetric=True, name="wW")
                scale = cp.Parameter(nonneg=True, name="s")
                expr, cons = self.h.cvx_subset(P, self._active)
                self._model = cp.Problem(cp.Minimize(scale * expr + cp.sum(cp.multiply(wW, P))),
                                         [cp.sum(P) == 1.0, P >= 0.0] + list(cons))
            prob = self._model
            prob.param_dict["s"].value = s
            prob.param_dict["wW"].value = s * w * 0.5 * (W + W.T)
            self._solve(prob, "MKL_P weight step (15), working set")
            P = np.asarray(prob.var_dict["P"].value, dtype=float)
            P = 0.5 * (P + P.T)
            args = self.h.hinge_arguments(P)
            inside = np.zeros(args.size, dtype=bool)
            inside[self._active] = True
            if not np.any((args > 1e-9) & ~inside):
                return P, self.h.value(P) + w * float(np.sum(W * P))
            self._active = np.flatnonzero(inside | (args > -self.active_buffer))
            self._model = None
        raise SolverError("The working-set solve of (15) did not settle in 100 rounds; use method='cutting-plane'.")

    def solve_relaxation(self, W=None, w: float = 1.0) -> tuple[np.ndarray, float]:
        """Solve (15) for a direction matrix W (default 0) and weight w; returns (P*, value)."""
        W = np.zeros((self.m, self.m)) if W is None else as_float_array(W, "W", ndim=2)
        if W.shape != (self.m, self.m):
            raise InvalidInputError(f"W must be {self.m} × {self.m}; got {W.shape}.")
        if self.method == "full":
            return self._solve_full(float(w), W)
        if self.method == "active-set":
            return self._solve_active_set(float(w), W)
        P, val, _ = self._solve_cutting_plane(float(w), W)
        return P, val

    @staticmethod
    def direction(P) -> np.ndarray:
        """Eq. 16 in closed form: W = U Uᵀ, U the eigenvectors of P for its m − 1 smallest
        eigenvalues (the optimum of min tr(PᵀW) s.t. 0 ⪯ W ⪯ I, tr W = m − 1)."""
        lam, V = np.linalg.eigh(0.5 * (P + P.T))
        U = V[:, :-1]
        return U @ U.T

    def _tail(self, P) -> tuple[float, float]:
        lam = np.linalg.eigvalsh(0.5 * (P + P.T))
        return float(np.sum(lam[:-1])), float(lam[-1])

    def convex_iteration(self, w: float, W0=None) -> tuple[np.ndarray, bool, list, np.ndarray]:
        """Alternate (15) and (16) for one w from W0 (default 0) until (17) holds
        (Σ_{i>=2} λ_i <= rank_tol·λ_1) or (15)'s value stops decreasing.

        Returns (P, reached, history rows (w, it, h(P), tr(PW), tail), W) with W the
        direction matrix of the last solve: P minimizes h(P') + w·tr(P'W) over all
        feasible P', which is what certifies the point (see :meth:`solve`)."""
        W = np.zeros((self.m, self.m)) if W0 is None else np.asarray(W0, dtype=float)
        hist = []
        prev = np.inf
        P = None
        for it in range(self.max_convex_iter):
            try:
                if W0 is None and it == 0 and self._relaxation is not None:
                    P, val = self._relaxation          # (15) with W = 0 does not depend on w
                else:
                    P, val = self.solve_relaxation(W, w)
                    if W0 is None and it == 0:
                        self._relaxation = (P, val)
            except SolverError:
                hist.append((float(w), it, np.nan, np.nan, np.nan))
                return P, False, hist, W            # numerical failure at this w: try the next w
            tail, top = self._tail(P)
            hist.append((float(w), it, self.h.value(P), float(np.sum(W * P)), tail))
            if tail <= self.rank_tol * max(top, np.finfo(float).tiny):
                return P, True, hist, W
            if it > 0 and val >= prev - 1e-10 * max(1.0, abs(prev)):
                return P, False, hist, W            # stalled at a point that is not rank one
            prev = val
            W = self.direction(P)
        return P, False, hist, W

    def solve(self, W0=None) -> WeightStepResult:
        """The weight step: the convex iteration for w = w_grid[0], w_grid[1], … until one
        reaches the rank-one point; μ from that P.

        Parameters
        ----------
        W0 : array-like (m, m), optional
            Start direction (default 0, the paper's choice).  ``I − uuᵀ`` with u ∝ μ_prev
            starts at the previous weights: then h(μμᵀ) cannot exceed h(μ_prev μ_prevᵀ) when
            the rank-one point is reached (the values of (15) never increase).

        Returns
        -------
        WeightStepResult
            ``info["W"]`` is the direction of the last solve.  Since the final P minimizes
            h(P') + w·tr(P'W) over every feasible P', the rank-one point satisfies
            h(μμᵀ) <= h(μ'μ'ᵀ) + w·μ'ᵀWμ' for every μ' on the simplex (a local-optimality
            certificate; the convex iteration is a local method, §4.1).
            When no w reaches rank one, a :class:`ConvergenceWarning` is emitted and μ
            comes from the top eigenvector of the last P (``rank_one=False``).
        """
        t0 = time.perf_counter()
        self.n_solves = 0
        self._relaxation = None
        history = []
        relaxed = None
        P = None
        reached = False
        w_used = None
        last_P = W_last = None
        for w in self.w_grid:
            P, reached, hist, W = self.convex_iteration(w, W0)
            if relaxed is None and W0 is None and hist and np.isfinite(hist[0][2]):
                relaxed = hist[0][2]
            history += hist
            if P is not None:
                last_P, w_used, W_last = P, w, W
            if reached:
                break
        P = last_P
        if P is None:
            raise SolverError("Every solve of the weight step (15) failed; rescale the kernels "
                              "(normalize them by their mean diagonal) or try solver='SCS'.")
        if not reached:
            warnings.warn(
                f"The convex iteration (eq. 15–16) did not reach a rank-one P for any w in "
                f"{self.w_grid} (last tail Σλ_i≥2 = {history[-1][4]:.3g}); μ is taken from the top "
                "eigenvector. Extend w_grid or raise max_convex_iter.", ConvergenceWarning, stacklevel=2)
        mu = mu_from_P(P)
        return WeightStepResult(mu=mu, P=P, objective=self.h.value_mu(mu), relaxed=relaxed, w=w_used,
                                rank_one=reached, history=history, n_solves=self.n_solves,
                                time=time.perf_counter() - t0,
                                info={"method": self.method, "W": W_last})


# --------------------------------------------------------------------------- MKL_μ step
class MuWeightStep:
    """The kernel-weight step ML_h-MKL_μ (Wang et al. eq. 6, Lemma 2): min h(μ) over the
    simplex μ >= 0, Σ μ = 1, for an h convex in μ, as a CVXPY model.

    Parameters
    ----------
    h : object with ``cvx_mu(mu) -> expression or (expression, constraints)``, or a
        callable with the same signature; ``mu`` is a CVXPY variable of length m.
        Squared distances are convex quadratics of μ (d = ‖R_p μ‖², R_pᵀR_p = Q_p), so
        objectives that only *increase* with distances (compactness, hinge losses on
        similar pairs) are convex; anything decreasing in a distance is not (CVXPY's DCP
        check then raises a clear error).
    m : number of kernels (taken from ``h.m`` when present).
    """

    def __init__(self, h, m: int | None = None, solver: str = "CLARABEL"):
        if not callable(getattr(h, "cvx_mu", h)):
            raise InvalidInputError(
                "h must have a method cvx_mu(mu) or be a callable mu -> CVXPY expression (convex in "
                f"mu); got {type(h).__name__}.")
        self.h = h
        m = m if m is not None else getattr(h, "m", None)
        if m is None:
            raise InvalidInputError("Give m, the number of kernels (or an h with an attribute m).")
        self.m = check_int(m, "m (the number of kernels)", minimum=1)
        self.solver = check_conic_options(solver, None)[0] or "CLARABEL"

    def to_cvxpy(self) -> cp.Problem:
        mu = cp.Variable(self.m, nonneg=True, name="mu")
        fn = self.h.cvx_mu if hasattr(self.h, "cvx_mu") else self.h
        out = fn(mu)
        expr, cons = (out if isinstance(out, tuple) else (out, []))
        prob = cp.Problem(cp.Minimize(expr), [cp.sum(mu) == 1.0] + list(cons))
        if not prob.is_dcp():
            raise InvalidInputError(
                "The MKL_μ weight step needs an h convex in μ (Lemma 2); this h is not (CVXPY's "
                "DCP check failed). Objectives that decrease with a distance, like LMNN's "
                "impostor terms, are not convex in μ: use the P variant (RankOneWeightStep) or "
                "the majorizer LMNNMuMajorizer / lmnn_mu_step.")
        return prob

    def solve(self) -> WeightStepResult:
        t0 = time.perf_counter()
        prob = self.to_cvxpy()
        solve_conic(prob, self.solver, None, True, "MKL_μ weight step")
        mu = np.maximum(np.asarray(prob.var_dict["mu"].value, dtype=float), 0.0)
        mu = mu / mu.sum()
        val = self.h.value_mu(mu) if hasattr(self.h, "value_mu") else float(prob.value)
        return WeightStepResult(mu=mu, P=np.outer(mu, mu), objective=val, n_solves=1,
                                time=time.perf_counter() - t0, info={"model_value": float(prob.value)})


def _sqrt_psd_rows(Q) -> np.ndarray:
    """R_p with R_pᵀ R_p = Q_p for a stack of PSD m × m matrices (eigen square roots)."""
    lam, V = np.linalg.eigh(Q)
    lam = np.maximum(lam, 0.0)
    return (V * np.sqrt(lam)[:, None, :]).transpose(0, 2, 1)       # (P, m, m): rows √λ_k v_kᵀ


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
        Qmu = weights.Q @ self.mu_ref                       # (P, m)
        self._grad = 2.0 * Qmu                              # tangent slope per pair
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


def lmnn_mu_step(weights: LMNNWeightObjective, mu0, max_iter: int = 30, tol: float = 1e-7,
                 solver: str = "CLARABEL") -> WeightStepResult:
    """LMNN's MKL_μ weight step by the convex–concave procedure: repeatedly minimize the
    convex majorizer :class:`LMNNMuMajorizer` at the current μ over the simplex (each a
    :class:`MuWeightStep`), until h(μμᵀ) decreases by less than ``tol`` (relative).
    h never increases; the limit is a stationary point (not necessarily global)."""
    t0 = time.perf_counter()
    mu = _check_mu(mu0, weights.m, "mu0")
    f = weights.value_mu(mu)
    history = [(0, f)]
    for it in range(1, int(max_iter) + 1):
        res = MuWeightStep(LMNNMuMajorizer(weights, mu), solver=solver).solve()
        f_new = weights.value_mu(res.mu)
        if f_new <= f:
            mu_new = res.mu
        else:                         # round-off of the conic solve: keep the better point
            mu_new, f_new = mu, f
        history.append((it, f_new))
        done = f - f_new <= tol * max(1.0, abs(f))
        mu, f = mu_new, f_new
        if done:
            break
    return WeightStepResult(mu=mu, P=np.outer(mu, mu), objective=f, history=history,
                            n_solves=len(history) - 1, time=time.perf_counter() - t0,
                            info={"method": "ccp"})


# --------------------------------------------------------------------------- Algorithm 1
@dataclass
class MKLResult:
    """Result of :func:`alternate` (Algorithm 1).

    mu : final weights.  A : final metric (n × n) on K_μ's columns.  objective : F(A, μ).
    history : one dict per outer iteration (objective after the weight step and after the
    metric step, μ, w, LMNN iterations, convergence flags).  n_outer : iterations.
    converged : μ and F stopped changing within tolerance before max_outer.
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
    p = pair_quadratic(combine_kernels(Ks, mu), A, triplets.pi, triplets.pj)
    return lmnn_objective(p, triplets, gamma)


def _reemit(records, keep=ConvergenceWarning):
    """Re-emit recorded warnings except those of category ``keep``."""
    for r in records:
        if not issubclass(r.category, keep):
            warnings.warn_explicit(r.message, r.category, r.filename, r.lineno)


def alternate(Ks, y, variant: str = "P", k: int = 5, gamma: float = 0.5, mu0=None, A0=None,
              triplets: LMNNTriplets | None = None, max_outer: int = 20, tol: float = 1e-5,
              mu_tol: float = 1e-4, lmnn_options: dict | None = None,
              weight_options: dict | None = None, small_classes: str = "raise") -> MKLResult:
    """Algorithm 1 (Wang et al.): alternate the kernel-weight step and the LMNN metric step.

    Parameters
    ----------
    Ks : list of m kernel matrices (n × n), PSD, same size.
    y : labels (n,).
    variant : {"P", "mu"}
        "P": :class:`RankOneWeightStep` on :class:`LMNNWeightObjective` (LMNN-MKL_P);
        "mu": :func:`lmnn_mu_step` (majorized MKL_μ; LMNN is not convex in μ).
    k, gamma : LMNN's parameters (paper: 5, 0.5).
    mu0 : initial weights (default uniform, the paper's choice).
    A0 : initial metric (default I, the paper's choice).
    triplets : the target/impostor structure (default: target neighbours by the
        feature-space distance of K_{μ0}, fixed for the whole run).
    max_outer : outer iterations.
    tol, mu_tol : stop when |ΔF| <= tol·max(1, F) and ‖Δμ‖_1 <= mu_tol.
    lmnn_options : keyword arguments of :meth:`LMNNProblem.solve` (metric step).
    weight_options : keyword arguments of :class:`RankOneWeightStep` ("P") or of
        :func:`lmnn_mu_step` ("mu").
    small_classes : {"raise", "shrink"}, default="raise"
        Classes with fewer than k + 1 members (:func:`cvxkml.lmnn_terms.target_neighbors`).

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
        triplets = LMNNTriplets.from_labels(y, k, sq_dist=kernel_sq_distances(combine_kernels(Ks, mu)),
                                            small_classes=small_classes)
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
        if variant == "P":
            W0 = None
            if it > 1:
                u = mu / np.linalg.norm(mu)
                W0 = np.eye(m) - np.outer(u, u)
            with warnings.catch_warnings(record=True) as rec:
                warnings.simplefilter("always")
                wres = RankOneWeightStep(h, **weight_options).solve(W0=W0)
            _reemit(rec)
        else:
            wres = lmnn_mu_step(h, mu, **weight_options)
        weight_results.append(wres)
        accepted = wres.objective <= F_before + 1e-9 * max(1.0, abs(F_before)) and (variant == "mu" or wres.rank_one)
        mu_new = wres.mu if accepted else mu
        F_mu = h.value_mu(mu_new)
        # metric step (μ fixed), warm-started from A
        prob = LMNNProblem(combine_kernels(Ks, mu_new), labels, gamma=gamma, triplets=triplets)
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            sol = prob.solve(A0=A, **lmnn_options)     # best iterate: F_new <= F(A, μ_new)
        _reemit(rec)
        F_new = sol.objective
        dmu = float(np.abs(mu_new - mu).sum())
        history.append({"iteration": it, "objective_after_weights": F_mu, "objective": F_new,
                        "mu": mu_new.copy(), "w": wres.w, "rank_one": wres.rank_one,
                        "weights_accepted": bool(accepted), "lmnn_iterations": sol.n_iter,
                        "lmnn_converged": sol.converged, "mu_change": dmu})
        done = abs(F - F_new) <= tol * max(1.0, abs(F)) and dmu <= mu_tol
        mu, A, F = mu_new, sol.matrix, F_new
        if done:
            converged = True
            break
    if not converged:
        warnings.warn(f"Algorithm 1 stopped after max_outer={max_outer} iterations without μ and the "
                      "objective settling; raise max_outer.", ConvergenceWarning, stacklevel=2)
    return MKLResult(mu=mu, A=A, objective=F, history=history, n_outer=it, converged=converged,
                     triplets=triplets, time=time.perf_counter() - t0, metric_solution=sol,
                     metric_problem=prob, weight_results=weight_results)
