import warnings

from benchopt import BaseSolver

from cvxkml.errors import CvxkmlError


class Solver(BaseSolver):
    """The declared problem's exact CVXPY model through SCS (ADMM on the homogeneous self-dual
    embedding), ``problem.solve_reference(solver="SCS", max_iters=n_iter)``.  An iterate at which
    the LogDet objective is infinite (SCS's early points) is a budget without a point.  The
    timed run includes CVXPY's canonicalization of the model."""

    name = "cvxpy-scs"
    sampling_strategy = "iteration"
    requirements = ["pip::cvxpy", "pip::scs"]

    def set_objective(self, problem, kind):
        self.problem, self.kind = problem, kind

    def run(self, n_iter):
        self.answer = None
        if n_iter < 1:
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                self.answer = self.problem.solve_reference(solver="SCS", accept_inaccurate=True, max_iters=int(n_iter))
            except CvxkmlError:
                self.answer = None

    def get_result(self):
        return dict(answer=self.answer)
