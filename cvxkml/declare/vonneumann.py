"""von Neumann kernel learning relative to K0 (Kulis, Sustik, Dhillon 2009, §3–5.2):

    min_K D_vN(K, K0) [+ γ D_vN(diag ξ, diag ξ0)]  s.t. pair constraints on K,

with D_vN(K, K0) = tr(K log K − K log K0 − K + K0).  The von Neumann divergence keeps the
range space and is invariant under orthogonal (not general) congruences, so the problem
is written in the orthonormal eigenbasis V0 of K0 = V0 diag(p) V0ᵀ: K = V0 X̂ V0ᵀ and
D_vN(K, K0) = D_vN(X̂, diag p).  The exact CVXPY model is
−von_neumann_entr(X̂) − tr(X̂ log diag p) − tr X̂ + Σ p (never `quantum_rel_entr`, see
CVXPY-NOTES); the fast solver is Algorithm 3 started from q = log p; the exact dual is
:func:`~cvxkml.declare.dual.solve_dual` (K(λ) = exp(log K0 − C(λ)) on the range space).
This differs from Jain et al.'s eq. (22), f_vN(K0^-½ K K0^-½), which is
``SpectralKernel(K0, constraints, VonNeumann())``.
"""

from __future__ import annotations

from .base import SpectralProblem
from .regularizers import VonNeumann
from .spaces import EigenbasisKernelSpace

__all__ = ["VonNeumannKernel"]


class VonNeumannKernel(SpectralProblem):
    """D_vN(K, K0) kernel learning (Kulis et al. 2009) on the range space of a PSD K0.

    Parameters
    ----------
    K0 : (n, n) PSD kernel matrix.  constraints : PairConstraints (fast and exact);
    relative, similarity and linear constraints in the exact model.
    gamma : None (hard) or the von Neumann slack weight (§6.2.1).
    """

    solver_tag = "vonneumann"
    kernel_space = True
    #: Kulis' D_vN(K, K0) is not a spectral function of K0^-½ K K0^-½ (Theorem 4 does not
    #: apply); its solution keeps range(K0), K* = K0 (K0⁺ K* K0⁺) K0, so the extension to new
    #: points is the range-space one, α = 0 (Kulis et al. §6.1)
    extension_alpha = 0.0

    def __init__(self, K0, constraints, gamma=None, rank_rtol: float = 1e-10):
        space = EigenbasisKernelSpace(K0, rank_rtol)  # X̂ = V0ᵀ K V0
        w, _, keep = space.range
        super().__init__(space, constraints, VonNeumann(prior=w[keep]), gamma=gamma)
