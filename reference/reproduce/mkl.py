"""Reproduction of Tables 1 and 2 of Wang, Do, Woznica & Kalousis, "Metric learning with
multiple kernels" (NIPS 2011), on the data available offline.

Table 1 (single source; Sonar, Wine, Iris, Ionosphere, WDBC), per data set:

* ``n_folds``-fold stratified cross-validation (the paper: 10-fold); features
  standardized with the training fold's mean and standard deviation;
* methods, each followed by 1-NN in the learned space:

  - ``NR-LMNN-MKL``: LMNN on the concatenated empirical maps of the linear, polynomial
    degree-2 and Gaussian σ = 0.5 kernels (eq. 12–14; the problem of :class:`LMNNMKL`
    ``variant="NR"``, solved with ``tie_break=Protocol.nr_tie_break``: its optimum is F* = 0,
    attained by a whole face of metrics, and the least-norm member of that face
    (:mod:`cvxkml.formulas._lmnn_face`) makes its accuracy a function of the data, not of the
    solver's path; ``Protocol.nr_path`` picks the path, to check exactly that);
  - ``LMNN-MKL_P``: Algorithm 1 with the rank-one weight step (eq. 15–17) on the paper's
    20 kernels, A initialized to I, μ uniform, W to 0 (:class:`LMNNMKL` ``variant="P"``);
  - ``LMNN_H``: kernel LMNN on the unweighted combination (1/m) Σ_l K_l (the space H;
    the 1/m only rescales and is the starting point of LMNN-MKL_P);
  - ``LMNN-MKL_CV``: one of the 20 kernels chosen by inner 2-fold CV (kernel LMNN on one
    half, 1-NN accuracy on the other, summed over both halves; ties → first kernel),
    then kernel LMNN with it on the whole learning set;
  - ``1-NN``: Euclidean 1-NN on the standardized features;

* every kernel normalized by its mean diagonal on the learning set; LMNN with k = 5,
  γ = 0.5;
* the test predictions of all folds pooled; McNemar's test (continuity-corrected χ²,
  one degree of freedom) at p = 0.05 for every pair of methods; score of a method =
  Σ over the other methods of 1 (significantly better), 0.5 (no significant
  difference), 0 (significantly worse) — the paper's ranking schema.

Table 2 (multiple sources; Multiple Features, ``mfeat.npz``): ``n_splits`` random
stratified 50/50 splits; every source standardized; one Gaussian kernel per source with
σ0 = the mean pairwise distance of that source on the learning set; methods LMNN-MKL_P,
LMNN_H, LMNN-MKL_CV (one of the six source kernels) and Euclidean 1-NN on all
standardized features concatenated; McNemar on the pooled test predictions.

Computational reductions (all knobs of :class:`Protocol`, reported with the results):
every LMNN solve runs at most ``max_iter`` iterations of the certified solver (the
inner-CV solves ``cv_max_iter``; with full-rank kernels the kernel-LMNN optimum is 0 and
is reached only in the limit, see :mod:`cvxkml.declare.lmnn`, so any budget is an early
stop; an LMNN solve also ends, uncertified, when its certified gap has not shrunk by
0.1 % in ``stall_iter`` PDHG iterations, with its best iterate so far), Algorithm 1 at
most ``max_outer`` outer iterations, and when a training fold has
more than ``n_learn`` points the metric (and the weights) are learned on a stratified
random subsample of ``n_learn`` of them; the 1-NN classifier then uses *all* training
points of the fold, mapped by the learned (inductive) map.

The folds of Table 1 and the splits of Table 2 are independent tasks: their random draws
(learning subsample, inner CV halves) are made first, in the order of the serial
protocol, and ``n_jobs`` runs the tasks through joblib (:mod:`.._parallel`; ``cvxkml
reproduce mkl --n-jobs N [--backend dask --scheduler ADDRESS]``) with the same numbers as
the serial run.  With a store (``--resume DIR``) a finished split is kept, and so is
every finished LMNN fit of an unfinished one: a stopped run resumes after the last fit it
finished.  Only the command (``python -m benchmarks reproduce mkl``, :func:`command`, or
:func:`main`) prints.
"""

from __future__ import annotations

import json
import shutil
import time
import warnings
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy.stats import chi2

from benchmarks._commands import CommandError, number_in, opt, script, use
from benchmarks._parallel import ParallelOptions, TaskStore, describe, parallel_from_args, run_tasks, store_folder
from benchmarks._report import finish, write_json, write_numbers
from benchmarks._runner import standardize as _standardize
from benchmarks.bench.estimators import check_folds
from cvxkml.datasets import check_available, load_npz
from cvxkml.datasets import load_dataset as _load_named
from cvxkml.declare.lmnn import LMNNProblem
from cvxkml.errors import ConvergenceWarning, InvalidInputError
from cvxkml.estimators.mkl import LMNN, LMNNMKL
from cvxkml.formulas.lmnn import LMNNTriplets
from cvxkml.mkl_kernels import KernelSet, nr_kernels, paper_kernels, source_kernels

__all__ = [
    "TABLE1_DATASETS",
    "TABLE1_METHODS",
    "TABLE2_METHODS",
    "PAPER_TABLE1",
    "PAPER_TABLE2",
    "Protocol",
    "load_dataset",
    "mcnemar_pvalue",
    "pairwise_scores",
    "run_table1_dataset",
    "run_table2",
    "reproduce",
    "command",
    "data_sets",
    "main",
]

TABLE1_DATASETS = ("sonar", "wine", "iris", "ionosphere", "wdbc")
TABLE1_METHODS = ("NR-LMNN-MKL", "LMNN-MKL_P", "LMNN_H", "LMNN-MKL_CV", "1-NN")
TABLE2_METHODS = ("LMNN-MKL_P", "LMNN_H", "LMNN-MKL_CV", "1-NN")

