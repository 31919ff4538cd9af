"""Low-rank LogDet kernel learning (Kulis, Sustik, Dhillon, JMLR 2009, §4–6).

With K0 = G0 G0ᵀ (G0 n × r of full column rank) the learned kernel keeps the range space,
K = G0 X̂ G0ᵀ, and D_ld(K, K0) = D_ld(X̂, I_r) (the paper's eq. 14 with the orthonormal
basis absorbed into G0).  The problem is therefore the LogDet metric problem on the rows
of G0 with prior I: its learned matrix is the r × r X̂ = B Bᵀ, and every formula
(objective, violations, dual certificate, CVXPY model) is the one of
:class:`~cvxkml.declare.base.SpectralProblem`.  The fast solver is Algorithm 2 with
CHOLUPDATEMULT on the triangular factor B, plus rank-two projections for relative and
similarity constraints (:mod:`cvxkml.solvers.lowrank`).
"""

from __future__ import annotations

import numpy as np

from .._validation import as_float_array, as_generator, check_choice, check_index_array, check_int, input_rank_rtol
from ..errors import InvalidInputError
from ..factor import factorize
from .base import SpectralProblem
from .spaces import FactoredSpace

__all__ = ["LowRankLogDet"]


class LowRankLogDet(SpectralProblem):
    """min_K D_ld(K, K0) [+ γ D_ld(diag ξ, diag ξ0)] with K0 = G0 G0ᵀ of rank r.

    Parameters
    ----------
    G0 : (n, r) factor of full column rank, or a :class:`~cvxkml.factor.Factorization`.
    constraints : PairConstraints (slack with ``gamma``), RelativeConstraints and
        SimilarityConstraints (hard; fast and exact), LinearConstraints on X̂ (exact only).
    gamma : None (hard) or the LogDet slack weight for the pair constraints.

    Pairs identical in the factor space (zero distance, which LogDet can never change) are
    skipped with a warning and listed in ``skipped_pairs`` / ``Solution.info["skipped_pairs"]``.

    The learned matrix of a :class:`~cvxkml.solution.Solution` is X̂ (r × r); the kernel is
    K = G0 X̂ G0ᵀ = G Gᵀ with G = G0 B (:meth:`kernel_factor`), B in ``info["B"]``.
    Use :meth:`from_kernel` to factor a PSD K0 first.

    This is ``SpectralProblem(FactoredSpace(G0), constraints, LogDet(), gamma)``
    (:mod:`cvxkml.declare.spaces`).  Its native solver (Kulis et al. Algorithm 2,
    :func:`cvxkml.solvers.lowrank.lowrank_logdet`) visits the constraints in a fresh random
    order each sweep, only those that can move (λ > 0 or violated), and stops when the
    relative dual change is below ``tol`` *and* the Lagrange certificate of ``solve()``
    holds (``gap_tol``, ``viol_tol``); a retry continues from the last iterate.
    """

    solver_tag = "lowrank"

    def __init__(self, G0, constraints, gamma=None):
        super().__init__(FactoredSpace(G0), constraints, gamma=gamma, zero_pairs="skip")

    @classmethod
    def from_kernel(
        cls,
        K0,
        constraints,
        gamma=None,
        method: str = "eigen",
        rank: int | None = None,
        tol: float = 1e-10,
        landmarks=None,
        random_state=None,
    ) -> "LowRankLogDet":
        """Factor a PSD K0 (``method`` = "eigen", "icholesky" or "nystroem"; see
        :func:`cvxkml.factor.factorize`) and build the problem on that factor."""
        check_choice(method, "method", ("eigen", "icholesky", "nystroem"))
        tol = input_rank_rtol(K0, tol, "tol")  # float32 input: no round-off directions
        n = as_float_array(K0, "K0", ndim=2).shape[0]
        rank = check_int(rank, "rank", minimum=1, maximum=n, allow_none=True)
        if landmarks is not None:
            landmarks = check_index_array(landmarks, "landmarks", n)
        return cls(factorize(K0, method, rank, tol, landmarks, as_generator(random_state)), constraints, gamma)

    def factor(self, solution) -> np.ndarray:
        """B (r × r) with X̂ = B Bᵀ: the Bregman solver's own factor when the answer is its,
        else (the dual solver's answer after the γ hand-off) a PSD factor of the matrix, by
        eigenvalues (X̂ may be singular at round-off, where a Cholesky factor fails)."""
        B = solution.info.get("B")
        if B is not None:
            return np.asarray(B, dtype=float)
        w, V = np.linalg.eigh(0.5 * (solution.matrix + solution.matrix.T))
        return V * np.sqrt(np.maximum(w, 0.0))

    def kernel_factor(self, solution) -> np.ndarray:
        """G = G0 B with K = G Gᵀ (O(n r²), done once at the end)."""
        return self.G0 @ self.factor(solution)

    def kernel(self, solution) -> np.ndarray:
        """The learned n × n kernel matrix (only for moderate n)."""
        G = self.kernel_factor(solution)
        return G @ G.T

    def transform(self, solution, K_cross) -> np.ndarray:
        """Learned factor coordinates Bᵀ g(x) of new points from κ0(X_new, X_train), through
        the factorization the problem was built on (Kulis et al. §6.1)."""
        if self.factorization is None:
            raise InvalidInputError(
                "This problem was built from a raw factor G0: map new points to factor "
                "coordinates g(x) yourself (for a linear kernel G0 = X, g(x) = x) and use "
                "transform_factor()."
            )
        return self.transform_factor(solution, self.factorization.transform_cross(K_cross))

    @staticmethod
    def transform_factor(solution, g) -> np.ndarray:
        """x ↦ Bᵀ g(x) for factor coordinates g (rows)."""
        B = solution.info.get("B")
        if B is None:
            B = np.linalg.cholesky(solution.matrix)
        return np.asarray(g, dtype=float) @ B
