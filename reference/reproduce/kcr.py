"""Reproduction of Table 1 of Sriperumbudur, Lang & Lanckriet (ICML 2008): k-NN and the
kernel classification rule (KCR) on Balance, Ionosphere, Iris and Wine.

Protocol (the paper's, with the details it leaves open fixed as below):

* ``n_splits`` random splits, stratified by class, 50 % training / 20 % validation /
  30 % test (split sizes rounded per class);
* features standardized with the training split's mean and standard deviation (the
  paper does not say how features are scaled; without scaling ν would mean different
  things per data set);
* k-NN: Euclidean, k ∈ ``ks`` chosen by validation error (ties → smallest k);
* KCR: Gaussian kernel exp(−ν‖x − y‖²), (ν, λ) ∈ ``nus`` × ``lams`` chosen by
  validation error (ties → largest λ, then smallest ν: the most regularized); the SDP
  (eq. 9) solved by the certified PDHG solver (:meth:`cvxkml.declare.KCR.solve`) to
  relative gap ``tol`` with at most ``max_iter`` iterations / ``time_limit`` seconds per
  fit, warm-started along decreasing λ for each ν; the rule of eq. 2 with the naïve
  kernel and ``tie_break="nearest"``;
* train error = resubstitution error on the training split (each training point is
  classified by the rule fitted on the training split, itself included — the paper's
  resubstitution estimate L̂(g_n)); test error on the test split.

Every fit's certified gap, convergence flag and time are kept, so the report says how
many fits met the tolerance.  The fits of one ν on one split (warm-started along λ) are an
independent task: ``n_jobs`` runs them through joblib (:mod:`.._parallel`; ``cvxkml
reproduce kcr --n-jobs N [--backend dask --scheduler ADDRESS]``) with the same numbers
as the serial run.  Only the command ``python -m benchmarks reproduce kcr`` (:func:`command`) prints.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from benchmarks._parallel import describe, parallel_from_args, run_tasks
from benchmarks._report import finish, format_table, write_numbers
from benchmarks._runner import standardize as _standardize
from cvxkml.datasets import check_available
from cvxkml.datasets import load_dataset as _load_named
from cvxkml.declare.kcr import KCR
from cvxkml.errors import ConvergenceWarning, InvalidInputError
from cvxkml.formulas.kcr import rule_predict
from cvxkml.kernels import gaussian_kernel

__all__ = [
    "DATASETS",
    "FULL_NUS",
    "FULL_LAMS",
    "KS",
    "PAPER_TABLE1",
    "Protocol",
    "load_dataset",
    "stratified_split",
    "knn_errors",
    "kcr_grid",
    "run_dataset",
    "reproduce",
    "command",
    "data_sets",
]

DATASETS = ("balance", "ionosphere", "iris", "wine")
FULL_NUS = tuple(2.0**i for i in range(-4, 5))
FULL_LAMS = tuple(10.0**i for i in range(-3, 4))
KS = (1, 3, 5, 7, 9, 11, 13, 15)

#: The paper's Table 1, k-NN and KCR columns: error % (mean, std) over its 20 splits.
PAPER_TABLE1 = {
    name: dict(zip(("knn_train", "knn_test", "kcr_train", "kcr_test"), cells))
    for name, *cells in (
        ("balance", (17.81, 1.86), (18.18, 1.88), (10.47, 2.11), (8.94, 3.12)),
        ("ionosphere", (15.89, 1.43), (15.95, 3.03), (2.73, 1.03), (5.71, 2.60)),
        ("iris", (4.30, 1.55), (4.02, 2.22), (2.29, 1.62), (3.27, 1.87)),
        ("wine", (5.89, 1.35), (6.22, 2.70), (1.01, 0.73), (2.13, 1.24)),
    )
}


@dataclass
class Protocol:
    """The knobs of the reproduction (defaults: the paper's grid and split sizes)."""

    n_splits: int = 20
    nus: tuple = FULL_NUS
    lams: tuple = FULL_LAMS
    ks: tuple = KS
    fractions: tuple = (0.5, 0.2, 0.3)
    tol: float = 1e-3
    max_iter: int = 20_000
    time_limit: float | None = None
    seed: int = 0
    notes: list = field(default_factory=list)


def load_dataset(name: str, data_dir=None) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) of one of :data:`DATASETS` (Iris and Wine from scikit-learn, the others
    from the offline data folder)."""
    key = str(name).lower()
    if key not in DATASETS:
        raise InvalidInputError(f"Unknown data set {name!r}; choose from {DATASETS}.")
    return _load_named(key, data_dir)


def stratified_split(y, rng, fractions=(0.5, 0.2, 0.3)) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random train / validation / test indices, stratified by class: in each class the
    first round(f_train·n_c) shuffled points train, the next round(f_val·n_c) validate,
    the rest test."""
    y = np.asarray(y)
    tr, va, te = [], [], []
    for cls in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == cls))
        a = int(round(fractions[0] * idx.size))
        b = a + int(round(fractions[1] * idx.size))
        tr.append(idx[:a])
        va.append(idx[a:b])
        te.append(idx[b:])
    return tuple(np.sort(np.concatenate(p)) for p in (tr, va, te))


