"""The objectives h of the MKL weight steps (Wang, Do, Woznica & Kalousis, NIPS 2011):
h linear in P = μμᵀ (Lemma 3) — a user's CVXPY form (:class:`CallablePObjective`) or LMNN's
(:class:`LMNNWeightObjective`, eq. 18 with d(i, j) = tr(P Q_ij)) — and the data they are
built from (K_μ, the pair quadratics Q_ij, μ read off a rank-one P).  Re-exported by
:mod:`cvxkml.declare.mkl`."""

from __future__ import annotations

import cvxpy as cp
import numpy as np

from .._validation import (
    as_float_array,
)
from ..errors import InvalidInputError
from ..formulas.lmnn import LMNNTriplets, lmnn_objective
from ..formulas.mkl import HingeTerms
from ._conic import solve_conic
from .lmnn import _check_gamma, check_kernel_list


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
