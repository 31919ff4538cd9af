"""The ``cvxkml reproduce`` commands, one module per paper (``cvxkml reproduce mkl`` is :mod:`.mkl`;
:mod:`.all` gathers them in one summary).
"""
