"""``python -m benchmarks bench vonneumann`` (Kulis et al. 2009 Algorithm 3 vs a dense NumPy baseline, the
MNIST-shape workload) and ``python -m benchmarks reproduce spectral`` (Kulis et al. Figure 5).

No timing assertions: times are only checked to be finite and positive.
"""

from __future__ import annotations

import numpy as np
import pytest
from cli_output import output_tables, positive_finite, run_cli_ok

from benchmarks.bench import lowrank, vonneumann
from cvxkml.declare import VonNeumannKernel
from cvxkml.errors import InvalidInputError
from cvxkml.solvers.vonneumann import vonneumann_pairs
from reference.reproduce.spectral import fit_transform_method, load_uci


# --------------------------------------------------------------------------- bench vonneumann
def test_bench_vonneumann_quick_structure():
    text = run_cli_ok(["bench", "vonneumann", "--quick", "--seed", "1"])
    (h1, proj), (h2, work), (h3, dense) = output_tables(text)
    assert h1[0] == "r" and [r[0] for r in proj] == ["10", "50"]
    for r in proj:
        assert int(r[2]) == int(r[1])  # every projection updated
        assert 1.0 <= float(r[3]) <= 6.0  # evaluations per projection
        assert all(positive_finite(c) for c in r[4:7]) and int(r[7]) >= 10
        assert 1.0 <= float(r[8]) <= 6.0 and positive_finite(r[9]) and positive_finite(r[10])
        assert float(r[11]) < 1e-10  # Algorithm 3 X == dense NumPy X
    assert h2[:6] == ["constraints", "pairs", "solver", "sweeps", "stopped by", "certified"]
    assert h2[14:17] == ["objective", "max rel viol", "rel gap"]
    assert [(r[0], r[2]) for r in work] == [(c, s) for c in ("500", "2000") for s in ("certified", "paper rule")]
    for r in work:
        assert int(r[1]) <= int(r[0]) and int(r[3]) >= 1 and r[17] == "-"
        assert int(r[10]) <= int(r[9]) == int(r[3]) * int(r[1])  # ZEROFINDER runs <= visits = sweeps x pairs
        assert all(positive_finite(c) for c in r[6:9] + r[11:14])
        if r[2] == "certified":  # the package's driver certifies
            assert r[4] == "certificate" and r[5] == "yes"
            assert float(r[15]) <= 1e-3 and abs(float(r[16])) <= 1e-3
        else:
            assert r[4] in ("dual change", "budget")
    assert [r[0] for r in dense] == ["500", "2000"]
    for r in dense:
        assert all(positive_finite(c) for c in r[4:7]) and float(r[7]) < 1e-10
    assert "data: " in text and "of the dgemm rate" in text and "bench finished" in text


@pytest.mark.parametrize("gamma", [1.0, None], ids=["slack", "hard"])
@pytest.mark.parametrize("prior", ["K0", "identity"])
def test_dense_baseline_equals_algorithm3(gamma, prior):
    """The dense NumPy projection (eigh per root-finder evaluation, W @ U) and Algorithm 3
    (secular equation, Gu–Eisenstat vectors) do the same arithmetic up to round-off: same
    X̂ = W e^Q Wᵀ, duals, slacks and root-finder evaluations, over two sweeps.  ``identity``
    starts from q = 0 (all eigenvalues equal: the solver deflates everything at first)."""
    r, m = 6, 16
    F, q0, I, J, delta, bound = vonneumann.vonneumann_pairs_problem(r, m, seed=4)
    if prior == "identity":
        q0 = np.zeros(r)
    if gamma is None:
        # hard: one constraint of each pair (feasible) and violated at the start: d <= 0.75b under
        # K0, d >= 1.25b under the identity (there every distance is far below its K0 bound)
        k = slice(0, None, 2) if prior == "K0" else slice(1, None, 2)
        I, J, delta, bound = I[k], J[k], delta[k], bound[k]
    g = np.inf if gamma is None else gamma
    ref = vonneumann_pairs(F, q0, I, J, delta, bound, gamma, 0.0, 2)
    W, q = np.eye(r), q0.copy()
    xi, lam = bound.astype(float).copy(), np.zeros(len(I))
    evals = searched = 0
    for _ in range(2):
        W, q, e, s = vonneumann.numpy_vonneumann_sweep(W, q, F, I, J, delta, xi, lam, g)
        evals += e
        searched += s
    X = (W * np.exp(q)) @ W.T
    np.testing.assert_allclose(ref.matrix, X, rtol=0, atol=1e-11 * np.abs(X).max())
    np.testing.assert_allclose(ref.lam, lam, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ref.xi, xi, rtol=1e-11)
    assert np.count_nonzero(lam) > 0
    assert ref.extra["evals_per_projection"] == pytest.approx(evals / searched, abs=0.25)
    np.testing.assert_allclose(W.T @ W, np.eye(r), atol=1e-12)


