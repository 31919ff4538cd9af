"""scikit-learn classifier for the kernel classification rule with a learned metric
embedding (Sriperumbudur, Lang & Lanckriet, ICML 2008): :class:`KCRClassifier`.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .._progress import verbose_logging as _verbose_logging
from .._validation import estimator_data
from ..declare.kcr import KCR
from ..errors import InvalidInputError
from ..formulas.kcr import class_counts, rule_predict
from ._base import CvxkmlEstimator
from ._maps import KernelMap, median_heuristic_gamma
from ._params import (
    CONTROL_CONSTRAINTS,
    KERNEL_CONSTRAINTS,
    KERNEL_PARAMS,
    POSITIVE,
    STANDARDIZE_CONSTRAINTS,
    Integer,
    Options,
    Real,
)

__all__ = ["KCRClassifier"]


class KCRClassifier(ClassifierMixin, CvxkmlEstimator):
    """Kernel classification rule with a learned metric embedding and bandwidth
    (Sriperumbudur et al. 2008, eq. 2 with the naïve kernel, learned by the SDP eq. 9).

    ``fit`` solves

        min_{Σ ⪰ 0, 1ᵀΣ1 = 0, h̃ >= ε}  Σ_i [2 − n_i⁺ + Σ_j [1 + τ_ij D_ij − τ_ij h̃]₊]₊ + λ tr(KΣ)

    on the training kernel K (D_ij the learned squared distances; :class:`cvxkml.declare.KCR`,
    a certified fast solver), and ``predict`` applies the rule: the class with the most
    training points X_i with ρ²(x, X_i) = (k_x − k_i)ᵀ Σ (k_x − k_i) <= h̃.  The learned
    embedding φ(x) = Eᵀ k_x (Σ = E Eᵀ; Remark 2, Corollary 3) is ``transform``.

    Tie rule (``tie_break``).  Eq. 2 leaves ties open (eq. 1 gives them to class 0).
    With ``"nearest"`` (default) a tie between classes — including the empty ball, where
    all counts are 0 — goes to the class of the nearest training point (learned
    distance) among the tied classes; for an empty ball that is the 1-NN label.  With
    ``"first"`` it goes to the first tied class in sorted label order (eq. 1's
    convention).  ``predict_proba`` is the Parzen-window estimate counts / Σ counts; in a
    tie the winner gets an extra half vote (an empty ball gives probability 1 to the
    1-NN label with ``"nearest"``, uniform with ``"first"``), so that
    ``argmax(predict_proba) == predict`` always.

    Side information: class labels only.  The objective of eq. 9 counts, for every
    training point, the points of its own class (n_i⁺) and the τ_ij = ±1 of all pairs
    against the learned bandwidth, and the rule of eq. 2 votes with the labels of the
    training points inside the ball: both need the class of every training point, which
    a set of similar / dissimilar pairs does not give, so ``fit`` takes no ``pairs``.
    ``pair_distance`` and ``get_metric`` give the learned distance ρ (with the full Σ).

    Parameters
    ----------
    kernel : {"gaussian", "rbf", "linear", "polynomial", "poly", "precomputed"}, \
