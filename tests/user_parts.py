"""Parts a user writes outside the package, shared by the tests that try them: a constraint
family in 15 lines (the learned squared norm of point i at most u_i)."""

from dataclasses import dataclass

import cvxpy as cp
import numpy as np

from cvxkml.sideinfo import ConstraintAtom


@dataclass(frozen=True)
class NormBounds(ConstraintAtom):
    """A user family in 15 lines: the learned squared norm of point i at most u_i
    (K_ii <= u_i for a kernel, x_iᵀ W x_i <= u_i for a metric)."""

    i: np.ndarray
    u: np.ndarray

    def __len__(self):
        return len(self.i)

    def targets(self):
        return np.asarray(self.u, dtype=float)

    def values(self, space, M):
        return space.pair_inner(M, self.i, self.i)

    def terms(self, F, T):
        return F[self.i], np.ones(len(self)), np.ones(len(self), dtype=np.int64)

    def cvx_values(self, F, T, X):
        return cp.sum(cp.multiply(F[self.i] @ X, F[self.i]), axis=1)
