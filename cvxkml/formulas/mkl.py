"""The NumPy pieces of the MKL_P weight step (Wang et al. 2011, eq. 15–16) shared by the
declared problem (:mod:`cvxkml.declare.mkl`) and its interior-point solver
(:mod:`cvxkml.solvers.mkl`): the symmetric vectorization svec/smat, the hinge terms
h(P) = ⟨C, P⟩ + Σ_t c_t [b_t + ⟨D_t, P⟩]_+ and the Lagrange lower bound."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["svec", "smat", "HingeTerms", "lagrange_bound"]

SQRT2 = np.sqrt(2.0)


# --------------------------------------------------------------------------- svec
@lru_cache(maxsize=32)
def _svec_index(m: int):
    """(I, J, f, off): upper-triangle indices, the svec factors (1 on the diagonal, √2 off
    it; ⟨X, Y⟩ = svec(X)·svec(Y)) and the mask of off-diagonal coordinates."""
    I, J = np.triu_indices(m)
    f = np.where(I == J, 1.0, SQRT2)
    return I, J, f, I != J


def svec(X) -> np.ndarray:
    """svec of a symmetric m × m matrix (or of a stack (…, m, m)): the upper triangle with
    the off-diagonal entries times √2, so that svec(X)·svec(Y) = ⟨X, Y⟩."""
    X = np.asarray(X, dtype=float)
    I, J, f, _ = _svec_index(X.shape[-1])
    return X[..., I, J] * f


def smat(v, m: int) -> np.ndarray:
    """The symmetric m × m matrix of an svec vector."""
    I, J, f, _ = _svec_index(m)
    X = np.empty((m, m))
    x = np.asarray(v, dtype=float) / f
    X[I, J] = x
    X[J, I] = x
    return X


def _skron(V) -> np.ndarray:
    """The matrix of U ↦ V U V (V symmetric) in svec coordinates."""
    I, J, f, _ = _svec_index(V.shape[0])
    VI, VJ = V[I], V[J]
    return np.outer(f, f) * 0.5 * (VI[:, I] * VJ[:, J] + VI[:, J] * VJ[:, I])


# --------------------------------------------------------------------------- data
@dataclass
class HingeTerms:
    """h(P) = ⟨C, P⟩ + Σ_t c_t [b_t + ⟨D_t, P⟩]_+ with D_t = Q[plus_t] − Q[minus_t]
    (or Q[plus_t] when ``minus`` is None): the objective of eq. 15 minus its w·tr(PW).

    Parameters
    ----------
    C : (m, m) symmetric.
    Q : (n_pairs, m, m) or (n_pairs, m·m) symmetric pair matrices.
    plus, minus : (T,) indices into Q (``minus`` may be None).
    b : (T,) offsets.
    c : (T,) non-negative weights.
    """

    C: np.ndarray
    Q: np.ndarray
    plus: np.ndarray
    minus: np.ndarray | None
    b: np.ndarray
    c: np.ndarray

    def __post_init__(self):
        self.C = np.asarray(self.C, dtype=float)
        self.m = m = self.C.shape[0]
        Q = np.asarray(self.Q, dtype=float)
        Q = Q.reshape(Q.shape[0], m, m)
        self.Qs = svec(0.5 * (Q + Q.transpose(0, 2, 1)))  # (n_pairs, m(m+1)/2)
        self.plus = np.ascontiguousarray(self.plus, dtype=np.int64)
        self.minus = None if self.minus is None else np.ascontiguousarray(self.minus, dtype=np.int64)
        T = self.plus.size
        self.b = np.broadcast_to(np.asarray(self.b, dtype=float), (T,)).copy()
        self.c = np.broadcast_to(np.asarray(self.c, dtype=float), (T,)).copy()
        if np.any(self.c < 0):
            raise ValueError("hinge weights c must be non-negative")
        self.Cs = svec(0.5 * (self.C + self.C.T))

    @property
    def n_terms(self) -> int:
        return self.plus.size

    def safe_signs(self, chunk: int = 4096):
        """(always_active, always_inactive): hinges whose argument has one sign on all of
        S, from b_t + min_ij (D_t)_ij >= 0 (resp. b_t + max_ij (D_t)_ij <= 0): on S,
        ⟨D, P⟩ is a convex combination of D's entries (P >= 0, Σ P = 1)."""
        if getattr(self, "_safe", None) is None:
            I, J, f, _ = _svec_index(self.m)
            lo = np.empty(self.n_terms)
            hi = np.empty(self.n_terms)
            for s0 in range(0, self.n_terms, chunk):
                E = self.rows(np.arange(s0, min(s0 + chunk, self.n_terms))) / f
                lo[s0 : s0 + chunk] = E.min(axis=1)
                hi[s0 : s0 + chunk] = E.max(axis=1)
            self._safe = (self.b + lo >= 0.0, self.b + hi <= 0.0)
        return self._safe

    def subset(self, idx, scale: float = 1.0) -> "HingeTerms":
        """The hinges ``idx`` only, their weights times ``scale`` (same C and pair matrices,
        shared, not copied)."""
        out = object.__new__(HingeTerms)
        out.C, out.Q, out.m, out.Qs, out.Cs = self.C, self.Q, self.m, self.Qs, self.Cs
        out.plus = self.plus[idx]
        out.minus = None if self.minus is None else self.minus[idx]
        out.b, out.c = self.b[idx], self.c[idx] * scale
        out._safe = None
        return out

    def pairs_touched(self, idx) -> int:
        """How many pair matrices the hinges ``idx`` use."""
        if self.minus is None:
            return int(np.unique(self.plus[idx]).size)
        return int(np.unique(np.concatenate([self.plus[idx], self.minus[idx]])).size)

    def arguments(self, p) -> np.ndarray:
        """b_t + ⟨D_t, P⟩ for every hinge, P given by its svec p."""
        q = self.Qs @ p
        out = self.b + q[self.plus]
        if self.minus is not None:
            out -= q[self.minus]
        return out

    def adjoint(self, alpha) -> np.ndarray:
        """svec(Σ_t α_t D_t)."""
        n = self.Qs.shape[0]
        wts = np.bincount(self.plus, weights=alpha, minlength=n)
        if self.minus is not None:
            wts -= np.bincount(self.minus, weights=alpha, minlength=n)
        nz = np.flatnonzero(wts)
        return wts[nz] @ self.Qs[nz]

    def rows(self, idx) -> np.ndarray:
        """svec(D_t) for the hinges ``idx`` (len(idx) × m(m+1)/2)."""
        D = self.Qs[self.plus[idx]]
        if self.minus is not None:
            D = D - self.Qs[self.minus[idx]]
        return D

    def value(self, p, L=None) -> float:
        """h(P) (+ ⟨L, P⟩ for an svec L)."""
        v = float(self.Cs @ p) + float(self.c @ np.maximum(self.arguments(p), 0.0))
        return v if L is None else v + float(L @ p)


def lagrange_bound(a: float, G, nu: float, N) -> float:
    """a + ν + min(0, λ_min(G − ν 11ᵀ − N)), N clipped at 0: a lower bound on
    min_{P ∈ S} a + ⟨G, P⟩ for any ν and N (S = {P ⪰ 0, P >= 0, Σ P = 1}; on S,
    ⟨11ᵀ, P⟩ = 1, ⟨N, P⟩ >= 0 and tr P <= 1)."""
    R = np.asarray(G, dtype=float) - nu - np.maximum(np.asarray(N, dtype=float), 0.0)
    lam = float(np.linalg.eigvalsh(0.5 * (R + R.T))[0])
    return float(a + nu + min(0.0, lam))
