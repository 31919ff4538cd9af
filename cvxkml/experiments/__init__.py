"""Experiments: the ``cvxkml`` command line, benchmarks and the papers' reproductions.

Nothing in the package core imports from here.  Inside, data flows one way:
``cli`` collects the commands of the modules it lists (each module's ``register``, see
``_commands``); the modules share the report helpers of ``_report`` and read data through
:mod:`cvxkml.datasets`; no module imports ``cli``.
"""