#: The paper's Table 1 (accuracy %, score) for the five UCI data sets.
PAPER_TABLE1 = {
    name: dict(zip(TABLE1_METHODS, zip(accuracy, score)))
    for name, accuracy, score in (  # per method in the order of TABLE1_METHODS
        ("sonar", (88.46, 85.58, 82.21, 88.46, 82.21), (3.0, 2.0, 1.0, 3.0, 1.0)),
        ("wine", (98.88, 98.88, 98.31, 96.07, 97.19), (2.0, 2.0, 2.0, 2.0, 2.0)),
        ("iris", (93.33, 95.33, 94.67, 94.00, 95.33), (2.0, 2.0, 2.0, 2.0, 2.0)),
        ("ionosphere", (93.73, 94.87, 92.59, 90.88, 86.89), (2.5, 3.0, 2.5, 2.0, 0.0)),
        ("wdbc", (94.90, 97.36, 97.36, 95.96, 95.43), (1.0, 3.5, 3.0, 1.5, 1.0)),
    )
}
#: The paper's Table 2 row for Multiple Features (accuracy %, score).
PAPER_TABLE2 = {"LMNN-MKL_P": (98.79, 3.0), "LMNN_H": (98.44, 1.5), "LMNN-MKL_CV": (98.44, 1.5), "1-NN": (97.86, 0.0)}

MFEAT_SOURCES = ("fou", "fac", "kar", "pix", "zer", "mor")


@dataclass
class Protocol:
    """The knobs of the reproduction (see the module docstring).  The defaults are the
    reduced budgets of the run reported in reference/wang2011-mkl.md (about 45 minutes on
    a loaded 2-core machine); ``n_learn=None``, larger ``max_iter`` / ``max_outer`` /
    ``max_convex_iter`` move towards the paper's protocol at a much higher cost."""

    n_folds: int = 10
    n_splits: int = 10  # Table 2
    max_iter: int = 300  # LMNN iterations per metric step
    cv_max_iter: int = 150  # LMNN iterations per inner-CV fit
    max_outer: int = 2  # Algorithm 1
    max_convex_iter: int = 5  # (15)-(16) iterations per w in the weight step
    tol: float = 1e-5  # certified relative gap of every LMNN metric step
    stall_iter: int = 2000  # LMNN stall rule (PDHG iterations without progress; 0: off)
    n_learn: int | None = 30  # learning-set cap (Table 1)
    n_learn_mfeat: int | None = 60  # learning-set cap (Table 2)
    k: int = 5
    gamma: float = 0.5
    seed: int = 0
    alpha: float = 0.05  # McNemar level
    nr_tie_break: str | None = "min-norm"  # NR-LMNN-MKL's choice on its optimal face (None: the path's)
    nr_path: str = "default"  # NR-LMNN-MKL's solver path (NR_PATHS): the answer must not depend on it
    notes: list = field(default_factory=list)


#: the solver paths of NR-LMNN-MKL (``--nr-path``): the solver's default; the PDHG alone on the
#: triplets in a seeded random order; a warm start at 3 × the default path's whitened answer X̂
#: (identity off the row space) and its multipliers — when F* = 0 a certified optimum of its
#: own, another member of the face
NR_PATHS = ("default", "pdhg-permuted", "warm-3x")


