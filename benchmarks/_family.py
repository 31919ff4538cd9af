"""Instance families: a speed target holds for the worst instance of a family, not for one
instance a benchmark chose.

A family is a list of generator specifications × seeds.  A specification is a string:

* ``"blobs:d=3:c=3"`` — c Gaussian blobs in d dimensions (unit spread, centres drawn with
  spread 1.5), classes of equal size;
* ``"classification:d=6:c=3:sep=1"`` — scikit-learn's ``make_classification`` with d
  informative features, c classes of one cluster each, ``class_sep`` = sep;
* ``"pendigits"``, ``"spambase"``, … — a stratified subsample of n points of a data set of the
  offline folder (:func:`cvxkml.datasets.load_dataset`), a different subsample per seed.

Every generator returns standardized features (:func:`standardize`).  :func:`summarize`
gives, per member (or any other key) and size, the median and the maximum of a measured
column and the number of certified solves; :func:`family_verdict` says whether the maximum over the whole family
meets a target.

Imports nothing of :mod:`benchmarks` but :mod:`benchmarks._runner`.
"""

from __future__ import annotations

import numpy as np

from ._runner import growth_exponent, standardize

__all__ = ["parse_spec", "points", "summarize", "family_verdict", "DEFAULT_KCR_FAMILY"]

#: the KCR family: Gaussian kernels on d ∈ {3, 6, 10, 20} features, class_sep ∈ {0.5, 1, 2},
#: 3–5 classes (a design that covers each value, not the whole grid), the blobs of the old
#: benchmark, and two real data sets
DEFAULT_KCR_FAMILY = (
    "blobs:d=3:c=3",
    "classification:d=3:c=3:sep=1",
    "classification:d=6:c=3:sep=1",
    "classification:d=6:c=5:sep=0.5",
    "classification:d=10:c=4:sep=2",
    "classification:d=10:c=3:sep=0.5",
    "classification:d=20:c=5:sep=1",
    "classification:d=20:c=3:sep=2",
    "pendigits",
    "spambase",
)

_KEYS = {"d": int, "c": int, "sep": float}


def parse_spec(spec: str) -> tuple[str, dict]:
    """``(generator, parameters)`` of a specification string (see the module doc).

    Raises
    ------
    ValueError
        An unknown generator or parameter, or a value that is not a number.
    """
    name, *parts = str(spec).split(":")
    params = {}
    for part in parts:
        key, _, value = part.partition("=")
        if key not in _KEYS or not value:
            raise ValueError(f"family spec {spec!r}: unknown part {part!r} (known: d=, c=, sep=)")
        params[key] = _KEYS[key](value)
    if name in ("blobs", "classification"):
        params.setdefault("d", 3)
        params.setdefault("c", 3)
        if name == "classification":
            params.setdefault("sep", 1.0)
        elif "sep" in params:
            raise ValueError(f"family spec {spec!r}: blobs take d= and c= only")
    elif params:
        raise ValueError(f"family spec {spec!r}: a data set takes no parameters")
    return name, params


def points(spec: str, n: int, seed: int, data_dir=None) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)``: n standardized points of the family member ``spec``, seed ``seed``."""
    name, p = parse_spec(spec)
    rng = np.random.default_rng(seed)
    if name == "blobs":
        y = np.arange(int(n)) % p["c"]
        X = rng.normal(size=(y.size, p["d"])) + 1.5 * rng.normal(size=(p["c"], p["d"]))[y]
    elif name == "classification":
        from sklearn.datasets import make_classification

        X, y = make_classification(
            n_samples=int(n),
            n_features=p["d"],
            n_informative=p["d"],
            n_redundant=0,
            n_classes=p["c"],
            n_clusters_per_class=1,
            class_sep=p["sep"],
            random_state=seed,
        )
    else:
        from sklearn.model_selection import train_test_split

        from cvxkml.datasets import load_dataset

        X, y = load_dataset(name, data_dir)
        if n < len(y):
            X, _, y, _ = train_test_split(X, y, train_size=int(n), stratify=y, random_state=seed)
    return standardize(np.asarray(X, dtype=float))[0], np.asarray(y)


def summarize(rows, column: str = "cpu", by: str = "spec", worst=()) -> list[dict]:
    """Per (``by``, n), in the order the rows first show them: instances, certified count,
    median and max of ``column`` and of the iterations, the max of each ``worst`` column;
    then, per ``by`` value, the growth exponent of the median in n."""
    out = []
    for key, n in dict.fromkeys((r[by], r["n"]) for r in rows):
        sel = [r for r in rows if r[by] == key and r["n"] == n]
        vals = np.array([r[column] for r in sel], dtype=float)
        its = np.array([r["iterations"] for r in sel], dtype=float)
        out.append(
            {
                by: key,
                "n": n,
                "instances": len(sel),
                "certified": sum(bool(r["converged"]) for r in sel),
                f"median_{column}": float(np.median(vals)),
                f"max_{column}": float(vals.max()),
                "median_iterations": float(np.median(its)),
                "max_iterations": int(its.max()),
                **{f"max_{w}": float(max(r[w] for r in sel)) for w in worst},
            }
        )
    for key in dict.fromkeys(r[by] for r in out):
        sel = [r for r in out if r[by] == key]
        exponent = growth_exponent([r["n"] for r in sel], [r[f"median_{column}"] for r in sel])
        for r in sel:
            r["growth_exponent"] = exponent
    return out


def family_verdict(rows, n: int, target: float, column: str = "cpu") -> dict:
    """Whether every instance of size ``n`` is certified and its ``column`` is at most
    ``target``: the worst instance (its specification and seed), its value, and the verdict."""
    sel = [r for r in rows if r["n"] == n]
    if not sel:
        return dict(n=n, target=target, instances=0, met=False)
    worst = max(sel, key=lambda r: (not r["converged"], r[column]))
    return dict(
        n=n,
        target=target,
        instances=len(sel),
        certified=sum(bool(r["converged"]) for r in sel),
        worst_spec=worst["spec"],
        worst_seed=worst["seed"],
        worst=float(worst[column]),
        met=all(r["converged"] for r in sel) and float(worst[column]) <= target,
    )
