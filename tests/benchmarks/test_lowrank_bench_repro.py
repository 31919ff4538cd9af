"""``python -m benchmarks bench lowrank``, ``python -m benchmarks reproduce lowrank`` (Kulis et al. 2009 §7), their
kernel k-means / NMI helpers, and the LowRankKernelITML estimator beyond check_estimator.

No timing assertions: times and rates are only checked to be finite and positive.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from cli_output import output_tables, positive_finite, run_cli_ok
from sklearn.cluster import KMeans
from sklearn.metrics import normalized_mutual_info_score

from benchmarks.bench import lowrank as bench
from cvxkml.declare import LowRankLogDet
from cvxkml.errors import CvxkmlError, InvalidInputError
from cvxkml.estimators.logdet import LowRankKernelITML
from reference.reproduce.lowrank import (
    kernel_kmeans,
    load_digits389,
    load_nursery_ordinal,
    nmi,
    relative_pair_constraints,
    reproduce_lowrank,
)


# --------------------------------------------------------------------------- bench lowrank
def test_bench_lowrank_quick_structure():
    text = run_cli_ok(["bench", "lowrank", "--quick", "--seed", "1"])
    (h1, proj), (h2, work) = output_tables(text)
    assert h1[0] == "r" and [r[0] for r in proj] == ["10", "50"]
    assert h1[4] == "cholupdatemult_t [1/s]" and h1[7] == "bit-identical"
    for r in proj:
        rank = int(r[0])
        assert int(r[1]) == 3 * rank * rank + 2 * rank  # the paper's flop count
        assert all(positive_finite(c) for c in r[2:7] + r[8:12])
        assert r[7] == "yes"  # cholupdatemult_t == cholupdatemult, bit for bit
        assert float(r[12]) < 1e-10  # Numba B == dense NumPy B
    assert h2[:6] == ["constraints", "pairs", "solver", "sweeps", "stopped by", "certified"]
    assert h2[12:15] == ["objective", "max rel viol", "rel gap"]
    assert [(r[0], r[2]) for r in work] == [(c, s) for c in ("1000", "5000") for s in ("certified", "paper rule")]
    for r in work:
        assert int(r[1]) <= int(r[0]) and int(r[3]) >= 1 and r[15] == "-"
        assert all(positive_finite(c) for c in r[6:13])
        if r[2] == "certified":  # the package's solve certifies
            assert r[4] == "certificate" and r[5] == "yes"
            assert float(r[13]) <= 1e-3 and abs(float(r[14])) <= 1e-3
        else:
            assert r[4] in ("dual change", "budget")
    # same constraints: the certified objective is not above the paper rule's by more than its gap
    for c in ("1000", "5000"):
        cert, paper = (float(r[12]) for r in work if r[0] == c)
        assert cert <= paper * (1 + 1e-3)
    assert "1000 constraints: certified" in text and "paper rule" in text
    assert "data: " in text and "bench finished" in text


def test_lowrank_workload_projection_count_and_baseline_budget(tmp_path):
    """projections/s is the solver's own projection count over its time, and the paper-rule
    baseline stops at its budget (one chunk of sweeps) without a certificate."""
    res = bench.lowrank_workload_rows(quick=True, data_dir=tmp_path, counts=(400,), baseline_budget=1e-9)
    cert, paper = res["rows"]
    assert (cert["solver"], paper["solver"]) == ("certified", "paper rule")
    assert cert["proj_per_s"] == pytest.approx(cert["projections"] / cert["solver_s"])
    assert 0 < cert["projections"] <= cert["sweeps"] * cert["pairs"]  # the active set skips some
    assert paper["stop"] == "budget" and paper["sweeps"] == 4 and not paper["converged"]
    assert paper["projections"] == paper["sweeps"] * paper["pairs"]
    assert cert["certified"] and res["flops_per_projection"] == 3 * 20 * 20 + 2 * 20


def test_numpy_lowrank_sweep_matches_solver_loop():
    from cvxkml.solvers.lowrank import PAIR, _sweeps_lowrank

    G0, I, J, delta, bound = bench._lowrank_pairs(6, 40, seed=3)
    m = len(I)
    B_np, updates = bench.numpy_lowrank_sweep(np.eye(6), G0, I, J, delta, bound.copy(), np.zeros(m), 1.0)
    B_nb, lam = np.eye(6), np.zeros(m)
    z = np.zeros((m, 2))
    _sweeps_lowrank(B_nb, G0, np.full(m, PAIR), I, J, J, z, z, delta, bound.copy(), lam, 1.0, 0.0, 1)
    assert updates == m == np.count_nonzero(lam)  # every projection updates
    np.testing.assert_allclose(B_nb, B_np, rtol=1e-12, atol=1e-12)


def test_mnist_shape_factor_synthetic_without_data(tmp_path):
    G0, y, src = bench.mnist_shape_factor(500, 7, data_dir=tmp_path, seed=2)
    assert G0.shape == (500, 7) and y.shape == (500,) and src.startswith("synthetic")
    assert set(np.unique(y)) <= set(range(10))


def test_mnist_shape_factor_from_data(data_dir):
    G0, y, src = bench.mnist_shape_factor(7000, 12, data_dir=data_dir, seed=0)
    assert G0.shape == (7000, 12) and src.startswith("mnist5000.npz")
    np.testing.assert_array_equal(y[5000:], y[:2000])  # second (noisy) copy
    assert not np.allclose(G0[5000:], G0[:2000])


# --------------------------------------------------------------------------- NMI / k-means
def test_nmi_matches_sklearn_and_edge_cases():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 40))
        a = rng.integers(0, rng.integers(1, 6), n)
        b = rng.integers(0, rng.integers(1, 6), n)
        assert nmi(a, b) == pytest.approx(normalized_mutual_info_score(a, b), abs=1e-12)
    a = rng.integers(0, 4, 100)
    perm = np.array([2, 0, 3, 1])
    assert nmi(a, perm[a]) == pytest.approx(1.0)  # relabelling
    assert nmi(["x", "y", "x"], [5, 7, 5]) == pytest.approx(1.0)
    assert nmi(np.zeros(5), np.zeros(5)) == 1.0
    assert nmi(np.zeros(6), np.arange(6) % 2) == 0.0
    with pytest.raises(InvalidInputError, match="differ in length"):
        nmi([0, 1], [0])


def _blobs(seed=0, n_per=40, d=5, k=3, sep=12.0):
    rng = np.random.default_rng(seed)
    centres = sep * rng.standard_normal((k, d))
    y = np.repeat(np.arange(k), n_per)
    return centres[y] + rng.standard_normal((y.size, d)), y


def test_kernel_kmeans_planted_clusters_factor_and_kernel_paths_agree():
    X, y = _blobs()
    a = kernel_kmeans(factor=X, n_clusters=3, n_init=5, random_state=1)
    b = kernel_kmeans(X @ X.T, n_clusters=3, n_init=5, random_state=1)
    assert nmi(y, a.labels) == pytest.approx(1.0) and nmi(y, b.labels) == pytest.approx(1.0)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert a.objective == pytest.approx(b.objective, rel=1e-9)
    inertia = KMeans(3, n_init=5, random_state=0).fit(X).inertia_
    assert a.objective == pytest.approx(inertia, rel=1e-9)  # same optimum as Lloyd on X


def test_kernel_kmeans_finds_brute_force_optimum_of_gaussian_kernel():
    # 9 points, 2 clusters: enumerate all 255 partitions of the kernel k-means objective
    # Σ_c [Σ_{i∈c} K_ii − (1/|c|) Σ_{i,j∈c} K_ij] for a Gaussian kernel
    import itertools

    rng = np.random.default_rng(5)
    X = rng.standard_normal((9, 2))
    K = np.exp(-np.sum((X[:, None] - X[None]) ** 2, axis=-1) / 2.0)

    def objective(lab):
        return sum(
            np.trace(K[np.ix_(c, c)]) - K[np.ix_(c, c)].sum() / c.size
            for c in (np.flatnonzero(lab == 0), np.flatnonzero(lab == 1))
        )

    best = min(objective(np.array((0,) + bits)) for bits in itertools.product((0, 1), repeat=8) if any(bits))
    res = kernel_kmeans(K, n_clusters=2, n_init=30, random_state=0)
    assert res.objective == pytest.approx(best, rel=1e-10)
    assert objective(res.labels) == pytest.approx(res.objective, rel=1e-10)


def test_kernel_kmeans_edge_cases():
    X, _ = _blobs(n_per=3)
    res = kernel_kmeans(factor=X, n_clusters=X.shape[0], n_init=2, random_state=0)
    assert sorted(res.labels) == list(range(X.shape[0])) and res.objective == pytest.approx(0.0, abs=1e-9)
    one = kernel_kmeans(factor=X, n_clusters=1, n_init=1, random_state=0)
    assert np.all(one.labels == 0)
    assert one.objective == pytest.approx(np.sum((X - X.mean(0)) ** 2))
    dup = np.repeat(X[:2], 5, axis=0)  # 2 distinct points, 3 clusters
    r3 = kernel_kmeans(factor=dup, n_clusters=3, n_init=3, random_state=0)
    assert np.bincount(r3.labels, minlength=3).min() >= 1
    with pytest.raises(InvalidInputError, match="exactly one"):
        kernel_kmeans(X @ X.T, 2, factor=X)
    with pytest.raises(InvalidInputError, match="n_clusters"):
        kernel_kmeans(factor=X, n_clusters=0)


def test_relative_pair_constraints():
    X, y = _blobs(seed=1, n_per=10)
    pool = np.arange(0, 30, 2)
    pc = relative_pair_constraints(X, y, 50, 0.25, np.random.default_rng(0), pool=pool)
    assert len(pc) == 50 and np.all(pc.i != pc.j)
    assert np.all(np.isin(pc.i, pool)) and np.all(np.isin(pc.j, pool))
    b = np.sum((X[pc.i] - X[pc.j]) ** 2, axis=1)
    same = y[pc.i] == y[pc.j]
    np.testing.assert_array_equal(pc.y, np.where(same, 1.0, -1.0))
    np.testing.assert_allclose(pc.bound, np.where(same, 0.75 * b, 1.25 * b))


# --------------------------------------------------------------------------- reproduction
def test_digits_and_nursery_loaders(data_dir):
    X, y = load_digits389(data_dir)
    assert X.shape == (317, 16) and set(np.unique(y)) == {3, 8, 9}
    X2, _ = load_digits389(data_dir)
    np.testing.assert_array_equal(X, X2)  # fixed sample seed
    Xn, yn = load_nursery_ordinal(data_dir)
    assert Xn.shape == (12960, 8) and np.linalg.matrix_rank(Xn) == 8
    assert np.unique(yn).size == 5
    np.testing.assert_array_equal(Xn.max(axis=0), [2, 4, 3, 3, 2, 1, 2, 2])


def test_reproduce_lowrank_quick_smoke(data_dir):
    text = run_cli_ok(["reproduce", "lowrank", "--quick", "--data-dir", str(data_dir)])
    tables = output_tables(text)
    assert [t[0][0] for t in tables] == ["constraints", "cycles", "constraints", "constraints"]
    digits = tables[0][1]
    assert [r[0] for r in digits] == ["0", "40"]
    for r in digits:
        mean_nmi = float(r[1].split(" ± ")[0])
        acc = float(r[2].split(" ± ")[0])
        assert 0.0 <= mean_nmi <= 1.0 and 0.5 < acc <= 1.0
    assert int(digits[1][3].split("/")[0]) >= 1  # cycles
    for _, rows in tables[2:]:
        assert all(0.0 <= float(r[1].split(" ± ")[0]) <= 1.0 for r in rows)
    assert "QUICK smoke run" in text and "paper:" in text


def test_reproduce_lowrank_rows_quick(data_dir):
    res = reproduce_lowrank(quick=True, data_dir=data_dir)
    assert set(res) >= {"digits", "digits_convergence", "spambase", "nursery", "settings"}
    conv = res["digits_convergence"]["rows"]
    assert all(0.0 <= r["satisfied_pct"] <= 100.0 for r in conv)
    assert res["digits"][1]["feasible"] in (0, 1, 2)


# --------------------------------------------------------------------------- estimator
@pytest.fixture(scope="module")
def wine_std():
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(y))
    return X[idx[:120]], y[idx[:120]], X[idx[120:]], y[idx[120:]]


@pytest.mark.parametrize("method, rank", [("eigen", 20), ("icholesky", 25), ("nystroem", 30)])
def test_lowrank_transform_training_points_is_embedding(wine_std, method, rank):
    Xtr, ytr, Xte, _ = wine_std
    est = LowRankKernelITML(rank=rank, method=method, n_similar=30, n_dissimilar=30, random_state=0).fit(Xtr, ytr)
    assert est.rank_ == rank and est.B_.shape == (rank, rank)
    assert np.allclose(est.B_, np.tril(est.B_))
    np.testing.assert_allclose(est.transform(Xtr), est.embedding_, atol=1e-7)
    G0 = est.factorization_.G0
    np.testing.assert_allclose(est.embedding_ @ est.embedding_.T, G0 @ est.solution_.matrix @ G0.T, atol=1e-8)
    Z = est.transform(Xte)
    assert Z.shape == (len(Xte), rank) and np.all(np.isfinite(Z))
    f = pickle.loads(pickle.dumps(est.get_metric()))
    d = est.pair_distance(np.stack([Xte[:5], Xte[5:10]], axis=1))
    np.testing.assert_allclose(d, np.linalg.norm(Z[:5] - Z[5:10], axis=1), rtol=1e-10)
    assert f(Xte[0], Xte[5]) == pytest.approx(d[0], rel=1e-10)
    assert est.solution_.converged


def test_lowrank_linear_kernel_equals_factor_problem(wine_std):
    # linear kernel, eigen, full rank: the learned distances are those of the raw-factor
    # problem on the same constraints (LowRankLogDet is invariant to G0 -> G0 Q, Q orthogonal)
    Xtr, ytr, Xte, _ = wine_std
    est = LowRankKernelITML(kernel="linear", n_similar=30, n_dissimilar=30, random_state=3, tol=1e-10).fit(Xtr, ytr)
    assert est.rank_ == 13
    pc = est.pairs_  # the constraints it learned from
    sol = LowRankLogDet(Xtr, pc, gamma=1.0).solve(tol=1e-10)
    A, B = Xte[:20], Xte[20:40]
    direct = np.linalg.norm((A - B) @ sol.info["B"], axis=1)
    np.testing.assert_allclose(est.pair_distance(np.stack([A, B], axis=1)), direct, rtol=1e-6)
    pre = LowRankKernelITML(kernel="precomputed", n_similar=30, n_dissimilar=30, random_state=3, tol=1e-10).fit(
        Xtr @ Xtr.T, ytr
    )
    Zl, Zp = est.transform(Xte), pre.transform(Xte @ Xtr.T)
    np.testing.assert_allclose(Zl @ Zl.T, Zp @ Zp.T, atol=1e-6)


def test_lowrank_estimator_bad_inputs(wine_std):
    Xtr, ytr, _, _ = wine_std
    X8, y8 = Xtr[:8], np.array([0, 0, 0, 0, 1, 1, 1, 1])
    with pytest.raises(CvxkmlError, match="exceeds the number of training points"):
        LowRankKernelITML(rank=9).fit(X8, y8)
    with pytest.raises(CvxkmlError, match="exceeds the numerical rank"):
        LowRankKernelITML(kernel="linear", rank=15).fit(Xtr[:20], ytr[:20])
    with pytest.raises(CvxkmlError, match="Nyström needs landmarks or a rank"):
        LowRankKernelITML(method="nystroem").fit(X8, y8)
    with pytest.raises(CvxkmlError, match="method must be"):
        LowRankKernelITML(method="svd").fit(X8, y8)
    with pytest.raises(CvxkmlError, match="rank must be None or a positive integer"):
        LowRankKernelITML(rank=0).fit(X8, y8)
    with pytest.raises(CvxkmlError, match="positive semidefinite"):
        LowRankKernelITML(kernel="precomputed").fit(X8 @ X8.T - 5.0, y8)
    est = LowRankKernelITML(kernel="precomputed", n_similar=5, n_dissimilar=5).fit(X8 @ X8.T, y8)
    with pytest.raises(CvxkmlError, match="precomputed"):
        est.get_metric()


def test_lowrank_estimator_duplicate_points_warn_and_fit():
    # identical points give pairs of zero distance in the factor space: dropped with a warning
    rng = np.random.default_rng(0)
    X = np.repeat(rng.standard_normal((6, 3)), 2, axis=0)
    y = np.repeat([0, 0, 0, 1, 1, 1], 2)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        est = LowRankKernelITML(kernel="linear", n_similar=20, n_dissimilar=20, random_state=0).fit(X, y)
    assert any("zero" in str(w.message) for w in rec)
    assert est.rank_ == 3 and np.all(np.isfinite(est.transform(X)))
