"""The von Neumann solver's parts, one responsibility a module (:mod:`cvxkml.solvers.vonneumann`
is the public face and holds the sweep driver and its certificate): the secular equation and
ZEROFINDER, one projection and the sweeps, and the projected Newton solve with slack."""
