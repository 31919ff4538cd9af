"""Every reproduction in one summary: ``python -m benchmarks reproduce all [--quick | --full | --recorded]``.

One uniform record per table row of the five papers' seed tables and figures::

    {paper, table, dataset, method, metric, published, published_std, measured, std,
     std_kind, differs, certified, certified_fits, protocol_difference, command, source,
     sheet, explanation, uncertified_why}

``certified``: True when every fit behind the number is certified, False when some are not
(``certified_fits`` says how many), None without convex fits or for fits measured before the
certificate existed.  ``differs``: ours and the paper's differ by more than one sd (ours, else
the paper's), or ours leave a figure's axis range; ``explanation`` links the sheet section;
``uncertified_why`` (rows with ``certified`` False) links the sheet's reasons, under
:data:`UNCERTIFIED_HEADING`.

Modes: ``--quick`` runs every reproduction's own function at toy size (a smoke test, not a
reproduction); ``--full`` the papers' protocols (hours; ``--sections`` picks some, the rest is
recorded); ``--recorded`` (default) fits nothing and reads the stored full runs in
``reference/`` (the sheets' results JSON, else :data:`RECORDED_FILE`), the source of
``reference/SUMMARY.md`` and ``summary.json``.  The same converter reads a run and a record.
"""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

import numpy as np

from benchmarks._commands import CommandError
from benchmarks._parallel import describe, parallel_from_args
from benchmarks._report import finish, format_table, jsonable

__all__ = [
    "SECTIONS",
    "MISSING_DATA",
    "RECORDED_FILE",
    "anchor",
    "reference_dir",
    "collect",
    "render_markdown",
    "write_summary",
    "command",
]

#: The file of numbers that exist only in the sheets' prose (in ``reference/``).
RECORDED_FILE = "recorded-results.json"

QUICK_COMMAND = "python -m benchmarks reproduce all --quick"

#: Data sets the papers used that are not in the offline data folder (its README), and what
#: stands in for them.
MISSING_DATA = [
    ("USPS digits", "Jain et al. 2012 Figure 2 (c)-(d)", "MNIST subset (mnist5000.npz) and pendigits"),
    ("Clarify traces (Latex, Mpg321, Foxpro, Iptables)", "Jain et al. 2012 Figure 1 (b)-(c)", "none (not run)"),
    ("Classic3, 20 Newsgroups", "Jain et al. 2012 Figure 2 (a)-(b)", "none (not run)"),
    ("Caltech-101", "Jain et al. 2012 Figure 3", "none (not run)"),
    ("Soybean", "Kulis et al. 2009 Figure 5 (UCI k-NN)", "left out (four of the five data sets run)"),
    ("GyrB", "Kulis et al. 2009 Figure 2", "none (not run)"),
    (
        "MNIST, 60 000 deskewed training images",
        "Kulis et al. 2009 §7.2; Yeung et al. 2007 Table 2 (2 000 per digit)",
        "MNIST-shape synthetic workload (timings); mnist5000.npz, 500 per digit",
    ),
    ("Isolet", "Yeung et al. 2007 Table 2", "none (not run)"),
]


