"""scikit-learn estimators for LMNN and metric learning with multiple kernels (Wang, Do,
Woznica & Kalousis, NIPS 2011; Weinberger & Saul 2009): :class:`LMNN` (linear, or on a
kernel's empirical map) and :class:`LMNNMKL` (multiple kernels).  Both learn A = LᵀL on a
feature map z(x), so ``transform(X) = z(X) Lᵀ``, from labels and target neighbours.
"""

from __future__ import annotations

import numpy as np

from .._progress import verbose_logging as _verbose_logging
from .._validation import as_float_array, check_index_array
from ..declare.lmnn import STALL_ITER, LMNNProblem
from ..declare.mkl import W_GRID, alternate, combine_kernels
from ..errors import InvalidInputError
from ..formulas.lmnn import LMNNTriplets
from ..kernels import Kernel
from ..mkl_kernels import KernelSet, SourceKernel, mean_pairwise_distance, nr_kernels, paper_kernels
from ._base import ComponentsMixin, CvxkmlEstimator, MetricMixin
from ._docs import fill_doc
from ._maps import KernelMap, training_kernel
from ._params import CONTROL_CONSTRAINTS, KERNEL_CONSTRAINTS, POSITIVE, STANDARDIZE_CONSTRAINTS, Integer, Options, Real

__all__ = ["LMNN", "LMNNMKL"]


def _tie_break_options(tie_break) -> dict:
    """The solve options of a tie-break: the least-norm selection needs every triplet."""
    return {} if tie_break is None else {"tie_break": tie_break, "impostors": "all"}


#: the parameters of the LMNN objective and of its solver
_LMNN_CONSTRAINTS = {
    "k": Integer(1),
    "gamma": Real(0.0, 1.0, low_open=True, what="a number in (0, 1]"),
    "tol": POSITIVE,
    "max_iter": Integer(1, 10**15, whole_floats=True),
    "stall_iter": Integer(0, 10**15, whole_floats=True),
    "small_classes": Options("raise", "shrink"),
    "tie_break": Options("min-norm", what="'min-norm'", none=True),
}


def _check_kernels(spec, name) -> KernelSet:
    """The kernel set of LMNNMKL (a fresh one: fit stores its normalization)."""
    if isinstance(spec, str):
        if spec == "paper":
            return paper_kernels()
        if spec == "nr":
            return nr_kernels()
        if spec == "auto":
            return "auto"  # resolved on the training points (_auto_kernels)
        raise InvalidInputError(f"{name} must be 'auto', 'paper', 'nr', a KernelSet or a list; got {spec!r}.")
    if isinstance(spec, KernelSet):
        return KernelSet(spec.kernels, spec.normalize)
    if isinstance(spec, (Kernel, SourceKernel)):
        spec = [spec]
    return KernelSet(spec)


def _check_w_grid(value, name):
    grid = None if isinstance(value, (str, bytes)) else as_float_array(value, name, finite=False)
    if grid is None or grid.ndim != 1 or grid.size == 0 or not np.all(np.isfinite(grid) & (grid > 0)):
        raise InvalidInputError(f"{name} must be a non-empty sequence of positive numbers; got {value!r}.")
    return tuple(float(x) for x in grid)


#: the Gaussian width of kernels="auto" as a fraction of σ0, the mean pairwise distance of the
#: (standardized) training points (the unit of Wang et al.'s §6.2 widths)
AUTO_SIGMA_FRACTION = 0.25


def _auto_kernels(X) -> KernelSet:
    """kernels="auto": the NR-LMNN-MKL set (linear, (xᵀx' + 1)², Gaussian) with the Gaussian
    width σ = σ0 / 4, σ0 = :func:`~cvxkml.mkl_kernels.mean_pairwise_distance` of X (at most
    1 000 rows, fixed seed)."""
    if X.shape[0] > 1000:
        X = X[np.random.default_rng(0).choice(X.shape[0], 1000, replace=False)]
    sigma = AUTO_SIGMA_FRACTION * mean_pairwise_distance(X)
    return KernelSet(
        [
            Kernel("linear"),
            Kernel("polynomial", {"degree": 2, "coef0": 1.0}),
            Kernel("gaussian", {"sigma": sigma if sigma > 0 else 1.0}),
        ]
    )