def test_vonneumann_pairs_problem_is_kulis_start():
    """F = U and q0 = log eig(K0): F diag(e^q0) Fᵀ = G0 G0ᵀ, and the bounds are the ±25 % of
    the distances under K0 (each pair twice)."""
    G0, I, J, delta, bound = lowrank._lowrank_pairs(5, 8, 2)
    F, q0, I2, J2, d2, b2 = vonneumann.vonneumann_pairs_problem(5, 8, 2)
    np.testing.assert_allclose((F * np.exp(q0)) @ F.T, G0 @ G0.T, atol=1e-10 * np.abs(G0).max() ** 2)
    np.testing.assert_allclose(F.T @ F, np.eye(5), atol=1e-12)
    np.testing.assert_array_equal(I, I2)
    np.testing.assert_allclose(b2, bound)


def test_vonneumann_workload_custom_counts_and_budget(tmp_path):
    res = vonneumann.vonneumann_workload_rows(
        quick=True, data_dir=tmp_path, counts=(300,), time_budget=1e-9, baseline=False
    )
    assert res["source"].startswith("synthetic") and (res["n"], res["r"]) == (3000, 10)
    (row,) = res["rows"]
    assert row["sweeps"] == 1 and row["pairs"] <= 300  # the budget stops after one sweep
    assert row["stop"] == "budget" and not row["converged"] and res["dense"] == []
    assert row["proj_per_s"] == pytest.approx(row["projections"] / row["solver_s"])
    assert row["visits"] == row["pairs"] and 0 < row["projections"] <= row["visits"]
    assert res["dgemm_gflops"] > 0


# --------------------------------------------------------------------------- reproduce spectral
def test_reproduce_spectral_quick_smoke(data_dir):
    text = run_cli_ok(["reproduce", "spectral", "--quick", "--data-dir", str(data_dir)])
    ((headers, rows),) = output_tables(text)
    assert headers[:5] == ["dataset", "n x d", "classes", "method", "4-NN error"]
    assert [r[0] for r in rows] == [d for d in ("wine", "ionosphere", "iris", "balance") for _ in range(3)]
    assert [r[3] for r in rows[:3]] == ["Euclidean", "LogDet", "von Neumann"]
    assert {r[1] for r in rows} == {"178x13", "351x34", "150x4", "625x4"}
    for r in rows:
        mean, std = (float(v) for v in r[4].split(" ± "))
        assert 0.0 <= mean <= 0.5 and std == 0.0  # one repeat
        if r[3] != "Euclidean":
            assert r[5] == "1:2" and r[8] == "2/2"  # gamma fixed to 1, both folds converged
            c = int(r[2])
            assert 0.8 * 40 * c * c <= float(r[6]) <= 40 * c * c  # 40c² pairs less duplicates
    assert "QUICK smoke run" in text and "not in the text" in text


def test_vonneumann_map_reproduces_learned_kernel():
    """The von Neumann map x ↦ L x of the reproduction gives back the learned K on the
    training points: (X Lᵀ)(X Lᵀ)ᵀ = K (K = X W Xᵀ on the range of K0 = X Xᵀ)."""
    X, y = load_uci("iris")
    X = (X - X.mean(0)) / X.std(0)
    L, info = fit_transform_method("vonneumann", X, y, 1.0, np.random.default_rng(0))
    from reference.reproduce.spectral import _constraints

    pc = _constraints(X, y, np.random.default_rng(0))
    sol = VonNeumannKernel(X @ X.T, pc, gamma=1.0).solve(tol=1e-3, max_iter=2000)
    Z = X @ L.T
    np.testing.assert_allclose(Z @ Z.T, sol.matrix, atol=1e-9 * np.abs(sol.matrix).max())
    assert info["converged"] and info["pairs"] == len(pc)
    with pytest.raises(InvalidInputError, match="name must be one of"):
        load_uci("soybean")