def load_dataset(name: str, data_dir=None) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) of a Table 1 data set: Sonar and Ionosphere from the offline data folder,
    Wine, Iris and WDBC (``load_breast_cancer``) from scikit-learn."""
    key = str(name).lower()
    if key not in TABLE1_DATASETS:
        raise InvalidInputError(f"Unknown data set {name!r}; choose from {TABLE1_DATASETS}.")
    X, y = _load_named(key, data_dir)
    keep = X.std(axis=0) > 0  # constant columns carry nothing (Ionosphere col 2)
    return X[:, keep], y


# --------------------------------------------------------------------------- statistics
def mcnemar_pvalue(correct_a, correct_b) -> float:
    """McNemar's test of two classifiers on the same test points (continuity-corrected
    χ² with one degree of freedom); 1.0 when they never disagree."""
    a = np.asarray(correct_a, dtype=bool)
    b = np.asarray(correct_b, dtype=bool)
    n01 = int(np.sum(a & ~b))
    n10 = int(np.sum(~a & b))
    if n01 + n10 == 0:
        return 1.0
    stat = (abs(n01 - n10) - 1.0) ** 2 / (n01 + n10)
    return float(chi2.sf(stat, 1))


def pairwise_scores(correct: dict, alpha: float = 0.05) -> tuple[dict, dict]:
    """The paper's scores: for every ordered pair (A, B) of methods A gets 1 if it is
    significantly more accurate than B (McNemar, level ``alpha``), 0.5 if not
    significantly different, 0 if significantly worse.  Returns (scores, signs) with
    signs[(A, B)] in {"+", "=", "-"}."""
    names = list(correct)
    scores = {m: 0.0 for m in names}
    signs = {}
    for a in names:
        for b in names:
            if a == b:
                continue
            p = mcnemar_pvalue(correct[a], correct[b])
            acc_a, acc_b = np.mean(correct[a]), np.mean(correct[b])
            if p < alpha and acc_a > acc_b:
                s, sign = 1.0, "+"
            elif p < alpha and acc_a < acc_b:
                s, sign = 0.0, "-"
            else:
                s, sign = 0.5, "="
            scores[a] += s
            signs[(a, b)] = sign
    return scores, signs


# --------------------------------------------------------------------------- helpers
def _stratified_subsample(y, n_max, rng) -> np.ndarray:
    """Indices of a stratified random subsample of at most n_max points (all when fewer)."""
    n = y.size
    if n_max is None or n <= n_max:
        return np.arange(n)
    classes, codes = np.unique(y, return_inverse=True)
    counts = np.bincount(codes)
    take = np.maximum(np.floor(counts * n_max / n).astype(int), 1)
    while take.sum() < n_max:  # hand out the rounding remainder
        c = int(np.argmax(counts - take))
        take[c] += 1
    idx = [
        rng.choice(np.flatnonzero(codes == c), size=int(min(take[c], counts[c])), replace=False)
        for c in range(classes.size)
    ]
    return np.sort(np.concatenate(idx))


def _nn_correct(Ztr, ytr, Zte, yte) -> np.ndarray:
    """1-NN (Euclidean) correctness of every test point."""
    d = np.sum(Zte**2, 1)[:, None] + np.sum(Ztr**2, 1)[None, :] - 2.0 * Zte @ Ztr.T
    return ytr[np.argmin(d, axis=1)] == yte


def _record(sol, method: str, kernel: str | None = None) -> dict:
    """One LMNN fit's record: method, kernel, order of the learned matrix, iterations,
    certification, objective, gap, seconds."""
    gap = sol.gap
    return {
        "method": method,
        "kernel": kernel,
        "order": int(sol.matrix.shape[0]),
        "n_iter": int(sol.n_iter),
        "converged": bool(sol.converged),
        "objective": float(sol.objective),
        "gap": None if gap is None else float(gap),
        "seconds": float(sol.time),
    }


class _Counter:
    """Counts the metric solves that did not reach their certified tolerance, and keeps one
    record per solve (:func:`_record`), so that a report can say where the time went and
    which fits stopped at their budget."""

    def __init__(self):
        self.fits = 0
        self.unconverged = 0
        self.seconds = {}
        self.records = []

    def note(self, records):
        for r in records:
            self.fits += 1
            self.unconverged += int(not r["converged"])
            self.records.append(r)


class _Steps:
    """The fits of one split, each noted in ``counter`` and kept in ``store`` (the split's
    own folder) as soon as it ends, so that a split stopped part way (a session's end)
    resumes after its last finished fit rather than from its start.  ``steps(name, fit)``
    returns ``fit()`` — a plain-data dict (what :class:`TaskStore` stores: no pickle) with the
    fit's ``"records"`` (:func:`_record`) and
    what the split needs of it (test correctness, an inner-CV count, info) — or, when an
    earlier run of this split finished the step ``name``, that run's dict, its records
    marked ``"stored": True``.  Without a store it only calls ``fit()``."""

    def __init__(self, counter: _Counter, store: TaskStore | None = None):
        self.counter = counter
        self.store = store

    def __call__(self, name: str, fit) -> dict:
        key = None if self.store is None else TaskStore.key(step=name)
        out = None if key is None else self.store.load(key)
        if out is not None:
            out["records"] = [{**r, "stored": True} for r in out["records"]]
        else:
            out = fit()
            if key is not None:
                self.store.save(key, out)
        self.counter.note(out["records"])
        return out


def _protocol_scaling(cls) -> dict:
    """``standardize=False`` for an estimator that has the option: the protocol standardizes
    the features on the training fold itself, and the metric is learned on a subsample of
    it (standardizing again with the subsample's statistics would change the protocol)."""
    return {"standardize": False} if "standardize" in cls().get_params() else {}


def _fit_quiet(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(X, y)


def _lmnn_precomputed(K, y, proto: Protocol, max_iter: int) -> LMNN:
    return _fit_quiet(
        LMNN(
            k=proto.k,
            gamma=proto.gamma,
            kernel="precomputed",
            max_iter=max_iter,
            tol=proto.tol,
            stall_iter=proto.stall_iter,
            small_classes="shrink",
        ),
        K,
        y,
    )


def _permuted_triplets(trip: LMNNTriplets, seed: int) -> LMNNTriplets:
    """The same triplets in a seeded random order (what the solver accumulates in that order)."""
    n = trip.n
    keys = trip.target_i * n + trip.target_j
    order = np.argsort(keys, kind="stable")
    entries = order[np.searchsorted(keys[order], trip.trip_i * n + trip.trip_j)]
    perm = np.random.default_rng(seed).permutation(trip.n_triplets)
    return LMNNTriplets.from_impostors(
        trip.codes, trip.k, trip.target_i, trip.target_j, entries[perm], trip.trip_l[perm]
    )


def _fit_nr(Xl, yl, proto: Protocol):
    """NR-LMNN-MKL on the learning points: LMNN on the concatenated maps of the NR kernels
    (:func:`~cvxkml.mkl_kernels.nr_kernels`, the problem :class:`LMNNMKL` ``variant="NR"``
    solves), along the path ``proto.nr_path`` (:data:`NR_PATHS`), with ``tie_break =
    proto.nr_tie_break``.  Returns the Solution and the map x ↦ L (K_1(x, ·), …, K_m(x, ·))
    (A = LᵀL, as :class:`LMNNMKL` ``transform``)."""
    if proto.nr_path not in NR_PATHS:
        raise InvalidInputError(f"Protocol.nr_path must be one of {NR_PATHS}; got {proto.nr_path!r}.")
    ks = nr_kernels()
    Ks = ks.fit_matrices(Xl)
    prob = LMNNProblem.multiple_kernels(Ks, yl, proto.k, proto.gamma, small_classes="shrink")
    opts = {"tol": proto.tol, "max_iter": proto.max_iter, "stall_iter": proto.stall_iter}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if proto.nr_path == "pdhg-permuted":
            trip = _permuted_triplets(prob.triplets, proto.seed + 1)
            prob = LMNNProblem.multiple_kernels(Ks, yl, proto.k, proto.gamma, triplets=trip)
            opts["smooth"] = False
        elif proto.nr_path == "warm-3x":
            first = prob.solve(**opts)
            # 3 × its X̂, the identity kept off the row space (the default path's convention)
            opts["warm_start"] = {"A": prob.matrix_from_whitened(3.0 * first.info["X"]), "alpha": first.dual}
        sol = prob.solve(tie_break=proto.nr_tie_break, **opts)
    L = prob.factor(sol.info["X"], sol.info.get("complement"))
    return sol, lambda X: np.hstack(ks.cross_matrices(X, Xl)) @ L.T


def _run_methods(
    Xl,
    yl,
    Xtr,
    ytr,
    Xte,
    yte,
    kernels: KernelSet,
    methods,
    proto: Protocol,
    counter: _Counter,
    halves=None,
    fit_store: TaskStore | None = None,
    cv_label: str | None = None,
) -> dict:
    """All methods on one training/test split: learning set (Xl, yl) ⊂ training set
    (Xtr, ytr); ``halves`` the inner two folds of the learning set (LMNN-MKL_CV, drawn
    by :func:`_plan_split`); every LMNN fit a step of :class:`_Steps` (noted in
    ``counter``, kept in ``fit_store`` for a resumed run); returns {method: boolean
    correctness on the test points} and info.  ``cv_label``: LMNN-MKL_CV's kernel as an earlier
    run chose it (its inner CV is not run again; ``info["cv_kernel_recorded"]``)."""
    out, info = {}, {}
    m = len(kernels)
    steps = _Steps(counter, fit_store)

    def tick(name, t0):
        counter.seconds[name] = counter.seconds.get(name, 0.0) + time.perf_counter() - t0

    if "1-NN" in methods:
        t0 = time.perf_counter()
        out["1-NN"] = _nn_correct(Xtr, ytr, Xte, yte)
        tick("1-NN", t0)
    if "NR-LMNN-MKL" in methods:
        t0 = time.perf_counter()

        def fit_nr():
            sol, embed = _fit_nr(Xl, yl, proto)
            record = _record(sol, "NR-LMNN-MKL")
            if "tie_break" in sol.info:
                record["tie_break"] = sol.info["tie_break"]
                record["path_objective"] = sol.info.get("path_objective")
            return {"records": [record], "correct": _nn_correct(embed(Xtr), ytr, embed(Xte), yte)}

        r = steps("NR-LMNN-MKL", fit_nr)
        out["NR-LMNN-MKL"] = r["correct"]
        tick("NR-LMNN-MKL", t0)
    if "LMNN-MKL_P" in methods:
        t0 = time.perf_counter()

        def fit_p():
            est = _fit_quiet(
                LMNNMKL(
                    variant="P",
                    kernels=KernelSet(kernels.kernels),
                    k=proto.k,
                    tol=proto.tol,
                    gamma=proto.gamma,
                    max_iter=proto.max_iter,
                    stall_iter=proto.stall_iter,
                    max_outer=proto.max_outer,
                    max_convex_iter=proto.max_convex_iter,
                    small_classes="shrink",
                    **_protocol_scaling(LMNNMKL),
                ),
                Xl,
                yl,
            )
            res = est.result_
            return {
                "records": [_record(est.solution_, "LMNN-MKL_P")],
                "correct": _nn_correct(est.transform(Xtr), ytr, est.transform(Xte), yte),
                "info": {
                    "mu": [float(v) for v in est.weights_],
                    "outer_iterations": int(res.n_outer),
                    "outer_converged": bool(res.converged),
                    "objective_path": [float(h["objective"]) for h in res.history],
                    "rank_one": [bool(h.get("rank_one")) for h in res.history[1:]],
                    "w": [h.get("w") for h in res.history[1:]],
                },
            }

        r = steps("LMNN-MKL_P", fit_p)
        out["LMNN-MKL_P"] = r["correct"]
        info.update(r["info"])
        tick("LMNN-MKL_P", t0)
    need_k = any(x in methods for x in ("LMNN_H", "LMNN-MKL_CV"))
    if need_k:
        ks = KernelSet(kernels.kernels)
        Kl = ks.fit_matrices(Xl)
        Ktr = ks.cross_matrices(Xtr, Xl)
        Kte = ks.cross_matrices(Xte, Xl)
    if "LMNN_H" in methods:
        t0 = time.perf_counter()

        def fit_h():
            est = _lmnn_precomputed(sum(Kl) / m, yl, proto, proto.max_iter)
            return {
                "records": [_record(est.solution_, "LMNN_H")],
                "correct": _nn_correct(est.transform(sum(Ktr) / m), ytr, est.transform(sum(Kte) / m), yte),
            }

        r = steps("LMNN_H", fit_h)
        out["LMNN_H"] = r["correct"]
        tick("LMNN_H", t0)
    if "LMNN-MKL_CV" in methods:
        t0 = time.perf_counter()
        score = np.zeros(m)
        labels = kernels.labels()
        if cv_label is not None:
            score[labels.index(cv_label)] = 1.0
            info["cv_kernel_recorded"] = True
        for l in range(m if cv_label is None else 0):
            for h, (a, b) in enumerate((halves, halves[::-1])):

                def fit_inner(l=l, a=a, b=b):
                    est = _lmnn_precomputed(Kl[l][np.ix_(a, a)], yl[a], proto, proto.cv_max_iter)
                    hits = _nn_correct(
                        est.transform(Kl[l][np.ix_(a, a)]), yl[a], est.transform(Kl[l][np.ix_(b, a)]), yl[b]
                    ).sum()
                    return {"records": [_record(est.solution_, "LMNN-MKL_CV inner", labels[l])], "hits": int(hits)}

                r = steps(f"LMNN-MKL_CV inner {l} {h}", fit_inner)
                score[l] += r["hits"]
        best = int(np.argmax(score))

        def fit_cv():
            est = _lmnn_precomputed(Kl[best], yl, proto, proto.max_iter)
            return {
                "records": [_record(est.solution_, "LMNN-MKL_CV", labels[best])],
                "correct": _nn_correct(est.transform(Ktr[best]), ytr, est.transform(Kte[best]), yte),
            }

        r = steps(f"LMNN-MKL_CV {best}", fit_cv)
        out["LMNN-MKL_CV"] = r["correct"]
        info["cv_kernel"] = labels[best]
        tick("LMNN-MKL_CV", t0)
    return out, info


def _two_folds(y, rng):
    """A stratified random halving of the indices of y."""
    a, b = [], []
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        h = idx.size // 2
        a.append(idx[:h])
        b.append(idx[h:])
    return np.sort(np.concatenate(a)), np.sort(np.concatenate(b))


def _stratified_folds(y, n_folds, rng) -> list[np.ndarray]:
    """Test indices of ``n_folds`` stratified folds."""
    folds = [[] for _ in range(n_folds)]
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        for f, part in enumerate(np.array_split(idx, n_folds)):
            folds[f].append(part)
    return [np.sort(np.concatenate(f)) for f in folds]


def _summarize(correct: dict, alpha: float) -> dict:
    scores, signs = pairwise_scores(correct, alpha)
    return {
        "accuracy": {m: float(100.0 * np.mean(v)) for m, v in correct.items()},
        "n_test": int(next(iter(correct.values())).size),
        "score": scores,
        "mcnemar": {f"{a} vs {b}": s for (a, b), s in signs.items()},
        "pvalues": {f"{a} vs {b}": mcnemar_pvalue(correct[a], correct[b]) for a in correct for b in correct if a < b},
    }


# --------------------------------------------------------------------------- one split
def _plan_split(y, tr, n_learn, methods, rng) -> tuple[np.ndarray, tuple | None]:
    """The random draws of one outer split, in the order the serial protocol makes them
    from the shared generator: the learning subsample of the training part, then (for
    LMNN-MKL_CV) the inner two folds of the learning set (drawn for every method subset, so a
    run of some methods sees the draws of a run of all).  Drawn for every split before any
    fit, so that the splits can run as independent tasks with the same numbers."""
    ytr = y[tr]
    sub = _stratified_subsample(ytr, n_learn, rng)
    halves = _two_folds(ytr[sub], rng)  # drawn whatever the methods: the same stream for a subset
    return sub, halves


def _kernels_for(spec, Z) -> KernelSet:
    """The kernels of a split: ``"paper"`` (the 20 kernels of Table 1) or ``("sources",
    cols)`` (one Gaussian kernel per source of Table 2, σ0 from the learning points Z)."""
    if spec == "paper":
        return paper_kernels()
    return source_kernels(Z, spec[1])


def _split_task(task) -> dict:
    """One outer split (a fold of Table 1, a random split of Table 2) as an independent
    task: features standardized on the training part, metrics learned on the planned
    learning subsample, the test points' 1-NN correctness of every method.  Returns
    {"correct", "info" (``seconds``: the split's own wall time, without the fits loaded
    from the store), "fits", "unconverged", "seconds" (per method), "kernels"}.  The task
    is the 10-tuple of :func:`_split_key`, then the folder that keeps this split's finished
    fits (or None)."""
    X, y, tr, te, sub, halves, kernel_spec, methods, proto, cv_label, fit_dir = task
    t0 = time.perf_counter()
    Xtr, Xte = _standardize(X[tr], X[te])  # per column (Table 2: per source)
    ytr, yte = y[tr], y[te]
    kernels = _kernels_for(kernel_spec, Xtr[sub])
    counter = _Counter()
    res, info = _run_methods(
        Xtr[sub],
        ytr[sub],
        Xtr,
        ytr,
        Xte,
        yte,
        kernels,
        methods,
        proto,
        counter,
        halves,
        fit_store=None if fit_dir is None else TaskStore(fit_dir),
        cv_label=cv_label,
    )
    info.update(
        n_train=int(tr.size),
        n_learn=int(sub.size),
        n_test=int(te.size),
        accuracy={m: float(np.mean(res[m])) for m in methods},
        test_index=[int(v) for v in te],
        correct={m: [int(v) for v in res[m]] for m in methods},
        seconds=time.perf_counter() - t0,
        lmnn_fits=counter.records,
    )
    return {
        "correct": res,
        "info": info,
        "fits": counter.fits,
        "unconverged": counter.unconverged,
        "seconds": counter.seconds,
        "kernels": kernels.labels(),
    }


def _split_key(X, y, task) -> str:
    """The :class:`~benchmarks._parallel.TaskStore` key of one split task: the
    data's bytes, the split's indices and draws, the kernels, the methods and every knob of
    the protocol that changes numbers (not its notes).  ``task``: (X, y, train, test,
    learning subsample, inner halves, kernel spec, methods, protocol, LMNN-MKL_CV's recorded
    kernel or None)."""
    _, _, tr, te, sub, halves, kernel_spec, methods, proto, cv_label = task
    recorded = {} if cv_label is None else {"cv_kernel": cv_label}
    knobs = {k: v for k, v in asdict(proto).items() if k != "notes"}
    return TaskStore.key(
        X,
        y,
        tr,
        te,
        sub,
        *(halves or ()),
        command="reproduce mkl",
        kernels=kernel_spec,
        methods=list(methods),
        protocol=knobs,
        **recorded,
    )


def _run_splits(
    X,
    y,
    parts,
    plans,
    kernel_spec,
    methods,
    proto: Protocol,
    t0: float,
    log,
    labels,
    n_jobs,
    store: TaskStore | None = None,
    cv_labels=None,
) -> tuple[list, dict, _Counter]:
    """Every outer split of ``parts`` ([(train, test)]), with the draws ``plans`` of
    :func:`_plan_split`, through :func:`benchmarks._parallel.run_tasks` (with
    ``store``: splits finished by an earlier run are loaded, new ones saved, and every LMNN
    fit of an unfinished split is kept in ``fits/<split key>``, so that a split stopped
    part way resumes after its last finished fit; that folder goes once the split is saved).
    Returns (per-split results, pooled correctness lists, fit counter)."""
    cv_labels = [None] * len(parts) if cv_labels is None else list(cv_labels)
    tasks = [
        (X, y, tr, te, sub, halves, kernel_spec, tuple(methods), proto, cv)
        for (tr, te), (sub, halves), cv in zip(parts, plans, cv_labels)
    ]
    keys = [_split_key(X, y, t) for t in tasks] if store is not None else None
    fit_dirs = [store.directory / "fits" / key for key in keys] if store is not None else [None] * len(tasks)
    tasks = [t + (fit_dirs[k],) for k, t in enumerate(tasks)]
    was_stored = [key in store for key in keys] if store is not None else [False] * len(tasks)

    def done(k, r):  # after run_tasks saved the split: its fits are redundant
        if fit_dirs[k] is not None:
            shutil.rmtree(fit_dirs[k], ignore_errors=True)
        if log:
            log(
                f"{labels[k]} ({'stored, ' if was_stored[k] else ''}{time.perf_counter() - t0:.0f} s so far): "
                + ", ".join(f"{m} {100 * a:.1f}" for m, a in r["info"]["accuracy"].items())
            )

    results = run_tasks(_split_task, tasks, n_jobs, callback=done, store=store, keys=keys)
    correct = {m: [r["correct"][m] for r in results] for m in methods}
    counter = _Counter()
    for r in results:
        counter.fits += r["fits"]
        counter.unconverged += r["unconverged"]
        for name, sec in r["seconds"].items():
            counter.seconds[name] = counter.seconds.get(name, 0.0) + sec
    return results, correct, counter


def _pooled(correct: dict, proto: Protocol, counter: _Counter, t0: float, **fields) -> dict:
    """The summary of the pooled test predictions (:func:`_summarize`), then ``fields``,
    the fit counts and the time."""
    out = _summarize({m: np.concatenate(v) for m, v in correct.items()}, proto.alpha)
    out.update(fields)
    out.update(
        fits=counter.fits,
        unconverged_fits=counter.unconverged,
        method_seconds=counter.seconds,
        seconds=time.perf_counter() - t0,
    )
    return out


# --------------------------------------------------------------------------- Table 1
def run_table1_dataset(
    name: str,
    proto: Protocol,
    methods=TABLE1_METHODS,
    data_dir=None,
    max_folds: int | None = None,
    log=None,
    n_jobs: int | None = 1,
    store: TaskStore | None = None,
    cv_kernels=None,
) -> dict:
    """Table 1 protocol on one data set.

    Parameters
    ----------
    name : str
        One of :data:`TABLE1_DATASETS`.
    proto : Protocol
        The protocol (folds, LMNN and Algorithm 1 settings) of the run.
    methods : tuple of str, default TABLE1_METHODS
        The methods of Table 1 to run.
    data_dir : str or Path, optional
        The offline data folder.
    max_folds : int, optional
        Run only the first folds of the ``n_folds``-fold split (a reduction, reported).
    log : callable, optional
        ``log(str)`` receives a line per fold.
    n_jobs : int or None, default 1
        The folds run as independent tasks through
        :func:`benchmarks._parallel.run_tasks` (their random draws made first,
        in order); the numbers do not depend on it.
    store : TaskStore, optional
        Folds finished by an earlier run with the same data, protocol and draws are loaded
        from it instead of run again; every newly finished fold is saved to it.
    cv_kernels : list of str, optional
        LMNN-MKL_CV's kernel per fold as an earlier run of the same protocol chose it
        (``per_fold[f]["cv_kernel"]`` of its JSON): its 40 inner-CV fits a fold are not run
        again, only the refit on the recorded kernel — the same numbers at a few percent of
        the cost, when nothing that decides the inner CV changed since.

    Returns
    -------
    dict
        The pooled summary (accuracy, scores, McNemar signs), the per-fold details, the
        fit counts and the seconds.
    """
    t0 = time.perf_counter()
    X, y = load_dataset(name, data_dir)
    check_folds(y, proto.n_folds, name, "--n-folds")
    rng = np.random.default_rng(proto.seed)
    folds = _stratified_folds(y, proto.n_folds, rng)
    if max_folds is not None:
        folds = folds[:max_folds]
    parts = [(np.setdiff1d(np.arange(y.size), te), te) for te in folds]
    labels = [f"{name} fold {f + 1}/{len(folds)}" for f in range(len(folds))]
    plans = [_plan_split(y, tr, proto.n_learn, methods, rng) for tr, _ in parts]
    if cv_kernels is not None and len(cv_kernels) < len(folds):
        raise InvalidInputError(f"{name}: {len(cv_kernels)} recorded LMNN-MKL_CV kernels for {len(folds)} folds.")
    results, correct, counter = _run_splits(
        X, y, parts, plans, "paper", methods, proto, t0, log, labels, n_jobs, store, cv_kernels
    )
    per_fold = [{"fold": f, **r["info"]} for f, r in enumerate(results)]
    return _pooled(
        correct,
        proto,
        counter,
        t0,
        dataset=name,
        n=int(y.size),
        d=int(X.shape[1]),
        folds_run=len(folds),
        n_folds=proto.n_folds,
        per_fold=per_fold,
    )


# --------------------------------------------------------------------------- Table 2
def run_table2(
    proto: Protocol,
    data_dir=None,
    methods=TABLE2_METHODS,
    n_splits: int | None = None,
    log=None,
    n_jobs: int | None = 1,
    store: TaskStore | None = None,
) -> dict:
    """Table 2 protocol on Multiple Features (six sources, random 50/50 splits); the
    splits run as independent tasks with ``n_jobs``, finished ones kept in ``store`` (see
    :func:`run_table1_dataset`)."""
    t0 = time.perf_counter()
    data = load_npz("mfeat", data_dir)
    y = data["y"]
    views = [data[v] for v in MFEAT_SOURCES]
    widths = np.cumsum([0] + [v.shape[1] for v in views])
    X = np.hstack(views)
    cols = {v: np.arange(widths[i], widths[i + 1]) for i, v in enumerate(MFEAT_SOURCES)}
    rng = np.random.default_rng(proto.seed)
    n_splits = proto.n_splits if n_splits is None else n_splits
    # the serial protocol draws split s, then its learning subsample and inner folds, then
    # split s + 1: the plan below keeps that order
    parts, plans = [], []
    for _ in range(n_splits):
        tr, te = _two_folds(y, rng)
        parts.append((tr, te))
        plans.append(_plan_split(y, tr, proto.n_learn_mfeat, methods, rng))
    labels = [f"mfeat split {s + 1}/{n_splits}" for s in range(n_splits)]
    results, correct, counter = _run_splits(
        X, y, parts, plans, ("sources", cols), methods, proto, t0, log, labels, n_jobs, store
    )
    per_split = [{"split": s, **r["info"], "kernels": r["kernels"]} for s, r in enumerate(results)]
    return _pooled(correct, proto, counter, t0, dataset="mfeat", splits_run=n_splits, per_split=per_split)


# --------------------------------------------------------------------------- driver
def quick_protocol() -> Protocol:
    """A smoke-test protocol: tiny budgets (seconds, not minutes)."""
    return Protocol(
        n_folds=3,
        n_splits=1,
        max_iter=20,
        cv_max_iter=10,
        max_outer=1,
        n_learn=21,
        n_learn_mfeat=40,
        notes=["quick smoke run: numbers are not a reproduction"],
    )


def reproduce(
    proto: Protocol | None = None,
    datasets=TABLE1_DATASETS,
    table2: bool = True,
    max_folds: int | None = None,
    n_splits: int | None = None,
    data_dir=None,
    callback=None,
    log=None,
    n_jobs: int | None = 1,
    store: TaskStore | None = None,
    methods=TABLE1_METHODS,
    cv_kernels=None,
) -> dict:
    """Run Table 1 on ``datasets`` (the Table 1 ``methods``) and (``table2``) Table 2; returns all numbers.
    ``callback(key, result)`` is called after every data set (progress, partial saves);
    ``n_jobs``: the folds and splits of each data set as independent tasks; ``store``:
    finished folds and splits kept for a resumed run; ``cv_kernels``: {data set: LMNN-MKL_CV's
    recorded kernel per fold} (see :func:`run_table1_dataset`)."""
    proto = proto or Protocol()
    check_available(tuple(datasets) + (("mfeat",) if table2 else ()), data_dir)
    for name in datasets:  # every data set's folds, before the first fit
        check_folds(load_dataset(name, data_dir)[1], proto.n_folds, name, "--n-folds")
    t0 = time.perf_counter()
    out = {"protocol": asdict(proto), "methods": list(methods), "table1": {}, "table2": None}
    for name in datasets:
        r = run_table1_dataset(
            name,
            proto,
            methods=methods,
            data_dir=data_dir,
            max_folds=max_folds,
            log=log,
            n_jobs=n_jobs,
            store=store,
            cv_kernels=None if cv_kernels is None else cv_kernels[name],
        )
        out["table1"][name] = r
        if callback:
            callback(name, r)
    if table2:
        r = run_table2(proto, data_dir=data_dir, n_splits=n_splits, log=log, n_jobs=n_jobs, store=store)
        out["table2"] = r
        if callback:
            callback("mfeat", r)
    out["elapsed_s"] = time.perf_counter() - t0
    return out


def _fmt_row(name, r, methods, paper=None):
    cells = []
    for m in (m for m in methods if m in r["accuracy"]):
        sign = ""
        if m in ("NR-LMNN-MKL", "LMNN-MKL_P"):
            sign = "".join(r["mcnemar"].get(f"{m} vs {b}", "") for b in ("LMNN_H", "LMNN-MKL_CV"))
        cell = f"{r['accuracy'][m]:6.2f}{sign:>2}({r['score'][m]:.1f})"
        if paper:
            cell += f" [{paper[m][0]:.2f}({paper[m][1]:.1f})]"
        cells.append(cell)
    return f"{name:<11}" + "  ".join(cells)


def format_report(res: dict) -> str:
    lines = [
        "Wang et al. 2011 Table 1 (ours: accuracy %, McNemar vs LMNN_H / LMNN-MKL_CV, score; [paper])",
        "           " + "  ".join(f"{m:<22}" for m in res.get("methods", TABLE1_METHODS)),
    ]
    for name, r in res["table1"].items():
        lines.append(_fmt_row(name, r, TABLE1_METHODS, PAPER_TABLE1.get(name)))
        lines.append(
            f"{'':11}folds {r['folds_run']}/{r['n_folds']}, {r['fits']} LMNN fits "
            f"({r['unconverged_fits']} not certified: iteration budget or stall rule), {r['seconds']:.0f} s"
        )
    if res.get("table2"):
        r = res["table2"]
        lines += [
            "",
            "Table 2, Multiple Features (" + ", ".join(TABLE2_METHODS) + ")",
            _fmt_row("mfeat", r, TABLE2_METHODS, PAPER_TABLE2),
            f"{'':11}splits {r['splits_run']}, {r['fits']} LMNN fits, {r['seconds']:.0f} s",
        ]
    p = res["protocol"]
    lines += ["", "protocol: " + ", ".join(f"{k}={v}" for k, v in p.items() if k != "notes")]
    lines += [f"note: {n}" for n in p.get("notes", [])]
    return "\n".join(lines)


def _protocol_from_args(args) -> Protocol:
    proto = quick_protocol() if args.quick else Protocol()
    for key in (
        "n_folds",
        "n_splits",
        "max_iter",
        "cv_max_iter",
        "max_outer",
        "max_convex_iter",
        "tol",
        "stall_iter",
        "n_learn",
        "seed",
    ):
        v = getattr(args, key, None)
        if v is not None:
            setattr(proto, key, v)
    if getattr(args, "n_learn_mfeat", None) is not None:
        proto.n_learn_mfeat = args.n_learn_mfeat
    if getattr(args, "nr_tie_break", None) is not None:
        proto.nr_tie_break = None if args.nr_tie_break == "none" else args.nr_tie_break
    if getattr(args, "nr_path", None) is not None:
        proto.nr_path = args.nr_path
    if proto.stall_iter < 0:
        raise CommandError(f"--stall-iter must be 0 (off) or a positive number of iterations; got {proto.stall_iter}")
    if proto.n_learn is not None and proto.n_learn <= 0:
        proto.n_learn = None
    if proto.n_learn_mfeat is not None and proto.n_learn_mfeat <= 0:
        proto.n_learn_mfeat = None
    return proto


def _methods_of(args) -> tuple:
    """The Table 1 methods of ``python -m benchmarks reproduce mkl`` (``--methods``, in table
    order; 1-NN always, the baseline every score is against)."""
    chosen = set(getattr(args, "methods", None) or TABLE1_METHODS) | {"1-NN"}
    return tuple(m for m in TABLE1_METHODS if m in chosen)


def _recorded_cv_kernels(args, datasets) -> dict | None:
    """{data set: LMNN-MKL_CV's kernel per fold} from the JSON of ``--cv-kernels-from``."""
    path = getattr(args, "cv_kernels_from", None)
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            table1 = json.load(fh)["table1"]
        return {name: [f["cv_kernel"] for f in table1[name]["per_fold"]] for name in datasets}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CommandError(
            f"--cv-kernels-from {path}: not a JSON of this command with LMNN-MKL_CV's kernel of every "
            f"fold of {', '.join(datasets)} ({type(exc).__name__}: {exc})"
        ) from exc


def _table1_of(args) -> tuple:
    """The Table 1 data sets of ``python -m benchmarks reproduce mkl``."""
    return () if args.no_table1 else tuple(args.datasets or (("iris",) if args.quick else TABLE1_DATASETS))


def data_sets(args) -> tuple:
    """Every data set ``python -m benchmarks reproduce mkl`` reads (checked before it starts)."""
    return _table1_of(args) + (() if args.no_table2 else ("mfeat",))


def command(args) -> int:
    """``python -m benchmarks reproduce mkl``: Tables 1-2 with the protocol of the options."""
    if args.no_table1 and args.no_table2:
        raise CommandError("--no-table1 and --no-table2 leave nothing to run; give at most one of them")
    proto = _protocol_from_args(args)
    datasets = _table1_of(args)
    table2 = not args.no_table2
    t0 = time.perf_counter()
    partial = {}

    def progress(key, r):
        partial[key] = r
        print(
            f"[{time.perf_counter() - t0:7.1f} s] {key}: "
            + ", ".join(f"{m} {a:.2f}" for m, a in r["accuracy"].items()),
            flush=True,
        )
        if args.out:
            write_json(args.out, {"protocol": asdict(proto), "partial": partial})

    with parallel_from_args(args) as (n_jobs, engine):
        res = reproduce(
            proto,
            datasets=datasets,
            table2=table2,
            max_folds=args.max_folds,
            n_splits=1 if (args.quick and args.n_splits is None) else None,
            data_dir=args.data_dir,
            callback=progress,
            n_jobs=n_jobs,
            store=TaskStore(args.resume) if args.resume else None,
            methods=_methods_of(args),
            cv_kernels=_recorded_cv_kernels(args, datasets),
            log=lambda line: print(f"[{time.perf_counter() - t0:7.1f} s] {line}", flush=True),
        )
    print()
    print(format_report(res))
    print(f"({describe(n_jobs, engine)}; the numbers do not depend on it, the seconds do)")
    write_numbers(args.out, res)
    return finish("reproduce mkl", t0)


#: the options of ``python -m benchmarks reproduce mkl`` (its row of the command table) and of :func:`main`
OPTIONS = (
    use("quick", "Iris, 3 folds, tiny budgets, Table 2 with one split of 40 learning points (smoke run)"),
    opt(
        "--datasets",
        nargs="+",
        choices=TABLE1_DATASETS,
        default=None,
        help="Table 1 data sets (default all five; quick: iris)",
    ),
    opt("--no-table2", action="store_true", help="skip Table 2 (Multiple Features)"),
    opt("--n-folds", dest="n_folds", type=int, default=None, help="CV folds (default 10)"),
    opt(
        "--max-folds",
        dest="max_folds",
        type=int,
        default=None,
        help="run only the first folds of the CV split (reduction)",
    ),
    opt("--n-splits", dest="n_splits", type=int, default=None, help="Table 2 random 50/50 splits (default 10)"),
    opt(
        "--max-iter",
        dest="max_iter",
        type=int,
        default=None,
        help="LMNN iterations per metric step (default 300)",
    ),
    opt(
        "--cv-max-iter",
        dest="cv_max_iter",
        type=int,
        default=None,
        help="LMNN iterations per inner-CV fit (default 150)",
    ),
    opt("--max-outer", dest="max_outer", type=int, default=None, help="Algorithm 1 outer iterations (default 2)"),
    opt(
        "--max-convex-iter",
        dest="max_convex_iter",
        type=int,
        default=None,
        help="(15)-(16) iterations per w in the rank-one weight step (default 5)",
    ),
    opt(
        "--tol",
        type=number_in("--tol", 0.0, 1.0),
        default=None,
        help="certified relative gap of every LMNN metric step, in (0, 1) (default 1e-5; "
        "the estimators' default is 1e-3)",
    ),
    opt(
        "--stall-iter",
        dest="stall_iter",
        type=int,
        default=None,
        help="stop an LMNN solve after this many PDHG iterations without its certified gap "
        "shrinking by 0.1 %% (default 2000; 0: run every solve to its budget)",
    ),
    opt("--no-table1", action="store_true", help="skip Table 1 (run Table 2 only)"),
    opt(
        "--methods",
        nargs="+",
        choices=TABLE1_METHODS,
        default=None,
        help="Table 1 methods to run (default all; 1-NN always runs); scores and McNemar signs "
        "are then among these only",
    ),
    opt(
        "--cv-kernels-from",
        dest="cv_kernels_from",
        default=None,
        metavar="JSON",
        help="take LMNN-MKL_CV's kernel of every fold from this earlier run's JSON instead of "
        "running its inner CV again (only the refit runs; the same numbers when nothing that "
        "decides the inner CV changed)",
    ),
    opt(
        "--nr-tie-break",
        dest="nr_tie_break",
        choices=("min-norm", "none"),
        default=None,
        help="NR-LMNN-MKL's choice among the metrics of its optimal face when F* = 0: the least "
        "norm ('min-norm', the default) or the solver path's own ('none')",
    ),
    opt(
        "--nr-path",
        dest="nr_path",
        choices=NR_PATHS,
        default=None,
        help="NR-LMNN-MKL's solver path (default 'default'): another path must give the same "
        "numbers with the tie-break",
    ),
    opt(
        "--n-learn",
        dest="n_learn",
        type=int,
        default=None,
        help="learn on at most this many training points (default 30; 0 = all)",
    ),
    opt(
        "--n-learn-mfeat",
        dest="n_learn_mfeat",
        type=int,
        default=None,
        help="the same for Table 2 (default 60; 0 = all 1000)",
    ),
    use("seed", "seed of folds and subsamples (default 0)", default=None),
    use("out", "write all numbers as JSON to this file", default=None),
    opt(
        "--resume",
        type=store_folder,
        default=None,
        metavar="DIR",
        help="keep every finished fold / split (and every finished LMNN fit of an unfinished "
        "one, in DIR/fits) in this folder and load, instead of rerunning, those an earlier "
        "run of the same code with the same data, protocol and draws finished",
    ),
    use("data_dir", "folder holding sonar.csv, ionosphere.csv, mfeat.npz (default: $CVXKML_DATA or ../shared/data)"),
    ParallelOptions("folds (Table 1) and splits (Table 2)"),
)


def main(argv=None) -> int:
    """``python -m reference.reproduce.mkl [options]`` (the options of ``python -m benchmarks reproduce mkl``)."""
    return script(
        "python -m reference.reproduce.mkl",
        command,
        OPTIONS,
        data_sets,
        argv,
        description=__doc__.split("\n")[0],
    )


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
