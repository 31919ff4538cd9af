"""Random instances and Hypothesis strategies of declared problems (see :mod:`cvxkml.testing`)."""

from __future__ import annotations

import numpy as np


# --------------------------------------------------------------------------- instances
def median_gaussian(X):
    """The Gaussian kernel matrix of X with σ the median distance between distinct points."""
    from ..kernels import gaussian_kernel

    sq = np.sum((X[:, None] - X[None]) ** 2, axis=-1)
    return gaussian_kernel(X, sigma=float(np.sqrt(np.median(sq[sq > 0]))))


def random_pairs(rng, n, m):
    """m distinct index pairs i < j out of n points."""
    all_i, all_j = np.triu_indices(n, 1)
    pick = rng.choice(all_i.size, size=min(m, all_i.size), replace=False)
    return all_i[pick], all_j[pick]


def forest_pairs(rng, n, m):
    """Up to m edges of a random spanning tree: their difference vectors are generically
    independent, so any positive distances are attainable (hard draws stay feasible)."""
    order = rng.permutation(n)
    i, j = [], []
    for t in range(1, n):  # random tree: attach order[t] to an earlier node
        i.append(order[t])
        j.append(order[rng.integers(0, t)])
    keep = rng.choice(n - 1, size=min(m, n - 1), replace=False)
    return np.array(i)[keep], np.array(j)[keep]


def _bounded_pairs(rng, i, j, baseline, n, percentiles):
    from ..sideinfo import PairConstraints, percentile_bounds

    y = rng.choice([-1.0, 1.0], size=i.size)
    u, l = percentile_bounds(baseline, n, percentiles, rng)
    return PairConstraints(i, j, y, np.where(y > 0, u, l))


def metric_instance(seed, n, d, m, hard, percentiles=(5.0, 95.0)):
    """(X, PairConstraints) for metric learning; hard draws use at most d forest pairs
    (feasible by construction), bounds are percentiles of squared baseline distances."""
    from ..sideinfo import baseline_metric

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 2.0, size=d)
    i, j = forest_pairs(rng, n, min(m, d)) if hard else random_pairs(rng, n, m)
    return X, _bounded_pairs(rng, i, j, baseline_metric(X), n, percentiles)


def kernel_instance(seed, n, m, hard, kind="gaussian", percentiles=(5.0, 95.0)):
    """(K0, PairConstraints); kind: 'gaussian' (PD), 'linear-ridge' (PD) or 'lowrank'
    (rank d < n: the range-space path).  Hard draws use at most rank(K0) forest pairs."""
    from ..sideinfo import baseline_kernel

    rng = np.random.default_rng(seed)
    if kind == "lowrank":
        d = int(rng.integers(2, max(3, n - 1)))
        X = rng.normal(size=(n, d))
        K0 = X @ X.T
        rank = d
    else:
        X = rng.normal(size=(n, 3))
        if kind == "gaussian":
            K0 = median_gaussian(X)
        else:
            K0 = X @ X.T + 0.5 * np.eye(n)
        rank = n
    i, j = forest_pairs(rng, n, min(m, rank)) if hard else random_pairs(rng, n, m)
    return K0, _bounded_pairs(rng, i, j, baseline_kernel(K0), n, percentiles)


def factor_instance(seed, n, r, m, hard):
    """(G0, PairConstraints) for low-rank LogDet on K0 = G0 G0ᵀ of rank r."""
    from ..sideinfo import PairConstraints, baseline_metric, percentile_bounds

    rng = np.random.default_rng(seed)
    G0 = rng.normal(size=(n, r)) * rng.uniform(0.5, 2.0, size=r)
    i, j = forest_pairs(rng, n, min(m, r)) if hard else random_pairs(rng, n, m)
    u, l = percentile_bounds(baseline_metric(G0), n, (5, 95), rng)  # bounds, then signs
    y = rng.choice([-1.0, 1.0], size=i.size)
    return G0, PairConstraints(i, j, y, np.where(y > 0, u, l))