def _check_bool(value, name):
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise InvalidInputError(f"{name} must be True or False; got {value!r}.")


def _given(triplets) -> dict:
    """The LMNNProblem option for given targets (none: the problem picks the neighbours)."""
    return {} if triplets is None else {"triplets": triplets}


class _KernelsMap:
    """x ↦ L z(x) with z(x) = Σ_l μ_l k_l(x), or (k_1(x), …, k_m(x)) when μ is None; the
    kernels see standardized features (x − mean) / scale when ``scale`` is given (X_fit is
    stored standardized)."""

    def __init__(self, kernel_set, X_fit, weights, L, mean=None, scale=None):
        self.kernel_set, self.X_fit, self.weights, self.L = kernel_set, X_fit, weights, L
        self.mean, self.scale = mean, scale

    def __call__(self, X):
        if self.scale is not None:
            X = (np.asarray(X, dtype=float) - self.mean) / self.scale
        cross = self.kernel_set.cross_matrices(X, self.X_fit)
        Z = np.hstack(cross) if self.weights is None else combine_kernels(cross, self.weights)
        return Z @ self.L.T


class _TargetNeighborsMixin:
    """LMNN's side information: labels, with given or nearest-neighbour targets."""

    _classes_reason = " (impostors are points of another class)"

    @fill_doc
    def fit(self, X, y, *, targets=None):
        """Learn the metric from labelled data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_samples) for \
``kernel="precomputed"``
            Training points (at least 2, finite), or their kernel matrix κ0(X_train, X_train).
        y : array-like of shape (n_samples,)
            Class labels (at least 2 classes; with the default targets each class needs
            k + 1 members, see ``small_classes``).
        targets : array-like of shape (m, 2) or None, default=None
            Target neighbour pairs (i, j), indices into X with y_i = y_j and i ≠ j (e.g.
            ``targets_`` of a fitted estimator).  None: the k nearest same-class points.

        %(fitted_self)s

        Raises
        ------
        InvalidInputError
            A parameter out of its range, X or y malformed, fewer than 2 classes, a class
            too small for k, or a target pair out of range or across classes.
        """
        p = self._validate_params()
        X, y = self._labelled_data(X, y)
        triplets = None
        if targets is not None:
            t = check_index_array(targets, "targets", X.shape[0], ndim=2)
            if t.shape[1] != 2 or t.shape[0] == 0:
                raise InvalidInputError(
                    "targets must be a non-empty index array of shape (m, 2), rows (i, j) with j a "
                    f"target neighbour of i; got shape {t.shape}."
                )
            triplets = LMNNTriplets.from_labels(y, p.k, targets=(t[:, 0], t[:, 1]))
        with _verbose_logging(p.verbose):
            prob = self._fit(X, y, triplets, p)
        # the target pairs themselves: prob.triplets would build every triplet (67 M at n = 5 000)
        self.targets_ = np.column_stack(prob.targets)
        return self


