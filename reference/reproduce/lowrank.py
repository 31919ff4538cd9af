"""Kulis, Sustik & Dhillon (JMLR 2009) §7.1 with the low-rank LogDet solver
(:class:`cvxkml.declare.LowRankLogDet`): ``python -m benchmarks reproduce lowrank``.

* Digits: pendigits {3, 8, 9}, 317 random points, rank-16 linear kernel (raw features), hard
  relative pair constraints (ε = 0.25), tol 1e-3: kernel k-means NMI vs constraints (Figure 1
  left), 5-NN accuracy, cycles, % of 300 constraints satisfied vs cycles (Figure 1 right).
* Spambase (rank 57) and Nursery (rank 8, ordinal codes in UCI order) with slack γ = 1: NMI and
  cycles vs constraints (Figures 3 and 4).

Every (constraint count, draw) is an independent task with its own seeds (``n_jobs``,
:mod:`.._parallel`).  Functions return rows; only :func:`command` prints.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np

from benchmarks._parallel import describe, parallel_from_args, run_tasks
from benchmarks._report import columns, pm
from cvxkml.datasets import CATEGORY_ORDER, check_available, load_dataset
from cvxkml.errors import CvxkmlError, InvalidInputError

__all__ = [
    "DIGITS_SAMPLE_SEED",
    "NURSERY_ORDER",
    "PAPER",
    "nmi",
    "kernel_kmeans",
    "KMeansResult",
    "load_digits389",
    "load_spambase",
    "load_nursery_ordinal",
    "relative_pair_constraints",
    "digits_rows",
    "digits_convergence_rows",
    "SCALES",
    "scale_features",
    "uci_rows",
    "PARTS",
    "reproduce_lowrank",
    "command",
]

#: Seed of the 317-point random sample of pendigits {3, 8, 9} (numpy ``default_rng``).
DIGITS_SAMPLE_SEED = 0

#: Category order of the Nursery attributes (UCI ``nursery.names``): a value's code is its position.
NURSERY_ORDER = CATEGORY_ORDER["nursery"]

#: What the paper states in its text (§7.1, §7.2); of the figures only the axis ranges.
PAPER = {
    "digits_nmi": "Figure 1 (left): curve not in the text; NMI axis 0.4-0.9 over 0-140 "
    "constraints; 'adding just a few constraints improves the results significantly'",
    "digits_knn": "5-NN accuracy rises from 94% to 97% with constraints (number of constraints "
    "not stated; 50/50 split, two-fold CV, 20 runs)",
    "digits_cycles": "LogDet: between 17 and 354 cycles (von Neumann: 11 cycles for 30 constraints, 105 for 420)",
    "digits_satisfied": "Figure 1 (right): 300 constraints, % satisfied (tolerance 1e-3) vs "
    "cycles, axis 0-350 cycles; curve not in the text",
    "spambase_nmi": "Figure 3 (left): curve not in the text; NMI axis 0.2-0.5 over 0-500 "
    "constraints; 'clustering accuracy improvements with very little supervision'",
    "spambase_cycles": "Figure 4 (left): LogDet cycles axis up to 6000 over 50-500 constraints; "
    "'much larger than the von Neumann algorithm' (29 cycles at 500)",
    "nursery_nmi": "Figure 3 (right): curve not in the text; NMI axis 0.1-0.3 over 0-500 "
    "constraints; both divergences 'perform similarly'",
    "nursery_cycles": "Figure 4 (right): cycles axis up to 1000 over 50-500 constraints",
}


# --------------------------------------------------------------------------- NMI
def nmi(labels_true, labels_pred) -> float:
    """Normalized mutual information I(C; K) / ((H(C) + H(K)) / 2), as in Kulis et al. §7.1 and
    scikit-learn's default; two single-cluster labelings give 1."""
    a = np.asarray(labels_true).ravel()
    b = np.asarray(labels_pred).ravel()
    if a.size != b.size:
        raise InvalidInputError(f"labelings differ in length: {a.size} and {b.size}.")
    if a.size == 0:
        raise InvalidInputError("NMI needs at least one labelled point.")
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    ka, kb = int(ia.max()) + 1, int(ib.max()) + 1
    C = np.bincount(ia * kb + ib, minlength=ka * kb).reshape(ka, kb).astype(float)
    n = float(a.size)
    P = C / n
    pa, pb = P.sum(axis=1), P.sum(axis=0)
    ha = -float(np.sum(pa * np.log(pa)))
    hb = -float(np.sum(pb * np.log(pb)))
    if ka == 1 and kb == 1:
        return 1.0
    if ha + hb == 0.0:
        return 1.0
    nz = P > 0
    mi = float(np.sum(P[nz] * (np.log(P[nz]) - np.log(np.outer(pa, pb)[nz]))))
    return max(mi, 0.0) / (0.5 * (ha + hb))


