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

from .._validation import (as_float_array, as_generator, check_choice, check_data, check_index_array,
                           check_int, input_rank_rtol)
from ..errors import InvalidInputError
from ..factor import Factorization, factorize
from .base import SpectralProblem

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
    """

    kind = "lowrank"

    def __init__(self, G0, constraints, gamma=None):
        self.factorization = G0 if isinstance(G0, Factorization) else None
        G0 = check_data(G0.G0 if self.factorization is not None else G0, "G0")
        n, r = G0.shape
        if r > n:
            raise InvalidInputError(f"The factor G0 must have at most n = {n} columns; got {r}.")
        sv = np.linalg.svd(G0, compute_uv=False)
        if sv[-1] <= 1e-10 * sv[0]:
            raise InvalidInputError(
                f"G0 must have full column rank (smallest singular value {sv[-1]:.3g}, largest "
                f"{sv[0]:.3g}): drop dependent columns, or build it with LowRankLogDet.from_kernel.")
        self.G0 = G0
        self.F = G0
        self.T = np.eye(r)
        self.M0 = np.eye(r)
        self._init_constraints(constraints, n, r, gamma, zero_pairs="skip")

    @classmethod
    def from_kernel(cls, K0, constraints, gamma=None, method: str = "eigen", rank: int | None = None,
                    tol: float = 1e-10, landmarks=None, random_state=None) -> "LowRankLogDet":
        """Factor a PSD K0 (``method`` = "eigen", "icholesky" or "nystroem"; see
        :func:`cvxkml.factor.factorize`) and build the problem on that factor."""
        check_choice(method, "method", ("eigen", "icholesky", "nystroem"))
        tol = input_rank_rtol(K0, tol, "tol")          # float32 input: no round-off directions
        n = as_float_array(K0, "K0", ndim=2).shape[0]
        rank = check_int(rank, "rank", minimum=1, maximum=n, allow_none=True)
        if landmarks is not None:
            landmarks = check_index_array(landmarks, "landmarks", n)
        return cls(factorize(K0, method, rank, tol, landmarks, as_generator(random_state)),
                   constraints, gamma)

    @property
    def rank(self) -> int:
        return int(self.G0.shape[1])

    def kernel_factor(self, solution) -> np.ndarray:
        """G = G0 B with K = G Gᵀ (O(n r²), done once at the end)."""
        B = solution.info.get("B")
        if B is None:
            B = np.linalg.cholesky(solution.matrix)
        return self.G0 @ B

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
                "transform_factor().")
        return self.transform_factor(solution, self.factorization.transform_cross(K_cross))

    @staticmethod
    def transform_factor(solution, g) -> np.ndarray:
        """x ↦ Bᵀ g(x) for factor coordinates g (rows)."""
        B = solution.info.get("B")
        if B is None:
            B = np.linalg.cholesky(solution.matrix)
        return np.asarray(g, dtype=float) @ B

    def pair_values(self, M, i, j) -> np.ndarray:
        """Squared learned distances v̂ᵀ M v̂ (v̂ = G0[i] − G0[j]) through one matrix product
        (the three-operand einsum of the base class takes seconds at 10⁵ pairs)."""
        V = self.F[np.asarray(i)] - self.F[np.asarray(j)]
        return np.einsum("ij,ij->i", V @ np.asarray(M, dtype=float), V)

    def pair_inner(self, M, j, l) -> np.ndarray:
        return np.einsum("ij,ij->i", self.F[np.asarray(j)] @ np.asarray(M, dtype=float),
                         self.F[np.asarray(l)])

    def solve(self, tol: float = 1e-9, max_iter: int = 20_000, gap_tol: float | None = None,
              viol_tol: float | None = None, **kwargs):
        """:meth:`SpectralProblem.solve <cvxkml.declare.base.SpectralProblem.solve>`; the
        native solver stops on the certificate itself.

        The projections (Kulis et al. Algorithm 2, :func:`cvxkml.solvers.lowrank.lowrank_logdet`)
        visit the constraints in a fresh random order each sweep, only those that can move
        (λ > 0 or violated), and stop when the relative dual change is below ``tol`` *and*
        the Lagrange certificate holds: relative gap within ±``gap_tol``, largest relative
        violation ≤ ``viol_tol`` (both default to max(tol, 1e-6), as for every problem).
        A retry after a certificate the problem does not confirm continues from the last
        iterate instead of starting again.
        """
        from .._validation import check_positive
        t = check_positive(tol, "tol")
        self._stop_rule = (max(t, 1e-6) if gap_tol is None else check_positive(gap_tol, "gap_tol"),
                           max(t, 1e-6) if viol_tol is None else check_positive(viol_tol, "viol_tol"))
        self._resume = None
        try:
            return super().solve(tol, max_iter, gap_tol, viol_tol, **kwargs)
        finally:
            self._stop_rule = None
            self._resume = None
