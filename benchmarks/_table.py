"""The benchmark and reproduction commands as data: one table, the parser and its help generated from it.

Each row of :data:`TABLE` is a :class:`Command` (group, name, help, the function that runs it,
the data sets it reads, its options).  Options used by several commands
are specified once in :data:`SHARED` and named in a row with :func:`use` (``use("seed", "seed
of the splits (default 0)")`` overrides the help); a command's own options are :func:`opt`.
The order of the table is the order of ``python -m benchmarks --help`` and of each group's help.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from typing import Callable

from cvxkml._cli import EXIT_STATUS_HELP, Parser
from cvxkml.datasets import CSV_DATASETS
from reference.reproduce import all as ra
from reference.reproduce import kcr as rk
from reference.reproduce import logdet as rlogdet
from reference.reproduce import lowrank as rl
from reference.reproduce import mkl as rm
from reference.reproduce import spectral as rs
from reference.reproduce import trace as rt
from reference.reproduce import yeung as ry

from ._commands import _DATA, SHARED, Group, Option, add_command, data_dir, number_in, opt, type_options, use
from ._parallel import ParallelOptions as Parallel
from .bench import estimators as be
from .bench import exact as bx
from .bench import itml, lowrank, lowrank_family, mkl
from .bench import kcr as bk
from .bench import lmnn as blmnn
from .bench import wide as bw

__all__ = ["PROG", "SHARED", "TABLE", "Command", "Option", "build_parser", "opt", "use", "data_dir"]


#: how the command is run (its name in the help and in error lines)
PROG = "python -m benchmarks"


def run_options(quick: str, repeats: str | None = None, seed: str | None = None) -> tuple:
    """``--quick``, ``--repeats`` (when ``repeats`` is given) and ``--seed``, with their help."""
    return (use("quick", quick),) + ((use("repeats", repeats),) if repeats else ()) + (use("seed", seed),)


@dataclass(frozen=True)
class Later:
    """``"module:function"`` of :mod:`benchmarks`, imported when the command runs."""

    target: str

    def __call__(self, args):
        module, name = self.target.split(":")
        return getattr(importlib.import_module(f"{__package__}.{module}"), name)(args)


@dataclass(frozen=True)
class Command:
    """One command: ``python -m benchmarks group name`` runs ``run(args)`` (which prints and returns the
    exit status; ``"module:function"``: imported when it runs, :class:`Later`) after checking
    the ``datasets`` it reads (names, or a function of the parsed options;
    ``optional_datasets`` are checked only when present)."""

    group: str | None
    name: str
    run: Callable
    help: str
    options: tuple = ()
    datasets: object = None
    optional_datasets: object = None

    def register(self, commands) -> None:
        run = Later(self.run) if isinstance(self.run, str) else self.run
        p = add_command(commands, self.group, self.name, run, self.help, self.datasets, self.optional_datasets)
        for o in self.options if p is not None else ():
            o.add(p)


_LOWRANK_BENCH = dict(optional_datasets=("mnist5000",))


def _constraints(quick: str) -> Option:
    """``--constraints`` of the MNIST-shape workloads (``quick``: the counts of ``--quick``)."""
    help = f"constraint counts of the MNIST-shape workload (default 10000 100000; quick {quick})"
    return opt("--constraints", type=int, nargs="+", help=help)


TABLE = (
    # ------------------------------------------------------------------ bench
    Command(
        "bench",
        "itml",
        itml.command,
        "LogDet / ITML solvers: per-projection cost and time to tolerance",
        run_options("small sizes and repeats (for tests)", "timing repeats, best of (default 5 / 3 full, 2 / 1 quick)"),
    ),
    Command(
        "bench",
        "lowrank",
        lowrank_family.lowrank_command,
        "low-rank LogDet (Kulis et al. 2009): projections per second and the MNIST-shape workload; "
        "'family': its target row over an instance family",
        run_options("small sizes (for tests)", "timing repeats, best of (default 3 full, 1 quick)")
        + (
            _constraints("1000 5000"),
            opt(
                "--no-baseline",
                action="store_true",
                help="skip the paper-rule baseline (the previous solver's cyclic schedule)",
            ),
            opt(
                "--baseline-budget",
                type=float,
                help="seconds after which the paper-rule baseline stops (default 300, quick 30)",
            ),
            use("data_dir", lowrank.MNIST_HELP),
        )
        + lowrank_family.FAMILY_OPTIONS,
        datasets=lowrank_family.data_sets,
        **_LOWRANK_BENCH,
    ),
    Command(
        "bench",
        "vonneumann",
        lowrank_family.vonneumann_command,
        "von Neumann Algorithm 3 (Kulis et al. 2009): seconds per projection vs r, vs dense NumPy, and the "
        "MNIST-shape workload; 'family': its target row over an instance family",
        run_options("small sizes (for tests)", "timing repeats, best of (default 3 full, 1 quick)")
        + (
            _constraints("500 2000"),
            opt(
                "--budget",
                type=float,
                help="seconds after which a workload solve stops (default 600, quick 30)",
            ),
            opt(
                "--no-baseline",
                action="store_true",
                help="skip the paper-rule run and the dense-NumPy prefix of the workload",
            ),
            use("data_dir", lowrank.MNIST_HELP),
        )
        + lowrank_family.FAMILY_OPTIONS,
        datasets=lowrank_family.data_sets,
        **_LOWRANK_BENCH,
    ),
    Command(
        "bench",
        "mkl",
        mkl.command,
        "MKL weight steps (Wang et al. 2011): the MKL_P interior point vs the CVXPY path, and the MKL_mu step",
        (
            use("quick", "a small synthetic instance (for tests)"),
            opt(
                "--parts",
                nargs="+",
                choices=("weight-step", "mu-step"),
                default=["weight-step", "mu-step"],
                help="what to run (default both)",
            ),
            opt(
                "--datasets",
                nargs="+",
                default=["sonar", "ionosphere"],
                choices=sorted(CSV_DATASETS),
                metavar="NAME",
                help="UCI sets of the data folder (default sonar ionosphere)",
            ),
            opt("--n", type=int, nargs="+", default=[30, 60], help="learning points per instance (default 30 60)"),
            opt(
                "--old-max-n",
                type=int,
                default=30,
                help="largest n at which the CVXPY path also runs (default 30; ~1 min per solve at 60)",
            ),
            opt("--no-old", action="store_true", help="skip the CVXPY path"),
            use("seed", "sampling seed (default 0)"),
            use("data_dir"),
        ),
        datasets=lambda args: () if args.quick else args.datasets,
    ),
    Command(
        "bench",
        "pola",
        "bench.pola:command",
        "POLA (Jain et al. §5.2) and the LogDet-barrier SDP (eq. 24): fast solvers vs CVXPY (Clarabel / SCS), "
        "time to the same accuracy",
        run_options("small sizes, one repeat (for tests)", "fast-solver timing repeats, best of (default 3, quick 1)"),
    ),
    Command(
        "bench",
        "kcr",
        bk.command,
        "KCR (Sriperumbudur et al. 2008): fast vs exact sweep, exact model with SCS, "
        "Algorithm 1 vs PDHG, n = 500 solve vs baseline, solver variants",
        bk.OPTIONS,
        datasets=bk.data_sets,
    ),
    Command(
        "bench",
        "infeasible",
        "bench.infeasible:command",
        "time to InfeasibleError on the generic dual solver: relative cycles, contradictory equalities and "
        "pairs at m = 1 000 and 10 000 (worst and median over seeds)",
        run_options("m = 100 and 1 000, one seed (for tests)", "seeds per generator and size (default 3)"),
    ),
    Command(
        "bench",
        "variants",
        "bench.variants:command",
        "generic certified dual solver vs Clarabel and SciPy on declared variants (hinge triplets, trace budget)",
        run_options("n = 12, one repeat (for tests)", "fast-solver timing repeats, best of (default 3, quick 1)")
        + (
            opt(
                "--scale",
                action="store_true",
                help="the generic solver at size instead: user regularizer (Jeffreys) with hinge pairs "
                "dense n = 100..2000 and factored n = 15000..60000, LogDet + hinge n = 200..800; "
                "time to a 1e-6 certificate, growth exponents; then an instance family (Jeffreys and "
                "alpha-power x blobs / make_classification, --repeats seeds from --seed, n = 1000 and 3000: "
                "median and max) (with --quick: small sizes)",
            ),
        ),
    ),
    Command(
        "bench",
        "exact-limits",
        bx.command,
        "largest n of each family's default exact solve within time/memory limits",
        (
            opt("--families", default=",".join(bx.FAMILIES), help="comma-separated family names (default all)"),
            opt("--time-limit", type=float, default=60.0, help="seconds per solve (default 60)"),
            opt("--mem-limit-gib", type=float, default=4.0, help="peak memory per solve (default 4)"),
            opt("--start", type=int, default=8, help="first n (default 8)"),
            opt("--max-n", type=int, help="cap on n for every family (default: per family)"),
            opt(
                "--kill-factor",
                type=float,
                default=2.0,
                help="kill a solve after this multiple of the time limit (default 2)",
            ),
            opt("--jobs", type=int, default=1, help="families measured at a time (default 1)"),
            opt(
                "--max-errors",
                type=int,
                default=2,
                help="stop a family after this many solves in a row raise (default 2)",
            ),
            opt("--no-fast", action="store_true", help="skip the fast-solver comparison"),
            opt(
                "--update",
                action="store_true",
                help="with --json: replace these families' rows in the existing JSON (the others are "
                "kept) and write the table of all of them",
            ),
            opt("--note", default="", help="free text for the machine line (e.g. the load)"),
            use("out", "write the markdown table here (e.g. reference/exact-limits.md)", default=None),
            use("json", "write the rows as JSON here"),
        ),
    ),
    Command(
        "bench",
        "estimators",
        be.command,
        "every estimator with its defaults: 3-fold CV accuracy (1-NN on the learned transform), fit time and "
        "certificate on Wine, breast cancer and digits, beside Euclidean 1-NN and metric-learn",
        (
            use("quick", f"Wine only, a stratified subset of {be.QUICK_SIZE} points (smoke run for tests)"),
            opt(
                "--estimators",
                nargs="+",
                metavar="NAME",
                help="estimator class names (default: all of cvxkml.estimators.ESTIMATORS); the baseline always runs",
            ),
            opt(
                "--datasets",
                nargs="+",
                metavar="NAME",
                help=f"data sets among {', '.join(be.DATASETS)} (default all; quick: wine)",
            ),
            use("json", metavar="PATH", help="write every number (per fold) as JSON"),
            use(
                "n_jobs",
                "run the cells (estimator x data set x features) on N worker processes (joblib loky; "
                "default 1); accuracies do not depend on it, fit times do",
            ),
            use(
                "peer_python",
                "a Python interpreter with metric-learn (and a scikit-learn it supports, < 1.8) "
                "for the peer rows (default: this interpreter)",
            ),
        ),
    ),
    Command(
        "bench",
        "lmnn",
        blmnn.command,
        "linear LMNN: the smoothed quasi-Newton solver vs the PDHG path, certified, "
        "on Wine / breast cancer / digits-500 folds",
        (
            use("quick", "one fold of a 60-point Wine subset, tol 1e-3 (for tests)"),
            opt(
                "--datasets",
                nargs="+",
                choices=blmnn.DATASETS,
                default=None,
                help="data sets (default all three; quick: wine)",
            ),
            opt(
                "--tol",
                nargs="+",
                type=number_in("--tol", 0.0, 1.0),
                default=None,
                help="certified relative gaps (default 1e-3 1e-4; quick 1e-3)",
            ),
            opt("--folds", type=int, default=3, help="stratified folds, seed 0 (default 3)"),
            opt("--no-old", action="store_true", help="skip the PDHG baseline"),
            opt(
                "--old-budget",
                type=number_in("--old-budget", 0.0, example="60"),
                default=None,
                help="seconds after which the PDHG baseline stops (default 60, quick 5)",
            ),
            use("json", "write the rows as JSON to this file"),
            opt(
                "--scale",
                nargs="*",
                choices=blmnn.SCALE_CHOICES,
                default=None,
                help="the at-scale rows instead: whole data sets, k = 3, tol 1e-4 (default all: "
                + ", ".join(blmnn.SCALE_DATASETS)
                + ")",
            ),
            opt(
                "--peer-python",
                nargs="+",
                default=None,
                help="--scale: one or more Pythons with metric-learn 0.7 and / or pylmnn 1.6 (e.g. the two venvs "
                "of ../shared/peers/make-venvs.sh beside the checkout) for the peer rows; each peer runs in the "
                "first one where it imports",
            ),
            opt(
                "--peer-timeout",
                type=number_in("--peer-timeout", 0.0, example="1800"),
                default=1800.0,
                help="--scale: seconds after which a peer fit counts as not finished (default 1800)",
            ),
        ),
    ),
    Command(
        "bench",
        "wide",
        bw.command,
        "ITML on wide data (d >> n): the span space vs the dense feature space and "
        "metric-learn; time, peak memory, certificate, growth in d",
        (
            use("quick", f"n = {bw.QUICK_N}, d = {', '.join(map(str, bw.QUICK_DIMS))} (smoke run for tests)"),
            opt(
                "--dims",
                nargs="+",
                type=int,
                metavar="D",
                help=f"feature counts (default {' '.join(map(str, bw.DIMS))})",
            ),
            opt("--n", type=int, help=f"points (default {bw.N_POINTS})"),
            opt(
                "--features-max-d",
                type=int,
                default=bw.FEATURES_MAX_D,
                help=f"largest d for the dense feature-space baseline (default {bw.FEATURES_MAX_D})",
            ),
            use("seed", "seed of the data and pairs (default 0)"),
            use("peer_python", "python of an environment with metric-learn (a peer row per d)"),
            opt(
                "--peer-timeout",
                type=float,
                default=600.0,
                help="seconds before a peer fit is stopped and reported as not finished (default 600)",
            ),
            use("json", "also write the rows as JSON", metavar="PATH"),
        ),
    ),
    # ------------------------------------------------------------------ reproduce
    Command(
        "reproduce",
        "lowrank",
        rl.command,
        "Kulis et al. 2009 §7.1: Digits, Spambase, Nursery (NMI, 5-NN, cycles); a few minutes",
        run_options("tiny grids (smoke run for tests)", seed="seed of the constraint draws (default 0)")
        + (
            data_dir("pendigits.csv, spambase.csv, nursery.csv"),
            opt(
                "--parts",
                nargs="+",
                choices=rl.PARTS,
                metavar="PART",
                help=f"run only these sections ({', '.join(rl.PARTS)}; default all)",
            ),
            opt(
                "--scale",
                choices=rl.SCALES,
                default="none",
                help="features of the Spambase and Nursery rows: none (default, the protocol: raw features) or "
                "standardize (mean 0, sd 1 per column; a side check)",
            ),
            Parallel("(constraint count, draw) fits"),
        ),
        datasets=rl.data_sets,
    ),
    Command(
        "reproduce",
        "yeung",
        ry.command,
        "Yeung, Chang & Dai (IJCAI 2007): Table 1 (XOR), Figure 1, Table 2 (MNIST subset)",
        (
            use("quick", "small sizes and 2 runs (for tests)"),
            opt(
                "--part",
                choices=["all", "table1", "figure1", "table2", "scaling"],
                default="all",
                help="which experiment (default all: table1, figure1, table2)",
            ),
            use("out"),
            opt("--runs", type=int, help="random S per setting (default 10, quick 2)"),
            use("seed"),
            use("data_dir", f"offline data folder {_DATA}"),
            Group(
                "Table 1 setting (sensitivity checks; the defaults are the protocol)",
                (
                    opt(
                        "--implied",
                        action="store_true",
                        help=f"the setting implied by the paper's input and RBF columns: blob std "
                        f"{ry.IMPLIED_TABLE1['xor_std']:g}, sigma {ry.IMPLIED_TABLE1['sigma']:g} (not the default)",
                    ),
                    opt("--sigma", type=float, help="RBF width (default: median distance)"),
                    opt("--xor-std", type=float, help="standard deviation of the XOR blobs (default 0.3)"),
                    opt("--neighbors", type=int, help="K nearest landmarks (default 10)"),
                    opt(
                        "--rank-rtol",
                        type=float,
                        help=f"components kept: mu_r > RANK_RTOL mu_1 (default {ry.PAPER_RANK_RTOL:g}: every positive "
                        "eigenvalue, as the paper)",
                    ),
                    opt(
                        "--landmarks",
                        type=int,
                        nargs="+",
                        metavar="M",
                        help="numbers of landmarks m (default 100 200 ... 800)",
                    ),
                ),
            ),
            Parallel("runs of Table 1 and subsets of Table 2"),
        ),
        datasets=ry.data_sets,
        optional_datasets=ry.optional_data_sets,
    ),
    Command(
        "reproduce",
        "spectral",
        rs.command,
        "Kulis et al. 2009 Figure 5: 4-NN error on Wine, Ionosphere, Iris, Balance (Euclidean, LogDet, von Neumann)",
        run_options(
            "one repeat, gamma = 1 (smoke run for tests)",
            "two-fold CV repeats (default 5, quick 1)",
            "seed of splits and constraints (default 0)",
        )
        + (data_dir("ionosphere.csv and balance.csv"), Parallel("(method, repeat, fold) fits")),
        datasets=rs.DATASETS,
    ),
    Command(
        "reproduce",
        "trace",
        rt.command,
        "Jain et al. 2012 §6.4 / Figure 2 c-d: Trace-SSIKDR vs kernel PCA, 2-D embedding of unseen digits; "
        "10-15 minutes on MNIST",
        (
            use("quick", "tiny sizes, one draw (smoke run for tests)"),
            opt(
                "--dataset",
                choices=sorted(rt.DATASETS),
                default="mnist5000",
                help="offline digits set (default mnist5000)",
            ),
            opt("--draws", type=int, help="training draws (default 10, quick 1)"),
            opt(
                "--tau",
                type=float,
                nargs="+",
                help="tau grid (default 1 10 100, quick 10; the figure uses 10 when present)",
            ),
            use("seed", "seed of the first draw (default 0)"),
            use("out"),
            opt("--no-png", action="store_true", help="skip the figure (numbers only)"),
            data_dir("mnist5000.npz / pendigits.csv"),
            Parallel("draws"),
        ),
        datasets=lambda args: (args.dataset,),
    ),
    Command(
        "reproduce",
        "kcr",
        rk.command,
        "Sriperumbudur et al. 2008 Table 1: k-NN vs the kernel classification rule on Balance, Ionosphere, Iris, Wine",
        (
            use("quick", "Iris, one split, 2 × 2 grid (smoke run for tests)"),
            opt("--splits", type=int, default=None, help="random splits (default 20, quick 1)"),
            opt("--datasets", nargs="+", choices=rk.DATASETS, default=None, help="data sets (default all four)"),
            opt(
                "--grid",
                choices=("full", "reduced"),
                default="full",
                help="full: ν = 2^-4..2^4, λ = 10^-3..10^3 (the paper's, 63 fits per split); "
                "reduced: ν = 2^{-4,-2,0,2,4}, λ = 10^{-3,-1,1,3} (20 fits)",
            ),
            use("tol", "certified relative gap per fit (default 1e-3)"),
            opt("--max-iter", type=int, default=20_000, help="PDHG iterations per fit (default 20000)"),
            opt("--time-limit", type=float, default=None, help="seconds per fit (default none)"),
            use("seed", "seed of the splits (default 0)"),
            use("out", "write all numbers (every fit) as JSON to this file", default=None),
            data_dir("balance.csv and ionosphere.csv"),
            Parallel("(split, nu) fits"),
        ),
        datasets=rk.data_sets,
    ),
    Command(
        "reproduce",
        "mkl",
        rm.command,
        "Wang et al. 2011 Tables 1-2: LMNN with multiple kernels (NR-LMNN-MKL, LMNN-MKL_P, LMNN_H, LMNN-MKL_CV, 1-NN)",
        rm.OPTIONS,
        datasets=rm.data_sets,
    ),
    Command(
        "reproduce",
        "logdet",
        rlogdet.command,
        "Jain et al. 2012 Table 1: k-means error with 50 constraints (unsupervised, LogDet linear, HMRF-KMeans)",
        run_options(
            "one repeat (smoke run)",
            "two-fold CV repeats (default 5, quick 1)",
            "seed of splits and constraints (default 0)",
        )
        + (data_dir("ionosphere.csv and pendigits.csv"), use("json"), Parallel("(data set, repeat, fold) fits")),
        datasets=("ionosphere", "pendigits"),
    ),
    Command(
        "reproduce",
        "all",
        ra.command,
        "every reproduction in one summary (reference/SUMMARY.md, summary.json)",
        (
            Group(
                None,
                (
                    use("quick", "every reproduction at toy size (a smoke test)"),
                    opt("--full", action="store_true", help="the papers' protocols (hours)"),
                    opt(
                        "--recorded", action="store_true", help="no fit: the numbers stored in reference/ (the default)"
                    ),
                ),
                exclusive=True,
            ),
            opt(
                "--sections",
                nargs="+",
                metavar="NAME",
                help=f"with --quick / --full: run only these ({', '.join(ra.GROUPS)}); with --full the others are "
                "read from the recorded results",
            ),
            use(
                "out",
                "folder for SUMMARY.md and summary.json (default: the reference folder; --quick: "
                "./reproduce-all-quick)",
                default=None,
            ),
            opt(
                "--reference",
                help="the reference folder with the recorded results (default: the checkout's reference/)",
            ),
            use("data_dir", "the offline data folder (default: $CVXKML_DATA)"),
            use("seed", "seed of every reproduction (default 0)"),
            Parallel("fits of every reproduction"),
        ),
        datasets=ra.data_sets,
        optional_datasets=ra.optional_data_sets,
    ),
)


def register(commands, table=TABLE) -> None:
    """Add every command of ``table`` to ``commands`` (the subparsers of the
    ``python -m benchmarks`` parser), in order; commands already there are left as they are."""
    for row in table:
        row.register(commands)


def build_parser(table=TABLE) -> argparse.ArgumentParser:
    """The parser of ``python -m benchmarks``: ``--version`` (of cvxkml), ``--debug`` and every command of ``table``,
    each option typed and checked (:func:`._commands.type_options`); a usage error is one line
    and exit status 2, and every ``--help`` ends with the exit statuses
    (:data:`cvxkml._cli.EXIT_STATUS_HELP`).

    Returns
    -------
    argparse.ArgumentParser
    """
    from cvxkml import __version__

    parser = Parser(
        prog=PROG,
        description="cvxkml's speed benchmarks and the papers' reproductions (from a source checkout; "
        "the installed cvxkml command runs the demo).",
        epilog=EXIT_STATUS_HELP,
    )
    parser.add_argument("--version", action="version", version=f"cvxkml {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of an error (default: one line on standard error)"
    )
    register(parser.add_subparsers(dest="command", metavar="COMMAND"), table)
    type_options(parser)
    return parser