# --------------------------------------------------------------------------- helpers
def anchor(heading: str) -> str:
    """The GitHub anchor of a Markdown heading's text (``"Table 1 — XOR"`` → ``"table-1--xor"``)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


#: the heading every sheet with an uncertified row gives to the reasons, row by row; SUMMARY's
#: certified cell of such a row links there
UNCERTIFIED_HEADING = "Fits behind reproduced numbers that are not certified"


def reference_dir() -> Path:
    """``reference/`` of the source checkout this module lies in, else ``./reference``."""
    here = Path(__file__).resolve().parents[1]
    return here if here.is_dir() else Path.cwd() / "reference"


def _num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(float(x))


def _differs(rec: dict):
    """True / False / None (see the module docstring)."""
    pub, mea = rec["published"], rec["measured"]
    if _num(pub) and _num(mea):
        sd = rec["std"] if _num(rec["std"]) and rec["std"] > 0 else rec["published_std"]
        if not (_num(sd) and sd > 0):
            return None
        return bool(abs(mea - pub) > sd)
    axis = rec.get("axis")
    if axis is not None and _num(mea):
        return bool(not axis[0] <= mea <= axis[1])
    return None


def _cert(ok, total):
    """(certified, "ok/total") for a count of certified fits; (None, "") without fits."""
    if total is None or total == 0:
        return None, ""
    return bool(int(ok) == int(total)), f"{int(ok)}/{int(total)}"


class _Section:
    """One seed table or figure: what it is, which sheet section explains it, and its
    records (:meth:`add` makes one, with its ``differs`` flag)."""

    def __init__(self, key, paper, table, sheet, heading, full_command):
        self.key, self.paper, self.table, self.sheet = key, paper, table, sheet
        self.heading, self.full_command = heading, full_command
        self.records = []

    def add(
        self,
        dataset,
        method,
        metric,
        published,
        measured,
        std=None,
        *,
        published_std=None,
        std_kind="sd",
        certified=(None, ""),
        protocol,
        command,
        source,
        fmt=".3f",
        axis=None,
        heading=None,
        note="",
    ):
        rec = {
            "paper": self.paper,
            "table": self.table,
            "dataset": dataset,
            "method": method,
            "metric": metric,
            "published": published,
            "published_std": published_std,
            "measured": measured,
            "std": std,
            "std_kind": std_kind if _num(std) else "",
            "certified": certified[0],
            "certified_fits": certified[1],
            "protocol_difference": protocol,
            "command": command,
            "source": source,
            "sheet": f"reference/{self.sheet}",
            "explanation": f"{self.sheet}#{anchor(heading or self.heading)}",
            "uncertified_why": f"{self.sheet}#{anchor(UNCERTIFIED_HEADING)}" if certified[0] is False else None,
            "fmt": fmt,
            "axis": list(axis) if axis is not None else None,
            "note": note,
        }
        rec["differs"] = _differs(rec)
        self.records.append(rec)


def _load(ref: Path, name: str):
    path = ref / name
    if not path.is_file():
        raise CommandError(f"recorded results {path} not found (run from a source checkout or give --reference DIR)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # JSONDecodeError, UnicodeDecodeError, unreadable
        raise CommandError(
            f"recorded results {path} cannot be read ({type(exc).__name__}: "
            f"{' '.join(str(exc).split())[:200]}); give --reference DIR with a good copy"
        ) from None
    if not isinstance(data, dict):
        raise CommandError(f"recorded results {path} is not a JSON object; give --reference DIR with a good copy")
    return data


def _recorded(ref: Path, key: str) -> tuple[dict, str]:
    """The entry ``key`` of :data:`RECORDED_FILE` and its source line."""
    data = _load(ref, RECORDED_FILE)
    if key not in data:
        raise CommandError(f"{ref / RECORDED_FILE} has no entry {key!r}")
    return data[key], f"reference/{RECORDED_FILE} ({data[key]['source']})"


# --------------------------------------------------------------------------- the sections
#: key -> (paper, table, sheet, heading of the explaining section, full command)
SECTIONS = {
    "logdet": (
        "Jain et al. 2012",
        "Table 1",
        "jain2012-logdet.md",
        "Table 1: semi-supervised clustering with 50 constraints (`python -m benchmarks reproduce logdet`)",
        "python -m benchmarks reproduce logdet --repeats 10",
    ),
    "uci": (
        "Jain et al. 2012 / Kulis et al. 2009",
        "Jain Fig. 1 (a), Kulis Fig. 5: UCI k-NN",
        "jain2012-spectral.md",
        "`python -m benchmarks reproduce spectral` (Kulis et al. Figure 5)",
        "python -m benchmarks reproduce spectral",
    ),
    "trace": (
        "Jain et al. 2012",
        "Figure 2 (c)-(d)",
        "jain2012-trace.md",
        "Reading",
        "python -m benchmarks reproduce trace; python -m benchmarks reproduce trace --dataset pendigits --tau 10",
    ),
    "lowrank": (
        "Kulis et al. 2009",
        "Figures 1 and 3, §7.2 MNIST timings",
        "kulis2009-lowrank.md",
        "Published vs ours",
        "python -m benchmarks reproduce lowrank; python -m benchmarks bench lowrank",
    ),
    "yeung_t1": (
        "Yeung et al. 2007",
        "Table 1",
        "yeung2007-scalable.md",
        "Table 1 — XOR, n = 8 000, |S| = 50, 10 random S, J (eq. 17)",
        "python -m benchmarks reproduce yeung",
    ),
    "yeung_t2": (
        "Yeung et al. 2007",
        "Table 2",
        "yeung2007-scalable.md",
        "Table 2 protocol — MNIST (offline subset)",
        "python -m benchmarks reproduce yeung",
    ),
    "yeung_f1": (
        "Yeung et al. 2007",
        "Figure 1",
        "yeung2007-scalable.md",
        "Figure 1 — XOR, 360 training + 40 new points, m = 40",
        "python -m benchmarks reproduce yeung",
    ),
    "mkl_t1": (
        "Wang et al. 2011",
        "Table 1",
        "wang2011-mkl.md",
        "Reproduction (Tables 1 and 2)",
        "python -m benchmarks reproduce mkl",
    ),
    "mkl_t2": (
        "Wang et al. 2011",
        "Table 2",
        "wang2011-mkl.md",
        "Reproduction (Tables 1 and 2)",
        "python -m benchmarks reproduce mkl",
    ),
    "kcr": (
        "Sriperumbudur et al. 2008",
        "Table 1",
        "sriperumbudur2008-kcr.md",
        "Ours vs the paper's Table 1 (k-NN and KCR columns, error %)",
        "python -m benchmarks reproduce kcr --splits 20 --grid full (Balance: --grid reduced --max-iter 5000)",
    ),
}

#: the runnable groups (one reproduction each) -> the sections they fill
GROUPS = {
    "logdet": ("logdet",),
    "uci": ("uci",),
    "trace": ("trace",),
    "lowrank": ("lowrank",),
    "yeung": ("yeung_t1", "yeung_t2", "yeung_f1"),
    "mkl": ("mkl_t1", "mkl_t2"),
    "kcr": ("kcr",),
}

# --------------------------------------------------------------------------- converters
# Each group of GROUPS has a converter: ``records(sections, result, command, source, **kw)``
# turns one result (a run's or a recorded one) into rows, ``run(mode, data_dir, n_jobs, seed,
# cmd)`` runs the reproduction and returns [(result, command, kw)], and ``recorded`` names
# where the stored result is: an entry of RECORDED_FILE, or ``recorded(ref)`` returning
# [(result, command, source, kw)].
_NONE = (None, "")
_CLOSED = "closed form (eigendecompositions), nothing to certify"


def _logdet_records(sections, res, command, source) -> None:
    from .logdet import PROTOCOL

    protocol = {
        "ionosphere": "paper leaves open: " + PROTOCOL[0] + "; " + PROTOCOL[1],
        "digits389": "Digits-389 = pendigits 3/8/9, stratified 10 % subsample (paper: 317 points, "
        "most likely another digits set)",
    }
    for name, r in res.items():
        kw = dict(std_kind=f"sd over {r['fits']} folds", protocol=protocol[name], command=command, source=source)
        for m, method in enumerate(("unsupervised", "LogDet linear", "HMRF-KMeans")):
            cert = _cert(r["itml_certified"], r["fits"]) if method == "LogDet linear" else _NONE
            metric = "k-means test error"
            sections["logdet"].add(name, method, metric, r["paper"][m], r["mean"][m], r["std"][m], certified=cert, **kw)


def _logdet_run(mode, data_dir, n_jobs, seed, cmd):
    from .logdet import table1

    res = table1(repeats=1 if mode == "quick" else 10, seed=seed, data_dir=data_dir, n_jobs=n_jobs)
    return [(res, cmd(SECTIONS["logdet"][4]), {})]


def _uci_records(sections, res, command, source) -> None:
    protocol = (
        "Kulis et al. Fig. 5 protocol (k = 4, 40c^2 pairs, gamma by inner CV); features "
        "standardized on the training fold (not stated); Jain Fig. 1(a) uses k = 10"
    )
    kw = dict(std_kind="sd over repeats", axis=(0.0, 0.35), protocol=protocol, command=command, source=source)
    for r in res["rows"]:
        cert = _cert(r["converged"], r.get("fits", 0)) if r["method"] != "euclidean" else _NONE
        pub = "bar chart only (axis 0-0.35)"
        sections["uci"].add(
            r["dataset"], r["method"], "4-NN test error", pub, r["mean"], r["std"], certified=cert, **kw
        )


def _uci_run(mode, data_dir, n_jobs, seed, cmd):
    from .spectral import reproduce_spectral

    res = reproduce_spectral(quick=mode == "quick", seed=seed, data_dir=data_dir, n_jobs=n_jobs)
    return [(res, cmd(SECTIONS["uci"][4]), {})]


_TRACE_RUNS = {  # data set -> (the command of its full run, its recorded results file)
    "mnist5000": ("python -m benchmarks reproduce trace", "jain2012-trace-mnist5000-results.json"),
    "pendigits": (
        "python -m benchmarks reproduce trace --dataset pendigits --tau 10",
        "jain2012-trace-pendigits-results.json",
    ),
}


def _trace_records(sections, res, command, source) -> None:
    names = {
        "trace2": "Trace-SSIKDR, top-2 directions",
        "tracepca2": "Trace-SSIKDR, centred PCA-2",
        "kpca_train": "kernel PCA (training digits)",
    }
    st = res["settings"]
    tau, n_draws = float(st["tau_figure"]), st["n_draws"]
    solver = res["solver_summary"][str(tau) if str(tau) in res["solver_summary"] else tau]
    kw = dict(
        std_kind=f"sd over {n_draws} draws",
        protocol="USPS not offline; Gaussian base kernel (paper: Sindhwani graph kernel); "
        "top-2 of the learned map (eq. 26 does not reach rank 2)",
        command=command,
        source=source,
    )
    metric, pub = f"{st['k']}-NN accuracy of the 2-D embedding", "figure only: separates 7 of 10 digits (kernel PCA: 3)"
    for key, label in names.items():
        mean, sd = res["summary"][f"{key}:{tau:g}" if key != "kpca_train" else key]["knn"]
        cert = _cert(solver["converged"], n_draws) if key != "kpca_train" else _NONE
        sections["trace"].add(st["dataset"], label, metric, pub, mean, sd, certified=cert, **kw)


def _trace_run(mode, data_dir, n_jobs, seed, cmd):
    from .trace import reproduce_trace

    quick = mode == "quick"
    out = []
    for name, (command, _file) in _TRACE_RUNS.items():
        taus = {} if name == "mnist5000" else {"taus": None if quick else (10.0,)}
        res = reproduce_trace(name, quick=quick, seed=seed, data_dir=data_dir, n_jobs=n_jobs, **taus)
        out.append((res, cmd(command), {}))
    return out


def _trace_recorded(ref):
    return [(_load(ref, f), command, f"reference/{f}", {}) for command, f in _TRACE_RUNS.values()]


_SPAMBASE_HEADING = "Spambase: raw or standardized features (issue 18)"
#: The side check of that section (standardized features, an option of ``python -m benchmarks reproduce lowrank``).
SPAMBASE_STANDARDIZED_COMMAND = "python -m benchmarks reproduce lowrank --parts spambase --scale standardize"
#: The UCI sections of ``reproduce lowrank``: part -> (data set label, the figure's axis, protocol).
_LOWRANK_UCI = {
    "spambase": ("Spambase", (0.2, 0.5), "raw features, rank 57, gamma = 1 (not stated)"),
    "spambase_standardized": (
        "Spambase, standardized",
        (0.2, 0.5),
        "side check, not the protocol: features standardized (the paper does not say it scaled them)",
    ),
    "nursery": ("Nursery", (0.1, 0.3), "ordinal codes in UCI order, rank 8, gamma = 1 (not stated)"),
}
_MNIST_PROTOCOL = "synthetic MNIST-shape data (60 000 deskewed images not offline); other machine; no test error"


def _lowrank_records(sections, res, command, source, mnist_command) -> None:
    from benchmarks.bench.lowrank import PAPER_MINUTES

    sec = sections["lowrank"]
    old_rule = set(res.get("old_rule", ()))  # sections measured with the dual-change rule alone
    sources = res.get("sources", {})

    def note(part):
        return "measured with the old dual-change rule, not certified (sheet note 2)" if part in old_rule else ""

    def fits(part, row):
        """(certified, note) of a row; none for the row without constraints."""
        if not row["constraints"]:
            return _NONE, ""
        return (_NONE if part in old_rule else _cert(row.get("converged", 0), row["draws"])), note(part)

    def add(part, label, row, metric, pub, mean, sd, protocol, **kw):
        c, n = fits(part, row)
        kw = dict(std_kind=f"sd over {row['draws']} draws", certified=c, protocol=protocol, note=n, **kw)
        sec.add(label, f"LogDet, {row['constraints']} constraints", metric, pub, mean, sd, **kw)

    dig = res["digits"]
    proto_dig = "317 of pendigits 3/8/9 drawn by seed 0; raw features; tol 1e-3 (measure not stated)"
    for row in (dig[0], dig[-1]):
        pub = "curve only (axis 0.4-0.9)"
        nmi = ("kernel k-means NMI", pub, row["nmi_mean"], row["nmi_std"])
        add("digits", "Digits", row, *nmi, proto_dig, axis=(0.4, 0.9), command=command, source=source)
    for row, pub in ((dig[0], 0.94), (dig[-1], 0.97)):
        knn = ("5-NN accuracy", pub, row["knn_mean"], row["knn_std"])
        protocol = "paper: 94 % -> 97 %, number of constraints not stated"
        add("digits", "Digits", row, *knn, protocol, command=command, source=source)
    cyc = [r for r in dig if r["constraints"]]
    cycles = f"{min(r['cycles_min'] for r in cyc)}-{max(r['cycles_max'] for r in cyc)}"
    protocol = "cycles = sweeps of our solver (its stopping rule differs, sheet note 2)"
    given = dict(command=command, source=source)
    sec.add(
        "Digits",
        "LogDet, all constraint counts",
        "cycles to converge",
        "17-354",
        cycles,
        **given,
        note=note("digits"),
        protocol=protocol,
    )
    conv = res["digits_convergence"]
    last = conv["rows"][-1]
    feasible = {True: "feasible", False: "infeasible", None: "not checked"}[conv.get("feasible")]
    method, protocol = (
        f"LogDet, {conv['constraints']} constraints, {last['cycles']} cycles",
        f"one draw; the exact model says this draw is {feasible}",
    )
    sec.add(
        "Digits",
        method,
        "% of constraints satisfied (1e-3)",
        "curve only (Fig. 1 right)",
        last["satisfied_pct"],
        fmt=".1f",
        protocol=protocol,
        **given,
    )
    for part, (label, axis, proto) in _LOWRANK_UCI.items():
        for row in (res[part][0], res[part][-1]) if res.get(part) else ():
            nmi = ("kernel k-means NMI", f"curve only (axis {axis[0]}-{axis[1]})", row["nmi_mean"], row.get("nmi_std"))
            kw = dict(axis=axis, heading=_SPAMBASE_HEADING if part.startswith("spambase") else None)
            kw["command"] = SPAMBASE_STANDARDIZED_COMMAND if part == "spambase_standardized" else command
            kw["source"] = f"reference/{RECORDED_FILE} ({sources[part]})" if part in sources else source
            add(part, label, row, *nmi, proto, **kw)
    mn = res.get("mnist") or {"rows": ()}
    for row in mn["rows"]:
        if row.get("solver", "certified") != "certified":  # the paper-rule baseline rows
            continue
        m = int(row["constraints"])
        kw = dict(
            certified=_cert(int(bool(row.get("certified", row["converged"]))), 1), fmt=".2f", command=mnist_command
        )
        kw.update(source=mn.get("source_file", source), note="speed, not compared by sd", protocol=_MNIST_PROTOCOL)
        paper_s = 60.0 * PAPER_MINUTES[m] if m in PAPER_MINUTES else None
        metric = "seconds (ours: the solve; paper: whole run, MATLAB + MEX)"
        sec.add(
            f"MNIST shape (n = {mn['n']}, r = {mn['r']})",
            f"LogDet, {m} constraints",
            metric,
            paper_s,
            row["solver_s"],
            **kw,
        )


def _lowrank_run(mode, data_dir, n_jobs, seed, cmd):
    from benchmarks.bench.lowrank import lowrank_workload_rows

    from .lowrank import reproduce_lowrank

    quick = mode == "quick"
    res = reproduce_lowrank(quick=quick, seed=seed, data_dir=data_dir, n_jobs=n_jobs)
    # without the timed paper-rule baseline of `python -m benchmarks bench lowrank` (not a summary row)
    res["mnist"] = lowrank_workload_rows(quick=quick, data_dir=data_dir, seed=seed, baseline=False)
    return [
        (
            res,
            cmd("python -m benchmarks reproduce lowrank"),
            {"mnist_command": cmd("python -m benchmarks bench lowrank")},
        )
    ]


#: The sheet section of Table 1 at the setting implied by the paper's columns (``table1_implied``).
_YEUNG_IMPLIED = "Which setting the paper's Table 1 implies (issue 18)"


def _yeung_t1_rows(sec, t1: dict, dataset: str, calibrated: str = "", **given) -> None:
    """The rows of one Table 1 result (input, RBF, RCA, ours per m) into ``sec``.

    ``calibrated``: the note of the input and RBF rows when the setting was solved to match
    the paper's values there (the implied setting); ``given``: protocol, command, source and
    the sheet heading explaining the rows.
    """
    from .yeung import PAPER_TABLE1 as P

    J = "J (eq. 17)"
    for method, key in (("input space", "input"), ("RBF feature space", "rbf")):
        sec.add(dataset, method, J, P[key], t1[key], fmt=".4f", note=calibrated or _CLOSED, **given)
    rows = [("RCA", P["rca"], t1["rca"])]
    rows += [(f"ours, m = {int(m)}", P["ours"].get(int(m)) or (None, None), v) for m, v in t1["ours"].items()]
    for method, pub, vals in rows:
        kw = dict(published_std=pub[1], fmt=".4f", std_kind=f"sd over {len(vals)} S", note=_CLOSED, **given)
        sec.add(dataset, method, J, pub[0], float(np.mean(vals)), float(np.std(vals)), **kw)


def _yeung_records(sections: dict, res: dict, command: str, source: str) -> None:
    """Records of a ``python -m benchmarks reproduce yeung`` result: Table 1 (and, when the result has it,
    ``table1_implied``, Table 1 at the setting implied by the paper's columns, labelled as
    such), Figure 1 and Table 2."""
    from .yeung import PAPER_TABLE2

    t1, t1i = res.get("table1"), res.get("table1_implied")
    if t1:
        proto = "XOR generator and sigma = median distance are ours (paper: not stated)"
        _yeung_t1_rows(sections["yeung_t1"], t1, "XOR", protocol=proto, command=command, source=source, heading=None)
    if t1i:
        setting = f"blob std {t1i['xor_std']:g}, sigma {t1i['sigma']:g}"
        _yeung_t1_rows(
            sections["yeung_t1"],
            t1i,
            f"XOR, implied setting ({setting})",
            calibrated="implied setting: equal to the paper's by construction (calibrated)",
            protocol=f"implied setting, not the protocol: {setting} solved so that the input and RBF "
            "columns equal the paper's (IMPLIED_TABLE1)",
            command=t1i.get("command") or f"{command} --part table1 --implied",
            source=source,
            heading=_YEUNG_IMPLIED,
        )
    given = dict(fmt=".4f", command=command, source=source, note=_CLOSED)
    for name, (_jtr, jnew) in (res.get("figure1") or {"J": {}})["J"].items():
        metric, pub = "J on the new points (full coordinates)", "figure only (2-D embeddings)"
        protocol = "|S| = 15, m = 40 (|S| not stated)"
        sections["yeung_f1"].add("XOR, 360 + 40 new points", name, metric, pub, jnew, protocol=protocol, **given)
    for row in res.get("table2") or ():
        sub = tuple(int(v) for v in row["subset"])
        pub = PAPER_TABLE2.get(sub)
        label = "{" + ",".join(map(str, sub)) + "}"
        proto = f"mnist5000: {row['n'] // len(sub)} images per digit (paper: 2 000); Isolet not offline"
        for method, key in (("input space", "input"), ("RBF feature space", "rbf"), ("RCA", "rca"), ("ours", "ours")):
            v = row[key]
            mean, sd = (v, None) if _num(v) else (float(np.mean(v)), float(np.std(v)))
            p = pub[key] if pub else None
            p_mean, p_sd = (p, None) if (p is None or _num(p)) else p
            kw = dict(published_std=p_sd, std_kind=f"sd over {len(row['ours'])} S", protocol=proto, **given)
            sections["yeung_t2"].add(f"MNIST {label}", method, "J (eq. 17)", p_mean, mean, sd, **kw)


def _yeung_run(mode, data_dir, n_jobs, seed, cmd):
    from .yeung import figure1, table1_rows, table2_rows

    quick = mode == "quick"
    t1 = dict(n=600, n_pairs=20, landmarks=(60, 120), n_runs=2, also_one_iteration=False) if quick else {}
    t2 = dict(subsets=((0, 1),), per_digit=60, n_pairs=15, n_runs=1, m=40) if quick else {}
    res = {
        "table1": table1_rows(seed=seed, n_jobs=n_jobs, **t1),
        "figure1": figure1(seed=seed),
        "table2": table2_rows(data_dir, seed=seed, n_jobs=n_jobs, **t2),
    }
    return [(res, cmd("python -m benchmarks reproduce yeung"), {})]


def _yeung_recorded(ref):
    return [
        (
            _load(ref, "yeung2007-results.json"),
            "python -m benchmarks reproduce yeung",
            "reference/yeung2007-results.json",
            {},
        )
    ]


def _fits_by_method(r) -> dict | None:
    """{method: (certified, all)} over the LMNN fits behind each method's number, from the
    per-fold (Table 2: per-split) records; an inner-CV fit ("LMNN-MKL_CV inner") counts for
    LMNN-MKL_CV, whose kernel it chose.  None when a fold kept no per-fit record."""
    runs = r.get("per_fold") or r.get("per_split") or []
    if not runs or any("lmnn_fits" not in run for run in runs):
        return None
    counts: dict = {}
    for run in runs:
        for fit in run["lmnn_fits"]:
            method = fit["method"].removesuffix(" inner")
            ok, total = counts.get(method, (0, 0))
            counts[method] = (ok + bool(fit["converged"]), total + 1)
    return counts


def _mkl_records(sections, res, command, source, label="", heading=None, protocol=None, superseded="") -> None:
    from .mkl import PAPER_TABLE1, PAPER_TABLE2

    proto = protocol or (
        "reduced budgets: metric and weights learned on 30 (Table 2: 60) points of each "
        "training fold, 300 LMNN iterations, 2 outer iterations"
    )
    note = (
        "certified counts the LMNN fits behind each method's number (Algorithm 1: its final metric step; "
        "LMNN-MKL_CV: with its inner-CV fits; runs without per-fit records: all LMNN fits of the data set); "
        "early stops count as not certified" + superseded
    )
    tables = [("mkl_t1", PAPER_TABLE1[name], name, r) for name, r in (res.get("table1") or {}).items()]
    tables += [("mkl_t2", PAPER_TABLE2, "Multiple Features", res["table2"])] if res.get("table2") else []
    for key, paper, dataset, r in tables:
        n, fits = r["n_test"], r.get("fits", 0)
        kw = dict(std_kind=f"binomial s.e., {n} pooled test points", fmt=".2f", protocol=proto, command=command)
        kw.update(source=source, heading=heading, note=note)
        counts = _fits_by_method(r)
        for method, acc in r["accuracy"].items():
            pub = paper.get(method, (None, None))
            se = 100.0 * math.sqrt(max(acc / 100.0 * (1 - acc / 100.0), 0.0) / n)
            if method == "1-NN":
                cert = _NONE
            elif counts is not None:
                cert = _cert(*counts.get(method, (0, 0)))
            else:
                cert = _cert(fits - r.get("unconverged_fits", 0), fits)
            metric = f"1-NN test accuracy % (score {r['score'][method]:g}, paper {pub[1]:g})"
            sections[key].add(dataset + label, method, metric, pub[0], acc, se, certified=cert, **kw)


def _mkl_run(mode, data_dir, n_jobs, seed, cmd):
    from dataclasses import replace

    from .mkl import TABLE1_DATASETS, Protocol, quick_protocol, reproduce

    if mode == "quick":
        proto = replace(quick_protocol(), seed=seed)
        res = reproduce(proto, TABLE1_DATASETS, max_folds=1, n_splits=1, data_dir=data_dir, n_jobs=n_jobs)
        return [(res, cmd("python -m benchmarks reproduce mkl"), {})]
    res = reproduce(Protocol(seed=seed, **_MKL_FULL_PROTOCOL), data_dir=data_dir, n_jobs=n_jobs)
    return [(res, cmd(f"python -m benchmarks reproduce mkl {_MKL_FULL_FLAGS}"), _MKL_FULL_KW)]


_MKL_FULL = "Full protocol (LMNN to its certificate, Algorithm 1 to its stopping rule)"
#: the full protocol as Protocol fields
_MKL_FULL_PROTOCOL = dict(
    n_learn=None, n_learn_mfeat=None, max_iter=20000, cv_max_iter=20000, max_outer=20, max_convex_iter=50
)
# the command's flags from the same fields (its --n-learn 0 means every point: None here)
_MKL_FULL_FLAGS = " ".join(f"--{k.replace('_', '-')} {0 if v is None else v}" for k, v in _MKL_FULL_PROTOCOL.items())
_MKL_FULL_KW = dict(
    label=" (full protocol)",
    heading=_MKL_FULL,
    protocol=(
        "all training points learn; LMNN to its 1e-5 certificate (budget 20 000 iterations), "
        "Algorithm 1 to its stopping rule"
    ),
    superseded=(
        "; the earlier runs with reduced budgets (30 / 60 learning points, 300 LMNN iterations) and "
        "whole folds (1 000 LMNN iterations) stopped their LMNN fits early by design and are superseded "
        "by the full protocol: their numbers stay in the sheet"
    ),
)
#: the full-protocol runs in reference/ -> the command that made each (the sheet's "Full protocol")
_MKL = "python -m benchmarks reproduce mkl"
MKL_FULL_RUNS = {
    "wang2011-mkl-full-sonar.json": f"{_MKL} --datasets sonar --no-table2 {_MKL_FULL_FLAGS}",
    "wang2011-mkl-full-wine-iris.json": f"{_MKL} --datasets wine iris --no-table2 {_MKL_FULL_FLAGS}",
    "wang2011-mkl-full-ionosphere.json": f"{_MKL} --datasets ionosphere --no-table2 {_MKL_FULL_FLAGS}",
    "wang2011-mkl-full-wdbc.json": f"{_MKL} --datasets wdbc --no-table2 {_MKL_FULL_FLAGS}",
    "wang2011-mkl-full-mfeat.json": f"{_MKL} --no-table1 {_MKL_FULL_FLAGS}",
}


def _mkl_recorded(ref):
    """The full-protocol runs, one per data set (Table 1) and Multiple Features (Table 2).  The
    earlier runs with reduced budgets (30 / 60 learning points, 300 LMNN iterations) and with
    whole folds (LMNN stopped at 1 000 iterations) stopped their LMNN fits early by design;
    the full protocol supersedes them for every cell, so they stay in the sheet only."""
    return [(_load(ref, f), command, f"reference/{f}", _MKL_FULL_KW) for f, command in MKL_FULL_RUNS.items()]


def _kcr_records(sections, r, command, source, protocol) -> None:
    from .kcr import PAPER_TABLE1

    grid = "full grid" if len(protocol.nus) == 9 and len(protocol.lams) == 7 else None
    grid = grid or f"grid {len(protocol.nus)} x {len(protocol.lams)}"
    proto = (
        f"features standardized (not stated); {protocol.n_splits} splits, {grid}, "
        f"<= {protocol.max_iter} iterations per fit"
    )
    given = dict(std_kind=f"sd over {r['n_splits']} splits", fmt=".2f", command=command, source=source)
    for key, method, part in (
        ("knn_train", "k-NN", "train"),
        ("knn_test", "k-NN", "test"),
        ("kcr_train", "KCR", "train"),
        ("kcr_test", "KCR", "test"),
    ):
        (pub, pub_sd), (mean, sd) = PAPER_TABLE1[r["name"]][key], r[key]
        kcr = method == "KCR"
        cert = _cert(r["chosen_converged"], r["n_splits"]) if kcr else _NONE
        note = f"{r['n_converged']}/{r['n_fits']} fits of the grid certified" if kcr else ""
        p = proto + ("; k-NN train error = resubstitution (paper: not defined)" if key == "knn_train" else "")
        kw = dict(published_std=pub_sd, certified=cert, protocol=p, note=note, **given)
        sections["kcr"].add(r["name"], method, f"{part} error %", pub, mean, sd, **kw)


def _kcr_run(mode, data_dir, n_jobs, seed, cmd):
    from .kcr import REDUCED_LAMS, REDUCED_NUS, Protocol, reproduce

    if mode == "quick":
        proto = Protocol(n_splits=1, nus=(1.0,), lams=(1.0,), ks=(1, 3), max_iter=200, seed=seed)
        runs = [(reproduce(protocol=proto, data_dir=data_dir, n_jobs=n_jobs), proto)]
    else:
        full = Protocol(seed=seed)
        reduced = Protocol(nus=REDUCED_NUS, lams=REDUCED_LAMS, max_iter=5000, seed=seed)
        runs = [
            (reproduce(("iris", "wine", "ionosphere"), full, data_dir, n_jobs=n_jobs), full),
            (reproduce(("balance",), reduced, data_dir, n_jobs=n_jobs), reduced),
        ]
    return [
        (r, cmd(f"python -m benchmarks reproduce kcr --datasets {r['name']}"), {"protocol": p})
        for results, p in runs
        for r in results
    ]


def _kcr_recorded(ref):
    from .kcr import Protocol

    name = "sriperumbudur2008-kcr-table1-full.json"
    data = _load(ref, name)
    out = []
    for key, entry in data["results"].items():
        p = entry["protocol"]
        proto = Protocol(n_splits=p["n_splits"], nus=tuple(p["nus"]), lams=tuple(p["lams"]), max_iter=p["max_iter"])
        out.append(
            (entry["result"], data["commands"][key].replace(" --out …", ""), f"reference/{name}", {"protocol": proto})
        )
    return out


def _entry(key):
    """A ``recorded`` reader of the entry ``key`` of :data:`RECORDED_FILE` (with its extra commands)."""

    def read(ref):
        rec, source = _recorded(ref, key)
        return [(rec["result"], rec["command"], source, {k: rec[k] for k in ("mnist_command",) if k in rec})]

    return read


#: group -> (records, run, recorded) (see the comment above)
CONVERTERS = {
    "logdet": (_logdet_records, _logdet_run, _entry("jain2012_table1")),
    "uci": (_uci_records, _uci_run, _entry("kulis2009_figure5")),
    "trace": (_trace_records, _trace_run, _trace_recorded),
    "lowrank": (_lowrank_records, _lowrank_run, _entry("kulis2009_lowrank")),
    "yeung": (_yeung_records, _yeung_run, _yeung_recorded),
    "mkl": (_mkl_records, _mkl_run, _mkl_recorded),
    "kcr": (_kcr_records, _kcr_run, _kcr_recorded),
}


def _fill(group: str, sections: dict, mode: str, ref: Path, data_dir, n_jobs, seed) -> dict:
    """Run (``mode`` "quick" / "full") or read (``mode`` "recorded") one group through its
    :data:`CONVERTERS` entry; fills its sections' records and returns {"source", "seconds"}."""
    t0 = time.perf_counter()
    records, run, recorded = CONVERTERS[group]
    if mode == "recorded":
        jobs = recorded(ref)
    else:
        cmd = (lambda full: QUICK_COMMAND) if mode == "quick" else (lambda full: full)
        jobs = [(res, command, "this run", kw) for res, command, kw in run(mode, data_dir, n_jobs, seed, cmd)]
    for res, command, source, kw in jobs:
        records(sections, res, command, source, **kw)
    return {"source": "recorded" if mode == "recorded" else "run", "seconds": time.perf_counter() - t0}


