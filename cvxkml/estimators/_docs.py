"""Documentation templates of the estimators: the docstring pieces several estimators share,
written once (:data:`DOCS`), and :func:`fill_doc`, which puts them into a docstring.
:class:`cvxkml.estimators._base.CvxkmlEstimator` applies it to every subclass and its methods.
"""

from __future__ import annotations

import re
import textwrap

__all__ = ["DOCS", "fill_doc"]

#: docstring pieces several estimators share, written once: a line ``%(name)s`` (alone on its
#: line, any indentation) or an inline ``%(name)s`` in a docstring is replaced by the piece
DOCS = {
    "features_in": """\
n_features_in_ : int
    Number of features seen in ``fit`` (n_train for ``kernel="precomputed"``).
feature_names_in_ : ndarray of shape (n_features_in_,)
    Feature names, when X has string column names.""",
    "kernel_fitted": """\
X_fit_ : ndarray of shape (n_train, n_features)
    The training points (with ``kernel="precomputed"``: the training kernel matrix).
kernel_ : cvxkml.kernels.Kernel
    The base kernel with its resolved parameters.""",
    "kernel_parameters": """\
kernel : {"gaussian", "rbf", "linear", "polynomial", "poly", "precomputed"}, \
default="gaussian"
    The base kernel κ0.  With ``"precomputed"``, ``fit`` takes the square training kernel
    matrix κ0(X_train, X_train) and ``transform`` takes κ0(X_new, X_train) of shape
    (n_new, n_train).
kernel_params : dict or None, default=None
    Parameters of the base kernel: ``sigma`` or ``gamma`` for the Gaussian kernel
    κ0(x, y) = exp(−gamma·‖x − y‖²) (gamma = 1 / (2 sigma²)); ``degree``, ``coef0``,
    ``scale`` for the polynomial kernel (scale·xᵀy + coef0)^degree (defaults 2, 1, 1);
    none for the linear and precomputed kernels.  ``None`` uses the defaults; for the
    Gaussian kernel the width comes from the data at fit time by the median heuristic,
    gamma = 1 / median_{i<j} ‖z_i − z_j‖² over the training points z (standardized, see
    ``standardize``; a fixed-seed sample of 1000 points for larger sets), i.e.
    σ² = median / 2: the kernel value at the median distance is e^{-1}.""",
    "standardize": """\
standardize : "auto" or bool, default="auto"
    Standardize the features before the base kernel: z = (x − m) / s with the training
    mean m and standard deviation s of each feature (a constant feature keeps s = 1), kept
    as ``feature_mean_`` / ``feature_scale_`` and applied to every new point.  ``"auto"``
    standardizes for the Gaussian kernel when its width is left to the median heuristic
    (``kernel_params=None``): the defaults then give the same results on raw and on
    standardized features.  A given width, the linear and polynomial kernels (whose
    values depend on the features' origin and scale by design) and a precomputed kernel
    see the features as given.""",
    "control": """\
verbose : int, default=0
    Progress on the ``cvxkml`` logger (:mod:`logging`, INFO level): with verbose = k > 0 a
    line at every k-th certificate check of the solver (iteration, objective, certified
    relative gap, relative violation) and a summary at the end of ``fit``.  When no
    logging handler is configured the lines go to stderr for the duration of ``fit``.
callback : callable or None, default=None
    Called at every certificate check of the solver with one dict (``estimator``,
    ``stage``, ``iteration``, ``objective``, ``gap``, ``violation`` and the solver's own
    entries).  A truthy return stops the fit early: the estimator keeps the solver's last
    (best) iterate and is usable, the solver emits a
    :class:`cvxkml.errors.ConvergenceWarning` and ``converged_`` is False.""",
    "standardize_fitted": """\
feature_mean_, feature_scale_ : ndarray of shape (n_features,) or None
    The standardization applied before the base kernel (None: features used as given).""",
    "converged": """\
converged_ : bool
    Whether the solver certified its tolerance (False when it ran out of iterations or the
    ``callback`` stopped it).""",
    "pairs_fitted": """\
pairs_ : cvxkml.sideinfo.PairConstraints
    The pair constraints learned from (pass them back as ``pairs`` to refit on them).""",
    "pair_sampling": """\
scheme : {"jain", "itml"}, default="jain"
    How pairs are drawn from the labels: ``"jain"`` takes, for every class,
    ``n_similar`` random within-class pairs and ``n_dissimilar`` pairs of a member with a
    point of another class (Jain et al. 2012 §6); ``"itml"`` draws ``n_constraints``
    random pairs, similar when the labels agree (the original ITML code).  Duplicate pairs
    are removed.
n_similar : int, default=100
    Similar pairs per class (``scheme="jain"``).
n_dissimilar : int, default=100
    Dissimilar pairs per class (``scheme="jain"``).
n_constraints : int or None, default=None
    Number of random pairs for ``scheme="itml"`` (None: 40·c·(c−1), c classes).""",
    "percentiles": """\
percentiles : tuple of two floats, default=(5.0, 95.0)
    Percentiles (lower, upper) of the squared baseline distances over all pairs of
    training points (a seeded sample of 100 000 pairs for n > 447) giving the bounds u
    (similar) and l (dissimilar) of the pairs drawn from labels or given as an index
    array; the baseline is named in the class description.""",
    "random_state": """\
random_state : int, numpy.random.RandomState, numpy.random.Generator or None, \
default=None
    Seed of the pair sampling (and of the percentile sample for large n).""",
    "max_sweeps": """\
max_sweeps : int or None, default=None
    Deprecated former name of ``max_iter`` (a DeprecationWarning; it wins when given).""",
    "pairs_side_information": """\
Side information: ``fit(X, y)`` draws the pairs from class labels; ``fit(X, pairs=...)``
takes them from the user — a :class:`~cvxkml.sideinfo.PairConstraints` (indices into X,
±1, bounds used as given), an (m, 2) index array (similar pairs) or an (m, 3) array of
rows (i, j, ±1) whose bounds are the ``percentiles``.  ``pairs_`` holds the pairs used.""",
    "kernel_extension_transform": """\
``transform`` gives embedding coordinates ψ(X) of the learned kernel: ψ(z)ᵀψ(z') equals
κ(z, z') exactly when z and z' lie in the span of the training points in feature space;
otherwise the component orthogonal to that span, which the learned W* = αI + ΦSΦᵀ leaves
unchanged, is dropped.  Inner products with training points stay exact, so distances from
a new point to the training points are the learned ones up to a constant per new point
(nearest-neighbour rankings are exact).  For exact values use :meth:`learned_kernel`,
:meth:`pair_distance` or :meth:`get_metric`.""",
    "wide_data": """\
Wide data (more features than samples, d > n) is solved in the span of the data (Jain et al.
2012, Theorems 1 and 4: W* = αI + U diag(λ) Uᵀ, U d × k, k <= n), at a cost independent of d
after one n × n Gram matrix: ``fit``, ``transform``, ``pair_distance`` and ``get_metric``
then never form a d × d matrix; ``components_`` and :meth:`get_mahalanobis_matrix` form
theirs when asked for (``metric_`` holds the factors).""",
    "bregman_tol": """\
Stopping tolerance of the Bregman solver: the relative change of the dual variables over a
sweep, and ``converged_`` also requires the Lagrange certificate (relative duality gap and
relative violation at most max(tol, 1e-6)).""",
    "bregman_max_iter": """\
Maximum number of sweeps over the constraints; when reached, the solver emits a
:class:`cvxkml.errors.ConvergenceWarning` and the last iterate is kept.""",
    "bregman_progress": """\
Progress: the Bregman solver reports once per attempt (it runs its sweeps in compiled code
and checks its certificate at the end of an attempt), so ``verbose`` and ``callback`` see a
few checks per fit, not one per sweep.""",
    "X_new": """\
Parameters
----------
X : array-like of shape (n_samples, n_features), or (n_samples, n_train) for \
``kernel="precomputed"``
    New points (with ``"precomputed"``: the kernel values κ0(X, X_train)).""",
    "fitted_self": """\
Returns
-------
self : object
    The fitted estimator.""",
    "jain2012": 'Jain, Kulis, Davis & Dhillon, "Metric and kernel learning using a linear '
    'transformation", JMLR 13, 2012',
    "kulis2009": 'Kulis, Sustik & Dhillon, "Low-rank kernel learning with Bregman matrix divergences", JMLR 10, 2009',
}
_PIECE_LINE = re.compile(r"^( *)%\((\w+)\)s$", re.MULTILINE)


def fill_doc(obj):
    """Put the :data:`DOCS` pieces into the docstring of ``obj`` (a class or a function)."""
    doc = obj.__doc__
    if doc and "%(" in doc:
        doc = _PIECE_LINE.sub(lambda m: textwrap.indent(DOCS[m.group(2)], m.group(1)), doc)
        for key, text in DOCS.items():
            doc = doc.replace(f"%({key})s", text)
        obj.__doc__ = doc
    return obj
