"""Measures from the papers' experiments that a user applies to a learned metric or kernel.

* :func:`~cvxkml.baselines.separability.separability` — the class-separability criterion J
  that Yeung et al. (2007, Table 1) report (also from a kernel matrix,
  :func:`~cvxkml.baselines.separability.separability_from_kernel`, or a factored one,
  :func:`~cvxkml.baselines.separability.separability_lowrank`).

The comparison baselines the reproductions run (RCA, HMRF-KMeans) are not installed: they are
``reference/reproduce/baselines/`` in a source checkout.
"""

from .separability import separability, separability_from_kernel

__all__ = ["separability", "separability_from_kernel"]
