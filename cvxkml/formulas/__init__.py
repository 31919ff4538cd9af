"""The formulas of the papers, NumPy only — the one place each is written.

The exact CVXPY models (:mod:`cvxkml.declare`), the fast solvers (:mod:`cvxkml.solvers`),
the estimators and the tests all evaluate through these modules; they import neither CVXPY
nor Numba, and nothing above :mod:`cvxkml.kernels` and :mod:`cvxkml.sideinfo`.

======================================  =====================================================
:mod:`~cvxkml.formulas.divergences`     LogDet, von Neumann and Frobenius divergences
                                        (Jain et al. 2012 eq. 1; Kulis et al. 2009 eq. 2.1)
:mod:`~cvxkml.formulas.kcr`             the kernel classification rule SDP (Sriperumbudur
                                        et al. 2008 eq. 9–14): objective, dual, bounds
:mod:`~cvxkml.formulas.lmnn`            LMNN triplets, objective and Lagrange dual
                                        (Weinberger & Saul 2009; Wang et al. 2011 eq. 18)
:mod:`~cvxkml.formulas.yeung`           separability J, D_S, the ε rule and LLE weights
                                        (Yeung et al. 2007 eq. 1–7)
======================================  =====================================================
"""

from . import divergences, kcr, lmnn, yeung

__all__ = ["divergences", "kcr", "lmnn", "yeung"]