def triplets(rng, labels_or_n, m):
    """m relative-comparison triplets (i, j, k): with labels, j shares i's class and k does
    not (the usual side information); with a number of points, random distinct triples."""
    out = []
    if np.ndim(labels_or_n) == 0:
        n = int(labels_or_n)
        while len(out) < m:
            out.append(tuple(rng.choice(n, 3, replace=False)))
    else:
        lab = np.asarray(labels_or_n)
        for _ in range(100 * m):
            if len(out) == m:
                break
            a, b, c = rng.integers(0, lab.size, 3)
            if a != b and lab[a] == lab[b] and lab[a] != lab[c]:
                out.append((a, b, c))
    t = np.array(out, dtype=np.int64).reshape(-1, 3)
    return t[:, 0], t[:, 1], t[:, 2]


def variant_instance(seed, n, m, regularizer=None, kernel=False, hard_pairs=True, C=1.0):
    """A declared variant mixing hard and hinge-slack constraints, feasible by construction:
    ``SpectralMetric`` (or ``SpectralKernel`` with ``kernel=True``, Gaussian K0) with the given
    regularizer (default LogDet), up to min(m, dim) hard forest pairs (``hard_pairs``; else
    random pairs under :class:`~cvxkml.sideinfo.Hinge`) and m relative triplets under
    ``Hinge(…, C)`` whose margin is the median squared baseline distance (so many are active)."""
    from .. import declare
    from ..sideinfo import Hinge, RelativeConstraints, baseline_kernel, baseline_metric

    rng = np.random.default_rng(seed)
    d = 3
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 2.0, size=d)
    reg = declare.LogDet() if regularizer is None else regularizer
    if kernel:
        K0 = median_gaussian(X)
        baseline, dim = baseline_kernel(K0), n
    else:
        baseline, dim = baseline_metric(X), d
    i, j = forest_pairs(rng, n, min(m, dim)) if hard_pairs else random_pairs(rng, n, m)
    pairs = _bounded_pairs(rng, i, j, baseline, n, (5.0, 95.0))
    ti, tj, tk = triplets(rng, n, m)
    margin = float(np.median(baseline(np.arange(n), np.roll(np.arange(n), 1))))
    rel = Hinge(RelativeConstraints(ti, tj, tk, np.full(ti.size, margin)), C)
    cons = [pairs if hard_pairs else Hinge(pairs, C), rel]
    return declare.SpectralKernel(K0, cons, reg) if kernel else declare.SpectralMetric(X, cons, reg)


_CONSTRAINT_FAMILIES = ("pairs", "triplets", "similarity", "linear")


def _random_spd(rng, k):
    """Q diag(e^g) Qᵀ: Q a random rotation, g ~ N(0, 0.7²) — above and below the identity."""
    Q = np.linalg.qr(rng.normal(size=(k, k)))[0]
    return (Q * np.exp(0.7 * rng.normal(size=k))) @ Q.T


