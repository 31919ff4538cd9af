import warnings

from benchopt import BaseSolver

from cvxkml.errors import CvxkmlError


class Solver(BaseSolver):
    """The declared problem's exact CVXPY model through Clarabel (interior point),
    ``problem.solve_reference(solver="CLARABEL", max_iter=n_iter)``.  A cap reached before an
    answer exists (status ``user_limit``) is a budget without a point.  The timed run includes
    CVXPY's canonicalization of the model."""

    name = "cvxpy-clarabel"
    sampling_strategy = "iteration"
    requirements = ["pip::cvxpy", "pip::clarabel"]

    def set_objective(self, problem, kind):
        self.problem, self.kind = problem, kind

    def run(self, n_iter):
        self.answer = None
        if n_iter < 1:
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                self.answer = self.problem.solve_reference(
                    solver="CLARABEL", accept_inaccurate=True, max_iter=int(n_iter)
                )
            except CvxkmlError:
                self.answer = None

    def get_result(self):
        return dict(answer=self.answer)
