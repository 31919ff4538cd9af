"""Every reproduction in one summary: ``cvxkml reproduce all [--quick | --full | --recorded]``.

One uniform record per table row of the five papers' seed tables and figures::

    {paper, table, dataset, method, metric, published, published_std, measured, std,
     std_kind, differs, certified, certified_fits, protocol_difference, command, source,
     sheet, explanation}

``certified``: True when every fit behind the number is certified, False when some are not
(``certified_fits`` says how many), None without convex fits or for fits measured before the
certificate existed.  ``differs``: ours and the paper's differ by more than one sd (ours, else
the paper's), or ours leave a figure's axis range; ``explanation`` links the sheet section.

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

from ._commands import CommandError
from ._parallel import describe, parallel_from_args
from ._report import finish, format_table, jsonable

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

QUICK_COMMAND = "cvxkml reproduce all --quick"

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


def reference_dir() -> Path:
    """``reference/`` of the source checkout this module lies in, else ``./reference``."""
    here = Path(__file__).resolve().parents[2] / "reference"
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


# --------------------------------------------------------------------------- Jain Table 1
def _logdet_records(sec: _Section, res: dict, command: str, source: str) -> None:
    from .reproduce_logdet import PROTOCOL

    protocol = {
        "ionosphere": "paper leaves open: " + PROTOCOL[0] + "; " + PROTOCOL[1],
        "digits389": "Digits-389 = pendigits 3/8/9, stratified 10 % subsample (paper: 317 points, "
        "most likely another digits set)",
    }
    for name, r in res.items():
        for m, method in enumerate(("unsupervised", "LogDet linear", "HMRF-KMeans")):
            cert = _cert(r["itml_certified"], r["fits"]) if method == "LogDet linear" else (None, "")
            sec.add(
                name,
                method,
                "k-means test error",
                r["paper"][m],
                r["mean"][m],
                r["std"][m],
                std_kind=f"sd over {r['fits']} folds",
                certified=cert,
                protocol=protocol[name],
                command=command,
                source=source,
            )


def _logdet_run(mode, data_dir, n_jobs, seed):
    from .reproduce_logdet import table1

    return table1(repeats=1 if mode == "quick" else 10, seed=seed, data_dir=data_dir, n_jobs=n_jobs)


# --------------------------------------------------------------------------- UCI k-NN
_UCI_AXIS = (0.0, 0.35)


def _uci_records(sec: _Section, res: dict, command: str, source: str) -> None:
    for r in res["rows"]:
        fits = r.get("fits", 0)
        cert = _cert(r["converged"], fits) if r["method"] != "euclidean" else (None, "")
        sec.add(
            r["dataset"],
            r["method"],
            "4-NN test error",
            "bar chart only (axis 0-0.35)",
            r["mean"],
            r["std"],
            std_kind="sd over repeats",
            certified=cert,
            axis=_UCI_AXIS,
            protocol="Kulis et al. Fig. 5 protocol (k = 4, 40c^2 pairs, gamma by inner CV); features "
            "standardized on the training fold (not stated); Jain Fig. 1(a) uses k = 10",
            command=command,
            source=source,
        )


def _uci_run(mode, data_dir, n_jobs, seed):
    from .reproduce_spectral import reproduce_spectral

    return reproduce_spectral(quick=mode == "quick", seed=seed, data_dir=data_dir, n_jobs=n_jobs)


# --------------------------------------------------------------------------- Jain Figure 2
def _trace_records(sec: _Section, results: list, commands: list, sources: list) -> None:
    names = {
        "trace2": "Trace-SSIKDR, top-2 directions",
        "tracepca2": "Trace-SSIKDR, centred PCA-2",
        "kpca_train": "kernel PCA (training digits)",
    }
    for res, command, source in zip(results, commands, sources):
        st = res["settings"]
        tau = float(st["tau_figure"])
        solver = res["solver_summary"][str(tau) if str(tau) in res["solver_summary"] else tau]
        n_draws = st["n_draws"]
        for key, label in names.items():
            mkey = f"{key}:{tau:g}" if key != "kpca_train" else key
            mean, sd = res["summary"][mkey]["knn"]
            cert = _cert(solver["converged"], n_draws) if key != "kpca_train" else (None, "")
            sec.add(
                st["dataset"],
                label,
                f"{st['k']}-NN accuracy of the 2-D embedding",
                "figure only: separates 7 of 10 digits (kernel PCA: 3)",
                mean,
                sd,
                std_kind=f"sd over {n_draws} draws",
                certified=cert,
                protocol="USPS not offline; Gaussian base kernel (paper: Sindhwani graph kernel); "
                "top-2 of the learned map (eq. 26 does not reach rank 2)",
                command=command,
                source=source,
            )


def _trace_run(mode, data_dir, n_jobs, seed):
    from .reproduce_trace import reproduce_trace

    quick = mode == "quick"
    return [
        reproduce_trace("mnist5000", quick=quick, seed=seed, data_dir=data_dir, n_jobs=n_jobs),
        reproduce_trace(
            "pendigits", quick=quick, seed=seed, data_dir=data_dir, n_jobs=n_jobs, taus=None if quick else (10.0,)
        ),
    ]


# --------------------------------------------------------------------------- Kulis
_SPAMBASE_HEADING = "Spambase: raw or standardized features (issue 18)"
#: The side check of that section (standardized features, an option of ``cvxkml reproduce lowrank``).
SPAMBASE_STANDARDIZED_COMMAND = "cvxkml reproduce lowrank --parts spambase --scale standardize"


def _lowrank_records(sec: _Section, res: dict, command: str, source: str, mnist_command: str) -> None:
    old_rule = set(res.get("old_rule", ()))  # sections measured before the certificate existed
    sources = res.get("sources", {})

    def note(part):
        return "measured with the old dual-change rule, not certified (sheet note 2)" if part in old_rule else ""

    def fits(part, row):
        """(certified, note) of a row; none for the row without constraints."""
        if not row["constraints"]:
            return (None, ""), ""
        return ((None, "") if part in old_rule else _cert(row.get("converged", 0), row["draws"])), note(part)

    dig = res["digits"]
    proto_dig = "317 of pendigits 3/8/9 drawn by seed 0; raw features; tol 1e-3 (measure not stated)"
    for row in (dig[0], dig[-1]):
        c, n = fits("digits", row)
        sec.add(
            "Digits",
            f"LogDet, {row['constraints']} constraints",
            "kernel k-means NMI",
            "curve only (axis 0.4-0.9)",
            row["nmi_mean"],
            row["nmi_std"],
            std_kind=f"sd over {row['draws']} draws",
            certified=c,
            axis=(0.4, 0.9),
            protocol=proto_dig,
            command=command,
            source=source,
            note=n,
        )
    for row, pub in ((dig[0], 0.94), (dig[-1], 0.97)):
        c, n = fits("digits", row)
        sec.add(
            "Digits",
            f"LogDet, {row['constraints']} constraints",
            "5-NN accuracy",
            pub,
            row["knn_mean"],
            row["knn_std"],
            std_kind=f"sd over {row['draws']} draws",
            certified=c,
            protocol="paper: 94 % -> 97 %, number of constraints not stated",
            command=command,
            source=source,
            note=n,
        )
    cyc = [r for r in dig if r["constraints"]]
    sec.add(
        "Digits",
        "LogDet, all constraint counts",
        "cycles to converge",
        "17-354",
        f"{min(r['cycles_min'] for r in cyc)}-{max(r['cycles_max'] for r in cyc)}",
        protocol="cycles = sweeps of our solver (its stopping rule differs, sheet note 2)",
        command=command,
        source=source,
        note=note("digits"),
    )
    conv = res["digits_convergence"]
    last = conv["rows"][-1]
    feas = conv.get("feasible")
    sec.add(
        "Digits",
        f"LogDet, {conv['constraints']} constraints, {last['cycles']} cycles",
        "% of constraints satisfied (1e-3)",
        "curve only (Fig. 1 right)",
        last["satisfied_pct"],
        certified=(None, ""),
        fmt=".1f",
        protocol="one draw; the exact model says this draw is "
        + {True: "feasible", False: "infeasible", None: "not checked"}[feas],
        command=command,
        source=source,
    )
    uci = (
        ("spambase", "Spambase", (0.2, 0.5), "raw features, rank 57, gamma = 1 (not stated)"),
        (
            "spambase_standardized",
            "Spambase, standardized",
            (0.2, 0.5),
            "side check, not the protocol: features standardized (the paper does not say it scaled them)",
        ),
        ("nursery", "Nursery", (0.1, 0.3), "ordinal codes in UCI order, rank 8, gamma = 1 (not stated)"),
    )
    for part, label, axis, proto in uci:
        rows = res.get(part)
        if not rows:
            continue
        for row in (rows[0], rows[-1]):
            c, n = fits(part, row)
            sec.add(
                label,
                f"LogDet, {row['constraints']} constraints",
                "kernel k-means NMI",
                f"curve only (axis {axis[0]}-{axis[1]})",
                row["nmi_mean"],
                row.get("nmi_std"),
                std_kind=f"sd over {row['draws']} draws",
                certified=c,
                axis=axis,
                protocol=proto,
                command=SPAMBASE_STANDARDIZED_COMMAND if part == "spambase_standardized" else command,
                source=f"reference/{RECORDED_FILE} ({sources[part]})" if part in sources else source,
                note=n,
                heading=_SPAMBASE_HEADING if part.startswith("spambase") else None,
            )
    paper_min = {10_000: 4.8, 100_000: 11.3}  # bench._LOWRANK_PAPER_MIN (not imported: numba)
    mn = res.get("mnist")
    if mn:
        for row in mn["rows"]:
            if row.get("solver", "certified") != "certified":  # the paper-rule baseline rows
                continue
            m = int(row["constraints"])
            ok = row.get("certified", row["converged"])
            sec.add(
                f"MNIST shape (n = {mn['n']}, r = {mn['r']})",
                f"LogDet, {m} constraints",
                "seconds (ours: the solve; paper: whole run, MATLAB + MEX)",
                60.0 * paper_min[m] if m in paper_min else None,
                row["solver_s"],
                certified=_cert(int(bool(ok)), 1),
                fmt=".2f",
                protocol="synthetic MNIST-shape data (60 000 deskewed images not offline); other machine; "
                "no test error",
                command=mnist_command,
                source=mn.get("source_file", source),
                note="speed, not compared by sd",
            )


def _lowrank_run(mode, data_dir, n_jobs, seed):
    from .bench import lowrank_workload_rows
    from .reproduce_lowrank import reproduce_lowrank

    quick = mode == "quick"
    res = reproduce_lowrank(quick=quick, seed=seed, data_dir=data_dir, n_jobs=n_jobs)
    # without the timed paper-rule baseline of `cvxkml bench lowrank` (not a summary row)
    res["mnist"] = lowrank_workload_rows(quick=quick, data_dir=data_dir, seed=seed, baseline=False)
    return res


# --------------------------------------------------------------------------- Yeung
#: The sheet section of Table 1 at the setting implied by the paper's columns (``table1_implied``).
_YEUNG_IMPLIED = "Which setting the paper's Table 1 implies (issue 18)"


def _yeung_t1_rows(
    sec: _Section, t1: dict, dataset: str, proto: str, command: str, source: str, calibrated: str = "", heading=None
) -> None:
    """The rows of one Table 1 result (input, RBF, RCA, ours per m) into ``sec``.

    ``calibrated``: the note of the input and RBF rows when the setting was solved to match
    the paper's values there (the implied setting); ``heading``: the sheet section explaining
    the rows (default the section's own).
    """
    from .reproduce_yeung import PAPER_TABLE1

    none = (None, "")
    closed = "closed form (eigendecompositions), nothing to certify"
    given = dict(protocol=proto, command=command, source=source, heading=heading)
    sec.add(
        dataset,
        "input space",
        "J (eq. 17)",
        PAPER_TABLE1["input"],
        t1["input"],
        fmt=".4f",
        note=calibrated or closed,
        **given,
    )
    sec.add(
        dataset,
        "RBF feature space",
        "J (eq. 17)",
        PAPER_TABLE1["rbf"],
        t1["rbf"],
        fmt=".4f",
        note=calibrated or closed,
        **given,
    )
    sec.add(
        dataset,
        "RCA",
        "J (eq. 17)",
        PAPER_TABLE1["rca"][0],
        float(np.mean(t1["rca"])),
        float(np.std(t1["rca"])),
        published_std=PAPER_TABLE1["rca"][1],
        fmt=".4f",
        std_kind=f"sd over {len(t1['rca'])} S",
        certified=none,
        note=closed,
        **given,
    )
    for m, vals in t1["ours"].items():
        pub = PAPER_TABLE1["ours"].get(int(m))
        sec.add(
            dataset,
            f"ours, m = {int(m)}",
            "J (eq. 17)",
            pub[0] if pub else None,
            float(np.mean(vals)),
            float(np.std(vals)),
            published_std=pub[1] if pub else None,
            fmt=".4f",
            std_kind=f"sd over {len(vals)} S",
            note=closed,
            **given,
        )


def _yeung_records(sections: dict, res: dict, command: str, source: str) -> None:
    """Records of a ``cvxkml reproduce yeung`` result: Table 1 (and, when the result has it,
    ``table1_implied``, Table 1 at the setting implied by the paper's columns, labelled as
    such), Figure 1 and Table 2."""
    from .reproduce_yeung import PAPER_TABLE2

    closed = "closed form (eigendecompositions), nothing to certify"
    t1 = res.get("table1")
    if t1:
        _yeung_t1_rows(
            sections["yeung_t1"],
            t1,
            "XOR",
            "XOR generator and sigma = median distance are ours (paper: not stated)",
            command,
            source,
        )
    t1i = res.get("table1_implied")
    if t1i:
        setting = f"blob std {t1i['xor_std']:g}, sigma {t1i['sigma']:g}"
        _yeung_t1_rows(
            sections["yeung_t1"],
            t1i,
            f"XOR, implied setting ({setting})",
            f"implied setting, not the protocol: {setting} solved so that the input and RBF "
            "columns equal the paper's (IMPLIED_TABLE1)",
            t1i.get("command") or f"{command} --part table1 --implied",
            source,
            calibrated="implied setting: equal to the paper's by construction (calibrated)",
            heading=_YEUNG_IMPLIED,
        )
    f1 = res.get("figure1")
    if f1:
        sec = sections["yeung_f1"]
        for name, (_jtr, jnew) in f1["J"].items():
            sec.add(
                "XOR, 360 + 40 new points",
                name,
                "J on the new points (full coordinates)",
                "figure only (2-D embeddings)",
                jnew,
                fmt=".4f",
                protocol="|S| = 15, m = 40 (|S| not stated)",
                command=command,
                source=source,
                note=closed,
            )
    t2 = res.get("table2")
    if t2:
        sec = sections["yeung_t2"]
        for row in t2:
            sub = tuple(int(v) for v in row["subset"])
            pub = PAPER_TABLE2.get(sub)
            label = "{" + ",".join(map(str, sub)) + "}"
            proto = f"mnist5000: {row['n'] // len(sub)} images per digit (paper: 2 000); Isolet not offline"
            for method, key in (
                ("input space", "input"),
                ("RBF feature space", "rbf"),
                ("RCA", "rca"),
                ("ours", "ours"),
            ):
                v = row[key]
                mean, sd = (v, None) if _num(v) else (float(np.mean(v)), float(np.std(v)))
                p = pub[key] if pub else None
                p_mean, p_sd = (p, None) if (p is None or _num(p)) else p
                sec.add(
                    f"MNIST {label}",
                    method,
                    "J (eq. 17)",
                    p_mean,
                    mean,
                    sd,
                    published_std=p_sd,
                    fmt=".4f",
                    std_kind=f"sd over {len(row['ours'])} S",
                    protocol=proto,
                    command=command,
                    source=source,
                    note=closed,
                )


def _yeung_run(mode, data_dir, n_jobs, seed):
    from .reproduce_yeung import figure1, table1_rows, table2_rows

    if mode == "quick":
        return {
            "table1": table1_rows(
                n=600, n_pairs=20, landmarks=(60, 120), n_runs=2, seed=seed, also_one_iteration=False, n_jobs=n_jobs
            ),
            "figure1": figure1(seed=seed),
            "table2": table2_rows(
                data_dir, subsets=((0, 1),), per_digit=60, n_pairs=15, n_runs=1, m=40, seed=seed, n_jobs=n_jobs
            ),
        }
    return {
        "table1": table1_rows(seed=seed, n_jobs=n_jobs),
        "figure1": figure1(seed=seed),
        "table2": table2_rows(data_dir, seed=seed, n_jobs=n_jobs),
    }


# --------------------------------------------------------------------------- Wang
def _mkl_records(
    sections: dict,
    res: dict,
    command: str,
    source: str,
    label: str = "",
    heading: str | None = None,
    protocol: str | None = None,
) -> None:
    from .reproduce_mkl import PAPER_TABLE1, PAPER_TABLE2

    proto = protocol or (
        "reduced budgets: metric and weights learned on 30 (Table 2: 60) points of each "
        "training fold, 300 LMNN iterations, 2 outer iterations"
    )

    def rows(sec, r, paper, dataset):
        n = r["n_test"]
        fits, unconv = r.get("fits", 0), r.get("unconverged_fits", 0)
        for method, acc in r["accuracy"].items():
            pub = paper.get(method, (None, None))
            se = 100.0 * math.sqrt(max(acc / 100.0 * (1 - acc / 100.0), 0.0) / n)
            cert = (None, "") if method == "1-NN" else _cert(fits - unconv, fits)
            sec.add(
                dataset,
                method,
                f"1-NN test accuracy % (score {r['score'][method]:g}, paper {pub[1]:g})",
                pub[0],
                acc,
                se,
                std_kind=f"binomial s.e., {n} pooled test points",
                certified=cert,
                fmt=".2f",
                protocol=proto,
                command=command,
                source=source,
                heading=heading,
                note="certified counts all LMNN fits of the data set (early stops count as not certified)",
            )

    for name, r in (res.get("table1") or {}).items():
        rows(sections["mkl_t1"], r, PAPER_TABLE1[name], name + label)
    if res.get("table2"):
        rows(sections["mkl_t2"], res["table2"], PAPER_TABLE2, "Multiple Features" + label)


def _mkl_run(mode, data_dir, n_jobs, seed):
    from dataclasses import replace

    from .reproduce_mkl import TABLE1_DATASETS, Protocol, quick_protocol, reproduce

    if mode == "quick":
        return reproduce(
            replace(quick_protocol(), seed=seed),
            TABLE1_DATASETS,
            max_folds=1,
            n_splits=1,
            data_dir=data_dir,
            n_jobs=n_jobs,
        )
    return reproduce(Protocol(seed=seed), data_dir=data_dir, n_jobs=n_jobs)


# --------------------------------------------------------------------------- Sriperumbudur
def _kcr_records(sec: _Section, results: list, commands: list, source: str, protocols: list) -> None:
    from .reproduce_kcr import PAPER_TABLE1

    for r, command, proto in zip(results, commands, protocols):
        name = r["name"]
        for key, method, part in (
            ("knn_train", "k-NN", "train"),
            ("knn_test", "k-NN", "test"),
            ("kcr_train", "KCR", "train"),
            ("kcr_test", "KCR", "test"),
        ):
            pub, pub_sd = PAPER_TABLE1[name][key]
            mean, sd = r[key]
            if method == "KCR":
                cert = _cert(r["chosen_converged"], r["n_splits"])
                note = f"{r['n_converged']}/{r['n_fits']} fits of the grid certified"
            else:
                cert, note = (None, ""), ""
            p = proto + ("; k-NN train error = resubstitution (paper: not defined)" if key == "knn_train" else "")
            sec.add(
                name,
                method,
                f"{part} error %",
                pub,
                mean,
                sd,
                published_std=pub_sd,
                std_kind=f"sd over {r['n_splits']} splits",
                certified=cert,
                fmt=".2f",
                protocol=p,
                command=command,
                source=source,
                note=note,
            )


def _kcr_run(mode, data_dir, n_jobs, seed):
    from .reproduce_kcr import REDUCED_LAMS, REDUCED_NUS, Protocol, reproduce

    if mode == "quick":
        proto = Protocol(n_splits=1, nus=(1.0,), lams=(1.0,), ks=(1, 3), max_iter=200, seed=seed)
        return {"results": reproduce(protocol=proto, data_dir=data_dir, n_jobs=n_jobs), "protocols": [proto] * 4}
    full = Protocol(seed=seed)
    reduced = Protocol(nus=REDUCED_NUS, lams=REDUCED_LAMS, max_iter=5000, seed=seed)
    return {
        "results": reproduce(("iris", "wine", "ionosphere"), full, data_dir, n_jobs=n_jobs)
        + reproduce(("balance",), reduced, data_dir, n_jobs=n_jobs),
        "protocols": [full] * 3 + [reduced],
    }


def _kcr_protocol_line(p) -> str:
    grid = "full grid" if len(p.nus) == 9 and len(p.lams) == 7 else f"grid {len(p.nus)} x {len(p.lams)}"
    return f"features standardized (not stated); {p.n_splits} splits, {grid}, <= {p.max_iter} iterations per fit"


# --------------------------------------------------------------------------- the sections
#: key -> (paper, table, sheet, heading of the explaining section, full command)
SECTIONS = {
    "logdet": (
        "Jain et al. 2012",
        "Table 1",
        "jain2012-logdet.md",
        "Table 1: semi-supervised clustering with 50 constraints (`cvxkml reproduce logdet`)",
        "cvxkml reproduce logdet --repeats 10",
    ),
    "uci": (
        "Jain et al. 2012 / Kulis et al. 2009",
        "Jain Fig. 1 (a), Kulis Fig. 5: UCI k-NN",
        "jain2012-spectral.md",
        "`cvxkml reproduce spectral` (Kulis et al. Figure 5)",
        "cvxkml reproduce spectral",
    ),
    "trace": (
        "Jain et al. 2012",
        "Figure 2 (c)-(d)",
        "jain2012-trace.md",
        "Reading",
        "cvxkml reproduce trace; cvxkml reproduce trace --dataset pendigits --tau 10",
    ),
    "lowrank": (
        "Kulis et al. 2009",
        "Figures 1 and 3, §7.2 MNIST timings",
        "kulis2009-lowrank.md",
        "Published vs ours",
        "cvxkml reproduce lowrank; cvxkml bench lowrank",
    ),
    "yeung_t1": (
        "Yeung et al. 2007",
        "Table 1",
        "yeung2007-scalable.md",
        "Table 1 — XOR, n = 8 000, |S| = 50, 10 random S, J (eq. 17)",
        "cvxkml reproduce yeung",
    ),
    "yeung_t2": (
        "Yeung et al. 2007",
        "Table 2",
        "yeung2007-scalable.md",
        "Table 2 protocol — MNIST (offline subset)",
        "cvxkml reproduce yeung",
    ),
    "yeung_f1": (
        "Yeung et al. 2007",
        "Figure 1",
        "yeung2007-scalable.md",
        "Figure 1 — XOR, 360 training + 40 new points, m = 40",
        "cvxkml reproduce yeung",
    ),
    "mkl_t1": (
        "Wang et al. 2011",
        "Table 1",
        "wang2011-mkl.md",
        "Reproduction (Tables 1 and 2)",
        "cvxkml reproduce mkl",
    ),
    "mkl_t2": (
        "Wang et al. 2011",
        "Table 2",
        "wang2011-mkl.md",
        "Reproduction (Tables 1 and 2)",
        "cvxkml reproduce mkl",
    ),
    "kcr": (
        "Sriperumbudur et al. 2008",
        "Table 1",
        "sriperumbudur2008-kcr.md",
        "Ours vs the paper's Table 1 (k-NN and KCR columns, error %)",
        "cvxkml reproduce kcr --splits 20 --grid full (Balance: --grid reduced --max-iter 5000)",
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

_MKL_WHOLE = "Sonar and Ionosphere with whole training folds (interior-point weight step, 2026-11-25)"
_MKL_FULL = "Full protocol (LMNN to its certificate, Algorithm 1 to its stopping rule)"
_MKL_FULL_FLAGS = (
    "--n-learn 0 --n-learn-mfeat 0 --max-iter 20000 --cv-max-iter 20000 --max-outer 20 --max-convex-iter 50"
)
#: the full-protocol runs in reference/ -> the command that made each (the sheet's "Full protocol")
MKL_FULL_RUNS = {
    "wang2011-mkl-full-sonar.json": f"cvxkml reproduce mkl --datasets sonar --no-table2 {_MKL_FULL_FLAGS}",
    "wang2011-mkl-full-wine-iris.json": f"cvxkml reproduce mkl --datasets wine iris --no-table2 {_MKL_FULL_FLAGS}",
    "wang2011-mkl-full-ionosphere.json": f"cvxkml reproduce mkl --datasets ionosphere --no-table2 {_MKL_FULL_FLAGS}",
    "wang2011-mkl-full-wdbc.json": f"cvxkml reproduce mkl --datasets wdbc --no-table2 {_MKL_FULL_FLAGS}",
    "wang2011-mkl-full-mfeat.json": f"cvxkml reproduce mkl --no-table1 {_MKL_FULL_FLAGS}",
}


def _fill(group: str, sections: dict, mode: str, ref: Path, data_dir, n_jobs, seed) -> dict:
    """Run (``mode`` "quick" / "full") or read (``mode`` "recorded") one group; fills its
    sections' records and returns {"source", "seconds"}."""
    t0 = time.perf_counter()
    run = mode in ("quick", "full")
    cmd = (lambda full: QUICK_COMMAND) if mode == "quick" else (lambda full: full)
    src = "this run" if run else None
    simple = {
        "logdet": (_logdet_run, _logdet_records, "jain2012_table1"),
        "uci": (_uci_run, _uci_records, "kulis2009_figure5"),
    }
    if group in simple:  # one run function, one recorded entry
        run_fn, records_fn, key = simple[group]
        sec = sections[group]
        if run:
            records_fn(sec, run_fn(mode, data_dir, n_jobs, seed), cmd(sec.full_command), src)
        else:
            rec, source = _recorded(ref, key)
            records_fn(sec, rec["result"], rec["command"], source)
    elif group == "trace":
        sec = sections["trace"]
        full_cmds = ["cvxkml reproduce trace", "cvxkml reproduce trace --dataset pendigits --tau 10"]
        if run:
            _trace_records(sec, _trace_run(mode, data_dir, n_jobs, seed), [cmd(c) for c in full_cmds], [src] * 2)
        else:
            files = ["jain2012-trace-mnist5000-results.json", "jain2012-trace-pendigits-results.json"]
            _trace_records(sec, [_load(ref, f) for f in files], full_cmds, [f"reference/{f}" for f in files])
    elif group == "lowrank":
        sec = sections["lowrank"]
        if run:
            res = _lowrank_run(mode, data_dir, n_jobs, seed)
            _lowrank_records(sec, res, cmd("cvxkml reproduce lowrank"), src, cmd("cvxkml bench lowrank"))
        else:
            rec, source = _recorded(ref, "kulis2009_lowrank")
            _lowrank_records(sec, rec["result"], rec["command"], source, rec["mnist_command"])
    elif group == "yeung":
        if run:
            res = _yeung_run(mode, data_dir, n_jobs, seed)
            _yeung_records(sections, res, cmd("cvxkml reproduce yeung"), src)
        else:
            _yeung_records(
                sections,
                _load(ref, "yeung2007-results.json"),
                "cvxkml reproduce yeung",
                "reference/yeung2007-results.json",
            )
    elif group == "mkl":
        if run:
            _mkl_records(sections, _mkl_run(mode, data_dir, n_jobs, seed), cmd("cvxkml reproduce mkl"), src)
        else:
            data = _load(ref, "wang2011-mkl-results.json")
            # the reduced run's command lines are stored per data set; one command per row
            for name, r in data["table1"].items():
                _mkl_records(
                    sections, {"table1": {name: r}}, data["commands"][name], "reference/wang2011-mkl-results.json"
                )
            _mkl_records(
                sections, {"table2": data["table2"]}, data["commands"]["mfeat"], "reference/wang2011-mkl-results.json"
            )
            rec, source = _recorded(ref, "wang2011_table1_whole_folds")
            _mkl_records(
                sections,
                rec["result"],
                rec["command"],
                source,
                label=" (whole training folds)",
                heading=_MKL_WHOLE,
                protocol="all training points learn; LMNN stopped at 1 000 iterations, 5 outer iterations",
            )
            for name, command in MKL_FULL_RUNS.items():
                _mkl_records(
                    sections,
                    _load(ref, name),
                    command,
                    f"reference/{name}",
                    label=" (full protocol)",
                    heading=_MKL_FULL,
                    protocol="all training points learn; LMNN to its 1e-5 certificate (budget 20 000 "
                    "iterations), Algorithm 1 to its stopping rule",
                )
    elif group == "kcr":
        sec = sections["kcr"]
        if run:
            out = _kcr_run(mode, data_dir, n_jobs, seed)
            protos = [_kcr_protocol_line(p) for p in out["protocols"]]
            cmds = [cmd(f"cvxkml reproduce kcr --datasets {r['name']}") for r in out["results"]]
            _kcr_records(sec, out["results"], cmds, src, protos)
        else:
            from .reproduce_kcr import Protocol

            data = _load(ref, "sriperumbudur2008-kcr-table1-full.json")
            results, cmds, protos = [], [], []
            for key, entry in data["results"].items():
                p = entry["protocol"]
                results.append(entry["result"])
                cmds.append(data["commands"][key].replace(" --out …", ""))
                protos.append(
                    _kcr_protocol_line(
                        Protocol(
                            n_splits=p["n_splits"], nus=tuple(p["nus"]), lams=tuple(p["lams"]), max_iter=p["max_iter"]
                        )
                    )
                )
            _kcr_records(sec, results, cmds, "reference/sriperumbudur2008-kcr-table1-full.json", protos)
    else:  # pragma: no cover - checked by collect
        raise CommandError(f"unknown section {group!r}")
    return {"source": "run" if run else "recorded", "seconds": time.perf_counter() - t0}


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
    return ("yes " if rec["certified"] else "**no** ") + rec["certified_fits"]


def render_markdown(summary: dict) -> str:
    """SUMMARY.md from a summary of :func:`collect` (nothing else goes into the text): one section
    per table or figure, then the runs and the missing data sets."""
    mode = summary["mode"]
    gen = {
        "recorded": "cvxkml reproduce all --recorded",
        "quick": QUICK_COMMAND,
        "full": "cvxkml reproduce all --full",
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
        "convex fit; *Δ* = ours differs from the paper by more than one sd (ours, else the paper's) "
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
        "Read from `/work/shared/data/README.md`; nothing was downloaded.",
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
    """The groups ``cvxkml reproduce all`` runs (none: the recorded results only)."""
    if not (args.quick or args.full):
        return ()
    return tuple(g for g in GROUPS if args.sections is None or g in args.sections)


def data_sets(args) -> tuple:
    """The data sets of the groups that run (checked before the first one starts)."""
    return tuple(d for g in _groups_run(args) for d in GROUP_DATA[g])


def optional_data_sets(args) -> tuple:
    return ("mnist5000",) if "lowrank" in _groups_run(args) else ()


def command(args) -> int:
    """``cvxkml reproduce all``: every reproduction in one summary (``SUMMARY.md``, ``summary.json``),
    from the recorded runs in ``reference/`` or run again (``--quick`` / ``--full``).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of the command (``quick``, ``full``, ``sections``, ``reference``,
        ``out``, ``data_dir``, ``seed`` and the
        parallel options).

    Returns
    -------
    int
        The exit status, 0.

    Raises
    ------
    CommandError
        ``--sections`` given without ``--quick`` or ``--full``.
    """
    mode = "quick" if args.quick else "full" if args.full else "recorded"
    if args.sections and mode == "recorded":
        raise CommandError("--sections goes with --quick or --full")
    ref = Path(args.reference) if args.reference else reference_dir()
    out = Path(args.out) if args.out else (Path("reproduce-all-quick") if mode == "quick" else ref)
    t0 = time.perf_counter()
    print(f"cvxkml reproduce all ({mode}): every seed table and figure of the five papers", flush=True)
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
