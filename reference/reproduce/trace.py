"""Jain, Kulis, Davis & Dhillon (JMLR 2012) §6.4, Figure 2 (c)–(d): Trace-SSIKDR vs kernel PCA,
2-D embeddings of unseen digits (``python -m benchmarks reproduce trace``).

The paper shows a figure only (Trace-SSIKDR "separates seven of the digits reasonably well",
kernel PCA three); USPS is not offline, so this runs on ``mnist5000`` or ``pendigits`` and
scores what the figure shows.  Protocol (reference/jain2012-trace.md, fixed before any result
was seen): per draw (seed ``seed + r``) 100 stratified training digits and 2 000 test digits;
Gaussian base kernel with γ = 1 / median squared training distance (the paper's graph kernel
is not built); per class 100 similar and 100 dissimilar label pairs, bounds at the 1st / 99th
percentiles, hard constraints (eq. 26).  Eq. 26 does not reach rank 2, so the 2-D embedding is
the top-2 coordinates of the learned map, (a) K̃'s leading eigen-directions and (b) the centred
principal axes of the learned coordinates (added after (a) was seen; both reported), for every
τ of a grid.  Kernel PCA (2 components) is fitted on the training digits, and for reference on
the test digits.  Scores on the test embeddings: k-NN against the training digits (``knn``),
5-fold CV k-NN among the test digits (``knn_cv``), silhouette.  One BLAS thread; the draws are
independent tasks (``n_jobs``).
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks._parallel import describe, parallel_from_args, run_tasks
from benchmarks._report import columns, format_table, pyplot, write_json
from cvxkml._config import blas_limit
from cvxkml.datasets import load_dataset
from cvxkml.errors import ConvergenceWarning, InvalidInputError

__all__ = [
    "PAPER",
    "DEFAULTS",
    "QUICK",
    "load_digits_data",
    "draw_split",
    "median_gamma",
    "embedding_scores",
    "run_draw",
    "reproduce_trace",
    "plot_embeddings",
    "format_results",
    "command",
]

#: What the paper reports for this experiment (Figure 2 c–d, §6.4): a figure, no numbers.
PAPER = (
    "Figure 2 (c)-(d) only, no numbers: 2-D embeddings of 2000 unseen USPS digits, "
    "Trace-SSIKDR trained on 100 digits (rank-2 W, graph-regularized base kernel of "
    "Sindhwani et al. 2005) vs kernel PCA; text: Trace-SSIKDR 'separates seven of the "
    "digits reasonably well', kernel PCA 'only three'"
)

#: the protocol; ``max_sweeps`` (the key of the recorded results) is the solver's ``max_iter``
DEFAULTS = dict(n_train=100, n_test=2000, n_draws=10, taus=(1.0, 10.0, 100.0), tau_figure=10.0, n_similar=100)
DEFAULTS.update(n_dissimilar=100, percentiles=(1.0, 99.0), k=5, tol=1e-6, max_sweeps=20000)
#: A smoke run (tests): tiny sizes, one draw, one τ.
QUICK = dict(DEFAULTS, n_train=40, n_test=200, n_draws=1, taus=(10.0,), n_similar=10, n_dissimilar=10, k=3)
QUICK.update(tol=1e-5, max_sweeps=5000)

DATASETS = {"mnist5000": 255.0, "pendigits": 100.0}  # name -> feature scale


# --------------------------------------------------------------------------- data
def load_digits_data(dataset: str = "mnist5000", data_dir=None) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) of ``"mnist5000"`` (pixels / 255) or ``"pendigits"`` (coordinates / 100)."""
    if dataset not in DATASETS:
        raise InvalidInputError(f"dataset must be one of {sorted(DATASETS)}; got {dataset!r}.")
    X, y = load_dataset(dataset, data_dir)
    return X / DATASETS[dataset], y.astype(np.int64)