# --------------------------------------------------------------------------- kernel k-means
@dataclass
class KMeansResult:
    """The best restart of :func:`kernel_kmeans`.

    Attributes
    ----------
    labels : ndarray of shape (n,)
        Cluster index of each point, 0 … n_clusters − 1.
    objective : float
        Σ_i ‖φ(x_i) − m_{c(i)}‖², the feature-space within-cluster scatter.
    n_iter : int
        Lloyd iterations of the best restart.
    n_init : int
        Number of restarts run.
    """

    labels: np.ndarray  # (n,) cluster index of each point, 0 … n_clusters − 1
    objective: float  # Σ_i ‖φ(x_i) − m_{c(i)}‖² (feature-space within-cluster scatter)
    n_iter: int  # Lloyd iterations of the best restart
    n_init: int


def kernel_kmeans(
    K=None, n_clusters: int = 2, *, factor=None, n_init: int = 10, max_iter: int = 300, random_state=None
) -> KMeansResult:
    """Kernel k-means (Dhillon et al. 2004) on ``K`` (n × n PSD) or ``factor`` G (K = G Gᵀ, never formed).

    Each of ``n_init`` restarts seeds by k-means++ with kernel distances, then alternates
    assignment and mean update until the assignment stops changing (or ``max_iter``); an
    emptied cluster takes the point farthest from its own mean.  Returns the restart of
    smallest objective (seeds from ``default_rng(random_state)``).
    """
    if (K is None) == (factor is None):
        raise InvalidInputError("Give exactly one of K (kernel matrix) or factor (G with K = G Gᵀ).")
    if factor is not None:
        G = np.asarray(factor, dtype=float)
        if G.ndim != 2:
            raise InvalidInputError(f"factor must be 2-D (n × r); got shape {G.shape}.")
        n = G.shape[0]
        diag = np.einsum("ij,ij->i", G, G)
        cols = lambda idx: G @ G[idx].T  # K[:, idx]
        times = lambda Z: G @ (G.T @ Z)  # K Z
    else:
        K = np.asarray(K, dtype=float)
        if K.ndim != 2 or K.shape[0] != K.shape[1]:
            raise InvalidInputError(f"K must be a square matrix; got shape {K.shape}.")
        n = K.shape[0]
        diag = np.diag(K).copy()
        cols = lambda idx: K[:, idx]
        times = lambda Z: K @ Z
    if not np.all(np.isfinite(diag)):
        raise InvalidInputError("The kernel (or factor) has non-finite entries.")
    k = int(n_clusters)
    if not 1 <= k <= n:
        raise InvalidInputError(f"n_clusters must be between 1 and n = {n}; got {n_clusters}.")
    if int(n_init) < 1 or int(max_iter) < 1:
        raise InvalidInputError("n_init and max_iter must be positive integers.")
    rng = np.random.default_rng(random_state)

    def means(labels, counts):
        """Z (n × k, 1/|c| at each point's cluster) and K Z."""
        Z = np.zeros((n, k))
        Z[np.arange(n), labels] = 1.0 / counts[labels]
        return Z, times(Z)

    best = None
    for _ in range(int(n_init)):
        # k-means++ seeding in feature space
        seeds = [int(rng.integers(n))]
        d2 = np.maximum(diag + diag[seeds[0]] - 2.0 * cols([seeds[0]])[:, 0], 0.0)
        for _c in range(1, k):
            tot = float(d2.sum())
            nxt = int(rng.choice(n, p=d2 / tot)) if tot > 0 else int(rng.integers(n))
            seeds.append(nxt)
            d2 = np.minimum(d2, np.maximum(diag + diag[nxt] - 2.0 * cols([nxt])[:, 0], 0.0))
        D = diag[:, None] + diag[seeds][None, :] - 2.0 * cols(seeds)
        labels = np.argmin(D, axis=1)
        labels[seeds] = np.arange(k)  # every cluster starts non-empty
        it = 0
        for it in range(1, int(max_iter) + 1):  # noqa: B007 (it is the iteration count reported after the loop)
            Z, KZ = means(labels, np.maximum(np.bincount(labels, minlength=k), 1).astype(float))
            D = diag[:, None] - 2.0 * KZ + np.einsum("ic,ic->c", Z, KZ)[None, :]
            new = np.argmin(D, axis=1)
            new_counts = np.bincount(new, minlength=k)
            for c in np.flatnonzero(new_counts == 0):  # re-seed empty clusters
                own = D[np.arange(n), new]
                movable = new_counts[new] > 1
                i = int(np.argmax(np.where(movable, own, -np.inf)))
                new_counts[new[i]] -= 1
                new[i] = c
                new_counts[c] += 1
            if np.array_equal(new, labels):
                break
            labels = new
        Z, KZ = means(labels, np.bincount(labels, minlength=k).astype(float))
        own = diag - 2.0 * KZ[np.arange(n), labels] + np.einsum("ic,ic->c", Z, KZ)[labels]
        obj = float(np.sum(np.maximum(own, 0.0)))
        if best is None or obj < best.objective:
            best = KMeansResult(labels.copy(), obj, it, int(n_init))
    return best