def feasible_instance(
    seed, n, m, families=("pairs", "triplets"), regularizer=None, kernel=False, hard=True, C=1.0, rank=None, d=3
):
    """A declared spectral problem with any mix of constraint families, feasible by
    construction: every constraint holds with a 5 % margin at a random positive definite
    target M* (K* = K0^½ Q e^G Qᵀ K0^½ on range(K0) for a kernel problem, W* = Q e^G Qᵀ for
    a metric one, G diagonal N(0, 0.7²)), so hard constraints never conflict, while M0
    (M* with G = 0) violates many of them.

    Parameters
    ----------
    seed : int
        Seed of every random draw.
    n : int
        Number of points.
    m : int
        Constraints per family.
    families : tuple of str
        Subset of ("pairs", "triplets", "similarity", "linear").
    regularizer : Regularizer or None
        The spectral regularizer (default LogDet()).
    kernel : bool
        SpectralKernel on a Gaussian K0 (True) or SpectralMetric on X (n × d).
    hard : bool
        True: hard constraints; False: every family under ``Hinge(…, C)``.
    C : float
        The hinge weight when ``hard`` is False.
    rank : int or None
        Kernel problems only: a rank-``rank`` K0 (linear kernel of rank-``rank`` points)
        instead of the Gaussian one; the target stays on range(K0).
    d : int
        Features of X.

    Returns
    -------
    SpectralMetric or SpectralKernel
    """
    from .. import declare
    from ..sideinfo import Hinge, LinearConstraints, PairConstraints, RelativeConstraints, SimilarityConstraints

    bad = [f for f in families if f not in _CONSTRAINT_FAMILIES]
    if bad or not families:
        raise ValueError(f"families must be a non-empty subset of {_CONSTRAINT_FAMILIES}; got {families!r}")
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 2.0, size=d)
    if kernel:
        if rank is not None:
            Y = rng.normal(size=(n, rank))
            K0 = Y @ Y.T
        else:
            K0 = median_gaussian(X)
        w, V = np.linalg.eigh(K0)
        keep = w > 1e-10 * w.max()
        half = V[:, keep] * np.sqrt(w[keep])  # K0 = half halfᵀ on its range
        target = half @ _random_spd(rng, half.shape[1]) @ half.T
        dist = lambda a, b: target[a, a] + target[b, b] - 2 * target[a, b]  # noqa: E731
        inner = lambda a, b: target[a, b]  # noqa: E731
        dim = n
    else:
        target = _random_spd(rng, d)
        dist = lambda a, b: np.einsum("ij,jk,ik->i", X[a] - X[b], target, X[a] - X[b])  # noqa: E731
        inner = lambda a, b: np.einsum("ij,jk,ik->i", X[a], target, X[b])  # noqa: E731
        dim = d
    wrap = (lambda c: c) if hard else (lambda c: Hinge(c, C))
    cons = []
    if "pairs" in families:
        i, j = random_pairs(rng, n, m)
        y = rng.choice([-1.0, 1.0], size=i.size)
        dd = dist(i, j)
        keep = dd > 1e-9 * max(1.0, float(np.max(dd)))
        i, j, y, dd = i[keep], j[keep], y[keep], dd[keep]
        cons.append(wrap(PairConstraints(i, j, y, np.where(y > 0, 1.05 * dd, 0.95 * dd))))
    if "triplets" in families:
        ti, tj, tk = triplets(rng, n, m)
        dj, dk = dist(ti, tj), dist(ti, tk)
        swap = dj > dk  # orient so d*(i, j) <= d*(i, k)
        tj, tk = np.where(swap, tk, tj), np.where(swap, tj, tk)
        cons.append(wrap(RelativeConstraints(ti, tj, tk, 0.5 * np.abs(dk - dj))))
    if "similarity" in families:
        a, b = random_pairs(rng, n, m)
        s_ab = inner(a, b)
        cons.append(wrap(SimilarityConstraints(a, b, s_ab - 0.05 * np.maximum(np.abs(s_ab), 1e-3))))
    if "linear" in families:
        # ± z zᵀ: an upper bound where M0 exceeds M* along z, a lower bound where it falls
        # short, each 10 % of the way from M* to M0 — met by M*, violated by M0
        Z = rng.normal(size=(m, dim))
        M0 = K0 if kernel else np.eye(d)
        at_target = np.einsum("ti,ij,tj->t", Z, target, Z)
        at_start = np.einsum("ti,ij,tj->t", Z, M0, Z)
        sign = np.where(at_start > at_target, 1.0, -1.0)
        Cs = sign[:, None, None] * np.einsum("ti,tj->tij", Z, Z)
        cons.append(wrap(LinearConstraints(b=sign * (at_target + 0.1 * (at_start - at_target)), C=Cs)))
    reg = declare.LogDet() if regularizer is None else regularizer
    return declare.SpectralKernel(K0, cons, reg) if kernel else declare.SpectralMetric(X, cons, reg)