class LMNN(_TargetNeighborsMixin, MetricMixin, CvxkmlEstimator):
    """Large margin nearest neighbour metric learning, linear or on a kernel's empirical
    map (Weinberger & Saul 2009; Wang et al. 2011, eq. 18):

        min_{A ⪰ 0}  (1 − γ) Σ_{(i,j) ∈ S} d_A(i, j) + γ Σ_{(i,j) ∈ S, y_l ≠ y_i} [1 + d_A(i, j) − d_A(i, l)]_+

    with S the k nearest same-class points of each point (target neighbours) and
    d_A(i, j) = (z_i − z_j)ᵀ A (z_i − z_j); z = x (``kernel="linear"``, A is
    n_features × n_features) or z = k(x) = [κ(x, x_1), …, κ(x, x_n)] (any other kernel,
    A is n_train × n_train).  Solved from A = I by a smoothed quasi-Newton phase and the
    certified primal–dual projected sub-gradient method
    (:meth:`cvxkml.declare.lmnn.LMNNProblem.solve`), stopped on the certified gap.

    With a full-rank kernel matrix the training classes can be collapsed exactly, so the
    optimum is 0 and what is learned depends on ``max_iter`` (see
    :mod:`cvxkml.declare.lmnn`); with the linear kernel it does not.

    Side information: the labels y, and the target neighbours S — by default the k
    nearest same-class points of each point in the input (or base kernel) space, or given
    with ``fit(X, y, targets=...)``.  Pairs of similar / dissimilar points cannot replace
    the labels: the hinge terms range over every impostor l with y_l ≠ y_i for each
    target pair (i, j), the set the labels define, not a list of dissimilar pairs fixed
    in advance.  ``targets_`` holds the target pairs used.

    Parameters
    ----------
    k : int, default=5
        Target neighbours per point; every class needs k + 1 members.
    gamma : float in (0, 1], default=0.5
        Weight of the hinge (impostor) terms.
    kernel : {"linear", "gaussian", "rbf", "polynomial", "poly", "precomputed"}, default="linear"
        ``"linear"``: linear LMNN on the features.  Others: kernel LMNN on the empirical
        kernel map.  ``"precomputed"``: ``fit`` takes the training kernel matrix
        κ(X_train, X_train), ``transform`` takes κ(X_new, X_train).
    kernel_params : dict or None, default=None
        ``sigma`` or ``gamma`` (Gaussian; default: the median heuristic,
        gamma = 1 / median_{i<j} ‖z_i − z_j‖² over the standardized training points),
        ``degree``, ``coef0``, ``scale`` (polynomial).
    standardize : "auto" or bool, default="auto"
        Standardize the features (training mean and standard deviation per feature,
        ``feature_mean_`` / ``feature_scale_``, applied to every new point).  ``"auto"``:
        for linear LMNN (its start A = I and its Euclidean target neighbours assume
        commensurate features; ``components_`` then acts on the raw features) and for the
        Gaussian kernel with the median-heuristic width; the polynomial kernel, a given
        width and a precomputed kernel see the features as given.
    tol : float, default=1e-3
        Certified relative optimality gap at which the solver stops (a proof that the
        objective is within ``tol`` of the optimum, relatively).
    max_iter : int, default=20000
        Iteration budget of the solver (then a :class:`ConvergenceWarning`).
    stall_iter : int, default=2000
        The solver's stall rule: stop (``converged_`` False, a :class:`ConvergenceWarning`)
        after this many PDHG iterations without the certified gap shrinking by 0.1 %
        (:meth:`cvxkml.declare.lmnn.LMNNProblem.solve`); 0: run to ``max_iter``.
    small_classes : {"raise", "shrink"}, default="raise"
        A class with fewer than k + 1 members: raise an error, or give its points
        min(k, class size − 1) target neighbours (a singleton class only supplies impostors).
    tie_break : None or "min-norm", default=None
        When the optimum F* = 0 is attained by a whole face of metrics (kernel LMNN on a
        full-rank kernel), ``"min-norm"`` returns the face's unique member of least
        ‖Z A Zᵀ‖_F, a function of the data alone, as a second certified stage
        (:meth:`cvxkml.declare.lmnn.LMNNProblem.solve`); it lists every triplet
        (``impostors="all"``).  None: the solver's own optimal point.
    %(control)s

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_map)
        L with A = LᵀL (n_map = n_features for the linear kernel, n_train otherwise).  For
        wide data with the linear kernel (span path) it is formed on access (d × d), not stored.
    metric_ : cvxkml.learned.FactoredMetric
        Wide data with the linear kernel only: the learned metric on the learning features
        (standardized when ``feature_scale_`` is set), A = I + U diag(λ) Uᵀ, never d × d.
    solution_ : cvxkml.solution.Solution
        The solver's result (``matrix`` = A, or the r × r matrix of the span for wide data;
        objective, certified ``dual_value``, …; ``dual`` is None when the active impostor
        set ran, its multipliers are in ``info``).
    n_iter_ : int
        Solver iterations.
    X_fit_ : ndarray
        Training data (kernel LMNN only; for ``"precomputed"`` the training kernel).
    kernel_ : Kernel or None
        The resolved base kernel (None for linear LMNN).
    targets_ : ndarray of shape (n_targets, 2)
        The target pairs (i, j), j a target neighbour of i (pass them back as ``targets``).
    %(converged)s
    %(standardize_fitted)s
    %(features_in)s

    Notes
    -----
    ``verbose`` / ``callback`` see every certificate check of the solver (the start, the
    end of every smoothing width, then every 200 PDHG iterations,
    :meth:`cvxkml.declare.lmnn.LMNNProblem.solve`).

    References
    ----------
    Weinberger & Saul, "Distance metric learning for large margin nearest neighbor
    classification", JMLR 10, 2009.
    Wang, Do, Woznica & Kalousis, "Metric learning with multiple kernels", NIPS 2011:
    eq. 2 (kernel LMNN on the empirical map) and eq. 18.
    """

    _parameter_constraints = {
        **_LMNN_CONSTRAINTS,
        **KERNEL_CONSTRAINTS,
        **STANDARDIZE_CONSTRAINTS,
        **CONTROL_CONSTRAINTS,
    }

    def __init__(
        self,
        *,
        k=5,
        gamma=0.5,
        kernel="linear",
        kernel_params=None,
        standardize="auto",
        tol=1e-3,
        max_iter=20000,
        stall_iter=STALL_ITER,
        small_classes="raise",
        tie_break=None,
        verbose=0,
        callback=None,
    ):
        self.k = k
        self.gamma = gamma
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.standardize = standardize
        self.tol = tol
        self.max_iter = max_iter
        self.stall_iter = stall_iter
        self.small_classes = small_classes
        self.tie_break = tie_break
        self.verbose = verbose
        self.callback = callback

    def _auto_standardize(self, p):
        # linear LMNN is metric learning on the features (as ITML with its Euclidean prior):
        # its start A = I and its target neighbours are Euclidean, so unit-free features
        return p.kernel == "linear" or super()._auto_standardize(p)

    def _solve(self, prob, p):
        return super()._solve(prob, p, stall_iter=p.stall_iter, **_tie_break_options(p.tie_break))

    def _fit(self, X, y, triplets, p):
        kw = {"small_classes": p.small_classes, **_given(triplets)}
        if p.kernel == "linear":
            Z = self._feature_standardization(X, p)
            prob = LMNNProblem.linear(Z, y, p.k, p.gamma, **kw)
            self.kernel_ = self.X_fit_ = None
        else:
            kern = self._base_kernel(X, p)
            prob = LMNNProblem.kernel(training_kernel(kern, X), y, p.k, p.gamma, **kw)
            self.kernel_ = kern
            self.X_fit_ = X
        sol = self._solve(prob, p)
        if p.kernel == "linear" and prob.space == "span":
            # wide data (D > n): the factored metric of the span solve, never D × D
            self._keep_metric(prob.learned_metric(sol))
        else:
            L = prob.factor(sol.info["X"], sol.info.get("complement"), X_factor=sol.info.get("X_factor"))
            if p.kernel == "linear" and self.feature_scale_ is not None:
                # x ↦ L (x − m) / s = (L / s) x − const: the map on raw features, up to a translation
                L = L / self.feature_scale_
            self.components_ = L
        self._set_solution(sol, p=p)
        return prob

    def _embedding(self):
        """z(x) Lᵀ: z = x (linear; the factored metric on wide data) or κ(x, X_train)."""
        if self.kernel_ is None:
            return super()._embedding()
        return KernelMap(self.kernel_, self.X_fit_, self.components_.T)