# --------------------------------------------------------------------------- data
def load_digits389(data_dir=None, n: int = 317, seed: int = DIGITS_SAMPLE_SEED):
    """``n`` random points (``default_rng(seed)``, file order) of pendigits {3, 8, 9}, raw features."""
    X, y = load_dataset("pendigits", data_dir)
    pool = np.flatnonzero(np.isin(y, (3, 8, 9)))
    idx = np.sort(np.random.default_rng(seed).choice(pool, int(n), replace=False))
    return X[idx], y[idx]


def load_spambase(data_dir=None):
    """Spambase, 57 raw features, labels 1 = spam, 0 = non-spam."""
    return load_dataset("spambase", data_dir, integer_labels=True)


def load_nursery_ordinal(data_dir=None):
    """Nursery, attributes coded 0, 1, … in the order of :data:`NURSERY_ORDER` (12 960 × 8, rank 8
    as the paper's kernel), integer labels of the 5 classes."""
    return load_dataset("nursery", data_dir, categorical="ordinal", integer_labels=True)


# --------------------------------------------------------------------------- constraints
def relative_pair_constraints(G0, labels, m: int, eps: float = 0.25, rng=None, pool=None):
    """``m`` random pairs i ≠ j of ``pool`` (default all points), with replacement:
    d ≤ (1 − ε) b same class, d ≥ (1 + ε) b otherwise, b = ‖G0[i] − G0[j]‖² (pairs at b = 0
    redrawn).  Returns :class:`~cvxkml.sideinfo.PairConstraints`."""
    from cvxkml.sideinfo import PairConstraints

    rng = np.random.default_rng(rng)
    G0 = np.asarray(G0, dtype=float)
    labels = np.asarray(labels)
    pool = np.arange(G0.shape[0]) if pool is None else np.asarray(pool)
    I, J = np.zeros(0, np.int64), np.zeros(0, np.int64)
    for _ in range(100):
        need = int(m) - I.size
        if need <= 0:
            break
        a = pool[rng.integers(0, pool.size, need)]
        b = pool[rng.integers(0, pool.size, need)]
        d = np.sum((G0[a] - G0[b]) ** 2, axis=1)
        ok = (a != b) & (d > 1e-12 * max(1.0, float(np.max(d, initial=0.0))))
        I, J = np.concatenate([I, a[ok]]), np.concatenate([J, b[ok]])
    if I.size < m:
        raise InvalidInputError("Could not draw enough pairs of distinct points.")
    b = np.sum((G0[I] - G0[J]) ** 2, axis=1)
    y = np.where(labels[I] == labels[J], 1.0, -1.0)
    return PairConstraints(I, J, y, np.where(y > 0, (1.0 - eps) * b, (1.0 + eps) * b))