def make_random_instance(
    n: int,
    d: int,
    n_pairs: int,
    gamma: float | None = 1.0,
    kind: str = "metric",
    random_state=None,
    n_classes: int = 2,
    percentiles=(5.0, 95.0),
):
    """A small random LogDet problem with pair constraints.

    n points in d dimensions are drawn from ``n_classes`` Gaussian clusters (standard
    normal centres, standard normal noise, so the clusters overlap).  ``n_pairs`` distinct
    pairs of points are drawn without replacement; a pair is similar (+1) when both points come from the
    same cluster, dissimilar (−1) otherwise.  The bounds u, l are the ``percentiles``
    of the squared baseline distances over all pairs.

    ``kind="metric"``: :class:`cvxkml.ITML` on X with W0 = I (d × d matrix).
    ``kind="kernel"``: :class:`cvxkml.LogDetKernel` on K0 = the Gaussian kernel of X with
    σ² = median squared distance / 2, plus 1e-3·I so that K0 is safely positive definite
    (n × n matrix).  ``gamma`` is the LogDet slack weight (``None``: hard constraints,
    which random pairs may make infeasible).  Returns the problem object; its
    ``pairs`` hold the constraints, ``M0`` the prior, ``X`` (metric) the points.
    """
    from .. import declare
    from ..errors import InvalidInputError
    from ..kernels import gaussian_kernel, kernel_sq_distances
    from ..sideinfo import PairConstraints

    n, d, n_pairs = int(n), int(d), int(n_pairs)
    if n < 2 or d < 1:
        raise InvalidInputError(f"Need n >= 2 points and d >= 1 dimensions; got n={n}, d={d}.")
    total = n * (n - 1) // 2
    if not 1 <= n_pairs <= total:
        raise InvalidInputError(f"n_pairs must be between 1 and n(n-1)/2 = {total}; got {n_pairs}.")
    if kind not in ("metric", "kernel"):
        raise InvalidInputError(f"kind must be 'metric' or 'kernel'; got {kind!r}.")
    rng = np.random.default_rng(random_state)
    labels = rng.integers(0, max(1, int(n_classes)), n)
    centres = rng.standard_normal((max(1, int(n_classes)), d))
    X = centres[labels] + rng.standard_normal((n, d))
    iu, ju = np.triu_indices(n, 1)
    pick = rng.choice(total, n_pairs, replace=False)
    i, j = iu[pick], ju[pick]
    y = np.where(labels[i] == labels[j], 1.0, -1.0)
    D = kernel_sq_distances(X @ X.T)
    if kind == "kernel":
        sigma2 = float(np.median(D[iu, ju])) / 2.0
        K0 = gaussian_kernel(X, gamma=1.0 / (2.0 * sigma2)) + 1e-3 * np.eye(n)
        D = kernel_sq_distances(K0)
    u, l = np.percentile(D[iu, ju], percentiles)
    pairs = PairConstraints(i, j, y, np.where(y > 0, u, l))
    if kind == "metric":
        return declare.ITML(X, pairs, gamma=gamma)
    return declare.LogDetKernel(K0, pairs, gamma=gamma)


_FAMILIES = (
    "itml",
    "logdet-kernel",
    "lowrank",
    "vonneumann-metric",
    "vonneumann-kernel",
    "hinge-metric",
    "hinge-kernel",
    "feasible-metric",
    "feasible-kernel",
)


