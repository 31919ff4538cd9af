"""The KCR solver's parts, one responsibility a module (:mod:`cvxkml.solvers.kcr` is the public
face and holds the PDHG driver): the Numba kernels, the PSD step, the state records, the
certificate and the working-set phase."""
