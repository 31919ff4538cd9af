"""The per-estimator test tables, derived from ``cvxkml.estimators.ESTIMATORS``.

Every table iterates over ``ESTIMATORS``: an estimator added there is tested by every table
without editing it.  A class gets the shared settings it takes (:func:`accepted`) and, only
where it needs them, its own entries of the small tables below (``SMALL``, ``CHECKED``).
"""

from cvxkml.declare.regularizers import Frobenius
from cvxkml.estimators import ESTIMATORS
from cvxkml.kernels import Kernel

KS = [Kernel("linear"), Kernel("gaussian", {"sigma": 1.0})]
#: few pairs (the pair learners), a fixed seed (every estimator that draws)
FEW = dict(n_similar=10, n_dissimilar=10, random_state=0)


def accepted(cls, **params) -> dict:
    """The entries of ``params`` that are ``__init__`` parameters of ``cls``."""
    names = set(cls._get_param_names())
    return {k: v for k, v in params.items() if k in names}


def takes_precomputed(cls) -> bool:
    """Whether ``kernel="precomputed"`` is a valid parameter value of ``cls``."""
    return "precomputed" in getattr(cls._parameter_constraints.get("kernel"), "choices", ())


# --------------------------------------------------------------------------- small fits
#: what a small, fast fit (n ≈ 50) of an estimator needs beyond :data:`FEW`
SMALL = {
    "LowRankKernelITML": dict(method="icholesky", rank=20),
    "VonNeumannKernelLearner": dict(kernel="linear", tol=1e-5),
    "TraceSSIKDR": dict(tol=1e-4),
    "KCRClassifier": dict(tol=1e-2),
    "LMNN": dict(kernel="gaussian", k=2, max_iter=200),
    "LMNNMKL": dict(k=1, kernels=KS, max_outer=1, max_iter=20, max_convex_iter=5),
    "SpectralMetricLearner": dict(constraints="hinge"),
    "SemiSupervisedKernelMetric": dict(n_landmarks=30, n_neighbors=5, n_similar=20),
}


def small(cls, **kw):
    """A small, fast configuration of ``cls``: :data:`FEW` as far as it takes it, its
    :data:`SMALL` entries, then ``kw``."""
    return cls(**{**accepted(cls, **FEW), **SMALL.get(cls.__name__, {}), **kw})


#: one small configuration per estimator
SMALL_FITS = {cls: small(cls) for cls in ESTIMATORS}

#: the defaults, with only the seed of the sampling fixed (where the class draws)
DEFAULTS = {cls: accepted(cls, random_state=0) for cls in ESTIMATORS}


# --------------------------------------------------------------------------- sklearn checks
#: what the scikit-learn checks (20-150 points) need beyond few pairs, and the further
#: variants each estimator is checked in
CHECKED = {
    "ITML": [dict(n_similar=20, n_dissimilar=20)],
    "KernelITML": [dict(n_similar=20, n_dissimilar=20), dict(kernel="precomputed", n_similar=20, n_dissimilar=20)],
    "LowRankKernelITML": [
        dict(n_similar=20, n_dissimilar=20),
        dict(kernel="linear", method="icholesky", n_similar=20, n_dissimilar=20),
    ],
    # the whole row space (IPLR = ITML), and a small basis of each named kind
    "IPLR": [
        dict(n_similar=20, n_dissimilar=20),
        dict(basis="kmeans", k=2, n_similar=20, n_dissimilar=20),
        dict(basis="class-means", n_similar=20, n_dissimilar=20),
    ],
    "VonNeumannKernelLearner": [
        dict(kernel="linear", tol=1e-5),
        dict(kernel="precomputed", tol=1e-5),
        dict(divergence="jain", kernel="linear", tol=1e-3),
    ],
    "TraceSSIKDR": [dict(tol=1e-3, max_iter=50), dict(kernel="precomputed", tol=1e-3, max_iter=50)],
    "KernelPOLA": [
        dict(n_similar=20, n_dissimilar=20),
        dict(kernel="linear", ridge=1.0, n_similar=20, n_dissimilar=20),
    ],
    "KCRClassifier": [dict(tol=5e-2, max_iter=60)],
    "LMNN": [
        dict(k=2, max_iter=300),
        dict(k=2, kernel="gaussian", max_iter=30),
        dict(k=2, kernel="precomputed", max_iter=30, small_classes="shrink"),
    ],
    # one outer iteration, one nearest neighbour: the checks fit on up to 150 points, where
    # each fit builds the triplets of all impostors
    "LMNNMKL": [
        dict(k=1, kernels=KS, max_outer=1, max_iter=10, max_convex_iter=5),
        dict(variant="NR", k=1, kernels=KS, max_iter=10),
    ],
    # n_landmarks=10 exercises the landmark path on the checks' 20–30-point data sets and the
    # all-landmarks (full) path on the smaller ones
    "SemiSupervisedKernelMetric": [dict(n_landmarks=10, n_neighbors=3, n_similar=4)],
    # defaults (LogDet with its slack) and a hinge-constrained Frobenius variant
    "SpectralKernelLearner": [{}, dict(regularizer=Frobenius(), kernel="linear", constraints="hinge", tol=1e-4)],
    "SpectralMetricLearner": [{}, dict(regularizer=Frobenius(), constraints="hinge", tol=1e-4)],
}


def checked_configs(cls) -> list:
    """The configurations of ``cls`` the scikit-learn checks run on: its :data:`CHECKED`
    entries (its defaults when it has none), with few pairs and no seed."""
    base = accepted(cls, n_similar=10, n_dissimilar=10)
    return [cls(**{**base, **kw}) for kw in CHECKED.get(cls.__name__, [{}])]
