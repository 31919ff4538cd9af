"""One name for an iteration limit: ``max_iter``.  Every public solver still takes the
deprecated ``max_sweeps`` (a DeprecationWarning naming ``max_iter``, pointing at the caller)
and runs exactly the same iterates with it."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

from cvxkml.solvers._vocabulary import renamed_keyword
from cvxkml.solvers.bregman import bregman_kernel, bregman_metric
from cvxkml.solvers.lowrank import PAIR, lowrank_logdet
from cvxkml.solvers.sdp_logdet import barrier_bregman
from cvxkml.solvers.vonneumann import vonneumann_pairs

rng = np.random.default_rng(11)
X = rng.standard_normal((8, 3))
K = X @ X.T + 0.5 * np.eye(8)
I, J = np.array([0, 1, 2, 3]), np.array([4, 5, 6, 7])
D = ((X[I] - X[J]) ** 2).sum(1) + 0.5 * 2
Y = np.array([1.0, -1.0, 1.0, -1.0])
B = np.where(Y > 0, 0.5 * D, 2.0 * D)

CALLS = {
    "bregman_kernel": lambda **kw: bregman_kernel(K, I, J, Y, B, 1.0, 0.0, **kw).lam,
    "bregman_metric": lambda **kw: bregman_metric(np.eye(3), X, I, J, Y, 0.6 * B, 1.0, 0.0, **kw).lam,
    "vonneumann_pairs": lambda **kw: (
        vonneumann_pairs(X, np.zeros(3), I, J, Y, 0.6 * B, 1.0, 0.0, stop="dual_change", **kw).lam
    ),
    "lowrank_logdet": lambda **kw: lowrank_logdet(
        X,
        np.full(4, PAIR, dtype=np.int64),
        I,
        J,
        np.zeros(4, dtype=np.int64),
        np.zeros((4, 2)),
        np.zeros((4, 2)),
        Y,
        0.6 * B,
        1.0,
        0.0,
        order="cyclic",
        active_set=False,
        **kw,
    )[1],
    "barrier_bregman": lambda **kw: (
        barrier_bregman(
            np.eye(3), 1.0, np.ascontiguousarray(X[I] - X[J]), Y, np.arange(5), Y * 0.6 * B, 0.0, refresh=2, **kw
        ).lam
    ),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_max_sweeps_is_a_deprecated_alias_with_the_same_iterates(name):
    new = CALLS[name](max_iter=3)
    with pytest.warns(DeprecationWarning, match=rf"{name}\(max_sweeps=\.\.\.\).*use max_iter") as w:
        old = CALLS[name](max_sweeps=3)
    assert w[0].filename == __file__  # the warning points at the caller's line
    np.testing.assert_array_equal(old, new)
    assert not np.array_equal(new, CALLS[name](max_iter=1))  # the limit is really used


@pytest.mark.parametrize("fn", [bregman_kernel, bregman_metric, vonneumann_pairs, lowrank_logdet, barrier_bregman])
def test_max_iter_is_the_signature_name_and_max_sweeps_keyword_only(fn):
    params = inspect.signature(fn).parameters
    assert "max_iter" in params
    assert params["max_sweeps"].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["max_sweeps"].default is None


def test_renamed_keyword_passes_the_new_value_silently():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert renamed_keyword("f", "a", "b", None, 7) == 7
    with pytest.warns(DeprecationWarning, match=r"f\(a=\.\.\.\).*cvxkml 0\.3.*use b="):
        assert renamed_keyword("f", "a", "b", 5, 7) == 5
