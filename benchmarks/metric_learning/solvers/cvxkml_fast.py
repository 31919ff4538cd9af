import warnings

from benchopt import BaseSolver

from cvxkml.errors import CvxkmlError


class Solver(BaseSolver):
    """cvxkml's fast solver of the declared problem, ``problem.solve(max_iter=n_iter)``: cyclic
    Bregman projections for ITML (Jain et al. Alg. 1; n_iter = sweeps), the PDHG solver for
    linear LMNN (n_iter = iterations).  It may stop earlier on its own certificate."""

    name = "cvxkml-fast"
    sampling_strategy = "iteration"
    requirements = []
    # the stopping tolerance given to solve(): tight, so that the budget decides
    parameters = {"tol": [1e-12]}

    def set_objective(self, problem, kind):
        self.problem, self.kind = problem, kind
        # PDHG's own stopping rule stalls below 1e-10 on LMNN (measured); Bregman goes to 1e-12
        self.tol_ = max(self.tol, 1e-10) if kind == "lmnn" else self.tol

    def warm_up(self):
        self.run_once(1)  # Numba compilation, out of the timings

    def run(self, n_iter):
        self.answer = None
        if n_iter < 1:
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ConvergenceWarning of small budgets
            try:
                self.answer = self.problem.solve(max_iter=int(n_iter), tol=self.tol_)
            except CvxkmlError:
                self.answer = None

    def get_result(self):
        return dict(answer=self.answer)
