"""scikit-learn transformer for Trace-SSIKDR, trace-norm inductive semi-supervised kernel
dimensionality reduction (Jain et al. 2012, §5.4, eq. 26–28, Algorithm 2, Lemma 10):
:class:`TraceSSIKDR`.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._config import blas_limit
from ..declare.trace import TraceSSIKDR as _TraceProblem
from ._base import CvxkmlEstimator
from ._maps import KernelMap
from ._pairs import PairLearnerMixin
from ._params import (
    BREGMAN_CONSTRAINTS,
    CONTROL_CONSTRAINTS,
    KERNEL_CONSTRAINTS,
    POSITIVE,
    STANDARDIZE_CONSTRAINTS,
    Integer,
)

__all__ = ["TraceSSIKDR"]


class TraceSSIKDR(PairLearnerMixin, CvxkmlEstimator):
    """Trace-norm inductive semi-supervised kernel dimensionality reduction (Jain et al.
    2012, §5.4): a low-rank linear transformation of the base kernel's feature space,
    learned from pair constraints, applied to new points.  Solves

        min_{K̃ ⪰ 0} τ tr K̃ + ‖K̃‖²_F   s.t.  d_K(i, j) <= u (similar),  >= l (dissimilar),
        K = K0^½ K̃ K0^½                                                          (26)

    (hard constraints: there is no slack) on its Lagrange dual by projected Newton-CG in
    the eigenbasis of the dual matrix, stopped on the duality-gap certificate
    (:func:`cvxkml.solvers.trace.trace_pair_newton`; the accelerated Uzawa iteration of
    :func:`cvxkml.solvers.trace.trace_uzawa` runs when Newton does not certify).  The
    baseline of ``percentiles`` is κ0.

    %(pairs_side_information)s

    ``transform`` maps x to diag(√s) Uᵀ Λ^-½ Vᵀ κ0(X_train, x), where K0 = V Λ Vᵀ and
    K̃ = U diag(s) Uᵀ (s > 0, decreasing): the coordinates of K̃^½ K0^-½ k_x in the
    eigenbasis of K̃, so column c is the c-th most important learned direction.  Inner
    products of the training points' coordinates reproduce the learned training kernel K
    exactly.

    **The output dimension is data-dependent.**  The trace norm makes K̃ low rank, but
    its rank k (:attr:`rank_`) is decided by τ, the constraints and the data, not fixed in
    advance: raising τ never raises it, and as τ → ∞ it tends to the rank of the
    minimum-trace feasible K̃, which can be well above 2.  For a fixed dimension give
    ``n_components``: ``transform`` then keeps the leading ``min(n_components, k)``
    coordinates (a truncation of the learned transformation to its top eigen-directions).
    :attr:`n_components_` always reports the number of columns ``transform`` returns.

    Parameters
    ----------
    %(kernel_parameters)s
    %(standardize)s
    tau : float, default=1.0
        The trace-norm weight τ > 0 of eq. 26 (larger = lower rank).
    n_components : int or None, default=None
        Number of output coordinates: None keeps all k = :attr:`rank_`; an integer keeps
        the leading ``min(n_components, rank_)`` (a UserWarning says so when the learned
        rank is smaller than asked).
    %(pair_sampling)s
    %(percentiles)s
        Jain et al. §6 use (1, 99).
    tol : float, default=1e-6
        The certificate of the dual solver: it stops when the Lagrange duality gap is at
        most ``tol``·max(1, |objective|) and every hard constraint holds to ``tol``
        relative (max(1, |bound|)).
    max_iter : int, default=20000
        Maximum number of Newton iterations (at most 500, each one eigendecomposition of
        the r × r whitened matrix plus a conjugate-gradient Newton system), and of the Uzawa
        iterations when Newton does not certify; when reached, the solver emits a
        :class:`cvxkml.errors.ConvergenceWarning` and the last iterate is kept (an
        infeasible constraint set — possible for a rank-deficient K0 — ends this way).
        The solve follows the library's thread policy (``cvxkml.set_config(blas_threads=…)``).
    %(max_sweeps)s
    %(random_state)s
    %(control)s

    Attributes
    ----------
    %(kernel_fitted)s
    rank_ : int
        k, the rank of the learned transformation (number of eigenvalues of K̃ above
        1e-9 of the largest).
    n_components_ : int
        Number of columns of ``transform``'s output: ``rank_`` or
        ``min(n_components, rank_)``.
    eigenvalues_ : ndarray of shape (rank_,)
        s, the non-zero eigenvalues of K̃, decreasing (its spectrum is that of
        K0^-½ K K0^-½).
    projection_ : ndarray of shape (n_train, n_components_)
        P with ``transform(X) = κ0(X, X_train) @ P`` (P = V Λ^-½ U_k diag(√s_k), the
        Lemma 10 form Σ^½ D V of Algorithm 2's output).
    embedding_ : ndarray of shape (n_train, n_components_)
        ``transform`` of the training points; with n_components_ = rank_,
        ``embedding_ @ embedding_.T`` is the learned training kernel K.
    solution_ : cvxkml.solution.Solution
        The solver's result (``matrix`` is the learned n_train × n_train kernel K).
    n_iter_ : int
        Number of Newton iterations (of Uzawa iterations when that solver ran).
    %(pairs_fitted)s
    constraints_ : cvxkml.sideinfo.PairConstraints
        The same object as ``pairs_`` (its earlier name).
    %(converged)s
    %(standardize_fitted)s
    %(features_in)s

    References
    ----------
    %(jain2012)s: §5.4, eq. 26–28, Algorithm 2, Lemma 10.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from cvxkml.estimators.trace import TraceSSIKDR
    >>> X, y = load_digits(return_X_y=True)
    >>> est = TraceSSIKDR(kernel_params={"gamma": 1e-3}, tau=10.0, n_components=2,
    ...                   n_similar=20, n_dissimilar=20, random_state=0).fit(X[:100], y[:100])
    >>> est.transform(X[100:110]).shape
    (10, 2)
    """

    _parameter_constraints = {
        **KERNEL_CONSTRAINTS,
        **STANDARDIZE_CONSTRAINTS,
        "tau": POSITIVE,
        "n_components": Integer(1, none=True),
        **BREGMAN_CONSTRAINTS,
        **CONTROL_CONSTRAINTS,
    }

    def __init__(
        self,
        *,
        kernel="gaussian",
        kernel_params=None,
        standardize="auto",
        tau=1.0,
        n_components=None,
        scheme="jain",
        n_similar=100,
        n_dissimilar=100,
        n_constraints=None,
        percentiles=(5.0, 95.0),
        tol=1e-6,
        max_iter=20000,
        max_sweeps=None,
        random_state=None,
        verbose=0,
        callback=None,
    ):
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.standardize = standardize
        self.tau = tau
        self.n_components = n_components
        self.scheme = scheme
        self.n_similar = n_similar
        self.n_dissimilar = n_dissimilar
        self.n_constraints = n_constraints
        self.percentiles = percentiles
        self.tol = tol
        self.max_iter = max_iter
        self.max_sweeps = max_sweeps
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback

    def _fit(self, X, y, pairs, p):
        kern, K0, _, pc = self._kernel_pairs(X, y, pairs, p)
        # many small (r × r) products and eigendecompositions: threads only add synchronisation
        with blas_limit():
            problem = _TraceProblem(K0, pc, tau=p.tau)
            sol = self._solve(problem, p)
            P, s = problem.embedding_basis(sol)
        k = int(s.size)
        nc = p.n_components
        if nc is not None and nc > k:
            warnings.warn(
                f"n_components={nc} but the learned transformation has rank {k}: transform "
                f"returns {k} coordinates (lower tau for a higher rank).",
                UserWarning,
                stacklevel=3,
            )
        keep = k if nc is None else min(nc, k)
        self.X_fit_ = X
        self.kernel_ = kern
        self.pairs_ = self.constraints_ = pc
        self.rank_ = k
        self.n_components_ = keep
        self.eigenvalues_ = s
        self.projection_ = np.ascontiguousarray(P[:, :keep])
        self.embedding_ = K0 @ self.projection_
        self._set_solution(sol, p=p)

    def _embedding(self):
        """x ↦ diag(√s) Uᵀ Λ^-½ Vᵀ κ0(X_train, x), the leading ``n_components_`` coordinates."""
        return KernelMap(self.kernel_, self.X_fit_, self.projection_)
