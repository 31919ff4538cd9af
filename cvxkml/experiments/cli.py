"""The ``cvxkml`` command.

    cvxkml demo                 k-NN on Wine (Euclidean, ITML, KernelITML) and one
                                random problem solved fast (Numba) and exactly (CVXPY)
    cvxkml bench itml [--quick] Bregman projection cost (Numba vs plain NumPy) and time to
                                tolerance (Numba vs CVXPY/SCS/Clarabel)
    cvxkml bench lowrank [--quick]  low-rank LogDet: projections per second (Numba vs
                                dense NumPy) and the MNIST-shape workload
    cvxkml bench vonneumann [--quick]  von Neumann Algorithm 3: seconds per projection vs r
                                (vs dense NumPy eigh) and the MNIST-shape workload
    cvxkml bench mkl [--quick] [--parts …]  MKL_P weight step (fast vs CVXPY per solve, same
                                optimum) and the MKL_mu step / CCP timing
    cvxkml bench pola [--quick]        POLA and LogDet-barrier SDP fast solvers vs CVXPY
                                (Clarabel/SCS): time to the same accuracy, as ratios
    cvxkml bench kcr [sweep|exact|alg1|large|all]  KCR fast vs exact, SCS sizes, n = 500
    cvxkml bench variants [--quick]    the generic dual solver vs Clarabel / SciPy on declared variants
    cvxkml bench exact-limits          largest n of each family's default exact solve
    cvxkml bench estimators [--quick] [--estimators …] [--datasets …] [--n-jobs N]
                                every estimator with its defaults: 3-fold CV accuracy, fit
                                time and certificate beside Euclidean 1-NN and metric-learn
    cvxkml bench lmnn [--quick] [--datasets …] [--tol …]  linear LMNN: smoothed quasi-Newton
                                solver vs the PDHG path, certified, same folds, same run
    cvxkml reproduce lowrank [--quick]  Kulis et al. 2009 §7.1 (Digits, Spambase, Nursery)
    cvxkml reproduce yeung [--quick] [--part …] [--out DIR]
                                Yeung et al. (2007) Tables 1–2 and Figure 1 (J values
                                beside the paper's; PNG + JSON in DIR)
    cvxkml reproduce spectral [--quick]  Kulis et al. 2009 Figure 5 (4-NN error, UCI)
    cvxkml reproduce trace [--quick] [--out DIR]  Jain et al. 2012 Figure 2 c–d
                                (Trace-SSIKDR vs kernel PCA on unseen digits; PNG + JSON)
    cvxkml reproduce kcr [--quick] [--splits N] [--grid full|reduced]
                                Sriperumbudur et al. 2008 Table 1 (k-NN vs KCR, UCI)
    cvxkml reproduce mkl [--quick] [--datasets …] [--no-table2]
                                Wang et al. 2011 Tables 1–2 (LMNN with multiple kernels)
    cvxkml reproduce logdet [--quick] [--repeats R]  Jain et al. 2012 Table 1 (k-means error
                                with 50 constraints: unsupervised, LogDet linear, HMRF-KMeans)
    cvxkml reproduce all [--quick | --full | --recorded] [--sections …] [--out DIR]
                                every seed table and figure of the five papers in one
                                summary (SUMMARY.md + summary.json): the paper's numbers
                                beside ours, certificates, protocol differences, commands
    cvxkml reproduce … --n-jobs N [--backend dask --scheduler ADDRESS]
                                the independent fits of a reproduction on N processes or a
                                Dask cluster, with the numbers of the serial run
    cvxkml --version

This module only collects the commands: every module in :data:`COMMANDS` adds its own
with ``register(commands)`` (see :mod:`cvxkml.experiments._commands`), and no experiment
module imports this one.  Every command that reads data sets declares them where it is
registered; they are loaded before the command starts, so a missing or damaged data file
ends it at once with one line on standard error and exit status 2.
"""
from __future__ import annotations

import argparse
import sys

from . import (bench_commands, bench_estimators, bench_exact, bench_kcr, bench_lmnn, bench_pola, bench_variants, demo,
               reproduce_all, reproduce_kcr, reproduce_logdet, reproduce_lowrank, reproduce_mkl, reproduce_spectral,
               reproduce_trace, reproduce_yeung)
from ._commands import run_command, type_options
from ._report import format_table

__all__ = ["COMMANDS", "build_parser", "main", "format_table"]

#: The modules that add commands, in the order of ``cvxkml --help`` (a group, ``bench`` or
#: ``reproduce``, is listed where its first command is).
COMMANDS = (demo, bench_commands, reproduce_lowrank, reproduce_yeung, reproduce_spectral, reproduce_trace,
            reproduce_kcr, bench_pola, bench_kcr, bench_variants, bench_exact, bench_estimators, bench_lmnn, reproduce_mkl,
            reproduce_logdet, reproduce_all)


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``cvxkml``, with the commands of every module in :data:`COMMANDS`.

    Returns
    -------
    argparse.ArgumentParser
    """
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="cvxkml", description="Convex metric and kernel learning: demos and benchmarks.")
    parser.add_argument("--version", action="version", version=f"cvxkml {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an error (default: one line on standard error)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        module.register(commands)
    type_options(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``cvxkml argv``.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: 0 on success, 2 when no command was given (the help is printed),
        a data file the command needs is missing or damaged (checked before it starts), or
        a cvxkml error stopped the command (one line; ``--debug`` shows the traceback); 1
        when options do not go together (one line).  Every option is typed and checked before the
        command starts (:func:`cvxkml.experiments._commands.type_options`); a bad one exits
        with status 2 (argparse's SystemExit).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    return run_command(args, "cvxkml " + " ".join(
        v for v in (args.command, getattr(args, "benchmark", None), getattr(args, "experiment", None)) if v))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