def _sq_euclid(A, B):
    D = np.einsum("ij,ij->i", A, A)[:, None] + np.einsum("ij,ij->i", B, B)[None, :] - 2.0 * A @ B.T
    return np.maximum(D, 0.0)


def _knn_predict(D, ytr_codes, n_classes, k):
    """k-NN votes from a distance matrix (ties among classes → the class of the nearest
    of the tied neighbours; ties in distance → lower index, stable sort)."""
    order = np.argsort(D, axis=1, kind="stable")[:, :k]
    votes = np.zeros((D.shape[0], n_classes))
    for j in range(k):
        np.add.at(votes, (np.arange(D.shape[0]), ytr_codes[order[:, j]]), 1.0)
    pred = np.empty(D.shape[0], dtype=np.int64)
    for q in range(D.shape[0]):
        top = np.flatnonzero(votes[q] == votes[q].max())
        if top.size == 1:
            pred[q] = top[0]
        else:
            pred[q] = next(ytr_codes[i] for i in order[q] if ytr_codes[i] in top)
    return pred


def knn_errors(Xtr, ytr, Xva, yva, Xte, yte, ks=KS) -> dict:
    """Euclidean k-NN: k chosen on validation; resubstitution train error, test error."""
    D_va, D_tr, D_te = _sq_euclid(Xva, Xtr), _sq_euclid(Xtr, Xtr), _sq_euclid(Xte, Xtr)
    L = int(ytr.max()) + 1
    ks = [k for k in ks if k <= ytr.size]
    val = [np.mean(_knn_predict(D_va, ytr, L, k) != yva) for k in ks]
    k = ks[int(np.argmin(val))]
    return dict(
        k=k,
        val=float(min(val)),
        train=float(np.mean(_knn_predict(D_tr, ytr, L, k) != ytr)),
        test=float(np.mean(_knn_predict(D_te, ytr, L, k) != yte)),
    )


def _kcr_predict(G, h, K_cross, K_train, ytr, L):
    Z = K_cross @ G
    T = K_train @ G
    return rule_predict(_sq_euclid(Z, T), ytr, L, h, "nearest")


