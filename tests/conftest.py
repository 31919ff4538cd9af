import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))  # tests/budget.py

from budget import DEFAULT, examples, fuzz_factor  # noqa: E402

_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=examples(DEFAULT))
# Deterministic (default, and what CI runs): the draws depend only on the code.
settings.register_profile("deterministic", derandomize=True, database=None, print_blob=True, **_COMMON)
# Fuzz (CVXKML_FUZZ=N): fresh draws, N x the examples; failures are kept in the example
# database and printed with the @example / @reproduce_failure needed to replay them.
settings.register_profile("fuzz", derandomize=False, print_blob=True, **_COMMON)
settings.load_profile("fuzz" if fuzz_factor() else "deterministic")


def shared_data_dir() -> Path | None:
    """The data folder as cvxkml resolves it (argument-free: $CVXKML_DATA, else
    ../shared/data from the working directory), else ../shared/data next to the repository;
    None when neither exists."""
    from cvxkml import datasets

    try:
        d = datasets.data_dir()
    except FileNotFoundError:
        d = Path(__file__).resolve().parents[2] / "shared" / "data"
    return d if d.is_dir() else None


@pytest.fixture(scope="session")
def data_dir():
    d = shared_data_dir()
    if d is None:
        pytest.skip(
            "offline data folder not found: set CVXKML_DATA to a folder holding the "
            "shared data sets (ionosphere.csv, …, mnist5000.npz, mfeat.npz; see README, 'Benchmarks and reproductions')"
        )
    return d


def pytest_configure(config):
    """In an xdist worker process: one BLAS thread for the test code too (the library's own
    default), so that two workers do not oversubscribe two cores."""
    if hasattr(config, "workerinput"):
        from threadpoolctl import threadpool_limits

        config._cvxkml_blas = threadpool_limits(limits=1, user_api="blas")


_WORKER_DISCARDS: Counter = Counter()


def pytest_sessionfinish(session):
    """An xdist worker hands its discard counts to the controller."""
    if hasattr(session.config, "workeroutput"):
        from cvxkml.testing import discards

        session.config.workeroutput["cvxkml_discards"] = discards()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """The controller collects the discard counts of a finished xdist worker."""
    _WORKER_DISCARDS.update(getattr(node, "workeroutput", {}).get("cvxkml_discards", {}))


def pytest_terminal_summary(terminalreporter):
    """How many draws the property tests discarded because the conic reference could not
    be trusted (cvxkml.testing.reference_or_discard), over every worker process."""
    from cvxkml.testing import discards

    counts = Counter(discards()) + _WORKER_DISCARDS
    if counts:
        terminalreporter.write_sep("-", "draws discarded for an untrusted exact reference")
        for test, n in sorted(counts.items()):
            terminalreporter.write_line(f"{n:5d}  {test}")