default="gaussian"
        The reproducing kernel 𝔎.  ``"gaussian"``/``"rbf"`` is exp(−ν‖x − y‖²) (the
        paper's).  With ``"precomputed"`` ``fit`` takes the training kernel matrix and
        ``predict``/``transform`` take 𝔎(X_new, X_train) (n_new × n_train).
    nu : float or None, default=None
        ν > 0 of the Gaussian kernel (ignored by the other kernels).  None: the median
        heuristic on the (standardized) training points, ν = 1 / median_{i<j} ‖z_i − z_j‖²
        (a fixed-seed sample of 1000 points for larger sets).
    kernel_params : dict or None, default=None
        ``degree``, ``coef0``, ``scale`` of the polynomial kernel.
    standardize : "auto" or bool, default="auto"
        Standardize the features before the kernel (training mean and standard deviation
        per feature, ``feature_mean_`` / ``feature_scale_``, applied to every new point).
        ``"auto"``: for the Gaussian kernel with ``nu=None`` (the median heuristic); the
        linear and polynomial kernels, a given ν and a precomputed kernel see the features
        as given.
    lam : float, default=1.0
        λ > 0, the weight of tr(KΣ) = ‖φ‖² (eq. 9).
    h_min : float, default=1e-6
        Lower bound ε of the squared bandwidth h̃.
    n_components : int or None, default=None
        Dimension d of ``transform`` (the top-d eigen-directions of Σ, Remark 2); None =
        rank(Σ).  ``predict`` always uses the full learned metric.
    tie_break : {"nearest", "first"}, default="nearest"
        See above.
    tol : float, default=1e-3
        Certified relative duality gap at which the solver stops.
    max_iter : int, default=20000
        PDHG iteration limit (then a :class:`cvxkml.errors.ConvergenceWarning`).
    time_limit : float or None, default=None
        Wall-clock limit of one solve in seconds.
    %(control)s

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    X_fit_ : ndarray of shape (n_train, n_features)
        The training points (for ``"precomputed"`` the training kernel matrix).
    kernel_ : cvxkml.kernels.Kernel
        The kernel with its resolved parameters.
    Sigma_ : ndarray of shape (n_train, n_train)
        The learned Σ ⪰ 0 with 1ᵀΣ1 = 0.
    h_ : float
        The learned squared bandwidth h̃ (the radius is √h̃).
    embedding_ : ndarray of shape (n_train, rank)
        E with Σ = E Eᵀ, columns ordered by decreasing eigenvalue of Σ; φ(x) = Eᵀ k_x.
    train_embedding_ : ndarray of shape (n_train, rank)
        φ of the training points.
    solution_ : cvxkml.solution.Solution
        The solver's certified result (``matrix`` = Σ, ``info["h"]`` = h̃).
    n_iter_ : int
        PDHG iterations.
    %(converged)s
    %(standardize_fitted)s
    n_features_in_ : int
        Number of features seen in ``fit`` (n_train for ``"precomputed"``).

    References
    ----------
    Sriperumbudur, Lang & Lanckriet, "Metric embedding for kernel classification rules",
    ICML 2008: eq. 2 (the rule), eq. 9 (the SDP), Remark 2 and Corollary 3 (the embedding).
    """

    #: fitted state that is not a public attribute (saved with the estimator)
    _private_fitted = ("_K_train", "_codes")
    _parameter_constraints = {
        **KERNEL_CONSTRAINTS,
        "nu": Real(0.0, low_open=True, none=True, what="a finite positive number"),
        "lam": POSITIVE,
        "h_min": POSITIVE,
        "n_components": Integer(1, none=True),
        "tie_break": Options("nearest", "first"),
        "tol": POSITIVE,
        "max_iter": Integer(1),
        "time_limit": Real(0.0, low_open=True, none=True, what="a finite positive number"),
        **STANDARDIZE_CONSTRAINTS,
        **CONTROL_CONSTRAINTS,
    }
    # the Gaussian kernel's width is nu (the paper's ν), not a kernel_params entry
    _kernel_params_allowed = {**KERNEL_PARAMS, "gaussian": frozenset(), "rbf": frozenset()}
    _kernel_params_hint = " Set the Gaussian kernel's parameter with nu=, not kernel_params."

    def __init__(
        self,
        *,
        kernel="gaussian",
        nu=None,
        kernel_params=None,
        standardize="auto",
        lam=1.0,
        h_min=1e-6,
        n_components=None,
        tie_break="nearest",
        tol=1e-3,
        max_iter=20000,
        time_limit=None,
        verbose=0,
        callback=None,
    ):
        self.kernel = kernel
        self.nu = nu
        self.kernel_params = kernel_params
        self.standardize = standardize
        self.lam = lam
        self.h_min = h_min
        self.n_components = n_components
        self.tie_break = tie_break
        self.tol = tol
        self.max_iter = max_iter
        self.time_limit = time_limit
        self.verbose = verbose
        self.callback = callback

    def _auto_standardize(self, p):
        return p.kernel in ("gaussian", "rbf") and p.nu is None

    def _default_kernel_params(self, Z, p):
        if p.kernel not in ("gaussian", "rbf"):
            return {}
        return {"gamma": median_heuristic_gamma(Z) if p.nu is None else p.nu}

    # ------------------------------------------------------------------ fit
    def fit(self, X, y):
        """Learn Σ and h̃ from labelled data (eq. 9).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_samples) for \
