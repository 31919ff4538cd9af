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
    """The benchmark data folder: $CVXKML_DATA, else ../shared/data next to the repo."""
    env = os.environ.get("CVXKML_DATA")
    cands = [Path(env)] if env else []
    cands.append(Path(__file__).resolve().parents[2] / "shared" / "data")
    for c in cands:
        if c.is_dir():
            return c
    return None


@pytest.fixture
def data_dir():
    d = shared_data_dir()
    if d is None:
        pytest.skip("benchmark data folder not found: set CVXKML_DATA to a copy of the "
                    "shared data sets (see README, 'Data')")
    return d
