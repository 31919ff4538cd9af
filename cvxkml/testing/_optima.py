"""Stored high-accuracy optima of every declared problem family (package data).

A registry of small deterministic instances — built from scikit-learn's bundled data sets
(iris, wine) or a seeded generator — one or more per family of :mod:`cvxkml.declare`.
:func:`regenerate` solves each instance's *exact* model at high accuracy and stores the
inputs needed to rebuild the problem together with the optimal matrix, objective, dual
value, status and solver in ``cvxkml/data/optima/<name>.npz``; :func:`load_optimum`
rebuilds the declared problem and returns it with the stored optimum.  The regression
test ``tests/test_reference_optima.py`` runs every family's fast solver against them.

An optimum is stored only when the exact solve is trustworthy:
:func:`cvxkml.testing.trusted_reference` (status ``optimal``, Lagrange certificate
|objective − dual value| <= 1e-7 · max(1, |objective|), violations <= 1e-7) where the
family carries a certificate.  Families whose exact model has no certificate yet (KCR,
the MKL weight steps) are stored on status and violations alone; their files say so
(``certificate`` is ``"none"``).

Regenerate everything with ``python -m cvxkml.testing._optima`` (a few minutes), or some with
``python -m cvxkml.testing._optima NAME ...``.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from .. import declare
from ..errors import InvalidInputError
from ..sideinfo import PairConstraints

__all__ = ["OPTIMA_DIR", "StoredOptimum", "list_optima", "load_optimum", "regenerate", "solve_exact", "INSTANCES"]

#: Where the stored optima live (package data).
OPTIMA_DIR = Path(__file__).resolve().parents[1] / "data" / "optima"

_CERT_RTOL = 1e-7


# --------------------------------------------------------------------------- data
def _iris():
    from sklearn.datasets import load_iris

    return load_iris(return_X_y=True)


def _wine_subset(n, seed=0):
    """n standardized Wine points (rows chosen by a seeded generator) and their labels."""
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    Xs = (X - X.mean(axis=0)) / X.std(axis=0)
    idx = np.random.default_rng(seed).choice(len(y), n, replace=False)
    return Xs[idx], y[idx]


def _gaussian(X, sigma):
    from ..kernels import gaussian_kernel

    return gaussian_kernel(X, sigma=sigma)


def _pc_inputs(pc: PairConstraints) -> dict:
    return dict(i=pc.i, j=pc.j, y=pc.y, bound=pc.bound)


def _pc(z) -> PairConstraints:
    return PairConstraints(z["i"], z["j"], z["y"], z["bound"])


def _gamma(z):
    g = float(z["gamma"])
    return None if np.isnan(g) else g


def _iris_forest_pairs():
    """Four iris pairs on a forest (difference vectors independent in R⁴, so any positive
    bounds are attainable: hard constraints stay feasible); bounds are the 5th / 95th
    percentiles of squared Euclidean distances."""
    X, y = _iris()
    i = np.array([0, 50, 100, 0])
    j = np.array([1, 51, 101, 50])
    yy = np.where(y[i] == y[j], 1.0, -1.0)
    D = np.sum((X[:, None] - X[None]) ** 2, axis=-1)[np.triu_indices(len(y), 1)]
    lo, hi = np.percentile(D, [5, 95])
    return X, PairConstraints(i, j, yy, np.where(yy > 0, lo, hi))


def _kernel_pairs(K0, labels, n_similar, n_dissimilar, seed):
    from ..sideinfo import baseline_kernel

    return PairConstraints.from_labels(
        labels, baseline_kernel(K0), n_similar=n_similar, n_dissimilar=n_dissimilar, random_state=seed
    )


def _forest_kernel_pairs(K0, n_pairs, seed):
    """Pairs on a random spanning forest of a PD kernel's points, bounds at the 5th/95th
    percentiles of the kernel distances (feasible for hard constraints)."""
    rng = np.random.default_rng(seed)
    n = K0.shape[0]
    order = rng.permutation(n)
    i = order[1 : n_pairs + 1]
    j = np.array([order[rng.integers(0, t)] for t in range(1, n_pairs + 1)])
    d = np.diag(K0)
    D = (d[:, None] + d[None] - 2 * K0)[np.triu_indices(n, 1)]
    lo, hi = np.percentile(D, [5, 95])
    y = rng.choice([-1.0, 1.0], size=n_pairs)
    return PairConstraints(i, j, y, np.where(y > 0, lo, hi))


# --------------------------------------------------------------------------- regularizers
def _regularizer(z):
    name = str(z["regularizer"])
    if name == "Frobenius":
        return declare.Frobenius()
    if name == "TraceNorm":
        return declare.TraceNorm(float(z["tau"]))
    if name == "VonNeumann":
        return declare.VonNeumann()
    raise InvalidInputError(f"Unknown stored regularizer {name!r}.")


# --------------------------------------------------------------------------- families
# Each family: rebuild(inputs) -> problem, and how its exact model is solved.
def _rebuild_itml(z):
    return declare.ITML(z["X"], _pc(z), gamma=_gamma(z))


def _rebuild_logdet_kernel(z):
    return declare.LogDetKernel(z["K0"], _pc(z), gamma=_gamma(z))


def _rebuild_lowrank(z):
    return declare.LowRankLogDet(z["G0"], _pc(z), gamma=_gamma(z))


def _rebuild_spectral_metric(z):
    return declare.SpectralMetric(z["X"], _pc(z), _regularizer(z), gamma=_gamma(z))


def _rebuild_spectral_kernel(z):
    return declare.SpectralKernel(z["K0"], _pc(z), _regularizer(z), gamma=_gamma(z))


def _rebuild_vonneumann_kernel(z):
    return declare.VonNeumannKernel(z["K0"], _pc(z), gamma=_gamma(z))


def _rebuild_trace(z):
    return declare.TraceSSIKDR(z["K0"], _pc(z), tau=float(z["tau"]))


def _rebuild_pola_kernel(z):
    return declare.POLAKernel(z["K0"], declare.pola_constraints(z["i"], z["j"], z["y"], float(z["b"])))


def _rebuild_pola_metric(z):
    return declare.POLAMetric(z["X"], declare.pola_constraints(z["i"], z["j"], z["y"], float(z["b"])))


def _rebuild_sdp_kernel(z):
    return declare.SDPLogDetKernel(z["K0"], _pc(z), z["C0"], gamma=float(z["barrier"]))


def _rebuild_sdp_metric(z):
    return declare.SDPLogDetMetric(z["X"], _pc(z), z["C0"], gamma=float(z["barrier"]))


def _rebuild_iplr(z):
    return declare.IPLR.from_features(z["X"], _pc(z), basis=z["R"], gamma=_gamma(z))


def _rebuild_kcr(z):
    return declare.KCR(z["K"], z["labels"], float(z["lam"]))


def _rebuild_lmnn(z):
    return declare.LMNNProblem.linear(z["X"], z["labels"], k=int(z["k"]), gamma=float(z["gamma"]))


def _rebuild_yeung_beta(z):
    from ..declare.yeung import SpectralReweighting

    return SpectralReweighting(z["U"], z["eigenvalues"], np.column_stack([z["i"], z["j"]]), epsilon=float(z["epsilon"]))


def _rebuild_yeung_embedding(z):
    from ..declare.yeung import EmbeddingWeightProblem

    return EmbeddingWeightProblem(z["G"], epsilon=float(z["epsilon"]))


def _mkl_weights(z):
    from ..formulas.lmnn import LMNNTriplets
    from ..kernels import kernel_sq_distances

    Ks = np.asarray(z["Ks"], dtype=float)
    tr = LMNNTriplets.from_labels(z["labels"], int(z["k"]), sq_dist=kernel_sq_distances(Ks.sum(axis=0)))
    return declare.LMNNWeightObjective.from_kernels(list(Ks), z["A"], tr, float(z["gamma"]))


def _rebuild_mkl_p(z):
    return declare.RankOneWeightStep(_mkl_weights(z))


def _rebuild_mkl_mu(z):
    from ..declare.mkl import LMNNMuMajorizer

    return declare.MuWeightStep(LMNNMuMajorizer(_mkl_weights(z), z["mu_ref"]))


@dataclass(frozen=True)
class _Family:
    rebuild: Callable
    certificate: bool = True  # the exact model carries a Lagrange certificate (dual value)
    exact: str = "trusted"  # "trusted": trusted_reference; "mkl-p" / "mkl-mu": own conic solve


_FAMILIES = {
    "itml": _Family(_rebuild_itml),
    "logdet-kernel": _Family(_rebuild_logdet_kernel),
    "lowrank-logdet": _Family(_rebuild_lowrank),
    "spectral-metric": _Family(_rebuild_spectral_metric),
    "spectral-kernel": _Family(_rebuild_spectral_kernel),
    "vonneumann-kernel": _Family(_rebuild_vonneumann_kernel),
    "trace-ssikdr": _Family(_rebuild_trace),
    "pola-kernel": _Family(_rebuild_pola_kernel),
    "pola-metric": _Family(_rebuild_pola_metric),
    "sdp-logdet-kernel": _Family(_rebuild_sdp_kernel),
    "sdp-logdet-metric": _Family(_rebuild_sdp_metric),
    "iplr": _Family(_rebuild_iplr),
    "kcr": _Family(_rebuild_kcr, certificate=False),
    "lmnn": _Family(_rebuild_lmnn),
    "yeung-reweighting": _Family(_rebuild_yeung_beta),
    "yeung-embedding": _Family(_rebuild_yeung_embedding),
    "mkl-p": _Family(_rebuild_mkl_p, certificate=False, exact="mkl-p"),
    "mkl-mu": _Family(_rebuild_mkl_mu, certificate=False, exact="mkl-mu"),
}


# --------------------------------------------------------------------------- instances
def _itml_iris_slack():
    # Jain et al.'s constraints (1st / 99th percentiles) on Iris, LogDet slack γ = 1
    from ..sideinfo import baseline_metric

    X, y = _iris()
    pc = PairConstraints.from_labels(
        y, baseline_metric(X), n_similar=50, n_dissimilar=50, percentiles=(1, 99), random_state=0
    )
    return dict(X=X, gamma=1.0, **_pc_inputs(pc))


def _itml_iris_hard():
    X, pc = _iris_forest_pairs()
    return dict(X=X, gamma=np.nan, **_pc_inputs(pc))


def _wine30():
    Xs, yw = _wine_subset(30, seed=0)
    return Xs, yw


def _kernel_wine_gaussian_slack():
    Xs, yw = _wine30()
    K0 = _gaussian(Xs, 4.0)
    return dict(K0=K0, gamma=10.0, **_pc_inputs(_kernel_pairs(K0, yw, 10, 10, 1)))


def _kernel_wine_lowrank_slack():
    # rank-deficient linear kernel (rank 13 < 30): the range-space model
    Xs, yw = _wine30()
    K0 = Xs @ Xs.T
    return dict(K0=K0, gamma=1.0, **_pc_inputs(_kernel_pairs(K0, yw, 10, 10, 2)))


def _kernel_wine_gaussian_hard():
    Xs, _ = _wine_subset(20, seed=3)
    K0 = _gaussian(Xs, 4.0)
    return dict(K0=K0, gamma=np.nan, **_pc_inputs(_forest_kernel_pairs(K0, 8, 4)))


def _lowrank_wine_slack():
    # K0 = G0 G0ᵀ with G0 the 30 × 13 standardized Wine features (rank 13)
    Xs, yw = _wine30()
    return dict(G0=Xs, gamma=1.0, **_pc_inputs(_kernel_pairs(Xs @ Xs.T, yw, 10, 10, 5)))


def _spectral_metric(reg, gamma=np.nan, tau=np.nan):
    def build():
        X, pc = _iris_forest_pairs()
        return dict(X=X, regularizer=reg, tau=tau, gamma=gamma, **_pc_inputs(pc))

    return build


def _spectral_kernel(reg, gamma=np.nan, tau=np.nan):
    def build():
        Xs, _ = _wine_subset(20, seed=3)
        K0 = _gaussian(Xs, 4.0)
        return dict(K0=K0, regularizer=reg, tau=tau, gamma=gamma, **_pc_inputs(_forest_kernel_pairs(K0, 8, 4)))

    return build


def _vonneumann_kernel_slack():
    Xs, yw = _wine_subset(20, seed=6)
    K0 = _gaussian(Xs, 4.0)
    return dict(K0=K0, gamma=1.0, **_pc_inputs(_kernel_pairs(K0, yw, 8, 8, 7)))


def _trace_wine():
    Xs, _ = _wine_subset(20, seed=19)
    K0 = _gaussian(Xs, 4.0)
    return dict(K0=K0, tau=0.5, **_pc_inputs(_forest_kernel_pairs(K0, 10, 20)))


def _pola_pairs(labels, n_pairs, seed):
    rng = np.random.default_rng(seed)
    n = labels.size
    all_i, all_j = np.triu_indices(n, 1)
    pick = rng.choice(all_i.size, n_pairs, replace=False)
    i, j = all_i[pick], all_j[pick]
    return i, j, np.where(labels[i] == labels[j], 1.0, -1.0)


def _pola_kernel_wine():
    Xs, yw = _wine_subset(20, seed=8)
    i, j, y = _pola_pairs(yw, 15, 9)
    return dict(K0=_gaussian(Xs, 4.0), i=i, j=j, y=y, b=2.0)


def _pola_metric_iris():
    X, y = _iris()
    rng = np.random.default_rng(10)
    idx = np.sort(rng.choice(len(y), 30, replace=False))
    i, j, yy = _pola_pairs(y[idx], 20, 11)
    return dict(X=X[idx], i=i, j=j, y=yy, b=2.0)


def _sdp_kernel_wine():
    # tr(K C0) − γ log det: C0 = graph Laplacian of a kNN graph + I (positive definite)
    Xs, _ = _wine_subset(20, seed=12)
    K0 = _gaussian(Xs, 4.0)
    D = np.sum((Xs[:, None] - Xs[None]) ** 2, axis=-1)
    nn = np.argsort(D, axis=1)[:, 1:4]
    A = np.zeros_like(D)
    A[np.repeat(np.arange(20), 3), nn.ravel()] = 1.0
    A = np.maximum(A, A.T)
    C0 = np.diag(A.sum(axis=1)) - A + np.eye(20)
    return dict(K0=K0, C0=C0, barrier=1.0, **_pc_inputs(_forest_kernel_pairs(K0, 8, 13)))


def _sdp_metric_iris():
    X, pc = _iris_forest_pairs()
    return dict(X=X, C0=np.eye(X.shape[0]) / X.shape[0], barrier=1.0, **_pc_inputs(pc))


def _iplr_wine():
    # identity plus low rank on the 6 leading principal directions of 40 Wine points (bounds at
    # the 10th / 90th percentiles: every pair is active in this basis, none is dropped)
    Xs, yw = _wine_subset(40, seed=14)
    _, _, Vt = np.linalg.svd(Xs - Xs.mean(axis=0), full_matrices=False)
    from ..sideinfo import baseline_metric

    pc = PairConstraints.from_labels(
        yw, baseline_metric(Xs), n_similar=10, n_dissimilar=10, percentiles=(10, 90), random_state=15
    )
    return dict(X=Xs, R=Vt[:6].T.copy(), gamma=1.0, **_pc_inputs(pc))


def _kcr_iris():
    X, y = _iris()
    idx = np.concatenate([np.arange(c * 50, c * 50 + 8) for c in range(3)])
    Xs = (X[idx] - X[idx].mean(axis=0)) / X[idx].std(axis=0)
    return dict(K=_gaussian(Xs, 2.0), labels=y[idx], lam=1.0)


def _lmnn_iris():
    X, y = _iris()
    idx = np.concatenate([np.arange(c * 50, c * 50 + 10) for c in range(3)])
    Xs = (X[idx] - X[idx].mean(axis=0)) / X[idx].std(axis=0)
    return dict(X=Xs, labels=y[idx], k=3, gamma=0.5)


def _yeung_beta_wine():
    from ..formulas.yeung import positive_spectrum
    from ..kernels import center_kernel

    Xs, yw = _wine_subset(40, seed=16)
    K = center_kernel(_gaussian(Xs, 4.0))
    lam, V = positive_spectrum(K, 1e-10)
    q = 10  # the leading components
    i, j, y = _pola_pairs(yw, 40, 17)
    keep = y > 0  # similarity pairs only
    return dict(U=V[:, :q], eigenvalues=lam[:q], i=i[keep], j=j[keep], epsilon=1e-3)


def _yeung_embedding_wine():
    from ..formulas.yeung import local_gram

    Xs, _ = _wine_subset(40, seed=18)
    K = _gaussian(Xs, 4.0)
    D = np.diag(K)[:, None] + np.diag(K)[None] - 2 * K
    nb = np.argsort(D[0])[1:7]  # 6 neighbours of point 0
    G = local_gram(np.array([K[0, 0]]), K[0, nb][None], K[np.ix_(nb, nb)][None])[0]
    return dict(G=0.5 * (G + G.T), epsilon=1e-3)


def _mkl_inputs():
    X, y = _iris()
    idx = np.concatenate([np.arange(c * 50, c * 50 + 5) for c in range(3)])
    Xs = (X[idx] - X[idx].mean(axis=0)) / X[idx].std(axis=0)
    from ..kernels import normalize_mean_diagonal

    Ks = np.stack(
        [normalize_mean_diagonal(_gaussian(Xs, s)) for s in (1.0, 2.0)] + [normalize_mean_diagonal(Xs @ Xs.T)]
    )
    return dict(Ks=Ks, labels=y[idx], k=2, gamma=0.5, A=np.eye(len(idx)))


def _mkl_p_iris():
    return _mkl_inputs()


def _mkl_mu_iris():
    z = _mkl_inputs()
    return dict(z, mu_ref=np.full(z["Ks"].shape[0], 1.0 / z["Ks"].shape[0]))


@dataclass(frozen=True)
class _Instance:
    name: str
    family: str
    build: Callable[[], dict]
    note: str = ""


INSTANCES: dict = {
    inst.name: inst
    for inst in [
        _Instance("itml_iris_slack", "itml", _itml_iris_slack, "Iris, 100 pairs (1st/99th pct), gamma=1"),
        _Instance("itml_iris_hard", "itml", _itml_iris_hard, "Iris, 4 forest pairs, hard"),
        _Instance(
            "kernel_wine_gaussian_slack",
            "logdet-kernel",
            _kernel_wine_gaussian_slack,
            "Gaussian K0 (sigma 4) on 30 Wine points, 20 pairs, gamma=10",
        ),
        _Instance(
            "kernel_wine_lowrank_slack",
            "logdet-kernel",
            _kernel_wine_lowrank_slack,
            "linear K0 of rank 13 on 30 Wine points (range-space model), gamma=1",
        ),
        _Instance(
            "kernel_wine_gaussian_hard",
            "logdet-kernel",
            _kernel_wine_gaussian_hard,
            "Gaussian K0 on 20 Wine points, 8 forest pairs, hard",
        ),
        _Instance(
            "lowrank_wine_slack",
            "lowrank-logdet",
            _lowrank_wine_slack,
            "LowRankLogDet, G0 = 30 x 13 Wine features, gamma=1",
        ),
        _Instance(
            "spectral_metric_frobenius",
            "spectral-metric",
            _spectral_metric("Frobenius"),
            "Iris, 4 forest pairs, Frobenius, hard",
        ),
        _Instance(
            "spectral_metric_tracenorm",
            "spectral-metric",
            _spectral_metric("TraceNorm", tau=1.0),
            "Iris, 4 forest pairs, TraceNorm(1), hard",
        ),
        _Instance(
            "spectral_metric_vonneumann_slack",
            "spectral-metric",
            _spectral_metric("VonNeumann", gamma=1.0),
            "Iris, 4 forest pairs, VonNeumann, gamma=1",
        ),
        _Instance(
            "spectral_kernel_frobenius",
            "spectral-kernel",
            _spectral_kernel("Frobenius"),
            "Gaussian K0 on 20 Wine points, 8 forest pairs, Frobenius, hard",
        ),
        _Instance(
            "spectral_kernel_tracenorm",
            "spectral-kernel",
            _spectral_kernel("TraceNorm", tau=1.0),
            "Gaussian K0 on 20 Wine points, 8 forest pairs, TraceNorm(1), hard",
        ),
        _Instance(
            "spectral_kernel_vonneumann",
            "spectral-kernel",
            _spectral_kernel("VonNeumann"),
            "Gaussian K0 on 20 Wine points, 8 forest pairs, VonNeumann, hard",
        ),
        _Instance(
            "vonneumann_kernel_wine_slack",
            "vonneumann-kernel",
            _vonneumann_kernel_slack,
            "D_vN(K, K0), Gaussian K0 on 20 Wine points, 16 pairs, gamma=1",
        ),
        _Instance(
            "trace_ssikdr_wine",
            "trace-ssikdr",
            _trace_wine,
            "Gaussian K0 on 20 other Wine points, 10 forest pairs, tau=0.5",
        ),
        _Instance(
            "pola_kernel_wine", "pola-kernel", _pola_kernel_wine, "Gaussian K0 on 20 Wine points, 15 label pairs, b=2"
        ),
        _Instance("pola_metric_iris", "pola-metric", _pola_metric_iris, "30 Iris points, 20 label pairs, b=2"),
        _Instance(
            "sdp_logdet_kernel_wine",
            "sdp-logdet-kernel",
            _sdp_kernel_wine,
            "Gaussian K0 on 20 Wine points, C0 = kNN Laplacian + I, 8 forest pairs, gamma=1",
        ),
        _Instance(
            "sdp_logdet_metric_iris", "sdp-logdet-metric", _sdp_metric_iris, "Iris, C0 = I/n, 4 forest pairs, gamma=1"
        ),
        _Instance(
            "iplr_wine_slack",
            "iplr",
            _iplr_wine,
            "40 Wine points, basis = 6 leading principal directions, 20 pairs, gamma=1",
        ),
        _Instance("kcr_iris", "kcr", _kcr_iris, "24 Iris points (8 per class), Gaussian sigma 2, lam=1"),
        _Instance("lmnn_iris_linear", "lmnn", _lmnn_iris, "linear LMNN, 30 Iris points, k=3, gamma=0.5"),
        _Instance(
            "yeung_reweighting_wine",
            "yeung-reweighting",
            _yeung_beta_wine,
            "10 leading components of a centred Gaussian kernel on 40 Wine points",
        ),
        _Instance(
            "yeung_embedding_wine",
            "yeung-embedding",
            _yeung_embedding_wine,
            "local Gram of a Wine point over 6 neighbours, Gaussian kernel",
        ),
        _Instance(
            "mkl_p_relaxation_iris",
            "mkl-p",
            _mkl_p_iris,
            "relaxation (15) with W = 0 of the MKL_P weight step, 3 kernels on 15 Iris points, A = I",
        ),
        _Instance(
            "mkl_mu_majorizer_iris",
            "mkl-mu",
            _mkl_mu_iris,
            "MKL_mu step on LMNN's convex majorizer at uniform mu, 3 kernels on 15 Iris points, A = I",
        ),
    ]
}


# --------------------------------------------------------------------------- exact solves
def _solve_mkl(problem, family):
    """The convex model of an MKL weight step by Clarabel at eps = 1e-10: (matrix, objective,
    status, solver, time).  The P step stores the relaxation (15) with W = 0 (its value is a
    lower bound on min_μ h(μμᵀ)); the μ step stores the optimal μ of its convex model."""
    from ..declare._conic import solve_conic
    from ..errors import SolverError

    attempts = []
    for solver, eps in (("CLARABEL", 1e-10), ("CLARABEL", 1e-9), ("SCS", 1e-10)):
        prob = problem.to_cvxpy()
        try:
            elapsed, status, _ = solve_conic(prob, solver, eps, False, f"{family} weight step")
            break
        except SolverError as exc:
            attempts.append(f"{solver}(eps={eps}): {exc}")
    else:
        raise SolverError("No optimal solve of the weight step: " + "; ".join(attempts))
    solver = f"cvxpy-{solver.lower()}"
    if family == "mkl-p":
        P = np.asarray(prob.var_dict["P"].value, dtype=float)
        P = 0.5 * (P + P.T)
        return P, float(problem.h.value(P)), status, solver, elapsed
    mu = np.maximum(np.asarray(prob.var_dict["mu"].value, dtype=float), 0.0)
    mu = mu / mu.sum()
    return mu, float(problem.h.value_mu(mu)), status, solver, elapsed


def _exact(problem, family: _Family, family_name: str) -> dict:
    if family.exact != "trusted":
        M, obj, status, solver, elapsed = _solve_mkl(problem, family_name)
        return dict(
            matrix=M,
            objective=obj,
            dual_value=np.nan,
            gap=np.nan,
            status=status,
            solver=solver,
            solve_time=elapsed,
            certificate="none",
        )
    from ._reference import trusted_reference

    sol = trusted_reference(problem, cert_rtol=_CERT_RTOL, require_certificate=family.certificate)
    gap = sol.gap
    if family.certificate and (gap is None or abs(gap) > _CERT_RTOL * max(1.0, abs(sol.objective))):
        raise InvalidInputError(f"untrusted certificate {gap!r}")  # trusted_reference guarantees it
    return dict(
        matrix=np.asarray(sol.matrix, dtype=float),
        objective=float(sol.objective),
        dual_value=np.nan if sol.dual_value is None else float(sol.dual_value),
        gap=np.nan if gap is None else float(gap),
        status=str(sol.status),
        solver=str(sol.solver),
        solve_time=float(sol.time),
        certificate="lagrange" if family.certificate else "none",
    )


def solve_exact(optimum: "StoredOptimum") -> dict:
    """Solve the exact model of a stored optimum's problem again, as :func:`regenerate` does.

    Parameters
    ----------
    optimum : StoredOptimum
        From :func:`load_optimum`.

    Returns
    -------
    dict
        ``matrix``, ``objective``, ``dual_value`` and ``gap`` (NaN without a certificate),
        ``status``, ``solver``, ``solve_time``, ``certificate``.

    Raises
    ------
    cvxkml.testing.UntrustedReference
        When no conic solve meets the trust rules.
    """
    return _exact(optimum.problem, _FAMILIES[optimum.family], optimum.family)


def regenerate(names=None, out=None, verbose: bool = True) -> dict:
    """Solve the exact model of each registered instance and store its optimum.

    Parameters
    ----------
    names : iterable of str, optional
        Instances to regenerate (default: all of :data:`INSTANCES`).
    out : path-like, optional
        Directory for the ``.npz`` files (default :data:`OPTIMA_DIR`, the package data).
    verbose : bool, default=True
        Print one line per instance.

    Returns
    -------
    dict
        name -> ``{"family", "n", "objective", "gap", "time"}`` for each stored optimum, or
        ``{"error": message}`` for an instance whose exact solve was not trustworthy (its
        file is then not written, and an older file of that name is removed).

    Notes
    -----
    An optimum is stored only when the exact solve has status ``optimal`` and, for families
    with a Lagrange certificate, |gap| <= 1e-7 · max(1, |objective|)
    (:func:`cvxkml.testing.trusted_reference`).
    """
    names = list(INSTANCES) if names is None else [_check_name(n) for n in names]
    out = OPTIMA_DIR if out is None else Path(out)
    out.mkdir(parents=True, exist_ok=True)
    report = {}
    for name in names:
        inst = INSTANCES[name]
        fam = _FAMILIES[inst.family]
        path = out / f"{name}.npz"
        t0 = time.perf_counter()
        try:
            inputs = inst.build()
            problem = fam.rebuild(inputs)
            rec = _exact(problem, fam, inst.family)
            if rec["status"] != "optimal":
                raise InvalidInputError(f"status {rec['status']!r}")
        except Exception as exc:  # recorded, not stored
            if path.exists():
                path.unlink()
            report[name] = {"error": f"{type(exc).__name__}: {exc}"}
            if verbose:
                print(f"{name}: NOT STORED ({report[name]['error']})", flush=True)
            continue
        wall = time.perf_counter() - t0
        n = int(np.asarray(rec["matrix"]).shape[0])
        arrays = {f"in__{k}": np.asarray(v) for k, v in inputs.items()}
        np.savez_compressed(
            path, name=name, family=inst.family, note=inst.note, **arrays, **{k: np.asarray(v) for k, v in rec.items()}
        )
        report[name] = dict(
            family=inst.family, n=n, objective=rec["objective"], gap=rec["gap"], time=wall, solver=rec["solver"]
        )
        if verbose:
            print(
                f"{name}: family={inst.family} n={n} objective={rec['objective']:.12g} "
                f"gap={rec['gap']:.3g} solver={rec['solver']} time={wall:.2f}s",
                flush=True,
            )
    return report


# --------------------------------------------------------------------------- loading
@dataclass
class StoredOptimum:
    """A stored optimum and the rebuilt declared problem.

    Attributes
    ----------
    name, family : str
        The instance and its problem family (see :func:`list_optima`).
    problem : object
        The declared problem rebuilt from the stored inputs (e.g. a
        :class:`~cvxkml.declare.ITML`, :class:`~cvxkml.declare.KCR`,
        :class:`~cvxkml.declare.RankOneWeightStep`).
    objective : float
        The exact model's optimal objective value.
    matrix : ndarray
        The optimal matrix (for IPLR the k × k F*; for the MKL μ step the weights μ; for
        the MKL P step the relaxation's P).
    dual_value : float or None
        The Lagrange dual value of the exact solution (None when the family has no
        certificate).
    gap : float or None
        objective − dual_value.
    status, solver : str
        The conic solver's status (always ``"optimal"``) and name.
    solve_time : float
        Seconds of the exact solve at regeneration.
    certificate : str
        ``"lagrange"`` or ``"none"``.
    note : str
        How the instance was built.
    inputs : dict
        The stored inputs (arrays).
    """

    name: str
    family: str
    problem: object
    objective: float
    matrix: np.ndarray
    dual_value: float | None
    gap: float | None
    status: str
    solver: str
    solve_time: float
    certificate: str
    note: str = ""
    inputs: dict = field(default_factory=dict, repr=False)


def list_optima(directory=None) -> list[str]:
    """Names of the stored optima.

    Parameters
    ----------
    directory : path-like, optional
        Where to look (default :data:`OPTIMA_DIR`, the package data).

    Returns
    -------
    list of str
        Sorted instance names, each loadable with :func:`load_optimum`.
    """
    d = OPTIMA_DIR if directory is None else Path(directory)
    return sorted(p.stem for p in d.glob("*.npz"))


def _check_name(name) -> str:
    if not isinstance(name, str) or name not in INSTANCES:
        raise InvalidInputError(f"Unknown optimum {name!r}; the registered instances are: {', '.join(INSTANCES)}.")
    return name


def load_optimum(name: str, directory=None) -> StoredOptimum:
    """Load a stored optimum and rebuild its declared problem.

    Parameters
    ----------
    name : str
        One of :func:`list_optima`.
    directory : path-like, optional
        Where to look (default :data:`OPTIMA_DIR`, the package data).

    Returns
    -------
    StoredOptimum

    Raises
    ------
    InvalidInputError
        For a name that is not stored (the message lists the available names).

    Examples
    --------
    >>> from cvxkml.testing._optima import load_optimum
    >>> opt = load_optimum("itml_iris_slack")
    >>> sol = opt.problem.solve(tol=1e-12, max_iter=100_000)
    >>> bool(abs(sol.objective - opt.objective) <= 1e-6 * max(1.0, abs(opt.objective)))
    True
    """
    available = list_optima(directory)
    if not isinstance(name, str) or name not in available:
        raise InvalidInputError(
            f"No stored optimum named {name!r}. Available: {', '.join(available) or '(none)'}. "
            "Regenerate with `python -m cvxkml.testing._optima`."
        )
    d = OPTIMA_DIR if directory is None else Path(directory)
    with np.load(d / f"{name}.npz", allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    family = str(data["family"])
    if family not in _FAMILIES:
        raise InvalidInputError(f"Stored optimum {name!r} has an unknown family {family!r}.")
    inputs = {k[4:]: v for k, v in data.items() if k.startswith("in__")}
    for k, v in inputs.items():
        if v.ndim == 0 and v.dtype.kind == "U":
            inputs[k] = str(v)
    problem = _FAMILIES[family].rebuild(inputs)

    def opt(key):
        v = float(data[key])
        return None if np.isnan(v) else v

    return StoredOptimum(
        name=name,
        family=family,
        problem=problem,
        objective=float(data["objective"]),
        matrix=np.asarray(data["matrix"], dtype=float),
        dual_value=opt("dual_value"),
        gap=opt("gap"),
        status=str(data["status"]),
        solver=str(data["solver"]),
        solve_time=float(data["solve_time"]),
        certificate=str(data["certificate"]),
        note=str(data["note"]),
        inputs=inputs,
    )


def main(argv=None) -> int:
    """``python -m cvxkml.testing._optima [NAME ...]``: regenerate the stored optima (all by default)."""
    argv = sys.argv[1:] if argv is None else argv
    report = regenerate(argv or None)
    return 1 if any("error" in r for r in report.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
