"""The ``cvxkml bench`` commands, one module each (``cvxkml bench itml`` is :mod:`.itml`): what it
measures as plain rows (dicts, never printed) and the ``command`` that prints them as tables.
"""

import importlib
import warnings

#: the names of the former module ``cvxkml.experiments.bench`` and where they are now
_MOVED = {
    name: module
    for module, names in (
        ("..demo", "demo_knn_rows demo_fast_vs_exact"),
        (".itml", "numpy_sweeps_metric numpy_sweeps_kernel warm_up projection_rows tolerance_rows"),
        (".lowrank", "numpy_lowrank_sweep lowrank_projection_rows mnist_shape_factor lowrank_workload_rows"),
        (".lowrank", "warm_up_lowrank"),
        (".vonneumann", "vonneumann_pairs_problem numpy_vonneumann_sweep warm_up_vonneumann dgemm_gflops"),
        (".vonneumann", "vonneumann_projection_rows vonneumann_workload_rows"),
    )
    for name in names.split()
}


def __getattr__(name):
    """``cvxkml.experiments.bench.<name>`` of 0.1, served from its module with a DeprecationWarning."""
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(_MOVED[name], __name__)
    warnings.warn(
        f"{__name__}.{name} moved to {module.__name__}.{name}; the old path will be removed in cvxkml 0.3",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(module, name)