def draw_split(y, n_train: int = 100, n_test: int = 2000, random_state=None):
    """Disjoint indices (train, test): ``n_train`` stratified (the first ``n_train mod c``
    classes get one more) and ``n_test`` uniformly from the rest."""
    y = np.asarray(y).ravel()
    rng = np.random.default_rng(random_state)
    classes = np.unique(y)
    per = np.full(classes.size, n_train // classes.size)
    per[: n_train % classes.size] += 1
    tr = []
    for c, m in zip(classes, per):
        members = np.flatnonzero(y == c)
        if members.size < m:
            raise InvalidInputError(f"class {c!r} has {members.size} points, fewer than {m}.")
        tr.append(rng.choice(members, m, replace=False))
    tr = rng.permutation(np.concatenate(tr))
    rest = np.setdiff1d(np.arange(y.size), tr)
    if rest.size < n_test:
        raise InvalidInputError(f"only {rest.size} points left for {n_test} test points.")
    return tr, rng.choice(rest, n_test, replace=False)


def median_gamma(X) -> float:
    """γ = 1 / median squared Euclidean distance between the rows of X (σ² = median / 2)."""
    sq = np.einsum("ij,ij->i", X, X)
    D = sq[:, None] + sq[None, :] - 2.0 * X @ X.T
    d = np.maximum(D[np.triu_indices(X.shape[0], 1)], 0.0)
    med = float(np.median(d))
    if not med > 0:
        raise InvalidInputError("the median squared distance between training points is 0.")
    return 1.0 / med


# --------------------------------------------------------------------------- scores
def embedding_scores(Ztr, ytr, Zte, yte, k: int = 5, D_te=None, D_cross=None) -> dict:
    """``knn`` (test vs training points), ``knn_cv`` (5-fold CV among the test points) and the
    test points' ``silhouette``; with distance matrices ``D_te`` (test–test) and ``D_cross``
    (test–train) instead of the embeddings."""
    from sklearn.metrics import silhouette_score
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.neighbors import KNeighborsClassifier

    if D_te is None:
        knn = KNeighborsClassifier(n_neighbors=k).fit(Ztr, ytr).score(Zte, yte)
        cv = cross_val_score(
            KNeighborsClassifier(n_neighbors=k), Zte, yte, cv=StratifiedKFold(5, shuffle=True, random_state=0)
        ).mean()
        sil = silhouette_score(Zte, yte)
    else:
        nn = np.argsort(D_cross, axis=1, kind="stable")[:, :k]
        knn = float(np.mean(_vote(ytr[nn]) == yte))
        accs = []
        for a, b in StratifiedKFold(5, shuffle=True, random_state=0).split(D_te, yte):
            nn = np.argsort(D_te[np.ix_(b, a)], axis=1, kind="stable")[:, :k]
            accs.append(np.mean(_vote(yte[a][nn]) == yte[b]))
        cv = float(np.mean(accs))
        sil = silhouette_score(D_te, yte, metric="precomputed")
    return {"knn": float(knn), "knn_cv": float(cv), "silhouette": float(sil)}


def _vote(labels):
    """Majority label per row, ties to the smallest label (as scikit-learn)."""
    out = np.empty(labels.shape[0], dtype=labels.dtype)
    for r, row in enumerate(labels):
        vals, counts = np.unique(row, return_counts=True)
        out[r] = vals[np.argmax(counts)]
    return out


def _kernel_distances(Kab, da, db):
    return np.sqrt(np.maximum(da[:, None] + db[None, :] - 2.0 * Kab, 0.0))


# --------------------------------------------------------------------------- one draw
def run_draw(
    X,
    y,
    seed: int,
    *,
    n_train=100,
    n_test=2000,
    taus=(1.0, 10.0, 100.0),
    tau_figure=None,
    n_similar=100,
    n_dissimilar=100,
    percentiles=(1.0, 99.0),
    k=5,
    tol=1e-6,
    max_iter=20000,
    keep_embeddings=False,
) -> dict:
    """One draw: Trace-SSIKDR per τ (top-2 and all coordinates), kernel PCA (fit on the training
    digits; on the test digits) and the base kernel.  Returns {"scores": {method: {knn, knn_cv,
    silhouette}}, "solver": {τ: stats}, "gamma", "n_constraints"} (+ "embeddings" of the figure
    with ``keep_embeddings``)."""
    from sklearn.decomposition import PCA, KernelPCA

    from cvxkml.estimators.trace import TraceSSIKDR
    from cvxkml.kernels import Kernel

    tr, te = draw_split(y, n_train, n_test, seed)
    Xtr, ytr, Xte, yte = X[tr], y[tr], X[te], y[te]
    gamma = median_gamma(Xtr)
    kern = Kernel("gaussian", {"gamma": gamma})
    scores, solver, emb = {}, {}, {}
    for tau in taus:
        pairs = dict(n_similar=n_similar, n_dissimilar=n_dissimilar, percentiles=percentiles)
        solve = dict(tol=tol, random_state=seed, max_iter=max_iter)
        est = TraceSSIKDR(kernel_params={"gamma": gamma}, tau=float(tau), **pairs, **solve)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # recorded as converged=False
            est.fit(Xtr, ytr)
        fit_s = time.perf_counter() - t0
        Zall_tr, Zall_te = est.embedding_, est.transform(Xte)
        if Zall_tr.shape[1] == 0:
            raise InvalidInputError(
                f"tau = {float(tau):g} makes the learned kernel zero (rank 0): there is no "
                "embedding to score; use a smaller --tau (the paper's grid: 1 10 100)."
            )
        s = est.eigenvalues_
        sol = est.solution_
        solver[float(tau)] = {
            "rank": est.rank_,
            "iterations": est.n_iter_,
            "converged": bool(sol.converged),
            "solve_s": float(sol.time),
            "fit_s": fit_s,
            "max_violation": sol.max_violation,
            "max_rel_violation": float(sol.info.get("max_relative_violation", np.nan)),
            "top2_trace_fraction": float(s[:2].sum() / s.sum()) if s.size else np.nan,
            "gap": sol.gap,
            "objective": float(sol.objective),
        }
        scores[f"trace2:{float(tau):g}"] = embedding_scores(Zall_tr[:, :2], ytr, Zall_te[:, :2], yte, k)
        pca = PCA(n_components=min(2, Zall_tr.shape[1])).fit(Zall_tr)
        Ptr, Pte = pca.transform(Zall_tr), pca.transform(Zall_te)
        scores[f"tracepca2:{float(tau):g}"] = embedding_scores(Ptr, ytr, Pte, yte, k)
        scores[f"traceall:{float(tau):g}"] = embedding_scores(Zall_tr, ytr, Zall_te, yte, k)
        if keep_embeddings and tau_figure is not None and float(tau) == float(tau_figure):
            emb["trace"] = Zall_te[:, :2]
            emb["tracepca"] = Pte
        n_constraints = len(est.constraints_)
    kp = KernelPCA(n_components=2, kernel="rbf", gamma=gamma, random_state=seed).fit(Xtr)
    Ktr, Kte = kp.transform(Xtr), kp.transform(Xte)
    scores["kpca_train"] = embedding_scores(Ktr, ytr, Kte, yte, k)
    kt = KernelPCA(n_components=2, kernel="rbf", gamma=gamma, random_state=seed, eigen_solver="dense").fit(Xte)
    scores["kpca_test"] = embedding_scores(kt.transform(Xtr), ytr, kt.transform(Xte), yte, k)
    Kcross = kern(Xte, Xtr)
    Kte_te = kern(Xte)  # Y omitted: the diagonal is exactly κ(x, x) = 1
    d_te = np.ones(Xte.shape[0])
    D_te, D_cross = _kernel_distances(Kte_te, d_te, d_te), _kernel_distances(Kcross, d_te, np.ones(Xtr.shape[0]))
    scores["base"] = embedding_scores(None, ytr, None, yte, k, D_te=D_te, D_cross=D_cross)
    if keep_embeddings:
        emb["kpca"] = Kte
        emb["y"] = yte
    out = {"scores": scores, "solver": solver, "gamma": gamma, "n_constraints": n_constraints}
    if keep_embeddings:
        out["embeddings"] = emb
    return out


# --------------------------------------------------------------------------- experiment
def _draw_task(task) -> dict:
    """One draw of :func:`reproduce_trace` (:func:`run_draw` with its seed)."""
    X, y, seed, keep_embeddings, kw = task
    with blas_limit(1):
        return run_draw(X, y, seed, keep_embeddings=keep_embeddings, **kw)


def reproduce_trace(
    dataset: str = "mnist5000",
    quick: bool = False,
    seed: int = 0,
    data_dir=None,
    out_dir=None,
    n_draws=None,
    taus=None,
    echo=None,
    n_jobs: int | None = 1,
) -> dict:
    """``n_draws`` draws (seeds ``seed``, ``seed + 1``, …) of :func:`run_draw`; the first draw's
    embeddings as a PNG in ``out_dir`` (with matplotlib); ``echo`` gets a line per draw.  Returns
    {"settings", "draws", "summary": {method: {score: (mean, std)}}, "solver_summary", "png", "elapsed_s"}."""
    cfg = dict(QUICK if quick else DEFAULTS)
    if n_draws is not None:
        cfg["n_draws"] = int(n_draws)
    if taus is not None:
        cfg["taus"] = tuple(float(t) for t in taus)
        if cfg["tau_figure"] not in cfg["taus"]:
            cfg["tau_figure"] = cfg["taus"][0]
    if cfg["n_draws"] < 1:
        raise InvalidInputError("n_draws must be at least 1.")
    t_start = time.perf_counter()
    X, y = load_digits_data(dataset, data_dir)
    kw = {("max_iter" if k == "max_sweeps" else k): v for k, v in cfg.items() if k != "n_draws"}

    def done(r, res):
        if echo is None:
            return
        s = res["scores"]
        tf = f"trace2:{cfg['tau_figure']:g}"
        tp = f"tracepca2:{cfg['tau_figure']:g}"
        echo(
            f"  draw {r + 1}/{cfg['n_draws']} (seed {seed + r}): {res['n_constraints']} constraints; "
            f"{cfg['k']}-NN / silhouette: Trace-SSIKDR (tau {cfg['tau_figure']:g}) top-2 "
            f"{s[tf]['knn']:.3f} / {s[tf]['silhouette']:.3f}, centred PCA-2 {s[tp]['knn']:.3f} / "
            f"{s[tp]['silhouette']:.3f}; kernel PCA {s['kpca_train']['knn']:.3f} / "
            f"{s['kpca_train']['silhouette']:.3f}; ranks "
            + ", ".join(f"{t:g}: {v['rank']}" for t, v in res["solver"].items())
            + f" ({time.perf_counter() - t_start:.0f} s)"
        )

    draws = run_tasks(_draw_task, [(X, y, seed + r, r == 0, kw) for r in range(cfg["n_draws"])], n_jobs, callback=done)
    methods = list(draws[0]["scores"])
    summary = {
        m: {sc: _mean_std([d["scores"][m][sc] for d in draws]) for sc in ("knn", "knn_cv", "silhouette")}
        for m in methods
    }
    solver_summary = {}
    for tau in cfg["taus"]:
        rows = [d["solver"][float(tau)] for d in draws]
        solver_summary[float(tau)] = {
            "rank": [r["rank"] for r in rows],
            "iterations": [r["iterations"] for r in rows],
            "converged": sum(r["converged"] for r in rows),
            "solve_s": [r["solve_s"] for r in rows],
            "max_rel_violation": max(r["max_rel_violation"] for r in rows),
            "top2_trace_fraction": _mean_std([r["top2_trace_fraction"] for r in rows]),
        }
    png = None
    if out_dir is not None:
        try:
            path = Path(out_dir) / f"jain2012_trace_{dataset}.png"
            png = plot_embeddings(path, draws[0]["embeddings"], dataset, cfg, draws[0]["scores"])
        except ImportError as exc:
            if echo is not None:
                echo(f"  (no PNG: {exc})")
    return {
        "settings": {
            "dataset": dataset,
            "seed": seed,
            "quick": quick,
            **cfg,
            "n_constraints": [d["n_constraints"] for d in draws],
            "gamma": [d["gamma"] for d in draws],
        },
        "draws": draws,
        "summary": summary,
        "solver_summary": solver_summary,
        "png": None if png is None else str(png),
        "elapsed_s": time.perf_counter() - t_start,
    }


def _mean_std(values):
    v = np.asarray(values, dtype=float)
    return float(np.mean(v)), float(np.std(v, ddof=1)) if v.size > 1 else 0.0


# --------------------------------------------------------------------------- figure
def plot_embeddings(path, emb: dict, dataset: str, cfg: dict, scores: dict) -> Path:
    """The three 2-D test embeddings (Trace-SSIKDR eigen-coordinates and centred axes, kernel PCA)
    side by side, coloured by digit, as a PNG at ``path`` (needs matplotlib)."""
    plt = pyplot("The embedding figure")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    y = emb["y"]
    cmap = plt.get_cmap("tab10")
    fig, axes = plt.subplots(1, 3, figsize=(19, 6.6))
    tau = f"{cfg['tau_figure']:g}"
    panels = (
        (axes[0], emb["trace"], f"Trace-SSIKDR (tau = {tau}): top-2 eigen-coordinates of K~", scores[f"trace2:{tau}"]),
        (
            axes[1],
            emb["tracepca"],
            f"Trace-SSIKDR (tau = {tau}): top-2 centred principal axes",
            scores[f"tracepca2:{tau}"],
        ),
        (axes[2], emb["kpca"], "kernel PCA, 2 components", scores["kpca_train"]),
    )
    for ax, Z, title, sc in panels:
        for c in np.unique(y):
            m = y == c
            ax.scatter(Z[m, 0], Z[m, 1], s=6, color=cmap(int(c) % 10), label=str(c), alpha=0.7, linewidths=0)
            ax.annotate(
                str(c),
                np.median(Z[m], axis=0),
                fontsize=13,
                weight="bold",
                ha="center",
                va="center",
                color="black",
                bbox=dict(boxstyle="round,pad=0.15", fc=cmap(int(c) % 10), alpha=0.6, lw=0),
            )
        ax.set_title(f"{title}\n{cfg['k']}-NN {sc['knn']:.3f}, silhouette {sc['silhouette']:.3f}", fontsize=11)
        ax.set_xticks([])
        ax.set_yticks([])
    axes[2].legend(title="digit", markerscale=3, fontsize=8, loc="best", ncol=2)
    fig.suptitle(
        f"{cfg['n_test']} unseen {dataset} digits embedded in 2-D; trained on {cfg['n_train']} "
        f"labelled digits, Gaussian kernel (cf. Jain et al. 2012, Figure 2 c-d)",
        fontsize=12,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------- text
#: method key (before ":tau") -> (label, embedding dimension)
_LABELS = {
    "trace2": ("Trace-SSIKDR top-2, tau = {}", "2"),
    "tracepca2": ("Trace-SSIKDR top-2 centred PCA axes, tau = {}", "2"),
    "kpca_train": ("kernel PCA (fit on the training digits)", "2"),
    "kpca_test": ("kernel PCA (fit on the test digits, transductive)", "2"),
    "traceall": ("Trace-SSIKDR all k coordinates, tau = {}", "k"),
    "base": ("base Gaussian kernel, no reduction", "inf"),
}


def _label(m: str) -> tuple[str, str]:
    key, _, tau = m.partition(":")
    name, dim = _LABELS[key]
    return name.format(tau), dim


def format_results(res: dict) -> str:
    """The tables printed by ``python -m benchmarks reproduce trace``."""
    st = res["settings"]
    pm = lambda ms: f"{ms[0]:.3f} ± {ms[1]:.3f}"
    order = (
        [f"trace2:{t:g}" for t in st["taus"]]
        + [f"tracepca2:{t:g}" for t in st["taus"]]
        + ["kpca_train", "kpca_test"]
        + [f"traceall:{t:g}" for t in st["taus"]]
        + ["base"]
    )
    summ = res["summary"]
    lines = [
        columns(
            order,
            [
                ("embedding of the test digits", lambda m: _label(m)[0]),
                ("dim", lambda m: _label(m)[1]),
                (f"{st['k']}-NN (train ref.)", lambda m: pm(summ[m]["knn"])),
                (f"{st['k']}-NN (5-fold CV, test)", lambda m: pm(summ[m]["knn_cv"])),
                ("silhouette", lambda m: pm(summ[m]["silhouette"])),
            ],
        ),
        f"(mean ± standard deviation over {st['n_draws']} training draws; scores on the "
        f"{st['n_test']} test digits' embeddings)",
        "",
    ]
    srows = []
    for tau, s in res["solver_summary"].items():
        it = np.asarray(s["iterations"])
        tt = np.asarray(s["solve_s"])
        rk = np.asarray(s["rank"])
        srows.append(
            [
                f"{tau:g}",
                f"{rk.min()}/{np.median(rk):g}/{rk.max()}",
                pm(s["top2_trace_fraction"]),
                f"{it.min()}/{np.median(it):g}/{it.max()}",
                f"{s['converged']}/{len(it)}",
                f"{s['max_rel_violation']:.1e}",
                f"{np.median(tt):.2f}",
                f"{np.median(tt / it) * 1e3:.2f}",
            ]
        )
    lines.append(
        format_table(
            [
                "tau",
                "rank k min/med/max",
                "top-2 share of tr K~",
                "iterations min/med/max",
                "converged",
                "max rel viol",
                "median solve [s]",
                "ms/iteration",
            ],
            srows,
        )
    )
    lines.append(
        f"(fast solver: TraceSSIKDR.solve — dual projected Newton-CG, accelerated Uzawa where Newton "
        f"does not certify; tol {st['tol']:g}, max {st['max_sweeps']} iterations, "
        f"one BLAS thread; {int(np.median(st['n_constraints']))} constraints (median) on "
        f"{st['n_train']} training digits)"
    )
    return "\n".join(lines)


# --------------------------------------------------------------------------- CLI
def command(args) -> int:
    """``python -m benchmarks reproduce trace``: Jain et al. 2012 §6.4 / Figure 2 (c)-(d), Trace-SSIKDR against
    kernel PCA, 2-D embeddings of unseen digits.

    Returns the exit status, 0."""
    taus = None if args.tau is None else [float(t) for t in args.tau]
    mode = "QUICK smoke run, not a reproduction" if args.quick else "reproduction"
    print(
        f"python -m benchmarks reproduce trace: Jain, Kulis, Davis & Dhillon (JMLR 2012) §6.4, Figure 2 (c)-(d), "
        f"Trace-SSIKDR vs kernel PCA ({mode}); data: {args.dataset} (USPS is not available offline)"
    )
    print(f"paper: {PAPER}")
    print()
    with parallel_from_args(args) as (n_jobs, engine):
        res = reproduce_trace(
            args.dataset,
            quick=args.quick,
            seed=args.seed,
            data_dir=args.data_dir,
            out_dir=None if args.no_png else args.out,
            n_draws=args.draws,
            taus=taus,
            echo=print,
            n_jobs=n_jobs,
        )
    st = res["settings"]
    print()
    print(
        f"{st['n_draws']} draw(s) of {st['n_train']} training digits ({st['n_train'] // 10} per digit) and "
        f"{st['n_test']} unseen test digits; Gaussian kernel, gamma = 1 / median squared training distance; "
        f"{st['n_similar']} similar + {st['n_dissimilar']} dissimilar label pairs per digit, bounds u, l = "
        f"percentiles ({st['percentiles'][0]:g}, {st['percentiles'][1]:g}) of the base-kernel distances; "
        f"hard constraints"
    )
    print(
        "2-D target: the learned rank k is above 2 for every tau (table below), so the 2-D embedding "
        "is the top-2 coordinates of the learned transformation: eigen-coordinates of K~ "
        "(estimator n_components=2), or the centred principal axes of the learned coordinates"
    )
    print()
    print(format_results(res))
    print(f"({describe(n_jobs, engine)}; the numbers do not depend on it, the seconds do)")
    print()
    if res["png"]:
        print(f"figure (first draw): {res['png']}")
    if args.out is not None:
        path = write_json(Path(args.out) / f"jain2012_trace_{args.dataset}_results.json", res, drop=("embeddings",))
        print(f"numbers: {path}")
    print(f"reproduction finished in {res['elapsed_s']:.1f} s")
    return 0