def _nu_fits(Xtr, ytr, Xva, yva, nu, protocol: Protocol) -> list[dict]:
    """The fits of one ν: every λ of the grid, warm-started along decreasing λ."""
    L = int(ytr.max()) + 1
    out = []
    Ktr = gaussian_kernel(Xtr, gamma=nu)
    Kva = gaussian_kernel(Xva, Xtr, gamma=nu)
    base = KCR(Ktr, ytr, max(protocol.lams))
    warm = None
    for lam in sorted(protocol.lams, reverse=True):
        prob = base.with_lam(lam)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            sol = prob.solve(
                tol=protocol.tol,
                max_iter=protocol.max_iter,
                time_limit=protocol.time_limit,
                warm_start=warm,
                warn=False,
            )
        elapsed = time.perf_counter() - t0
        warm = sol.info["warm_start"]
        G, h = sol.info["factor"], sol.info["h"]
        val = float(np.mean(_kcr_predict(G, h, Kva, Ktr, ytr, L) != yva))
        out.append(
            dict(
                nu=nu,
                lam=lam,
                val=val,
                G=G,
                h=h,
                converged=sol.converged,
                gap=sol.info["gap"],
                n_iter=sol.n_iter,
                time=elapsed,
                objective=sol.objective,
                rank=G.shape[1],
            )
        )
    return out


def _grid_task(task) -> list[dict]:
    """One task of :func:`run_dataset`: the fits of one ν on one split."""
    X, y, split, nu, protocol = task
    tr, va, _ = split
    Xtr, Xva = _standardize(X[tr], X[va])
    return _nu_fits(Xtr, y[tr], Xva, y[va], nu, protocol)


def kcr_grid(Xtr, ytr, Xva, yva, protocol: Protocol, n_jobs: int | None = 1) -> list[dict]:
    """Fit KCR on every (ν, λ) of the grid; returns one record per fit with its
    validation error, certificate and time.

    Parameters
    ----------
    Xtr, ytr, Xva, yva : ndarray
        Standardized training and validation points, integer labels 0 … L − 1.
    protocol : Protocol
        The grid (``nus``, ``lams``) and the solver's tolerance and budgets.
    n_jobs : int or None, default 1
        The ν run as independent tasks (each warm-starts along decreasing λ) through
        :func:`benchmarks._parallel.run_tasks`; the records do not depend on it.

    Returns
    -------
    list of dict
        One record per fit, ν by ν in the order of ``protocol.nus``, λ decreasing.
    """
    per_nu = run_tasks(_nu_task, [(Xtr, ytr, Xva, yva, nu, protocol) for nu in protocol.nus], n_jobs)
    return [f for fits in per_nu for f in fits]


def _nu_task(task) -> list[dict]:
    return _nu_fits(*task)


def _finish_split(X, y, split, fits, protocol: Protocol) -> dict:
    """k-NN and the KCR errors with the validation-chosen (ν, λ) of ``fits``."""
    tr, va, te = split
    Xtr, Xva, Xte = _standardize(X[tr], X[va], X[te])
    ytr, yva, yte = y[tr], y[va], y[te]
    knn = knn_errors(Xtr, ytr, Xva, yva, Xte, yte, protocol.ks)
    best = min(fits, key=lambda f: (f["val"], -f["lam"], f["nu"]))
    L = int(ytr.max()) + 1
    Ktr = gaussian_kernel(Xtr, gamma=best["nu"])
    Kte = gaussian_kernel(Xte, Xtr, gamma=best["nu"])
    train = float(np.mean(_kcr_predict(best["G"], best["h"], Ktr, Ktr, ytr, L) != ytr))
    test = float(np.mean(_kcr_predict(best["G"], best["h"], Kte, Ktr, ytr, L) != yte))
    light = [{k: v for k, v in f.items() if k != "G"} for f in fits]
    return dict(
        knn=knn,
        kcr=dict(
            nu=best["nu"],
            lam=best["lam"],
            val=best["val"],
            train=train,
            test=test,
            converged=best["converged"],
            gap=best["gap"],
        ),
        fits=light,
        sizes=(tr.size, va.size, te.size),
    )


