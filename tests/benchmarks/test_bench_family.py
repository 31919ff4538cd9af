"""Instance families (``benchmarks._family``) and ``python -m benchmarks bench kcr family``:
members are parsed and generated as declared, the summary takes the median and the maximum
per member, and the verdict is the worst instance's."""

import numpy as np
import pytest

from benchmarks._family import DEFAULT_KCR_FAMILY, family_verdict, parse_spec, points, summarize
from benchmarks.bench.kcr import family_rows


def test_specs_parse_with_defaults_and_refuse_unknown_parts():
    assert parse_spec("classification:d=6:c=5:sep=0.5") == ("classification", dict(d=6, c=5, sep=0.5))
    assert parse_spec("blobs") == ("blobs", dict(d=3, c=3))
    assert parse_spec("pendigits") == ("pendigits", {})
    for bad in ("blobs:sep=1", "classification:x=1", "classification:d=", "pendigits:d=3", "blobs:d=two"):
        with pytest.raises(ValueError):
            parse_spec(bad)
    for spec in DEFAULT_KCR_FAMILY:
        parse_spec(spec)


@pytest.mark.parametrize("spec", ["blobs:d=4:c=5", "classification:d=10:c=4:sep=2"])
def test_synthetic_members_have_the_declared_shape_and_are_standardized(spec):
    X, y = points(spec, 101, seed=3)
    _, p = parse_spec(spec)
    assert X.shape == (101, p["d"]) and np.unique(y).size == p["c"]
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(X.std(axis=0), 1.0, rtol=1e-12)
    X2, _ = points(spec, 101, seed=4)
    assert not np.allclose(X, X2)  # another seed, another instance


def test_a_data_set_member_is_a_stratified_subsample(data_dir):
    X, y = points("pendigits", 200, seed=0, data_dir=data_dir)
    assert X.shape == (200, 16) and np.unique(y).size == 10
    X1, _ = points("pendigits", 200, seed=1, data_dir=data_dir)
    assert not np.allclose(X, X1)


def test_summary_and_verdict_take_the_worst_instance():
    rows = [
        dict(spec="a", n=10, seed=0, cpu=1.0, iterations=5, converged=True),
        dict(spec="a", n=10, seed=1, cpu=3.0, iterations=9, converged=True),
        dict(spec="b", n=10, seed=0, cpu=2.0, iterations=7, converged=True),
        dict(spec="a", n=20, seed=0, cpu=8.0, iterations=5, converged=True),
    ]
    s = {(r["spec"], r["n"]): r for r in summarize(rows)}
    assert s["a", 10]["median_cpu"] == 2.0 and s["a", 10]["max_cpu"] == 3.0 and s["a", 10]["max_iterations"] == 9
    assert s["a", 10]["growth_exponent"] == pytest.approx(np.log(8.0 / 2.0) / np.log(2.0))
    v = family_verdict(rows, 10, target=2.5)
    assert (v["worst_spec"], v["worst_seed"], v["worst"], v["met"]) == ("a", 1, 3.0, False)
    assert family_verdict(rows, 10, target=3.0)["met"]
    rows[2]["converged"] = False  # an uncertified instance is the worst whatever its time
    v = family_verdict(rows, 10, target=100.0)
    assert (v["worst_spec"], v["met"]) == ("b", False)


def test_family_rows_are_certified_solves_of_each_member_and_seed():
    rows = family_rows(("blobs:d=3:c=3", "classification:d=6:c=3:sep=1"), sizes=(40,), seeds=(0, 1))
    assert [(r["spec"], r["seed"]) for r in rows] == [
        ("blobs:d=3:c=3", 0),
        ("blobs:d=3:c=3", 1),
        ("classification:d=6:c=3:sep=1", 0),
        ("classification:d=6:c=3:sep=1", 1),
    ]
    assert all(r["converged"] and r["finished"] and r["gap"] <= 1e-3 and r["n"] == 40 for r in rows), rows