def _learn(G0, pc, gamma, tol, max_iter):
    """Solve the low-rank problem; returns (G = G0 B or None, Solution or None, problem)."""
    from cvxkml.declare import LowRankLogDet

    prob = LowRankLogDet(G0, pc, gamma=gamma)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            sol = prob.solve(tol=tol, max_iter=max_iter)
        except CvxkmlError:  # breakdown on infeasible hard constraints
            return None, None, prob
    return prob.kernel_factor(sol), sol, prob


def _exact_feasible(prob):
    """True / False when the exact (CVXPY) model is feasible / infeasible, None if unknown."""
    from cvxkml.errors import InfeasibleError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            prob.solve_reference(accept_inaccurate=True)
        except InfeasibleError:
            return False
        except CvxkmlError:
            return None
    return True


def _rel_violation(sol, pc):
    """Largest violation of the pair constraints relative to their bounds."""
    return float(np.max(sol.violations[: len(pc)] / pc.bound))


def _knn_accuracy(G, y, train, test, k=5):
    from sklearn.neighbors import KNeighborsClassifier

    return float(KNeighborsClassifier(n_neighbors=k).fit(G[train], y[train]).score(G[test], y[test]))


def _summary(values):
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return {"mean": np.nan, "std": np.nan}
    return {"mean": float(v.mean()), "std": float(v.std())}


