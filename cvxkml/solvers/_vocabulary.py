"""The one name of an iteration limit: ``max_iter``.

``max_sweeps`` was the Bregman solvers' (and their estimators') name for it; it is still
accepted at the public surface, with a :class:`DeprecationWarning`, until cvxkml 0.3.
"""

from __future__ import annotations

import warnings

#: the release that drops the deprecated keyword (as :mod:`cvxkml._deprecated`'s old paths)
REMOVED_IN = "cvxkml 0.3"


def renamed_keyword(where: str, old: str, new: str, old_value, new_value, stacklevel: int = 3):
    """``new_value``, or ``old_value`` with a DeprecationWarning when the caller passed the
    deprecated keyword ``old`` (not None).

    Parameters
    ----------
    where : str
        The callable's name, for the message (``"bregman_kernel"``, ``"ITML"``).
    old, new : str
        The deprecated and the current keyword.
    old_value, new_value
        What the caller passed under each name (``old_value`` None: not passed).
    stacklevel : int
        Passed to :func:`warnings.warn` (3: the caller of the function that calls this).

    Returns
    -------
    object
        The value to use.
    """
    if old_value is None:
        return new_value
    warnings.warn(
        f"{where}({old}=...) is deprecated and will be removed in {REMOVED_IN}; use "
        f"{new}=... (the one name of the iteration limit).",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
    return old_value


def iteration_limit(where: str, max_iter, max_sweeps=None, stacklevel: int = 4):
    """``max_iter``, or the deprecated ``max_sweeps`` in its place (with a DeprecationWarning)."""
    return renamed_keyword(where, "max_sweeps", "max_iter", max_sweeps, max_iter, stacklevel)
