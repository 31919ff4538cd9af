"""Summarize a run of the benchopt benchmark ``benchmarks/metric_learning`` (offline).

    python benchmarks/benchopt_summary.py [RESULT.parquet] [--out DIR]

Reads benchopt's result file (default: the newest in ``benchmarks/metric_learning/outputs``),
writes ``DIR/benchopt-results.csv`` (the tidy curve points), ``DIR/benchopt-curves-time.png`` and
``-budget.png`` (|suboptimality| solid and relative violation dashed against time and against
the iteration budget, one panel per problem and data set; needs matplotlib) and prints the
Markdown table of reference/solver-comparison.md:
for each (data set, problem, solver) the first budget whose answer is certified by its own
recomputed duals, and the numbers there.
"""

import argparse
import re
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent / "metric_learning"
COLUMNS = {
    "stop_val": "budget",
    "time": "time",
    "objective_value": "objective",
    "objective_suboptimality": "suboptimality",
    "objective_violation": "violation",
    "objective_gap": "gap",
    "objective_distance": "distance",
    "objective_valid": "valid",
    "objective_certified": "certified",
    "objective_optimum": "optimum",
}


def _short(name):
    m = re.search(r"set_name=([\w-]+)", name)
    return m.group(1) if m else name.split("[")[0]


def tidy(df):
    """The curve points of benchopt's result frame, one row per (data set, problem, solver,
    budget), with this summary's column names (:data:`COLUMNS`)."""
    out = pd.DataFrame(
        {
            "dataset": df["dataset_name"].map(_short),
            "problem": df["p_obj_problem"],
            "solver": df["solver_name"].str.replace(r"\[.*\]", "", regex=True),
        }
    )
    for src, dst in COLUMNS.items():
        out[dst] = df[src].to_numpy()
    return out


def table(t):
    """The Markdown table: per (data set, problem, solver) the first budget whose answer is
    certified by its own recomputed duals, and the numbers there."""
    lines = [
        "| data | problem | solver | points (valid) | first certified budget | time there (s) "
        "| suboptimality there | violation there | distance there | total time (s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (ds, pb, sv), g in t.groupby(["dataset", "problem", "solver"], sort=False):
        cert = g[g["certified"] > 0]
        if len(cert):
            r = cert.iloc[0]
            there = f"{int(r.budget)} | {r.time:.3g} | {r.suboptimality:.2g} | {r.violation:.2g} | " + (
                "–" if np.isnan(r.distance) else f"{r.distance:.2g}"
            )
        else:
            there = "never | – | – | – | –"
        lines.append(f"| {ds} | {pb} | {sv} | {len(g)} ({int(g['valid'].sum())}) | {there} | {g['time'].sum():.3g} |")
    return "\n".join(lines)


def plot(t, path, x="time", floor=1e-13):
    """One panel per (problem, data set): |suboptimality| (solid) and relative violation
    (dashed) of each solver's valid points against ``x`` ("time" or "budget")."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    problems, datasets = list(dict.fromkeys(t["problem"])), list(dict.fromkeys(t["dataset"]))
    fig, axes = plt.subplots(
        len(problems), len(datasets), figsize=(4.2 * len(datasets), 3.4 * len(problems)), squeeze=False
    )
    colors = {sv: f"C{i}" for i, sv in enumerate(dict.fromkeys(t["solver"]))}
    for i, pb in enumerate(problems):
        for j, ds in enumerate(datasets):
            ax = axes[i][j]
            sub = t[(t["dataset"] == ds) & (t["problem"] == pb) & (t["valid"] > 0)]
            for sv, g in sub.groupby("solver", sort=False):
                ax.plot(g[x], np.maximum(np.abs(g["suboptimality"]), floor), "-o", ms=3, color=colors[sv], label=sv)
                ax.plot(g[x], np.maximum(g["violation"], floor), "--", color=colors[sv], lw=1)
            ax.set(
                xscale="log",
                yscale="log",
                title=f"{pb} on {ds}",
                xlabel="time (s)" if x == "time" else "iteration budget",
            )
        axes[i][0].set_ylabel("|f − f*| / max(1, |f*|)\n(dashed: violation)")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main():
    """Command line: read the result file, write the CSV and figures, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result", nargs="?", help="benchopt result file (.parquet or .csv)")
    ap.add_argument("--out", default=str(HERE / "results"))
    args = ap.parse_args()
    path = (
        Path(args.result) if args.result else max((HERE / "outputs").glob("*.parquet"), key=lambda p: p.stat().st_mtime)
    )
    df = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    t = tidy(df)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t.to_csv(out / "benchopt-results.csv", index=False, float_format="%.6g")
    try:
        plot(t, out / "benchopt-curves-time.png", x="time")
        plot(t, out / "benchopt-curves-budget.png", x="budget")
    except ImportError as exc:
        print("no plot:", exc)
    print(table(t))


if __name__ == "__main__":
    main()