# --------------------------------------------------------------------------- experiments
def _digits_task(task) -> dict:
    """One (number of constraints, draw) of :func:`digits_rows`, seeded by (seed, draw, m)."""
    X, y, m, d, seed, eps, tol, max_iter, n_init, knn_k, check_exact = task
    rng = np.random.default_rng([seed, d, int(m)])
    out = {"nmi": None, "acc": None, "cycles": None, "solve_s": None, "viol": None, "converged": 0, "feasible": 0}
    if m == 0:
        G = X
        out["converged"] = out["feasible"] = 1
    else:
        pc = relative_pair_constraints(X, y, m, eps, rng)
        G, sol, prob = _learn(X, pc, None, tol, max_iter)
        if sol is not None:
            out.update(cycles=sol.n_iter, solve_s=sol.time, viol=_rel_violation(sol, pc), converged=int(sol.converged))
        if check_exact:
            out["feasible"] = int(bool(_exact_feasible(prob)))
    if G is not None:
        out["nmi"] = nmi(y, kernel_kmeans(factor=G, n_clusters=3, n_init=n_init, random_state=rng).labels)
    perm = rng.permutation(y.size)
    halves = (perm[: y.size // 2], perm[y.size // 2 :])
    fold_acc = []
    for tr, te in (halves, halves[::-1]):
        if m == 0:
            Gk = X
        else:
            Gk, _sol, _prob = _learn(X, relative_pair_constraints(X, y, m, eps, rng, pool=tr), None, tol, max_iter)
        if Gk is not None:
            fold_acc.append(_knn_accuracy(Gk, y, tr, te, knn_k))
    if fold_acc:
        out["acc"] = float(np.mean(fold_acc))
    return out


def _present(draws, key) -> list:
    return [r[key] for r in draws if r[key] is not None]


def _row(m, n_draws, draws) -> dict:
    """The columns the Digits and UCI rows share: NMI summary, cycles, mean solve time."""
    cycles, solve_s, s = _present(draws, "cycles"), _present(draws, "solve_s"), _summary(_present(draws, "nmi"))
    return {
        "constraints": int(m),
        "draws": int(n_draws),
        "nmi_mean": s["mean"],
        "nmi_std": s["std"],
        "cycles_min": int(min(cycles)) if cycles else 0,
        "cycles_median": float(np.median(cycles)) if cycles else 0.0,
        "cycles_max": int(max(cycles)) if cycles else 0,
        "solve_s": float(np.mean(solve_s)) if solve_s else 0.0,
    }


def digits_rows(
    counts=(0, 10, 20, 40, 60, 80, 100, 120, 140),
    n_draws: int = 20,
    seed: int = 0,
    data_dir=None,
    eps: float = 0.25,
    tol: float = 1e-3,
    max_iter: int = 100_000,
    n_init: int = 10,
    knn_k: int = 5,
    check_exact: bool = True,
    n_jobs: int | None = 1,
) -> list[dict]:
    """Digits (Figure 1 left, k-NN accuracy, cycles), hard constraints as in the paper.

    Per count and draw (seeds (``seed``, draw, count)): NMI of kernel k-means (3 clusters) with
    constraints among all 317 points; 5-NN accuracy, random 50/50 split, two folds, constraints
    among the training half, kernel learned on all points.  ``check_exact``: the exact model says
    whether the NMI run's constraints are feasible.  Row: constraints, draws, nmi_mean, nmi_std,
    knn_mean, knn_std, cycles_min / _median / _max, converged, feasible (−1: not checked),
    viol_median (largest violation / bound), solve_s (mean)."""
    X, y = load_digits389(data_dir)
    tasks = [
        (X, y, int(m), d, seed, eps, tol, max_iter, n_init, knn_k, check_exact)
        for m in counts
        for d in range(int(n_draws))
    ]
    results = run_tasks(_digits_task, tasks, n_jobs)
    rows = []
    for k, m in enumerate(counts):
        draws = results[k * int(n_draws) : (k + 1) * int(n_draws)]
        viol = _present(draws, "viol")
        s_acc = _summary(_present(draws, "acc"))
        rows.append(
            {
                **_row(m, n_draws, draws),
                "knn_mean": s_acc["mean"],
                "knn_std": s_acc["std"],
                "converged": sum(r["converged"] for r in draws),
                "feasible": sum(r["feasible"] for r in draws) if (check_exact or m == 0) else -1,
                "viol_median": float(np.median(viol)) if viol else 0.0,
            }
        )
    return rows


def _cycles_task(task):
    """One row of :func:`digits_convergence_rows`: the hard problem solved from scratch
    with at most ``c`` sweeps; returns (row, problem)."""
    X, pc, c, sat_tol = task
    _G, sol, prob = _learn(X, pc, None, 1e-12, int(c))
    if sol is None:
        return {"cycles": int(c), "sweeps_run": 0, "satisfied_pct": np.nan, "max_rel_violation": np.nan}, prob
    rel = sol.violations[: len(pc)] / pc.bound
    return {
        "cycles": int(c),
        "sweeps_run": int(sol.n_iter),
        "satisfied_pct": float(100.0 * np.mean(rel <= sat_tol)),
        "max_rel_violation": float(np.max(rel)),
    }, prob


def digits_convergence_rows(
    m: int = 300,
    cycles=(1, 2, 5, 10, 20, 50, 100, 150, 200, 250, 300, 350),
    seed: int = 0,
    data_dir=None,
    eps: float = 0.25,
    sat_tol: float = 1e-3,
    n_jobs: int | None = 1,
) -> dict:
    """Digits, Figure 1 (right): one draw of ``m`` hard constraints solved from scratch with
    ``max_iter = c`` sweeps (tol 1e-12) per c of ``cycles``, and the % of constraints with
    violation ≤ ``sat_tol``·bound.  Returns {"constraints", "feasible" (the exact model's
    verdict: True / False / None), "rows": [{cycles, sweeps_run, satisfied_pct, max_rel_violation}]}."""
    X, y = load_digits389(data_dir)
    pc = relative_pair_constraints(X, y, m, eps, np.random.default_rng([seed, 300]))
    results = run_tasks(_cycles_task, [(X, pc, c, sat_tol) for c in cycles], n_jobs)
    rows = [row for row, _prob in results]
    prob = results[-1][1] if results else None
    return {"constraints": int(m), "feasible": _exact_feasible(prob), "rows": rows}


def _uci_task(task) -> dict:
    """One (number of constraints, draw) of :func:`uci_rows`, seeded by (seed, draw, m, 7)."""
    X, y, k, m, d, seed, eps, gamma, tol, max_iter, n_init = task
    rng = np.random.default_rng([seed, d, int(m), 7])
    out = {"nmi": None, "cycles": None, "solve_s": None, "solved": 0}
    if m == 0:
        G = X
        out["solved"] = 1
    else:
        G, sol, _st = _learn(X, relative_pair_constraints(X, y, m, eps, rng), gamma, tol, max_iter)
        if sol is not None:
            out.update(cycles=sol.n_iter, solve_s=sol.time, solved=int(sol.converged))
    if G is not None:
        out["nmi"] = nmi(y, kernel_kmeans(factor=G, n_clusters=k, n_init=n_init, random_state=rng).labels)
    return out


_UCI = {
    # name: (loader, clusters, description)
    "spambase": (load_spambase, 2, "4601 x 57, raw features, rank 57"),
    "nursery": (load_nursery_ordinal, 5, "12960 x 8, ordinal codes (UCI order), rank 8"),
}

#: Feature scalings of the UCI rows: "none" (the protocol: the paper's "linear kernel over the
#: original data matrix") and "standardize" (a side check the paper does not describe).
SCALES = ("none", "standardize")


def scale_features(X, scale: str = "none") -> np.ndarray:
    """The UCI rows' features: ``scale`` "none" (X as float) or "standardize" (columns centred
    and divided by their population sd; a constant column only centred)."""
    if scale not in SCALES:
        raise InvalidInputError(f"scale must be one of {list(SCALES)}; got {scale!r}.")
    X = np.asarray(X, dtype=float)
    if scale == "none":
        return X
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


def uci_rows(
    name: str,
    counts=(0, 50, 100, 200, 300, 400, 500),
    n_draws: int = 5,
    seed: int = 0,
    data_dir=None,
    eps: float = 0.25,
    gamma: float = 1.0,
    tol: float = 1e-3,
    max_iter: int = 100_000,
    n_init: int = 10,
    scale: str = "none",
    n_jobs: int | None = 1,
) -> list[dict]:
    """Spambase / Nursery (Figures 3 and 4): NMI of kernel k-means (2 resp. 5 clusters) on the
    learned linear kernel (slack γ = ``gamma``) and cycles; ``scale``: :func:`scale_features`
    ("none" is the protocol).  Row: constraints, draws, nmi_mean, nmi_std, cycles_min /
    _median / _max, converged, solve_s."""
    if name not in _UCI:
        raise InvalidInputError(f"name must be one of {sorted(_UCI)}; got {name!r}.")
    if scale not in SCALES:  # before any data is read
        raise InvalidInputError(f"scale must be one of {list(SCALES)}; got {scale!r}.")
    loader, k, _ = _UCI[name]
    X, y = loader(data_dir)
    X = scale_features(X, scale)
    tasks = [(X, y, k, int(m), d, seed, eps, gamma, tol, max_iter, n_init) for m in counts for d in range(int(n_draws))]
    results = run_tasks(_uci_task, tasks, n_jobs)
    rows = []
    for j, m in enumerate(counts):
        draws = results[j * int(n_draws) : (j + 1) * int(n_draws)]
        rows.append({**_row(m, n_draws, draws), "converged": sum(r["solved"] for r in draws)})
    return rows


#: The sections of :func:`reproduce_lowrank`.
PARTS = ("digits", "digits_convergence", "spambase", "nursery")
_PART_DATA = {"digits": "pendigits", "digits_convergence": "pendigits", "spambase": "spambase", "nursery": "nursery"}


def _check_parts(parts, scale):
    parts = tuple(PARTS if parts is None else parts)
    unknown = sorted(set(parts) - set(PARTS))
    if unknown or not parts:
        raise InvalidInputError(f"parts must be a non-empty selection of {list(PARTS)}; got {list(parts)}.")
    if scale not in SCALES:
        raise InvalidInputError(f"scale must be one of {list(SCALES)}; got {scale!r}.")
    return tuple(p for p in PARTS if p in parts)


def reproduce_lowrank(
    quick: bool = False, seed: int = 0, data_dir=None, n_jobs: int | None = 1, parts=None, scale: str = "none"
) -> dict:
    """The sections of ``parts`` (default :data:`PARTS`): ``digits``, ``digits_convergence``,
    ``spambase``, ``nursery`` (:func:`digits_rows`, :func:`digits_convergence_rows`,
    :func:`uci_rows`), with ``settings`` and ``elapsed_s``; one BLAS thread.  ``quick``: small
    grids (a smoke run, not a reproduction)."""
    from benchmarks.bench.lowrank import warm_up_lowrank
    from cvxkml._config import blas_limit

    parts = _check_parts(parts, scale)
    check_available(tuple(dict.fromkeys(_PART_DATA[p] for p in parts)), data_dir)
    if quick:
        dig = dict(counts=(0, 40), n_draws=2, n_init=3)
        conv = dict(m=60, cycles=(1, 10))
        uci = dict(counts=(0, 50), n_draws=1, n_init=3)
    else:
        dig = dict(counts=(0, 10, 20, 40, 60, 80, 100, 120, 140), n_draws=20, n_init=10)
        conv = dict(m=300, cycles=(1, 2, 5, 10, 20, 50, 100, 150, 200, 250, 300, 350, 1000, 3000))
        uci = dict(counts=(0, 50, 100, 200, 300, 400, 500), n_draws=5, n_init=10)
    out = {
        "settings": {
            "quick": quick,
            "seed": seed,
            "digits_sample_seed": DIGITS_SAMPLE_SEED,
            "eps": 0.25,
            "tol": 1e-3,
            "gamma_uci": 1.0,
            "digits": dig,
            "convergence": conv,
            "uci": uci,
            "parts": list(parts),
            "scale": scale,
        }
    }
    warm_up_lowrank()  # keep Numba cache loading out of solve_s
    t0 = time.perf_counter()
    with blas_limit(1):
        if "digits" in parts:
            out["digits"] = digits_rows(seed=seed, data_dir=data_dir, n_jobs=n_jobs, **dig)
        if "digits_convergence" in parts:
            out["digits_convergence"] = digits_convergence_rows(seed=seed, data_dir=data_dir, n_jobs=n_jobs, **conv)
        for name in ("spambase", "nursery"):
            if name in parts:
                out[name] = uci_rows(name, seed=seed, data_dir=data_dir, scale=scale, n_jobs=n_jobs, **uci)
    out["elapsed_s"] = time.perf_counter() - t0
    return out


# --------------------------------------------------------------------------- command
def data_sets(args) -> tuple:
    """The data sets of the parts ``python -m benchmarks reproduce lowrank`` runs (checked before it starts)."""
    return tuple(_PART_DATA[p] for p in _check_parts(args.parts, args.scale))


def command(args) -> int:
    """``python -m benchmarks reproduce lowrank``: Kulis et al. 2009 §7.1 with the low-rank LogDet solver (Digits,
    Spambase, Nursery: NMI, 5-NN, cycles), printed beside the paper's numbers.

    Returns the exit status, 0."""
    parts = _check_parts(args.parts, args.scale)
    with parallel_from_args(args) as (n_jobs, engine):
        res = reproduce_lowrank(
            quick=args.quick, seed=args.seed, data_dir=args.data_dir, n_jobs=n_jobs, parts=parts, scale=args.scale
        )
    st = res["settings"]
    dig, uci = st["digits"], st["uci"]
    print(
        "python -m benchmarks reproduce lowrank: Kulis, Sustik & Dhillon (JMLR 2009) §7.1 with the low-rank "
        f"LogDet solver{' (QUICK smoke run, not a reproduction)' if args.quick else ''}"
    )
    print(
        f"constraints d <= (1 - eps) b same class, d >= (1 + eps) b different class, b = distance "
        f"under K0, eps = {st['eps']:g}; random pairs; tol {st['tol']:g} (stop: dual change and the "
        "Lagrange certificate); "
        f"kernel k-means: k-means++ seeding, best of {dig['n_init']} restarts; NMI = I / mean entropy"
    )
    if "digits" in parts:
        _print_digits(res, st, dig)
    if "digits_convergence" in parts:
        _print_convergence(res)
    _print_uci(res, st, uci)
    print()
    print(f"({describe(n_jobs, engine)}; the numbers do not depend on it, the seconds do)")
    print(f"reproduction finished in {res['elapsed_s']:.1f} s")
    return 0


_CYCLES = ("cycles min/med/max", "{cycles_min}/{cycles_median:g}/{cycles_max}")


def _print_digits(res, st, dig) -> None:
    print()
    print(
        f"Digits: pendigits {{3, 8, 9}}, 317-point random sample (seed {st['digits_sample_seed']}), "
        f"rank-16 linear kernel (raw features), hard constraints; {dig['n_draws']} draws per row "
        f"(seed {st['seed']})"
    )
    print(
        columns(
            res["digits"],
            [
                ("constraints", "{constraints}"),
                ("NMI (k-means, 3)", lambda r: pm(r["nmi_mean"], r["nmi_std"])),
                ("5-NN accuracy", lambda r: pm(r["knn_mean"], r["knn_std"])),
                _CYCLES,
                ("converged", "{converged}/{draws}"),
                ("feasible (exact)", lambda r: f"{r['feasible']}/{r['draws']}" if r["feasible"] >= 0 else "-"),
                ("median max rel viol", "{viol_median:.1e}"),
                ("solve [s]", "{solve_s:.2g}"),
            ],
        )
    )
    print(
        "(mean ± standard deviation over the draws; 5-NN: random 50/50 split, two folds, "
        "constraints drawn among the training half, kernel learned on all 317 points;"
    )
    print(
        " converged: met tol; feasible: the exact CVXPY model of the same hard constraints has "
        "a feasible point; max rel viol: largest violation / bound of a run)"
    )
    print(f"paper: NMI  {PAPER['digits_nmi']}")
    print(f"paper: k-NN {PAPER['digits_knn']}")
    print(f"paper: cycles {PAPER['digits_cycles']}")


def _print_convergence(res) -> None:
    print()
    conv = res["digits_convergence"]
    verdict = {True: "feasible", False: "infeasible", None: "unknown"}[conv["feasible"]]
    print(
        f"Digits, constraints satisfied vs cycles (Figure 1 right): one draw of {conv['constraints']} "
        f"hard constraints (exact model: {verdict}), each row solved from scratch"
    )
    print(
        columns(
            conv["rows"],
            [
                ("cycles", "{cycles}"),
                ("sweeps run", "{sweeps_run}"),
                ("% satisfied (1e-3 rel)", "{satisfied_pct:.1f}"),
                ("max rel violation", "{max_rel_violation:.2e}"),
            ],
        )
    )
    print(f"paper: {PAPER['digits_satisfied']}")


def _print_uci(res, st, uci) -> None:
    feats = {
        "none": "raw features",
        "standardize": "features standardized (mean 0, sd 1 per column; a side check, not the protocol)",
    }[st["scale"]]
    for name, k, desc in (
        ("spambase", 2, f"4601 x 57, {feats}, rank-57 linear kernel"),
        (
            "nursery",
            5,
            "12960 x 8, attributes coded 0, 1, ... in UCI order "
            f"(not the loader's one-hot), {feats}, rank-8 linear kernel",
        ),
    ):
        if name not in res:
            continue
        print()
        print(
            f"{name.capitalize()}: {desc}, LogDet slack gamma = {st['gamma_uci']:g} (not given in the "
            f"paper), kernel k-means with {k} clusters; {uci['n_draws']} draws per row"
        )
        print(
            columns(
                res[name],
                [
                    ("constraints", "{constraints}"),
                    ("NMI", lambda r: pm(r["nmi_mean"], r["nmi_std"])),
                    _CYCLES,
                    ("converged", "{converged}/{draws}"),
                    ("solve [s]", "{solve_s:.2g}"),
                ],
            )
        )
        print(f"paper: NMI    {PAPER[name + '_nmi']}")
        print(f"paper: cycles {PAPER[name + '_cycles']}")
