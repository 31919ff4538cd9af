"""The chunked compiled loops (cut into calls of a bounded work budget so that Ctrl-C and time
limits are seen between calls) give bit for bit the iterates of one uninterrupted loop, whatever
the work budget per call."""

from __future__ import annotations

import numpy as np
import pytest

from cvxkml._config import WorkBudget
from cvxkml.solvers.bregman import NOT_CONVERGED, OK, RUNNING, _run_kernel, _run_metric, _sweeps_kernel, _sweeps_metric
from cvxkml.solvers.lowrank import PAIR, _passes, _run_passes


def _pairs(rng, n, m, X):
    i = rng.integers(0, n, m)
    j = (i + 1 + rng.integers(0, n - 1, m)) % n
    D = ((X[i] - X[j]) ** 2).sum(1)
    y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    return i, j, y, np.where(y > 0, 0.7 * D, 1.3 * D)


@pytest.mark.parametrize("gamma", [1.0, np.inf])
@pytest.mark.parametrize("budget", [1, 7, 120, 10**9])
def test_metric_and_kernel_chunks_are_bit_identical(gamma, budget):
    rng = np.random.default_rng(3)
    n, d, m = 30, 6, 120
    X = rng.standard_normal((n, d))
    i, j, y, b = _pairs(rng, n, m, X)
    V = np.ascontiguousarray(X[i] - X[j])
    W1, W2 = np.eye(d), np.eye(d)
    xi1, xi2, lam1, lam2 = b.copy(), b.copy(), np.zeros(m), np.zeros(m)
    ref = _sweeps_metric(W1, V, y, xi1, lam1, gamma, 1e-6, 25)
    lam_old = np.empty(m)
    c0, done, change, calls = 0, 0, np.inf, 0
    while True:
        s, c0, change, code, bad, _ = _run_metric(
            W2, V, y, xi2, lam2, lam_old, gamma, 1e-6, c0, 25 - done, budget, change
        )
        done += s
        calls += 1
        if code != RUNNING:
            break
    assert (done, change, code, bad) == tuple(ref)
    assert np.array_equal(W1, W2) and np.array_equal(lam1, lam2) and np.array_equal(xi1, xi2)
    assert calls >= min(25 * m // budget, 25)

    K0 = X @ X.T + np.eye(n)
    K1, K2 = K0.copy(), K0.copy()
    xi1, xi2, lam1, lam2 = b.copy(), b.copy(), np.zeros(m), np.zeros(m)
    ref = _sweeps_kernel(K1, i, j, y, xi1, lam1, gamma, 1e-6, 25)
    c0, done, change = 0, 0, np.inf
    while True:
        s, c0, change, code, bad, _ = _run_kernel(
            K2, i, j, y, xi2, lam2, lam_old, gamma, 1e-6, c0, 25 - done, budget, change
        )
        done += s
        if code != RUNNING:
            break
    assert (done, change, code, bad) == tuple(ref)
    assert np.array_equal(K1, K2) and np.array_equal(lam1, lam2)


@pytest.mark.parametrize("units", [1, 50, 10**9])
@pytest.mark.parametrize("shuffle", [False, True])
def test_lowrank_passes_in_slices_are_bit_identical(units, shuffle):
    rng = np.random.default_rng(5)
    n, r, m = 40, 5, 150
    G0 = rng.standard_normal((n, r))
    i, j, y, b = _pairs(rng, n, m, G0)
    kind = np.full(m, PAIR)
    z = np.zeros((m, 2))
    outs = []
    for chunked in (False, True):
        R, xi, lam = np.eye(r), b.copy(), np.zeros(m)
        order, state = np.arange(m), np.array([7], dtype=np.uint64)
        if chunked:
            budget = WorkBudget(start=units, low=units, high=units)
            rows = (G0, kind, i, j, j, z, z, y)
            out = _run_passes(R, rows, xi, lam, 1.0, order, m, state, shuffle, 1e-7, 30, budget)
        else:
            out = _passes(R, G0, kind, i, j, j, z, z, y, xi, lam, 1.0, order, m, state, shuffle, 1e-7, 30)
        outs.append((tuple(out), R, lam, xi))
    (o1, R1, l1, x1), (o2, R2, l2, x2) = outs
    assert o1 == o2 and o1[2] in (OK, NOT_CONVERGED)
    assert np.array_equal(R1, R2) and np.array_equal(l1, l2) and np.array_equal(x1, x2)
