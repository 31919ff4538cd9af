"""Pair side information of the estimators: user-given pairs (:func:`given_pairs`) and the
``fit(X, y=None, *, pairs=None)`` of every estimator that learns from pair constraints
(:class:`PairLearnerMixin`: pairs drawn from labels, or given; ``pairs_``).
"""

from __future__ import annotations

import numpy as np

from .._progress import verbose_logging as _verbose_logging
from .._validation import as_float_array, as_generator, check_index_array, estimator_fit_data
from ..errors import InvalidInputError
from ..sideinfo import PairConstraints, baseline_kernel, percentile_bounds
from ._docs import fill_doc

__all__ = ["given_pairs", "PairLearnerMixin"]


def given_pairs(pairs, n: int, bounds) -> PairConstraints:
    """User-given pairs as :class:`~cvxkml.sideinfo.PairConstraints` on n points.

    Parameters
    ----------
    pairs : PairConstraints or array-like of shape (m, 2) or (m, 3)
        A PairConstraints is used as given (its bounds too).  Rows (i, j) are similar
        pairs; rows (i, j, s) are similar (s = +1) or dissimilar (s = −1).
    n : int
        Number of training points the indices refer to.
    bounds : callable
        s -> the bound of each pair, for the array forms.

    Raises
    ------
    InvalidInputError
        Not one of these forms, empty, an index out of range, i = j, or s not ±1.
    """
    if isinstance(pairs, PairConstraints):
        return pairs.validate(n)
    hint = (
        "pairs must be a cvxkml.sideinfo.PairConstraints or an integer array of shape (m, 2) "
        "(similar pairs) or (m, 3) (rows i, j, +1 similar / -1 dissimilar)"
    )
    if isinstance(pairs, (str, bytes, dict)):
        raise InvalidInputError(f"{hint}; got {pairs!r}.")
    try:
        arr = np.asarray(pairs)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{hint} ({exc}).") from exc
    if arr.ndim != 2 or arr.shape[1] not in (2, 3):
        raise InvalidInputError(f"{hint}; got shape {arr.shape}.")
    if arr.shape[0] == 0:
        raise InvalidInputError("pairs is empty; give at least one pair of point indices.")
    idx = check_index_array(arr[:, :2], "pairs", n, ndim=2)
    if arr.shape[1] == 3:
        s = as_float_array(arr[:, 2], "pairs[:, 2]", finite=False)
        if not np.all(np.isin(s, (-1.0, 1.0))):
            raise InvalidInputError("pairs[:, 2] must be +1 (similar) or -1 (dissimilar) in every row.")
    else:
        s = np.ones(arr.shape[0])
    return PairConstraints(idx[:, 0], idx[:, 1], s, bounds(s))


class PairLearnerMixin:
    """Learning from pair constraints: ``fit(X, y=None, *, pairs=None)`` with either class
    labels y (pairs drawn by ``scheme``) or user-given ``pairs``; ``pairs_`` holds the
    pairs used (a :class:`~cvxkml.sideinfo.PairConstraints`; passing it back as ``pairs``
    refits on exactly the same constraints)."""

    _classes_reason = " to form dissimilar pairs"

    @fill_doc
    def fit(self, X, y=None, *, pairs=None):
        """Learn from class labels y (pairs drawn from them) or from given pairs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_samples) for \
``kernel="precomputed"``
            Training points (at least 2, finite), or their kernel matrix κ0(X_train, X_train).
        y : array-like of shape (n_samples,) or None, default=None
            Class labels; the pairs are drawn from them (see the class parameters).  Give
            y or ``pairs``, not both.
        pairs : PairConstraints or array-like of shape (m, 2) or (m, 3), default=None
            Pairs given by the user, indices into X: a :class:`~cvxkml.sideinfo.PairConstraints`
            is used as given; rows (i, j) are similar pairs, rows (i, j, s) similar (s = +1)
            or dissimilar (s = −1) pairs, their bounds from ``percentiles``.  ``pairs_`` of a
            fitted estimator can be passed back.

        %(fitted_self)s

        Raises
        ------
        InvalidInputError
            A parameter out of its range; both or neither of y and ``pairs``; labels of
            too few classes; X malformed; a pair index out of range, a pair (i, i) or a
            sign other than ±1.
        NotPSDError
            A precomputed kernel matrix that is not positive semidefinite.
        """
        p = self._validate_params()
        X, y = self._fit_inputs(X, y, pairs)
        with _verbose_logging(p.verbose):
            self._fit(X, y, pairs, p)
        return self

    def _fit(self, X, y, pairs, p) -> None:
        """Solve the paper's problem (y is None when ``pairs`` are given)."""
        raise NotImplementedError

    def _check_param_relations(self, p) -> None:
        super()._check_param_relations(p)
        if getattr(p, "scheme", None) == "jain" and p.n_similar + p.n_dissimilar == 0:
            raise InvalidInputError("n_similar and n_dissimilar are both 0: no pairs to learn from.")

    def _fit_inputs(self, X, y, pairs):
        """X, and y (None when ``pairs`` are given)."""
        if pairs is not None:
            if y is not None:
                raise InvalidInputError(
                    f"Give either labels y or pairs to {type(self).__name__}.fit, not both (for "
                    "partially labelled data, build the pairs and pass pairs=...)."
                )
            return estimator_fit_data(self, X), None
        if y is None:
            raise InvalidInputError(
                f"{type(self).__name__} requires y to be passed, but the target y is None; "
                "give class labels y, or pairs with fit(X, pairs=...)."
            )
        return self._labelled_data(X, y)

    def _pair_bounds(self, s, p, baseline, n, rng):
        """Bounds of given pairs: the ``percentiles`` of the squared baseline distances,
        u for similar and l for dissimilar pairs (Davis et al. 2007 §2)."""
        u, l = percentile_bounds(baseline, n, p.percentiles, rng)
        return np.where(s > 0, u, l)

    def _labelled_pairs(self, y, p, baseline, rng) -> PairConstraints:
        """Pairs drawn from the labels (:meth:`PairConstraints.from_labels`)."""
        return PairConstraints.from_labels(
            y,
            baseline,
            scheme=p.scheme,
            n_similar=p.n_similar,
            n_dissimilar=p.n_dissimilar,
            n_constraints=p.n_constraints,
            percentiles=getattr(p, "percentiles", (5.0, 95.0)),
            random_state=rng,
        )

    def _kernel_pairs(self, X, y, pairs, p, ridge=0.0):
        """The kernel families' start: κ0, the training kernel matrix K0, K0 + ridge·I (the
        matrix learned from) and the pairs, bounds from its squared distances."""
        kern, K0 = self._kernel_matrix(X, p)
        K0_fit = K0 + ridge * np.eye(K0.shape[0]) if ridge > 0 else K0
        return kern, K0, K0_fit, self._pair_constraints(y, pairs, p, baseline_kernel(K0_fit), X.shape[0])

    def _pair_constraints(self, y, pairs, p, baseline, n) -> PairConstraints:
        """The pairs to learn from: drawn from y, or the given ``pairs`` (then y is None)."""
        rng = as_generator(p.random_state)
        if pairs is None:
            return self._labelled_pairs(y, p, baseline, rng)
        return given_pairs(pairs, n, lambda s: self._pair_bounds(s, p, baseline, n, rng))