def collect(
    mode: str = "recorded", groups=None, ref=None, data_dir=None, n_jobs: int | None = 1, seed: int = 0
) -> dict:
    """Run or read every reproduction and return the summary.

    Parameters
    ----------
    mode : {"quick", "full", "recorded"}
        Run every reproduction at toy size, run it in full, or read the recorded runs.
    groups : iterable of str, optional
        The keys of :data:`GROUPS` to run (default all; with "full" the others are recorded).
    ref : str or Path, optional
        The ``reference/`` folder (default :func:`reference_dir`).
    data_dir : str or Path, optional
        The offline data folder (None: the default of :mod:`cvxkml.datasets`).
    n_jobs : int or None, default 1
        Parallel tasks of the runs (the numbers do not depend on it).
    seed : int, default 0
        Seed passed to every run.

    Returns
    -------
    dict
        ``mode``, ``sections``, ``records``, ``groups`` (how each was obtained, seconds),
        ``missing_data``, ``counts``.
    """
    if mode not in ("quick", "full", "recorded"):
        raise CommandError(f"mode must be quick, full or recorded; got {mode!r}")
    ref = Path(ref) if ref is not None else reference_dir()
    selected = tuple(GROUPS) if groups is None else tuple(groups)
    unknown = sorted(set(selected) - set(GROUPS))
    if unknown:
        raise CommandError(f"unknown section(s) {unknown}; choose from {list(GROUPS)}")
    sections = {k: _Section(k, *v) for k, v in SECTIONS.items()}
    info = {}
    for group in GROUPS:
        if mode == "quick" and group not in selected:
            continue
        how = mode if (mode == "quick" or group in selected) else "recorded"
        info[group] = _fill(group, sections, how, ref, data_dir, n_jobs, seed)
    records = [r for s in sections.values() for r in s.records]
    meta = [
        {
            "key": s.key,
            "paper": s.paper,
            "table": s.table,
            "sheet": f"reference/{s.sheet}",
            "explanation": f"{s.sheet}#{anchor(s.heading)}",
            "full_command": s.full_command,
            "rows": len(s.records),
        }
        for s in sections.values()
        if s.records
    ]
    certified = [r for r in records if r["certified"] is not None]
    counts = {
        "rows": len(records),
        "differs": sum(r["differs"] is True for r in records),
        "certified_rows": sum(r["certified"] is True for r in certified),
        "rows_with_fits": len(certified),
    }
    return jsonable(
        {
            "mode": mode,
            "sections": meta,
            "records": records,
            "groups": info,
            "missing_data": [{"data_set": a, "needed_by": b, "stand_in": c} for a, b, c in MISSING_DATA],
            "counts": counts,
        }
    )


