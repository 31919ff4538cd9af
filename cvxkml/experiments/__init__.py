"""Experiments: the ``cvxkml`` command line, benchmarks and the papers' reproductions.

Nothing in the package core imports from here.  Inside, data flows one way: ``_table`` lists
every command (its options, data sets and the function that runs it) and builds the parser
``cli`` runs; the commands sit in :mod:`.bench` and :mod:`.reproduce`, one module each, and
share the report helpers of ``_report`` and the timing helpers of ``_runner``; they read data
through :mod:`cvxkml.datasets`; no module imports ``cli``.
"""

from .._deprecated import MOVED as _MOVED

# the flat module paths of 0.1 (cvxkml.experiments.bench_kcr, ...): aliases that warn
_MOVED.update(
    {
        f"{__name__}.{group}_{name}": f"{__name__}.{group}.{name}"
        for group, names in (
            ("bench", "estimators exact kcr lmnn mkl pola variants wide"),
            ("reproduce", "all kcr logdet lowrank mkl spectral trace yeung"),
        )
        for name in names.split()
    }
)
