"""The speed benchmarks and the command that runs them and the papers' reproductions, from a
source checkout (not installed with cvxkml)::

    python -m benchmarks --help
    python -m benchmarks bench itml --quick          # a speed benchmark (benchmarks/bench/)
    python -m benchmarks reproduce lowrank --quick   # a reproduction (reference/reproduce/)

Inside, data flows one way: ``_table`` lists every command (its options, data sets and the
function that runs it) and builds the parser ``cli`` runs; it is the one module that imports
both :mod:`benchmarks.bench` (one module per ``bench`` command) and :mod:`reference.reproduce`
(one module per paper).  The commands share the option and data checks of ``_commands``, the
report helpers of ``_report``, the timing helpers of ``_runner`` and the parallel runs of
``_parallel``; they use cvxkml as a user does (cvxkml imports nothing from here) and read
data through :mod:`cvxkml.datasets`.  ``metric_learning/`` is the benchopt benchmark.
"""
