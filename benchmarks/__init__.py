"""Experiments: the ``cvxkml`` command line, benchmarks and the papers' reproductions.

Nothing in the package core imports from here.  Inside, data flows one way: ``_table`` lists
every command (its options, data sets and the function that runs it) and builds the parser
``cli`` runs; the commands sit in :mod:`.bench` and :mod:`.reproduce`, one module each, and
share the report helpers of ``_report`` and the timing helpers of ``_runner``; they read data
through :mod:`cvxkml.datasets`; no module imports ``cli``.
"""
