"""``solve(verbose=k)`` on every declared problem: progress lines on the ``cvxkml`` logger
(the same records an estimator's fit logs), the callback still called and able to stop."""

import inspect
import logging

import pytest

import cvxkml.declare as D
from cvxkml.errors import InvalidInputError
from cvxkml.testing import contract_cases

PROBLEMS = sorted(
    (c for c in vars(D).values() if isinstance(c, type) and issubclass(c, D.Problem) and c is not D.Problem),
    key=lambda c: c.__name__,
)


@pytest.mark.parametrize("cls", PROBLEMS, ids=lambda c: c.__name__)
def test_every_solve_takes_verbose(cls):
    param = inspect.signature(cls.solve).parameters.get("verbose")
    assert param is not None and param.kind is inspect.Parameter.KEYWORD_ONLY and param.default == 0


CASES = contract_cases()


FAST = sorted((c for c, case in CASES.items() if case["fast"]), key=lambda c: c.__name__)


@pytest.mark.parametrize("cls", FAST, ids=lambda c: c.__name__)
def test_verbose_logs_the_closing_line_and_same_answer(cls, caplog):
    case = CASES[cls]
    prob = case["factory"](0)
    quiet = prob.solve(**case["solve_kw"])
    with caplog.at_level(logging.INFO, logger="cvxkml"):
        loud = prob.solve(**case["solve_kw"], verbose=1)
    lines = [r.getMessage() for r in caplog.records if r.name == "cvxkml"]
    closing = [m for m in lines if ".solve: " in m]
    assert len(closing) == 1, lines
    assert type(prob).__name__ in closing[0] and "certified gap" in closing[0]
    assert loud.objective == pytest.approx(quiet.objective, rel=1e-12, abs=1e-12)


def test_verbose_keeps_the_callback_and_its_stop(caplog):
    case = CASES[D.KCR]
    prob = case["factory"](0)
    seen = []

    def stop_at_first(record):
        seen.append(record)
        return True

    with caplog.at_level(logging.INFO, logger="cvxkml"):
        with pytest.warns(Warning):
            sol = prob.solve(tol=1e-12, max_iter=10_000, callback=stop_at_first, verbose=1)
    assert len(seen) == 1 and seen[0]["estimator"] == "KCR"
    assert {"iteration", "objective", "gap"} <= set(seen[0])
    assert sol.status == D.problem.CALLBACK_STOP and not sol.converged
    assert any("iteration" in r.getMessage() for r in caplog.records if r.name == "cvxkml")


@pytest.mark.parametrize("bad", [-1, 1.5, "yes"])
def test_bad_verbose_is_refused(bad):
    case = next(iter(CASES.values()))
    with pytest.raises(InvalidInputError, match="verbose"):
        case["factory"](0).solve(verbose=bad)


def test_bregman_callback_sees_the_certified_check_too():
    """A Bregman solve certified at its first attempt still reports that check (before, a
    callback saw nothing, so verbose printed no progress line)."""
    prob = CASES[D.ITML]["factory"](0)
    seen = []
    sol = prob.solve(callback=lambda r: seen.append(r) or True)  # asks to stop: too late
    assert sol.converged and len(seen) == sol.info["attempts"] >= 1
    assert seen[-1]["certified"] is True and seen[-1]["iteration"] == sol.n_iter
