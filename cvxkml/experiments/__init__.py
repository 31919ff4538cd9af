"""Experiments: the ``cvxkml`` command line, benchmarks and the papers' reproductions.

Nothing in the package core imports from here.
"""
