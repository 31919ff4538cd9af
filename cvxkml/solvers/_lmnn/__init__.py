"""The LMNN solvers' parts, one responsibility a module (:mod:`cvxkml.solvers.lmnn` is the
public face): the Numba kernels, the full-pass operators, the smoothed phase, the dual
recovery, the PDHG run, the impostor scan and the active-set rounds."""