def problems(
    family: str,
    hard: bool | None = None,
    max_n: int = 12,
    max_m: int = 12,
    gammas=(0.1, 1.0, 10.0),
    regularizer=None,
    families=None,
):
    """A Hypothesis strategy of declared problems of one family, feasible when hard.

    Parameters
    ----------
    family : 'itml', 'logdet-kernel', 'lowrank', 'vonneumann-metric', 'vonneumann-kernel',
        or 'hinge-metric' / 'hinge-kernel' (:func:`variant_instance`: any ``regularizer``,
        hinge-slack triplets, pairs hard or under Hinge), or 'feasible-metric' /
        'feasible-kernel' (:func:`feasible_instance`: any ``regularizer``, any non-empty
        subset of the constraint ``families`` drawn — pairs, triplets, similarity, linear —
        hard or under Hinge; the kernel ones on a Gaussian or a rank-deficient K0).
    families : tuple of str or None
        The constraint families the ``'feasible-*'`` strategies draw from (default all).
    hard : bool or None
        True (hard constraints, feasible by construction), False (slack, γ drawn from
        ``gammas``; hinge families: pairs under Hinge) or None (both).
    gammas : tuple of float
        The slack weights γ drawn from when ``hard`` is not True.
    regularizer : Regularizer or None
        The hinge families' regularizer (default LogDet()).
    max_n, max_m : int
        Largest number of points and of pair constraints.

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> from cvxkml.testing import (assert_matches_reference, problems, reference_or_discard,
    ...                             solve_fast_honestly)
    >>> @settings(max_examples=3, derandomize=True, database=None, deadline=None)
    ... @given(problems("itml", max_n=8))
    ... def test_my_solver(problem):
    ...     fast = solve_fast_honestly(problem, tol=1e-12)
    ...     assert_matches_reference(problem, fast, reference_or_discard(problem))
    >>> test_my_solver()                      # three drawn problems, each checked both ways
    """
    from hypothesis import strategies as st

    from .. import declare

    if family not in _FAMILIES:
        raise ValueError(f"family must be one of {', '.join(_FAMILIES)}; got {family!r}")
    if max_n < 3 or max_m < 1:
        raise ValueError("max_n must be >= 3 and max_m >= 1")

    def build(seed, n, m, is_hard, gamma, kind, d, fams):
        g = None if is_hard else gamma
        if family.startswith("feasible-"):
            rank = min(d, n - 1) if kind == "lowrank" else None
            return feasible_instance(
                seed, n, m, fams, regularizer, kernel=family == "feasible-kernel", hard=is_hard, C=gamma, rank=rank
            )
        if family.startswith("hinge-"):
            return variant_instance(
                seed, n, m, regularizer, kernel=family == "hinge-kernel", hard_pairs=is_hard, C=gamma
            )
        if family == "itml":
            X, pc = metric_instance(seed, n, d, m, is_hard)
            return declare.ITML(X, pc, gamma=g)
        if family == "vonneumann-metric":
            X, pc = metric_instance(seed, n, d, m, is_hard)
            return declare.SpectralMetric(X, pc, declare.VonNeumann(), gamma=g)
        if family == "lowrank":
            G0, pc = factor_instance(seed, n, min(d, n), m, is_hard)
            return declare.LowRankLogDet(G0, pc, gamma=g)
        K0, pc = kernel_instance(seed, n, m, is_hard, kind=kind)
        if family == "logdet-kernel":
            return declare.LogDetKernel(K0, pc, gamma=g)
        return declare.VonNeumannKernel(K0, pc, gamma=g)

    hards = st.just(hard) if hard is not None else st.booleans()
    pool = list(_CONSTRAINT_FAMILIES if families is None else families)
    fams = st.lists(st.sampled_from(pool), min_size=1, max_size=len(pool), unique=True).map(tuple)
    return st.builds(
        build,
        seed=st.integers(0, 2**31 - 1),
        n=st.integers(3, max_n),
        m=st.integers(1, max_m),
        is_hard=hards,
        gamma=st.sampled_from(list(gammas)),
        kind=st.sampled_from(["gaussian", "linear-ridge", "lowrank"]),
        d=st.integers(1, 6),
        fams=fams,
    )