class LMNNMKL(_TargetNeighborsMixin, ComponentsMixin, CvxkmlEstimator):
    """LMNN with multiple kernels (Wang et al. 2011): learns kernel weights μ (simplex) and
    a metric A on the empirical map of k_μ = Σ_l μ_l k_l, or (``variant="NR"``) a full
    metric on the concatenated maps.

    Side information as in :class:`LMNN`: the labels and the target neighbours (by
    default picked by the feature-space distance of the uniform combination Σ_l K_l / m,
    fixed for the whole run; or given with ``fit(X, y, targets=...)``).

    Parameters
    ----------
    variant : {"P", "mu", "NR"}, default="P"
        ``"P"``: LMNN-MKL_P — Algorithm 1 with the rank-one weight step (eq. 15–17, w the
        smallest of ``w_grid`` reaching rank one; A initialized to I, μ uniform, W to 0).
        ``"mu"``: Algorithm 1 with the MKL_μ step on LMNN's convex majorizer (each step a
        convex CVXPY model; a local method).  ``"NR"``: NR-LMNN-MKL, LMNN on
        (k_1(x), …, k_m(x)), A″ of size m·n_train (``weights_`` is None).
    kernels : "auto", "paper", "nr", KernelSet or list, default="auto"
        ``"auto"`` (default): linear, polynomial of degree 2 and a Gaussian of width
        σ0 / 4, σ0 the mean pairwise distance of the (standardized) training points (the
        unit of the paper's §6.2 widths); ``"nr"``: the same set with σ = 0.5, the paper's
        NR-LMNN-MKL set (on standardized features with many dimensions that Gaussian is
        nearly the identity kernel, the LMNN objective can then reach 0 with many
        minimizers, and the learned metric is arbitrary); ``"paper"``: the 20 kernels of §6.1
        (:func:`cvxkml.mkl_kernels.paper_kernels`; every metric and weight step then works
        on 20 kernel matrices, many times the cost of the default); or a list of
        :class:`~cvxkml.kernels.Kernel`, ``(Kernel, columns)`` pairs or
        :class:`~cvxkml.mkl_kernels.SourceKernel` (multiple sources).  Every kernel is
        normalized by its mean diagonal on the training points.
    standardize : bool, default=True
        Standardize the features before the kernels (training mean and standard deviation
        per feature, ``feature_mean_`` / ``feature_scale_``, applied to every new point),
        as the paper does: the paper's kernel widths assume unit-variance features.
    k, gamma
        As in :class:`LMNN` (defaults 5, 0.5).
    max_outer : int, default=10
        Outer iterations of Algorithm 1.
    outer_tol : float, default=1e-4
        Algorithm 1 stops when F changes by less than outer_tol (relative) and μ by less
        than 10·outer_tol (L1).
    tol : float, default=1e-3
        Certified relative gap of each LMNN metric step (as :class:`LMNN`).
    max_iter : int, default=20000
        Iteration budget of each LMNN metric step.
    stall_iter : int, default=2000
        The stall rule of each LMNN metric step (as :class:`LMNN`).
    w_grid : sequence of float, default=(1, 10, …, 1e8)
        The values of w tried in the rank-one weight step.
    small_classes : {"raise", "shrink"}, default="raise"
        As in :class:`LMNN`.
    max_convex_iter : int, default=50
        Iterations (15)–(16) per value of w in the rank-one weight step (``"P"``).
    tie_break : None or "min-norm", default=None
        As in :class:`LMNN`, for every metric step (``"NR"``: its one LMNN solve); the
        NR kernels are nearly the identity on standardized data, so F* = 0 is common there.
    %(control)s

    Attributes
    ----------
    weights_ : ndarray of shape (n_kernels,) or None
        The kernel weights μ (None for ``"NR"``).
    components_ : ndarray of shape (n_components, n_map)
        L with A = LᵀL on the map (n_map = n_train, or n_kernels·n_train for ``"NR"``).
    kernel_set_ : KernelSet
        The kernels with their fitted normalization.
    kernel_labels_ : list of str
        A label per kernel.
    result_ : cvxkml.declare.mkl.MKLResult or None
        Algorithm 1's record (objective history, outer iterations), None for ``"NR"``.
    solution_ : Solution
        The last LMNN metric step.
    n_iter_ : int
        Outer iterations (``"P"``, ``"mu"``) or LMNN iterations (``"NR"``).
    targets_ : ndarray of shape (n_targets, 2)
        The target pairs (i, j) used.
    X_fit_ : ndarray of shape (n_train, n_features)
        The training points (standardized when ``standardize``).
    %(converged)s
    %(standardize_fitted)s
    n_features_in_ : int
        Number of features seen in ``fit``.

    Notes
    -----
    ``verbose`` / ``callback`` see every certificate check of every LMNN metric step
    (``stage`` counts the metric steps); a stop request ends the current metric step and
    every later one at its first check, so Algorithm 1 finishes its remaining outer
    iterations quickly on the kept iterate (``converged_`` False).

    References
    ----------
    Wang, Do, Woznica & Kalousis, "Metric learning with multiple kernels", NIPS 2011:
    Algorithm 1, eq. 12–14 (NR-LMNN-MKL) and eq. 15–17 (the rank-one weight step).
    """

    _parameter_constraints = {
        "variant": Options("P", "mu", "NR", what="'P', 'mu' or 'NR'"),
        "kernels": _check_kernels,
        **_LMNN_CONSTRAINTS,
        "max_outer": Integer(1),
        "outer_tol": POSITIVE,
        "w_grid": _check_w_grid,
        "max_convex_iter": Integer(1),
        "standardize": _check_bool,
        **CONTROL_CONSTRAINTS,
    }

    def __init__(
        self,
        *,
        variant="P",
        kernels="auto",
        standardize=True,
        k=5,
        gamma=0.5,
        max_outer=10,
        outer_tol=1e-4,
        tol=1e-3,
        max_iter=20000,
        stall_iter=STALL_ITER,
        w_grid=W_GRID,
        small_classes="raise",
        max_convex_iter=50,
        tie_break=None,
        verbose=0,
        callback=None,
    ):
        self.variant = variant
        self.kernels = kernels
        self.standardize = standardize
        self.k = k
        self.gamma = gamma
        self.max_outer = max_outer
        self.outer_tol = outer_tol
        self.tol = tol
        self.max_iter = max_iter
        self.stall_iter = stall_iter
        self.w_grid = w_grid
        self.small_classes = small_classes
        self.max_convex_iter = max_convex_iter
        self.tie_break = tie_break
        self.verbose = verbose
        self.callback = callback

    def _fit(self, X, y, triplets, p):
        X = self._feature_standardization(X, p)
        ks = _auto_kernels(X) if isinstance(p.kernels, str) else p.kernels
        Ks = ks.fit_matrices(X)
        opts = {"tol": p.tol, "max_iter": p.max_iter, "stall_iter": p.stall_iter, "callback": p.monitor.for_solver()}
        opts.update(_tie_break_options(p.tie_break))
        if p.variant == "NR":
            prob = LMNNProblem.multiple_kernels(Ks, y, p.k, p.gamma, small_classes=p.small_classes, **_given(triplets))
            sol = prob.solve(**opts)
            self.weights_ = self.result_ = None
            n_iter = sol.n_iter
        else:
            res = alternate(
                Ks,
                y,
                variant=p.variant,
                k=p.k,
                gamma=p.gamma,
                triplets=triplets,
                max_outer=p.max_outer,
                tol=p.outer_tol,
                mu_tol=10 * p.outer_tol,
                lmnn_options=opts,
                weight_options=(
                    {"w_grid": p.w_grid, "max_convex_iter": p.max_convex_iter} if p.variant == "P" else None
                ),
                small_classes=p.small_classes,
            )
            prob, sol = res.metric_problem, res.metric_solution
            self.weights_ = res.mu
            self.result_ = res
            n_iter = res.n_outer
        self.components_ = prob.factor(sol.info["X"], sol.info.get("complement"), X_factor=sol.info.get("X_factor"))
        self.kernel_set_ = ks
        self.kernel_labels_ = ks.labels()
        self.X_fit_ = X
        self._set_solution(
            sol, n_iter, p=p, converged=bool(sol.converged) and (self.result_ is None or bool(self.result_.converged))
        )
        return prob

    def _embedding(self):
        return _KernelsMap(
            self.kernel_set_, self.X_fit_, self.weights_, self.components_, self.feature_mean_, self.feature_scale_
        )