``kernel="precomputed"``
            Training points (at least 2, finite), or their kernel matrix κ0(X_train, X_train).
        y : array-like of shape (n_samples,)
            At least 2 classes, each with at least 2 members.

        Returns
        -------
        self : KCRClassifier

        Raises
        ------
        InvalidInputError
            A parameter out of its range, X or y malformed, fewer than 2 classes or a class
            of one member.
        NotPSDError
            A precomputed kernel matrix that is not positive semidefinite.
        """
        p = self._validate_params()
        X, y = self._labelled_data(X, y)
        with _verbose_logging(p.verbose):
            self._fit(X, y, p)
        return self

    def _fit(self, X, y, p):
        kern, K = self._kernel_matrix(X, p)
        problem = KCR(K, y, p.lam, h_min=p.h_min)
        sol = self._solve(problem, p, time_limit=p.time_limit)
        G = sol.info["factor"]
        U, svals, _ = np.linalg.svd(G, full_matrices=False)
        keep = svals > 1e-12 * max(float(svals[0]) if svals.size else 0.0, np.finfo(float).tiny)
        self.embedding_ = U[:, keep] * svals[keep]
        self.classes_ = np.unique(y)
        self.X_fit_ = X
        self.kernel_ = kern
        self._K_train = K
        self._codes = problem.codes
        self.Sigma_ = sol.matrix
        self.h_ = float(sol.info["h"])
        self.train_embedding_ = K @ self.embedding_
        self._set_solution(sol, p=p)

    def _check_loaded(self):
        """Shapes of the fitted arrays agree (called by ``load`` before the probe run)."""
        n = self.X_fit_.shape[0]
        r = self.embedding_.shape[1] if getattr(self.embedding_, "ndim", 0) == 2 else -1
        for name, shape in (
            ("_K_train", (n, n)),
            ("Sigma_", (n, n)),
            ("embedding_", (n, r)),
            ("train_embedding_", (n, r)),
            ("_codes", (n,)),
        ):
            if getattr(getattr(self, name), "shape", None) != shape:
                raise InvalidInputError(f"{name} does not have shape {shape}")
        if not (np.all(self._codes >= 0) and np.all(self._codes < self.classes_.size)):
            raise InvalidInputError("_codes are not class indices")

    def _embedding(self):
        """φ(x) = Eᵀ k_x with the full E (the learned distance ρ)."""
        return KernelMap(self.kernel_, self.X_fit_, self.embedding_)

    # ------------------------------------------------------------------ the rule
    def _sq_distances(self, X):
        Z = self._embed(estimator_data(self, X))
        T = self.train_embedding_
        D = np.einsum("ij,ij->i", Z, Z)[:, None] + np.einsum("ij,ij->i", T, T)[None, :] - 2.0 * Z @ T.T
        return np.maximum(D, 0.0)

    def learned_sq_distances(self, X):
        """ρ²(x, X_i) = (k_x − k_i)ᵀ Σ (k_x − k_i) to every training point.

        %(X_new)s

        Returns
        -------
        D : ndarray of shape (n_samples, n_train)
        """
        check_is_fitted(self)
        return self._sq_distances(X)

    def predict(self, X):
        """Eq. 2 with the naïve kernel and the learned (Σ, h̃); ties by ``tie_break``.

        %(X_new)s

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        D = self._sq_distances(X)
        return self.classes_[rule_predict(D, self._codes, self.classes_.size, self.h_, self.tie_break)]

    def predict_proba(self, X):
        """Parzen-window class probabilities: the share of each class among the training
        points inside the learned ball (ties resolved by a half vote for the
        ``tie_break`` winner, so ``argmax`` matches :meth:`predict`).

        %(X_new)s

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        check_is_fitted(self)
        D = self._sq_distances(X)
        L = self.classes_.size
        counts = class_counts(D, self._codes, L, self.h_).astype(np.float64)
        winner = rule_predict(D, self._codes, L, self.h_, self.tie_break)
        top = counts.max(axis=1, keepdims=True)
        tie = (counts == top).sum(axis=1) > 1
        if self.tie_break == "nearest":
            counts[np.flatnonzero(tie), winner[tie]] += 0.5
        else:
            empty = counts.sum(axis=1) == 0
            counts[empty] = 1.0
            rows = np.flatnonzero(tie & ~empty)
            counts[rows, winner[rows]] += 0.5
        return counts / counts.sum(axis=1, keepdims=True)

    # ------------------------------------------------------------------ embedding
    def transform(self, X):
        """The learned embedding φ(x) = Eᵀ k_x (Remark 2 / Corollary 3), truncated to the
        top ``n_components`` eigen-directions of Σ; Euclidean distances between embedded
        points are the learned distances ρ (exactly, when nothing is truncated).

        %(X_new)s

        Returns
        -------
        X_new : ndarray of shape (n_samples, d)
        """
        return super().transform(X)[:, : self._n_features_out]

    @property
    def _n_features_out(self):
        r = self.embedding_.shape[1]
        return r if self.n_components is None else min(int(self.n_components), r)
