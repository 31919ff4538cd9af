"""scikit-learn classifier for the kernel classification rule with a learned metric
embedding (Sriperumbudur, Lang & Lanckriet, ICML 2008).

:class:`KCRClassifier` learns (Σ, h̃) on the training points with the SDP of eq. 9
(:class:`cvxkml.declare.KCR`, fast certified solver) and classifies with eq. 2 and the
naïve kernel: a point gets the label with the most training points inside the learned
ball ρ²(x, X_i) = (k_x − k_i)ᵀ Σ (k_x − k_i) <= h̃.  The learned embedding
φ(x) = Gᵀ k_x (Σ = G Gᵀ; Remark 2, Corollary 3) is ``transform``.
"""
from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._validation import check_positive, estimator_data, estimator_fit_data
from ..declare.kcr import KCR
from ..errors import InvalidInputError
from .logdet import training_kernel
from ..formulas.kcr import class_counts, rule_predict
from ..kernels import Kernel

__all__ = ["KCRClassifier"]

_KERNELS = ("gaussian", "rbf", "linear", "polynomial", "poly", "precomputed")
_TIE_RULES = ("nearest", "first")


class KCRClassifier(ClassifierMixin, TransformerMixin, BaseEstimator):
    """Kernel classification rule with a learned metric embedding and bandwidth
    (Sriperumbudur et al. 2008, eq. 2 with the naïve kernel, learned by the SDP eq. 9).

    ``fit`` solves

        min_{Σ ⪰ 0, 1ᵀΣ1 = 0, h̃ >= ε}  Σ_i [2 − n_i⁺ + Σ_j [1 + τ_ij D_ij − τ_ij h̃]₊]₊ + λ tr(KΣ)

    on the training kernel K (D_ij the learned squared distances), and ``predict``
    applies the rule: the class with the most training points X_i with
    ρ²(x, X_i) = (k_x − k_i)ᵀ Σ (k_x − k_i) <= h̃.

    Tie rule (``tie_break``).  Eq. 2 leaves ties open (eq. 1 gives them to class 0).
    With ``"nearest"`` (default) a tie between classes — including the empty ball, where
    all counts are 0 — goes to the class of the nearest training point (learned
    distance) among the tied classes; for an empty ball that is the 1-NN label.  With
    ``"first"`` it goes to the first tied class in sorted label order (eq. 1's
    convention).  ``predict_proba`` is the Parzen-window estimate counts / Σ counts; in a
    tie the winner gets an extra half vote (an empty ball gives probability 1 to the
    1-NN label with ``"nearest"``, uniform with ``"first"``), so that
    ``argmax(predict_proba) == predict`` always.

    Parameters
    ----------
    kernel : {"gaussian", "rbf", "linear", "polynomial", "poly", "precomputed"}, \
default="gaussian"
        The reproducing kernel 𝔎.  ``"gaussian"``/``"rbf"`` is exp(−ν‖x − y‖²) (the
        paper's).  With ``"precomputed"`` ``fit`` takes the training kernel matrix and
        ``predict``/``transform`` take 𝔎(X_new, X_train) (n_new × n_train).
    nu : float, default=1.0
        ν > 0 of the Gaussian kernel (ignored by the other kernels).
    kernel_params : dict or None, default=None
        ``degree``, ``coef0``, ``scale`` of the polynomial kernel.
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

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    X_fit_ : ndarray (n_train, n_features), or the training kernel matrix (precomputed).
    kernel_ : cvxkml.kernels.Kernel
    Sigma_ : ndarray of shape (n_train, n_train)
        The learned Σ ⪰ 0 with 1ᵀΣ1 = 0.
    h_ : float
        The learned squared bandwidth h̃ (the radius is √h̃).
    embedding_ : ndarray of shape (n_train, rank)
        E with Σ = E Eᵀ, columns ordered by decreasing eigenvalue of Σ; φ(x) = Eᵀ k_x.
    train_embedding_ : ndarray of shape (n_train, rank)
        φ of the training points.
    solution_ : cvxkml.solution.Solution
    n_iter_ : int
    n_features_in_ : int
    """

    def __init__(self, *, kernel="gaussian", nu=1.0, kernel_params=None, lam=1.0, h_min=1e-6,
                 n_components=None, tie_break="nearest", tol=1e-3, max_iter=20000,
                 time_limit=None):
        self.kernel = kernel
        self.nu = nu
        self.kernel_params = kernel_params
        self.lam = lam
        self.h_min = h_min
        self.n_components = n_components
        self.tie_break = tie_break
        self.tol = tol
        self.max_iter = max_iter
        self.time_limit = time_limit

    # ------------------------------------------------------------------ helpers
    def _make_kernel(self) -> Kernel:
        if not isinstance(self.kernel, str) or self.kernel not in _KERNELS:
            raise InvalidInputError(f"kernel must be one of {list(_KERNELS)}; got {self.kernel!r}.")
        params = {} if self.kernel_params is None else self.kernel_params
        if not isinstance(params, dict):
            raise InvalidInputError(f"kernel_params must be a dict or None; got {params!r}.")
        if self.kernel in ("gaussian", "rbf"):
            if params:
                raise InvalidInputError("Set the Gaussian kernel's parameter with nu=, not kernel_params.")
            return Kernel("gaussian", {"gamma": check_positive(self.nu, "nu")})
        if self.kernel in ("polynomial", "poly"):
            unknown = set(params) - {"degree", "coef0", "scale"}
            if unknown:
                raise InvalidInputError(f"Unknown kernel_params {sorted(unknown)} for the polynomial kernel.")
            return Kernel("polynomial", dict(params))
        if params:
            raise InvalidInputError(f"kernel={self.kernel!r} takes no kernel_params; got {params!r}.")
        return Kernel(self.kernel, {})

    def _check_params(self):
        lam = check_positive(self.lam, "lam")
        h_min = check_positive(self.h_min, "h_min")
        tol = check_positive(self.tol, "tol")
        mi = self.max_iter
        if not isinstance(mi, numbers.Integral) or isinstance(mi, bool) or mi < 1:
            raise InvalidInputError(f"max_iter must be a positive integer; got {mi!r}.")
        nc = self.n_components
        if nc is not None and (not isinstance(nc, numbers.Integral) or isinstance(nc, bool) or nc < 1):
            raise InvalidInputError(f"n_components must be None or a positive integer; got {nc!r}.")
        if self.tie_break not in _TIE_RULES:
            raise InvalidInputError(f"tie_break must be one of {list(_TIE_RULES)}; got {self.tie_break!r}.")
        tl = None if self.time_limit is None else check_positive(self.time_limit, "time_limit")
        return lam, h_min, tol, int(mi), tl

    @property
    def _precomputed(self) -> bool:
        return self.kernel == "precomputed"

    def _cross_kernel(self, X):
        X = estimator_data(self, X)
        return X if self._precomputed else self.kernel_(X, self.X_fit_)

    # ------------------------------------------------------------------ fit
    def fit(self, X, y):
        """Learn Σ and h̃ from labelled data (eq. 9).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_samples) for \
``kernel="precomputed"``
        y : array-like of shape (n_samples,)
            At least 2 classes, each with at least 2 members.

        Returns
        -------
        self : KCRClassifier
        """
        lam, h_min, tol, max_iter, time_limit = self._check_params()
        kern = self._make_kernel()
        X, y = estimator_fit_data(self, X, y)
        classes = np.unique(y)
        if classes.size < 2:
            raise InvalidInputError(
                f"KCRClassifier needs at least 2 classes; y has 1 class ({classes[0]!r}).")
        K = training_kernel(kern, X)
        problem = KCR(K, y, lam, h_min=h_min)
        sol = problem.solve(tol=tol, max_iter=max_iter, time_limit=time_limit)
        G = sol.info["factor"]
        U, svals, _ = np.linalg.svd(G, full_matrices=False)
        keep = svals > 1e-12 * max(float(svals[0]) if svals.size else 0.0, np.finfo(float).tiny)
        self.embedding_ = U[:, keep] * svals[keep]
        self.classes_ = classes
        self.X_fit_ = X
        self.kernel_ = kern
        self._K_train = K
        self._codes = problem.codes
        self.Sigma_ = sol.matrix
        self.h_ = float(sol.info["h"])
        self.train_embedding_ = K @ self.embedding_
        self.solution_ = sol
        self.n_iter_ = int(sol.n_iter)
        return self

    # ------------------------------------------------------------------ the rule
    def _sq_distances(self, X):
        Z = self._cross_kernel(X) @ self.embedding_
        T = self.train_embedding_
        D = (np.einsum("ij,ij->i", Z, Z)[:, None] + np.einsum("ij,ij->i", T, T)[None, :]
             - 2.0 * Z @ T.T)
        return np.maximum(D, 0.0)

    def learned_sq_distances(self, X):
        """ρ²(x, X_i) = (k_x − k_i)ᵀ Σ (k_x − k_i) to every training point.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) (or (n_samples, n_train) precomputed)

        Returns
        -------
        D : ndarray of shape (n_samples, n_train)
        """
        check_is_fitted(self)
        return self._sq_distances(X)

    def predict(self, X):
        """Eq. 2 with the naïve kernel and the learned (Σ, h̃); ties by ``tie_break``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) (or (n_samples, n_train) precomputed)

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

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) (or (n_samples, n_train) precomputed)

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

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) (or (n_samples, n_train) precomputed)

        Returns
        -------
        X_new : ndarray of shape (n_samples, d)
        """
        check_is_fitted(self)
        d = self._n_features_out
        return self._cross_kernel(X) @ self.embedding_[:, :d]

    @property
    def _n_features_out(self):
        r = self.embedding_.shape[1]
        return r if self.n_components is None else min(int(self.n_components), r)

    def get_feature_names_out(self, input_features=None):
        """Names ``kcrclassifier0`` … for the ``transform`` output columns."""
        check_is_fitted(self)
        return np.array([f"kcrclassifier{k}" for k in range(self._n_features_out)], dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags
