"""benchopt objective: a declared cvxkml metric-learning problem, scored by its own formulas.

Each point of a curve is what a solver returned at one iteration budget, recomputed by
``cvxkml.testing.validate_answer`` (objective, constraint violations and, when duals are
returned, the Lagrange dual value), compared with the optimum certified once per data set
by cvxkml's fast solver at a tight tolerance (see ``benchmark_utils.certified_optimum``).
"""

import numpy as np
from benchmark_utils import AnsweredProgressCriterion, _key, build_problem, certified_optimum, score
from benchopt import BaseObjective


class Objective(BaseObjective):
    """benchopt objective: the exact objective, violations and recomputed certificate of a
    cvxkml problem at the point a solver returns."""

    name = "cvxkml metric learning"
    url = "https://github.com/cvxkml/cvxkml"
    min_benchopt_version = "1.10"  # the version tested (stopping-criterion hooks)
    # cvxkml itself is installed from this repository (pip install -e '.[bench]').
    requirements = []

    # itml: LogDet metric learning with ITML pairs and LogDet slack (Jain et al. eq. 7);
    # lmnn: linear LMNN (Weinberger & Saul), small enough for the exact SDP.
    parameters = {"problem": ["itml", "lmnn"]}

    sampling_strategy = "iteration"
    stopping_criterion = AnsweredProgressCriterion()

    test_dataset_name = "Simulated"

    def set_data(self, X, y):
        self.X, self.y = np.asarray(X, dtype=float), np.asarray(y)
        params = dict(seed=0)
        self.problem_ = build_problem(self.problem, self.X, self.y, **params)
        self.optimum_ = certified_optimum(self.problem_, _key(self.problem, self.X, self.y, params))

    def get_objective(self):
        return dict(problem=self.problem_, kind=self.problem)

    def evaluate_result(self, answer):
        out = score(self.problem_, answer, self.optimum_)
        out["optimum"] = self.optimum_["objective"]
        out["optimum_gap"] = self.optimum_["gap"]
        return out

    def get_one_result(self):
        # a budget without an answer: scored as NO_ANSWER (no point on the curve)
        return dict(answer=None)
