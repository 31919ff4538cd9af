"""scikit-learn estimators of the learned kernels and metrics, one module per family.

======================================  ====================================================
:mod:`~cvxkml.estimators.logdet`        ITML, KernelITML, LowRankKernelITML (Davis et al.
                                        2007; Jain et al. 2012; Kulis et al. 2009)
:mod:`~cvxkml.estimators.iplr`          IPLR, identity-plus-low-rank ITML for high
                                        dimensions (Jain et al. 2012 §3.6)
:mod:`~cvxkml.estimators.spectral`      VonNeumannKernelLearner (Kulis et al. 2009 §5);
                                        SpectralKernelLearner, SpectralMetricLearner (any
                                        regularizer, Jain et al. 2012 eq. 12-13)
:mod:`~cvxkml.estimators.trace`         TraceSSIKDR (Jain et al. 2012 §5)
:mod:`~cvxkml.estimators.pola`          KernelPOLA (Jain et al. 2012 §4.2)
:mod:`~cvxkml.estimators.kcr`           KCRClassifier (Sriperumbudur et al. 2008)
:mod:`~cvxkml.estimators.mkl`           LMNN, LMNNMKL (Wang et al. 2011)
:mod:`~cvxkml.estimators.yeung`         SemiSupervisedKernelMetric (Yeung et al. 2007)
======================================  ====================================================

What they share — parameter validation, the base kernel, the side information and the
metric vocabulary ``transform``, ``pair_distance``, ``pair_score``, ``get_metric`` — is
written once, in :mod:`cvxkml.estimators._base` and its private parts.  The estimators
that learn from pair constraints take ``fit(X, y)`` (pairs drawn from labels) or
``fit(X, pairs=...)`` (a :class:`~cvxkml.sideinfo.PairConstraints`, or an index array of
rows (i, j) or (i, j, ±1)) and expose the pairs used as ``pairs_``; LMNN and LMNNMKL take
given target neighbours (``targets``, ``targets_``); KCRClassifier learns from labels only.

:data:`ESTIMATORS` lists every estimator class; the scikit-learn compatibility test runs
over it.

Shared parameters: ``verbose`` and ``callback`` (progress on the ``cvxkml`` logger, early
stop), ``max_iter`` (the iteration limit; ``max_sweeps`` is its deprecated former name) and
``standardize`` (with the median-heuristic kernel width, the data-driven defaults).
Persistence without pickle: ``est.save(path)`` / ``Class.load(path)`` or :func:`save` /
:func:`load` (an ``.npz`` file, :mod:`cvxkml.estimators._persist`).
"""

from ._persist import EstimatorClassError, EstimatorFileError, FormatVersionError, load, save
from .iplr import IPLR
from .kcr import KCRClassifier
from .logdet import ITML, KernelITML, LowRankKernelITML
from .mkl import LMNN, LMNNMKL
from .pola import KernelPOLA
from .spectral import SpectralKernelLearner, SpectralMetricLearner, VonNeumannKernelLearner, register_regularizer
from .trace import TraceSSIKDR
from .yeung import SemiSupervisedKernelMetric, random_similar_pairs

#: every estimator class of cvxkml
ESTIMATORS = (
    ITML,
    KernelITML,
    LowRankKernelITML,
    IPLR,
    VonNeumannKernelLearner,
    TraceSSIKDR,
    KernelPOLA,
    KCRClassifier,
    LMNN,
    LMNNMKL,
    SemiSupervisedKernelMetric,
    SpectralKernelLearner,
    SpectralMetricLearner,
)

__all__ = [cls.__name__ for cls in ESTIMATORS] + [
    "ESTIMATORS",
    "random_similar_pairs",
    "register_regularizer",
    "save",
    "load",
    "EstimatorFileError",
    "FormatVersionError",
    "EstimatorClassError",
]
