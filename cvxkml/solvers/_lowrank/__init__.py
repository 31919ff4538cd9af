"""The low-rank LogDet solver's parts (:mod:`cvxkml.solvers.lowrank` is the public face and
holds the driver and its certificate): CHOLUPDATEMULT and its triangular helpers, and the
compiled projections and passes."""