# --------------------------------------------------------------------------- rendering
def _fmt(value, fmt: str) -> str:
    if value is None:
        return "–"
    if _num(value):
        return f"{value:{fmt}}"
    return str(value)


def _cell(value, sd, fmt) -> str:
    s = _fmt(value, fmt)
    return f"{s} ± {sd:{fmt}}" if _num(value) and _num(sd) else s


def _cert_cell(rec) -> str:
    if rec["certified"] is None:
        return "n/a" if not rec["note"].startswith("measured with the old") else "not checked"
    if rec["certified"]:
        return "yes " + rec["certified_fits"]
    return f"**no** {rec['certified_fits']} — [why]({rec['uncertified_why']})"


def render_markdown(summary: dict) -> str:
    """SUMMARY.md from a summary of :func:`collect` (nothing else goes into the text): one section
    per table or figure, then the runs and the missing data sets."""
    mode = summary["mode"]
    gen = {
        "recorded": "python -m benchmarks reproduce all --recorded",
        "quick": QUICK_COMMAND,
        "full": "python -m benchmarks reproduce all --full",
    }[mode]
    c = summary["counts"]
    out = [
        "# Reproductions: the papers' numbers beside ours",
        "",
        f"Generated by `{gen}` from `summary.json` (same folder) — do not edit by hand.",
        {
            "recorded": "Mode `--recorded`: no fit was run; every number is one already measured by the "
            "command in its row and stored in `reference/` (the sheets' results JSON, or "
            "`recorded-results.json` where the sheet has prose only).",
            "quick": "Mode `--quick`: every reproduction at toy size. **These numbers are a smoke test, "
            "not a reproduction.**",
            "full": "Mode `--full`: the reproductions marked *run* under \"Runs\" ran now; the others are "
            "recorded results.",
        }[mode],
        "",
        "Columns: *paper* = the published value (± its sd when given; text where the paper has only "
        "a figure); *ours* = mean ± sd (the kind of sd is in summary.json, `std_kind`); *certified* = "
        "fits behind the number whose certificate holds (`converged=True`), n/a when the row has no "
        "convex fit, a link to the sheet's reasons when some fit is not certified; *Δ* = ours differs "
        "from the paper by more than one sd (ours, else the paper's) "
        "or lies outside the paper's plotted axis — then the link points to the sheet's explanation.",
        "",
        f"{c['rows']} rows; {c['differs']} differ by more than one sd (or leave the axis); "
        f"{c['certified_rows']} of the {c['rows_with_fits']} rows with fits have every fit certified.",
        "",
    ]
    by_key = {}
    for r in summary["records"]:
        by_key.setdefault((r["paper"], r["table"]), []).append(r)
    for s in summary["sections"]:
        rows = by_key.get((s["paper"], s["table"]), [])
        out += [
            f"## {s['paper']} — {s['table']}",
            "",
            f"Sheet: [{s['sheet']}]({s['explanation']}).",
            "",
            "| data set | method | metric | paper | ours | certified | Δ |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            d = {True: f"**yes** — [why]({r['explanation']})", False: "no", None: "–"}[r["differs"]]
            out.append(
                f"| {r['dataset']} | {r['method']} | {r['metric']} | "
                f"{_cell(r['published'], r['published_std'], r['fmt'])} | "
                f"{_cell(r['measured'], r['std'], r['fmt'])} | {_cert_cell(r)} | {d} |"
            )
        out.append("")
        for label, key in (
            ("Protocol differences", "protocol_difference"),
            ("Regenerate", "command"),
            ("Numbers from", "source"),
            ("Notes", "note"),
        ):
            seen = []
            for r in rows:
                if r[key] and r[key] not in seen:
                    seen.append(r[key])
            if seen:
                fmt = (lambda v: f"`{v}`") if key == "command" else (lambda v: v)
                out.append(f"{label}:")
                out += [f"- {fmt(v)}" for v in seen]
                out.append("")
    if summary.get("groups"):
        out += ["## Runs", ""]
        out += [f"- {g}: {i['source']}, {i['seconds']:.1f} s" for g, i in summary["groups"].items()]
        out.append("")
    out += [
        "## Data sets the papers used that are not offline",
        "",
        "Read from the data folder's README.md (`CVXKML_DATA`); nothing was downloaded.",
        "",
        "| data set | needed by | stand-in |",
        "|---|---|---|",
    ]
    out += [f"| {m['data_set']} | {m['needed_by']} | {m['stand_in']} |" for m in summary["missing_data"]]
    out.append("")
    return "\n".join(out)


def write_summary(summary: dict, out_dir) -> tuple[Path, Path]:
    """Write ``summary.json`` and ``SUMMARY.md`` (rendered from that JSON) into ``out_dir``;
    returns their paths.  In "recorded" mode the groups' seconds are left out."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    jpath = out_dir / "summary.json"
    keep = {k: v for k, v in summary.items() if k != "groups"} if summary["mode"] == "recorded" else summary
    jpath.write_text(json.dumps(keep, indent=1, ensure_ascii=False) + "\n")
    mpath = out_dir / "SUMMARY.md"
    mpath.write_text(render_markdown(json.loads(jpath.read_text())))
    return mpath, jpath


#: the runnable groups -> the data sets their runs read (mnist5000 is optional for lowrank:
#: its MNIST-shape workload falls back to a synthetic factor)
GROUP_DATA = {
    "logdet": ("ionosphere", "pendigits"),
    "uci": ("wine", "ionosphere", "iris", "balance"),
    "trace": ("mnist5000", "pendigits"),
    "lowrank": ("pendigits", "spambase", "nursery"),
    "yeung": ("mnist5000",),
    "mkl": ("sonar", "wine", "iris", "ionosphere", "wdbc", "mfeat"),
    "kcr": ("balance", "ionosphere", "iris", "wine"),
}


# --------------------------------------------------------------------------- command
def _groups_run(args) -> tuple:
    """The groups ``python -m benchmarks reproduce all`` runs (none: the recorded results only)."""
    if not (args.quick or args.full):
        return ()
    return tuple(g for g in GROUPS if args.sections is None or g in args.sections)


def data_sets(args) -> tuple:
    """The data sets of the groups that run (checked before the first one starts)."""
    return tuple(d for g in _groups_run(args) for d in GROUP_DATA[g])


def optional_data_sets(args) -> tuple:
    return ("mnist5000",) if "lowrank" in _groups_run(args) else ()


def command(args) -> int:
    """``python -m benchmarks reproduce all``: every reproduction in one summary (``SUMMARY.md``, ``summary.json``),
    from the recorded runs in ``reference/`` or run again (``--quick`` / ``--full``).

    Returns the exit status, 0; raises :class:`CommandError` for ``--sections`` given without
    ``--quick`` or ``--full``."""
    mode = "quick" if args.quick else "full" if args.full else "recorded"
    if args.sections and mode == "recorded":
        raise CommandError("--sections goes with --quick or --full")
    ref = Path(args.reference) if args.reference else reference_dir()
    out = Path(args.out) if args.out else (Path("reproduce-all-quick") if mode == "quick" else ref)
    t0 = time.perf_counter()
    print(f"python -m benchmarks reproduce all ({mode}): every seed table and figure of the five papers", flush=True)
    with parallel_from_args(args) as (n_jobs, engine):
        summary = collect(mode, args.sections, ref, args.data_dir, n_jobs, args.seed)
    rows = [
        [
            r["paper"],
            r["table"],
            r["dataset"],
            r["method"],
            _fmt(r["published"], r["fmt"])[:24],
            _cell(r["measured"], r["std"], r["fmt"]),
            _cert_cell(r),
            {True: "yes", False: "no", None: "-"}[r["differs"]],
        ]
        for r in summary["records"]
    ]
    print(format_table(["paper", "table", "data set", "method", "paper", "ours", "certified", "differs"], rows))
    for group, info in summary["groups"].items():
        print(f"{group}: {info['source']}, {info['seconds']:.1f} s")
    mpath, jpath = write_summary(summary, out)
    print(f"({describe(n_jobs, engine)})")
    print(f"wrote {mpath} and {jpath}")
    return finish("reproduce all", t0)
