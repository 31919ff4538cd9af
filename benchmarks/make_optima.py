"""Make the stored high-accuracy optima of cvxkml (``cvxkml/data/optima/*.npz``), from a checkout.

A registry of small deterministic instances (:data:`INSTANCES`) — built from scikit-learn's
bundled data sets (iris, wine) or a seeded generator — one or more per family of
:mod:`cvxkml.declare`.  :func:`regenerate` solves each instance's *exact* model at high accuracy
and stores the inputs needed to rebuild the problem together with the optimal matrix, objective,
dual value, status and solver in ``cvxkml/data/optima/<name>.npz``; the installed package only
reads them (:func:`cvxkml.testing.load_optimum`, which rebuilds the problem with
:func:`cvxkml.testing._optima.rebuild`).

An optimum is stored only when the exact solve is trustworthy:
:func:`cvxkml.testing.trusted_reference` (status ``optimal``, Lagrange certificate
|objective − dual value| <= 1e-7 · max(1, |objective|), violations <= 1e-7) where the family
carries a certificate.  Families whose exact model has no certificate yet (KCR, the MKL weight
steps: :data:`UNCERTIFIED`) are stored on status and violations alone; their files say so
(``certificate`` is ``"none"``).  The MKL weight steps are solved by their own conic model
(:data:`OWN_CONIC`).

Run from the checkout root::

    python benchmarks/make_optima.py            # every instance (a few minutes)
    python benchmarks/make_optima.py NAME ...   # some of them
    python benchmarks/make_optima.py --list     # the instances
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
from sklearn.datasets import load_iris, load_wine

from cvxkml.declare._conic import solve_conic
from cvxkml.errors import InvalidInputError, SolverError
from cvxkml.formulas.yeung import local_gram, positive_spectrum
from cvxkml.kernels import center_kernel, gaussian_kernel, normalize_mean_diagonal
from cvxkml.sideinfo import PairConstraints, baseline_kernel, baseline_metric
from cvxkml.testing import trusted_reference
from cvxkml.testing._optima import StoredOptimum, rebuild

__all__ = ["INSTANCES", "OUT", "OWN_CONIC", "UNCERTIFIED", "Instance", "main", "regenerate", "solve_exact"]

#: Where the stored optima are written: the package data of this checkout.
OUT = Path(__file__).resolve().parents[1] / "cvxkml" / "data" / "optima"

#: families whose exact model carries no Lagrange certificate (stored on status and violations)
UNCERTIFIED = frozenset({"kcr", "mkl-p", "mkl-mu"})
#: families solved by their own conic model (the MKL weight steps) instead of trusted_reference
OWN_CONIC = frozenset({"mkl-p", "mkl-mu"})

_CERT_RTOL = 1e-7


# --------------------------------------------------------------------------- data
def _iris():
    return load_iris(return_X_y=True)


def _wine_subset(n, seed=0):
    """n standardized Wine points (rows chosen by a seeded generator) and their labels."""
    X, y = load_wine(return_X_y=True)
    Xs = (X - X.mean(axis=0)) / X.std(axis=0)
    idx = np.random.default_rng(seed).choice(len(y), n, replace=False)
    return Xs[idx], y[idx]


def _gaussian(X, sigma):
    return gaussian_kernel(X, sigma=sigma)


def _pc_inputs(pc: PairConstraints) -> dict:
    """The arrays of pair constraints as a stored file keeps them (``in__i``, ``in__j``, …)."""
    return dict(i=pc.i, j=pc.j, y=pc.y, bound=pc.bound)


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


# --------------------------------------------------------------------------- instances
def _itml_iris_slack():
    # Jain et al.'s constraints (1st / 99th percentiles) on Iris, LogDet slack γ = 1
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
    Xs, yw = _wine_subset(40, seed=16)
    K = center_kernel(_gaussian(Xs, 4.0))
    lam, V = positive_spectrum(K, 1e-10)
    q = 10  # the leading components
    i, j, y = _pola_pairs(yw, 40, 17)
    keep = y > 0  # similarity pairs only
    return dict(U=V[:, :q], eigenvalues=lam[:q], i=i[keep], j=j[keep], epsilon=1e-3)


def _yeung_embedding_wine():
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
class Instance:
    """One stored optimum: its ``name`` (the file's stem), problem ``family`` (a key of
    :data:`cvxkml.testing._optima.FAMILIES`), ``build()`` -> the inputs, and how it is built."""

    name: str
    family: str
    build: Callable[[], dict]
    note: str = ""


INSTANCES: dict = {
    inst.name: inst
    for inst in [
        Instance("itml_iris_slack", "itml", _itml_iris_slack, "Iris, 100 pairs (1st/99th pct), gamma=1"),
        Instance("itml_iris_hard", "itml", _itml_iris_hard, "Iris, 4 forest pairs, hard"),
        Instance(
            "kernel_wine_gaussian_slack",
            "logdet-kernel",
            _kernel_wine_gaussian_slack,
            "Gaussian K0 (sigma 4) on 30 Wine points, 20 pairs, gamma=10",
        ),
        Instance(
            "kernel_wine_lowrank_slack",
            "logdet-kernel",
            _kernel_wine_lowrank_slack,
            "linear K0 of rank 13 on 30 Wine points (range-space model), gamma=1",
        ),
        Instance(
            "kernel_wine_gaussian_hard",
            "logdet-kernel",
            _kernel_wine_gaussian_hard,
            "Gaussian K0 on 20 Wine points, 8 forest pairs, hard",
        ),
        Instance(
            "lowrank_wine_slack",
            "lowrank-logdet",
            _lowrank_wine_slack,
            "LowRankLogDet, G0 = 30 x 13 Wine features, gamma=1",
        ),
        Instance(
            "spectral_metric_frobenius",
            "spectral-metric",
            _spectral_metric("Frobenius"),
            "Iris, 4 forest pairs, Frobenius, hard",
        ),
        Instance(
            "spectral_metric_tracenorm",
            "spectral-metric",
            _spectral_metric("TraceNorm", tau=1.0),
            "Iris, 4 forest pairs, TraceNorm(1), hard",
        ),
        Instance(
            "spectral_metric_vonneumann_slack",
            "spectral-metric",
            _spectral_metric("VonNeumann", gamma=1.0),
            "Iris, 4 forest pairs, VonNeumann, gamma=1",
        ),
        Instance(
            "spectral_kernel_frobenius",
            "spectral-kernel",
            _spectral_kernel("Frobenius"),
            "Gaussian K0 on 20 Wine points, 8 forest pairs, Frobenius, hard",
        ),
        Instance(
            "spectral_kernel_tracenorm",
            "spectral-kernel",
            _spectral_kernel("TraceNorm", tau=1.0),
            "Gaussian K0 on 20 Wine points, 8 forest pairs, TraceNorm(1), hard",
        ),
        Instance(
            "spectral_kernel_vonneumann",
            "spectral-kernel",
            _spectral_kernel("VonNeumann"),
            "Gaussian K0 on 20 Wine points, 8 forest pairs, VonNeumann, hard",
        ),
        Instance(
            "vonneumann_kernel_wine_slack",
            "vonneumann-kernel",
            _vonneumann_kernel_slack,
            "D_vN(K, K0), Gaussian K0 on 20 Wine points, 16 pairs, gamma=1",
        ),
        Instance(
            "trace_ssikdr_wine",
            "trace-ssikdr",
            _trace_wine,
            "Gaussian K0 on 20 other Wine points, 10 forest pairs, tau=0.5",
        ),
        Instance(
            "pola_kernel_wine", "pola-kernel", _pola_kernel_wine, "Gaussian K0 on 20 Wine points, 15 label pairs, b=2"
        ),
        Instance("pola_metric_iris", "pola-metric", _pola_metric_iris, "30 Iris points, 20 label pairs, b=2"),
        Instance(
            "sdp_logdet_kernel_wine",
            "sdp-logdet-kernel",
            _sdp_kernel_wine,
            "Gaussian K0 on 20 Wine points, C0 = kNN Laplacian + I, 8 forest pairs, gamma=1",
        ),
        Instance(
            "sdp_logdet_metric_iris", "sdp-logdet-metric", _sdp_metric_iris, "Iris, C0 = I/n, 4 forest pairs, gamma=1"
        ),
        Instance(
            "iplr_wine_slack",
            "iplr",
            _iplr_wine,
            "40 Wine points, basis = 6 leading principal directions, 20 pairs, gamma=1",
        ),
        Instance("kcr_iris", "kcr", _kcr_iris, "24 Iris points (8 per class), Gaussian sigma 2, lam=1"),
        Instance("lmnn_iris_linear", "lmnn", _lmnn_iris, "linear LMNN, 30 Iris points, k=3, gamma=0.5"),
        Instance(
            "yeung_reweighting_wine",
            "yeung-reweighting",
            _yeung_beta_wine,
            "10 leading components of a centred Gaussian kernel on 40 Wine points",
        ),
        Instance(
            "yeung_embedding_wine",
            "yeung-embedding",
            _yeung_embedding_wine,
            "local Gram of a Wine point over 6 neighbours, Gaussian kernel",
        ),
        Instance(
            "mkl_p_relaxation_iris",
            "mkl-p",
            _mkl_p_iris,
            "relaxation (15) with W = 0 of the MKL_P weight step, 3 kernels on 15 Iris points, A = I",
        ),
        Instance(
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


def _exact(problem, family: str) -> dict:
    """The exact solve of ``problem`` (of ``family``) as a stored file records it."""
    if family in OWN_CONIC:
        M, obj, status, solver, elapsed = _solve_mkl(problem, family)
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
    certified = family not in UNCERTIFIED
    sol = trusted_reference(problem, cert_rtol=_CERT_RTOL, require_certificate=certified)
    gap = sol.gap
    if certified and (gap is None or abs(gap) > _CERT_RTOL * max(1.0, abs(sol.objective))):
        raise InvalidInputError(f"untrusted certificate {gap!r}")  # trusted_reference guarantees it
    return dict(
        matrix=np.asarray(sol.matrix, dtype=float),
        objective=float(sol.objective),
        dual_value=np.nan if sol.dual_value is None else float(sol.dual_value),
        gap=np.nan if gap is None else float(gap),
        status=str(sol.status),
        solver=str(sol.solver),
        solve_time=float(sol.time),
        certificate="lagrange" if certified else "none",
    )


def solve_exact(optimum: StoredOptimum) -> dict:
    """Solve the exact model of a stored optimum's problem again, as :func:`regenerate` does.

    Parameters
    ----------
    optimum : StoredOptimum
        From :func:`cvxkml.testing.load_optimum`.

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
    return _exact(optimum.problem, optimum.family)


