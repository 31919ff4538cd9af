"""scikit-learn estimator for kernel-space POLA (Jain et al. 2012 §5.2; Shalev-Shwartz,
Singer & Ng 2004): :class:`KernelPOLA`.
"""

from __future__ import annotations

from ..declare.pola import POLAKernel, pola_constraints
from ._base import CvxkmlEstimator, KernelExtensionMixin
from ._pairs import PairLearnerMixin
from ._params import (
    CONTROL_CONSTRAINTS,
    KERNEL_CONSTRAINTS,
    NON_NEGATIVE,
    PAIR_CONSTRAINTS,
    POSITIVE,
    STANDARDIZE_CONSTRAINTS,
    Integer,
    Real,
)

__all__ = ["KernelPOLA"]


class KernelPOLA(KernelExtensionMixin, PairLearnerMixin, CvxkmlEstimator):
    """Kernel-space POLA with the inductive extension of eq. 18.

    Learns K on the training points by (Jain et al. 2012 §5.2)

        min_K ½‖K0^-½ K K0^-½‖²_F  s.t.  K_ii + K_jj − 2K_ij <= b − 1 (similar pairs),
                                          >= b + 1 (dissimilar pairs),  K ⪰ 0,

    the batch POLA problem min ½‖W‖²_F s.t. y_ij(b − d_W(x_i, x_j)) >= 1 in feature
    space (Theorem 4 with the Frobenius regularizer, α = 0).  Hard constraints: with a
    full-rank K0 (e.g. a Gaussian kernel on distinct points) label-consistent pairs are
    always feasible; a rank-deficient K0 (a linear kernel with more points than features)
    may make them infeasible — add ``ridge`` or use fewer pairs.  Solved by the dual
    solver of :mod:`cvxkml.solvers.pola`; the extension to new points is eq. 18 with
    α = 0, κ(z1, z2) = k1ᵀ S k2, S = K0⁺ K* K0⁺: the learned W* = Φ S Φᵀ lives in the span
    of the training points, so ``transform`` is exact for every point.

    Side information: class labels (pairs drawn by ``scheme`` as in
    :class:`cvxkml.estimators.ITML`) or user-given ``pairs``: an (m, 2) index array
    (similar pairs) or (m, 3) array of rows (i, j, ±1) gets POLA's bounds b ∓ 1; a
    :class:`~cvxkml.sideinfo.PairConstraints` is used with its own bounds (a per-pair
    threshold b_ij = bound ± 1).  ``pairs_`` holds the constraints used.

    Parameters
    ----------
    %(kernel_parameters)s
    %(standardize)s
    b : float, default=2.0
        POLA's distance threshold (> 1): similar pairs get squared learned distance
        <= b − 1, dissimilar pairs >= b + 1.
    %(pair_sampling)s
    random_state : int, numpy.random.RandomState, numpy.random.Generator or None, \
default=None
        Seed of the pair sampling.
    ridge : float, default=0.0
        Added to the diagonal of the training K0 before learning.
    tol : float, default=1e-6
        Tolerance of the dual solver (relative duality gap and relative violation).
    max_iter : int, default=20000
        Maximum solver iterations (then a :class:`cvxkml.errors.ConvergenceWarning`).
    %(control)s

    Attributes
    ----------
    X_fit_, kernel_, learned_kernel_, embedding_
        As in :class:`cvxkml.estimators.KernelITML` (``learned_kernel_`` with α = 0,
        ``embedding_`` n_train × rank of K*).
    pairs_ : cvxkml.sideinfo.PairConstraints
        The margin constraints learned from (bounds b − 1 and b + 1).
    solution_ : cvxkml.solution.Solution
        The solver's result (``matrix`` = K*).
    n_iter_, n_features_in_, feature_names_in_
        Solver iterations; the features seen in ``fit``.
    %(converged)s
    %(standardize_fitted)s

    References
    ----------
    %(jain2012)s: §5.2, Theorem 4, eq. 18.
    Shalev-Shwartz, Singer & Ng, "Online and batch learning of pseudo-metrics", ICML 2004.
    """

    _parameter_constraints = {
        **KERNEL_CONSTRAINTS,
        **STANDARDIZE_CONSTRAINTS,
        "b": Real(1.0, low_open=True, what="a finite number > 1 (similar pairs need d <= b − 1 > 0)"),
        **PAIR_CONSTRAINTS,
        "ridge": NON_NEGATIVE,
        "tol": POSITIVE,
        "max_iter": Integer(1),
        **CONTROL_CONSTRAINTS,
    }

    def __init__(
        self,
        *,
        kernel="gaussian",
        kernel_params=None,
        standardize="auto",
        b=2.0,
        scheme="jain",
        n_similar=100,
        n_dissimilar=100,
        n_constraints=None,
        ridge=0.0,
        tol=1e-6,
        max_iter=20000,
        random_state=None,
        verbose=0,
        callback=None,
    ):
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.standardize = standardize
        self.b = b
        self.scheme = scheme
        self.n_similar = n_similar
        self.n_dissimilar = n_dissimilar
        self.n_constraints = n_constraints
        self.ridge = ridge
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback

    def _labelled_pairs(self, y, p, baseline, rng):
        pc = super()._labelled_pairs(y, p, baseline, rng)
        return pola_constraints(pc.i, pc.j, pc.y, p.b)

    def _pair_bounds(self, s, p, baseline, n, rng):
        return p.b - s

    def _fit(self, X, y, pairs, p):
        kern, K0, K0_fit, pc = self._kernel_pairs(X, y, pairs, p, p.ridge)
        sol = self._solve(POLAKernel(K0_fit, pc), p)
        self._extend(kern, X, K0_fit, sol.matrix, alpha=0.0, K_train=K0)
        self.pairs_ = pc
        self._set_solution(sol, p=p)
