import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))      # tests/instances.py

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow],
    max_examples=int(os.environ.get("CVXKML_EXAMPLES", "100")))
settings.load_profile("default")


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
        pytest.skip("offline data folder not found: set CVXKML_DATA to a folder holding the "
                    "shared data sets (ionosphere.csv, …, mnist5000.npz, mfeat.npz; see README, 'Data')")
    return d