def regenerate(names=None, out=None, verbose: bool = True) -> dict:
    """Solve the exact model of each registered instance and store its optimum.

    Parameters
    ----------
    names : iterable of str, optional
        Instances to regenerate (default: all of :data:`INSTANCES`).
    out : path-like, optional
        Directory for the ``.npz`` files (default :data:`OUT`, the checkout's package data).
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
    out = OUT if out is None else Path(out)
    out.mkdir(parents=True, exist_ok=True)
    report = {}
    for name in names:
        inst = INSTANCES[name]
        path = out / f"{name}.npz"
        t0 = time.perf_counter()
        try:
            inputs = inst.build()
            problem = rebuild(inst.family, inputs)
            rec = _exact(problem, inst.family)
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


def _check_name(name) -> str:
    if not isinstance(name, str) or name not in INSTANCES:
        raise InvalidInputError(f"Unknown optimum {name!r}; the registered instances are: {', '.join(INSTANCES)}.")
    return name


def main(argv=None) -> int:
    """``python benchmarks/make_optima.py [NAME ...] [--out DIR] [--list]``: regenerate the stored
    optima (all by default); exit status 1 when an instance's exact solve was not trustworthy."""
    parser = argparse.ArgumentParser(
        prog="python benchmarks/make_optima.py",
        description="Regenerate the stored high-accuracy optima (cvxkml/data/optima/*.npz): solve each "
        "instance's exact model at high accuracy and store it only when the solve is trustworthy "
        "(loaded by cvxkml.testing.load_optimum; a few minutes for all of them).",
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="instances to regenerate (default all; see --list)")
    parser.add_argument(
        "--out", metavar="DIR", help="folder of the .npz files (default: the checkout's cvxkml/data/optima)"
    )
    parser.add_argument(
        "--list", action="store_true", help="print the instances (name, family, how it is built) and exit"
    )
    args = parser.parse_args(argv)
    if args.list:
        for inst in INSTANCES.values():
            print(f"{inst.name}  {inst.family}  {inst.note}")
        return 0
    unknown = [n for n in args.names if n not in INSTANCES]
    if unknown:
        parser.error(f"unknown instance(s) {', '.join(unknown)}; see --list")
    report = regenerate(args.names or None, out=args.out)
    return 1 if any("error" in r for r in report.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