def run_dataset(name: str, protocol: Protocol, data_dir=None, progress=None, n_jobs: int | None = 1) -> dict:
    """All splits of one data set; errors in percent (mean ± std over splits).

    Parameters
    ----------
    name : str
        One of :data:`DATASETS`.
    protocol : Protocol
        The splits, grids and solver settings of the reproduction (paper or quick).
    data_dir : str or Path, optional
        The offline data folder.
    progress : callable, optional
        ``progress(name, done, total, seconds)`` after each split.
    n_jobs : int or None, default 1
        The fits of every (split, ν) run as independent tasks through
        :func:`benchmarks._parallel.run_tasks` (the splits are drawn first, in
        order, from the seed); the numbers do not depend on it.

    Returns
    -------
    dict
        The summary (see :func:`reproduce`) with every split under ``"splits"``.
    """
    X, y_raw = load_dataset(name, data_dir)
    _, y = np.unique(y_raw, return_inverse=True)
    y = y.ravel()
    rng = np.random.default_rng(protocol.seed)
    drawn = [stratified_split(y, rng, protocol.fractions) for _ in range(protocol.n_splits)]
    t0 = time.perf_counter()
    nus = len(protocol.nus)
    splits = []

    def done(k, _fits):
        if (k + 1) % nus == 0 and progress is not None:
            progress(name, (k + 1) // nus, protocol.n_splits, time.perf_counter() - t0)

    per_task = run_tasks(
        _grid_task, [(X, y, split, nu, protocol) for split in drawn for nu in protocol.nus], n_jobs, callback=done
    )
    for s, split in enumerate(drawn):
        fits = [f for fits in per_task[s * nus : (s + 1) * nus] for f in fits]
        splits.append(_finish_split(X, y, split, fits, protocol))

    def stat(key, part):
        v = 100.0 * np.array([sp[key][part] for sp in splits])
        return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0

    fits = [f for sp in splits for f in sp["fits"]]
    return dict(
        name=name,
        n=X.shape[0],
        d=X.shape[1],
        classes=int(y.max()) + 1,
        sizes=splits[0]["sizes"],
        n_splits=protocol.n_splits,
        knn_train=stat("knn", "train"),
        knn_test=stat("knn", "test"),
        kcr_train=stat("kcr", "train"),
        kcr_test=stat("kcr", "test"),
        knn_k=[sp["knn"]["k"] for sp in splits],
        kcr_params=[(sp["kcr"]["nu"], sp["kcr"]["lam"]) for sp in splits],
        chosen_converged=sum(sp["kcr"]["converged"] for sp in splits),
        n_fits=len(fits),
        n_converged=sum(f["converged"] for f in fits),
        max_gap=float(max(f["gap"] for f in fits)),
        median_fit_s=float(np.median([f["time"] for f in fits])),
        max_fit_s=float(max(f["time"] for f in fits)),
        total_s=time.perf_counter() - t0,
        splits=splits,
    )


def reproduce(
    datasets=DATASETS, protocol: Protocol | None = None, data_dir=None, progress=None, n_jobs: int | None = 1
) -> list[dict]:
    """Run :func:`run_dataset` for each data set; returns one summary dict per set
    (``n_jobs``: the (split, ν) tasks of each data set, see :func:`run_dataset`)."""
    protocol = protocol or Protocol()
    check_available(datasets, data_dir)
    return [run_dataset(name, protocol, data_dir, progress, n_jobs) for name in datasets]


# --------------------------------------------------------------------------- CLI
REDUCED_NUS = tuple(2.0**i for i in (-4, -2, 0, 2, 4))
REDUCED_LAMS = tuple(10.0**i for i in (-3, -1, 1, 3))


def protocol_from_args(args) -> Protocol:
    """The :class:`Protocol` of ``python -m benchmarks reproduce kcr`` options."""
    if args.quick:
        return Protocol(
            n_splits=args.splits or 1,
            nus=(0.5, 2.0),
            lams=(1.0, 0.1),
            ks=(1, 3, 5),
            tol=args.tol,
            max_iter=min(args.max_iter, 2000),
            time_limit=args.time_limit,
            seed=args.seed,
        )
    full = args.grid == "full"
    return Protocol(
        n_splits=args.splits or 20,
        nus=FULL_NUS if full else REDUCED_NUS,
        lams=FULL_LAMS if full else REDUCED_LAMS,
        tol=args.tol,
        max_iter=args.max_iter,
        time_limit=args.time_limit,
        seed=args.seed,
    )


def format_report(results, protocol: Protocol) -> str:
    """Table 1 layout: mean ± std (over splits) of train and test error in %."""
    pm = lambda t: f"{t[0]:.2f} ± {t[1]:.2f}"
    rows = [
        [
            f"{r['name']} ({r['n']}, {r['d']}, {r['classes']})",
            "/".join(map(str, r["sizes"])),
            pm(r["knn_train"]),
            pm(r["knn_test"]),
            pm(r["kcr_train"]),
            pm(r["kcr_test"]),
            f"{r['n_converged']}/{r['n_fits']}",
            f"{r['chosen_converged']}/{r['n_splits']}",
            f"{r['max_gap']:.1e}",
            f"{r['median_fit_s']:.2g}",
            f"{r['total_s']:.0f}",
        ]
        for r in results
    ]
    head = [
        "data set (n, D, L)",
        "train/val/test",
        "k-NN train %",
        "k-NN test %",
        "KCR train %",
        "KCR test %",
        "fits converged",
        "chosen converged",
        "max gap",
        "median fit [s]",
        "total [s]",
    ]
    lines = [format_table(head, rows), ""]
    for r in results:
        ks = np.bincount(r["knn_k"])
        lines.append(
            f"{r['name']}: k chosen "
            + ", ".join(f"k={k}×{c}" for k, c in enumerate(ks) if c)
            + "; (ν, λ) chosen "
            + ", ".join(f"({nu:g}, {lam:g})" for nu, lam in r["kcr_params"])
        )
    lines.append(
        f"({protocol.n_splits} stratified splits {protocol.fractions}, seed {protocol.seed}; features "
        f"standardized on the training split; ν ∈ {{{', '.join(f'{v:g}' for v in protocol.nus)}}}, "
        f"λ ∈ {{{', '.join(f'{v:g}' for v in protocol.lams)}}}, k ∈ {{{', '.join(map(str, protocol.ks))}}}; "
        f"KCR solved to certified relative gap {protocol.tol:g}, at most {protocol.max_iter} iterations"
        + ("" if protocol.time_limit is None else f" / {protocol.time_limit:g} s")
        + " per fit; "
        "train error = resubstitution)"
    )
    return "\n".join(lines)


def data_sets(args) -> tuple:
    """The data sets of ``python -m benchmarks reproduce kcr`` (checked by the command before it starts)."""
    return ("iris",) if args.quick and not args.datasets else tuple(args.datasets or DATASETS)


def command(args) -> int:
    """``python -m benchmarks reproduce kcr``: Table 1 with the protocol of the options."""
    import sys

    protocol = protocol_from_args(args)
    datasets = data_sets(args)
    t0 = time.perf_counter()
    print(
        "python -m benchmarks reproduce kcr: Sriperumbudur, Lang & Lanckriet (ICML 2008) Table 1 — k-NN and "
        "KCR train / test error (%)"
    )
    print()

    def progress(name, done, total, elapsed):
        print(f"  {name}: split {done}/{total} done ({elapsed:.0f} s)", file=sys.stderr, flush=True)

    with parallel_from_args(args) as (n_jobs, engine):
        results = reproduce(datasets, protocol, data_dir=args.data_dir, progress=progress, n_jobs=n_jobs)
    print(format_report(results, protocol))
    print(f"({describe(n_jobs, engine)}; the numbers do not depend on it, the seconds do)")
    if args.out:
        slim = [
            {k: v for k, v in r.items() if k != "splits"} | {"fits": [f for sp in r["splits"] for f in sp["fits"]]}
            for r in results
        ]
        write_numbers(args.out, dict(protocol=vars(protocol), results=slim))
    print()
    return finish("reproduce kcr", t0)
