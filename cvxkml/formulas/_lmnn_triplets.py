"""The targets and triplets of LMNN (Weinberger & Saul 2009, §3): target neighbours by class,
the triplet set (all impostors, or an active set of them), and the checks and index helpers
that :mod:`cvxkml.formulas.lmnn` re-exports."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.distance import cdist

from .._validation import as_float_array
from ..errors import InvalidInputError


# --------------------------------------------------------------------------- structure
def _label_codes(y) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y)
    if y.ndim != 1:
        raise InvalidInputError(f"y must be 1-dimensional; got shape {y.shape}.")
    classes, codes = np.unique(y, return_inverse=True)
    return classes, codes.astype(np.int64)


def _check_class_sizes(classes, codes, k: int, small_classes: str = "raise") -> None:
    if small_classes not in ("raise", "shrink"):
        raise InvalidInputError(f"small_classes must be 'raise' or 'shrink'; got {small_classes!r}.")
    if classes.size < 2:
        raise InvalidInputError(
            "LMNN needs labels from at least 2 classes (impostors are points of another "
            f"class); y has {classes.size} class."
        )
    counts = np.bincount(codes, minlength=classes.size)
    if small_classes == "shrink":
        if counts.max() < 2:
            raise InvalidInputError(
                "Every class has a single member: no point has a same-class target neighbour. "
                "LMNN needs at least one class with two or more members."
            )
        return
    small = np.flatnonzero(counts < k + 1)
    if small.size:
        c = int(small[0])
        raise InvalidInputError(
            f"Class {classes[c]!r} has {counts[c]} member(s); k = {k} target neighbours need "
            f"k + 1 = {k + 1} members in every class. Lower k to at most {int(counts.min()) - 1} "
            "(the smallest class size minus one), or drop / merge the small classes."
        )


def target_neighbors(sq_dist, y, k: int, small_classes: str = "raise") -> tuple[np.ndarray, np.ndarray]:
    """The k nearest same-class points of every point (Weinberger & Saul's target
    neighbours; the S matrix of eq. 18).

    Parameters
    ----------
    sq_dist : array-like of shape (n, n)
        Squared distances used to pick the neighbours (Euclidean for linear LMNN, the
        kernel's feature-space distance for kernel LMNN).
    y : array-like of shape (n,)
        Class labels.
    k : int
        Target neighbours per point (>= 1).  Ties are broken by the smaller index.
    small_classes : {"raise", "shrink"}, default="raise"
        A class with fewer than k + 1 members makes k targets impossible: ``"raise"``
        raises :class:`InvalidInputError`; ``"shrink"`` gives each point of such a class
        min(k, class size − 1) targets (none for a singleton class, whose point still
        serves as an impostor of the other classes).

    Returns
    -------
    i, j : int64 arrays of shape (n·k,)
        Entry e says that j[e] is a target neighbour of i[e]; i is sorted.

    Raises
    ------
    InvalidInputError
        Fewer than two classes, or (``small_classes="raise"``) a class with fewer than
        k + 1 members.
    """
    k, classes, codes = _k_and_classes(k, y)
    D = as_float_array(sq_dist, "sq_dist", ndim=2)
    n = codes.size
    if D.shape != (n, n):
        raise InvalidInputError(f"sq_dist must be {n} × {n} to match y; got {D.shape}.")
    _check_class_sizes(classes, codes, k, small_classes)
    return _targets_by_class(lambda members: D[np.ix_(members, members)], codes, classes.size, k)


def feature_target_neighbors(Z, y, k: int, small_classes: str = "raise") -> tuple[np.ndarray, np.ndarray]:
    """:func:`target_neighbors` of the Euclidean distances between the rows of Z, formed class
    by class (SciPy's ``cdist``): Σ_c n_c² distances instead of the n × n matrix, each a sum of
    squared differences, so equal rows are at exactly equal distances and the tie rule holds.

    Parameters
    ----------
    Z : array-like of shape (n, d)
        Features.
    y, k, small_classes
        As :func:`target_neighbors`.

    Returns
    -------
    i, j : int64 arrays of shape (n·k,)
        As :func:`target_neighbors`.
    """
    k, classes, codes = _k_and_classes(k, y)
    Z = as_float_array(Z, "Z", ndim=2)
    if Z.shape[0] != codes.size:
        raise InvalidInputError(f"Z must have {codes.size} rows to match y; got {Z.shape[0]}.")
    _check_class_sizes(classes, codes, k, small_classes)

    return _targets_by_class(lambda m: cdist(Z[m], Z[m], "sqeuclidean"), codes, classes.size, k)


def _k_and_classes(k, y):
    """(k as int, class labels, class code of every point), after checking that k is a
    positive integer: the start of :func:`target_neighbors` and :func:`feature_target_neighbors`."""
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise InvalidInputError(f"k must be a positive integer; got {k!r}.")
    classes, codes = _label_codes(y)
    return int(k), classes, codes


def _targets_by_class(block, codes, n_classes: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest same-class points of every point, from ``block(members)``: the squared
    distances among one class's members (a fresh array, written on; ties broken by the smaller
    index)."""
    ti, tj = [], []
    for c in range(n_classes):
        members = np.flatnonzero(codes == c)
        kc = min(k, members.size - 1)
        if kc < 1:
            continue
        sub = block(members)
        np.fill_diagonal(sub, np.inf)
        order = np.argsort(sub, axis=1, kind="stable")[:, :kc]
        ti.append(np.repeat(members, kc))
        tj.append(members[order].ravel())
    i = np.concatenate(ti)
    j = np.concatenate(tj)
    perm = np.argsort(i, kind="stable")
    return i[perm].astype(np.int64), j[perm].astype(np.int64)


@dataclass(frozen=True)
class LMNNTriplets:
    """The index structure of an LMNN problem (no distances, no features).

    Attributes
    ----------
    n : number of points.
    k : target neighbours per point.
    codes : class code of every point (0 … c − 1).
    pi, pj : int64 arrays (P,), the distinct pairs (pi < pj) whose distance enters F.
    target_i, target_j : the target entries (S_ij = 1), shape (n·k,).
    target_pair : pair index of every target entry.
    target_weight : float array (P,), S_ij + S_ji per pair (0 for impostor-only pairs).
    trip_i, trip_j, trip_l : the triplets (i, j, l), j a target of i, y_l ≠ y_i.
    tt, ti : pair index of (i, j) and of (i, l) for every triplet.
    """

    n: int
    k: int
    codes: np.ndarray
    pi: np.ndarray
    pj: np.ndarray
    target_i: np.ndarray
    target_j: np.ndarray
    target_pair: np.ndarray
    target_weight: np.ndarray
    trip_i: np.ndarray
    trip_j: np.ndarray
    trip_l: np.ndarray
    tt: np.ndarray
    ti: np.ndarray

    @property
    def n_pairs(self) -> int:
        return int(self.pi.size)

    @property
    def n_triplets(self) -> int:
        return int(self.tt.size)

    @classmethod
    def from_labels(cls, y, k: int = 5, sq_dist=None, targets=None, small_classes: str = "raise") -> "LMNNTriplets":
        """Build the structure from labels and either neighbour distances or given targets.

        Parameters
        ----------
        y : array-like of shape (n,)
            Class labels (at least 2 classes, each with at least k + 1 members).
        k : int, default=5
            Target neighbours per point (the paper's setting).
        sq_dist : array-like of shape (n, n), optional
            Squared distances defining the target neighbours (:func:`target_neighbors`).
        targets : tuple (i, j) of int arrays, optional
            Explicit target entries instead (every j[e] must share i[e]'s class, i ≠ j).
        small_classes : {"raise", "shrink"}, default="raise"
            See :func:`target_neighbors`.
        """
        classes, codes = _label_codes(y)
        n = codes.size
        if (sq_dist is None) == (targets is None):
            raise InvalidInputError("Give exactly one of sq_dist (to pick target neighbours) or targets.")
        if targets is None:
            t_i, t_j = target_neighbors(sq_dist, y, k, small_classes)
        else:
            t_i, t_j = check_targets(targets, y)
        k_eff = int(k) if targets is None else int(np.max(np.bincount(t_i, minlength=n)))
        return cls.from_targets(codes, k_eff, t_i, t_j)

    @classmethod
    def from_targets(cls, codes, k: int, target_i, target_j) -> "LMNNTriplets":
        """The full structure of given target entries: every entry (i, j) × every l of another
        class (in the order of :func:`full_triplet_index`)."""
        codes = np.asarray(codes, dtype=np.int64)
        t_i = np.asarray(target_i, dtype=np.int64)
        t_j = np.asarray(target_j, dtype=np.int64)
        tr_e, tr_l = [], []
        for c in range(int(codes.max()) + 1):
            ent = np.flatnonzero(codes[t_i] == c)
            others = np.flatnonzero(codes != c)
            tr_e.append(np.repeat(ent, others.size))
            tr_l.append(np.tile(others, ent.size))
        e = np.concatenate(tr_e).astype(np.int64)
        trip_l = np.concatenate(tr_l).astype(np.int64)
        return cls._assemble(codes, int(k), t_i, t_j, e, trip_l)

    @classmethod
    def from_impostors(cls, codes, k: int, target_i, target_j, entries, impostors) -> "LMNNTriplets":
        """A structure holding only some triplets: (target_i[e], target_j[e], impostors[q]) for
        e = entries[q] (the impostor l must be of another class than target_i[e]).

        Used by the active-set solve (:func:`cvxkml.solvers.lmnn.lmnn_active_set`): the
        objective of such a structure is F restricted to its triplets (a lower bound on the full
        F, equal to it when every other triplet has a zero hinge), and a multiplier vector on it,
        extended by zeros, is a multiplier vector of the full problem with the same G(α): its
        Lagrange bound :func:`lmnn_dual_value` is a lower bound on the *full* optimum.

        Parameters
        ----------
        codes : int array (n,)
            Class code of every point.
        k : int
            Target neighbours per point (recorded only).
        target_i, target_j : int arrays (E,)
            All target entries (every one enters the pull term), target_i sorted.
        entries, impostors : int arrays (Q,)
            The triplets kept, as (target entry, impostor) pairs.
        """
        codes = np.asarray(codes, dtype=np.int64)
        e = np.asarray(entries, dtype=np.int64)
        trip_l = np.asarray(impostors, dtype=np.int64)
        t_i = np.asarray(target_i, dtype=np.int64)
        t_j = np.asarray(target_j, dtype=np.int64)
        if e.shape != trip_l.shape or (e.size and np.any(codes[t_i[e]] == codes[trip_l])):
            raise InvalidInputError("every impostor must be of another class than its target entry's point.")
        return cls._assemble(codes, int(k), t_i, t_j, e, trip_l)

    @classmethod
    def _assemble(cls, codes, k_eff, t_i, t_j, e, trip_l) -> "LMNNTriplets":
        n = codes.size
        trip_i, trip_j = t_i[e], t_j[e]
        # distinct unordered pairs over targets and impostor pairs
        a = np.concatenate([t_i, trip_i])
        b = np.concatenate([t_j, trip_l])
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        keys, inv = np.unique(lo * n + hi, return_inverse=True)
        pi, pj = (keys // n).astype(np.int64), (keys % n).astype(np.int64)
        target_pair = inv[: t_i.size].astype(np.int64)
        ti = inv[t_i.size :].astype(np.int64)
        tt = target_pair[e]
        weight = np.bincount(target_pair, minlength=keys.size).astype(np.float64)
        return cls(
            n=int(n),
            k=k_eff,
            codes=codes,
            pi=pi,
            pj=pj,
            target_i=t_i,
            target_j=t_j,
            target_pair=target_pair,
            target_weight=weight,
            trip_i=trip_i,
            trip_j=trip_j,
            trip_l=trip_l,
            tt=tt,
            ti=ti,
        )


def check_targets(targets, y) -> tuple[np.ndarray, np.ndarray]:
    """Explicit target entries (i, j) checked against the labels y (i ≠ j, y_i = y_j, indices
    in range); returns them as int64 arrays."""
    classes, codes = _label_codes(y)
    n = codes.size
    _check_class_sizes(classes, codes, 0)
    try:
        t_i, t_j = (np.asarray(a).ravel() for a in targets)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError("targets must be a pair (i, j) of index arrays.") from exc
    if t_i.shape != t_j.shape or t_i.size == 0:
        raise InvalidInputError("targets must be two non-empty index arrays of equal length.")
    if not (np.issubdtype(t_i.dtype, np.integer) and np.issubdtype(t_j.dtype, np.integer)):
        raise InvalidInputError("targets must hold integer point indices.")
    t_i = t_i.astype(np.int64)
    t_j = t_j.astype(np.int64)
    if t_i.min() < 0 or t_j.min() < 0 or t_i.max() >= n or t_j.max() >= n:
        raise InvalidInputError(f"target indices must lie in 0 … {n - 1}.")
    if np.any(t_i == t_j) or np.any(codes[t_i] != codes[t_j]):
        raise InvalidInputError("every target (i, j) must have i ≠ j and y_i = y_j.")
    return t_i, t_j


def sorted_unique(*keys) -> np.ndarray:
    """The distinct values of the integer arrays ``keys`` together, ascending (``np.unique``
    of their concatenation): one sort and a neighbour comparison.

    The triplet and pair keys of the active-set rounds are 10^5–10^6 int64 values, which recent
    NumPy's ``np.unique`` (and ``np.union1d``) hash first, far slower than a sort.
    """
    x = np.sort(np.concatenate([np.zeros(0, np.int64)] + [np.asarray(k, dtype=np.int64).ravel() for k in keys]))
    if x.size < 2:
        return x
    keep = np.empty(x.size, dtype=bool)
    keep[0] = True
    np.not_equal(x[1:], x[:-1], out=keep[1:])
    return x[keep]


def full_triplet_index(codes, target_i, entries, impostors) -> np.ndarray:
    """Position of the triplets (entries[q], impostors[q]) in :meth:`LMNNTriplets.from_targets`'
    order (class by class; within a class entry-major, impostors ascending)."""
    codes = np.asarray(codes, dtype=np.int64)
    t_i = np.asarray(target_i, dtype=np.int64)
    e = np.asarray(entries, dtype=np.int64)
    l = np.asarray(impostors, dtype=np.int64)
    n = codes.size
    n_cls = int(codes.max()) + 1
    counts = np.bincount(codes, minlength=n_cls)
    ec = codes[t_i]
    per_class = np.bincount(ec, minlength=n_cls) * (n - counts)
    base = np.concatenate([[0], np.cumsum(per_class)[:-1]])
    order = np.argsort(ec, kind="stable")
    starts = np.concatenate([[0], np.cumsum(np.bincount(ec, minlength=n_cls))[:-1]])
    rank_e = np.empty(t_i.size, np.int64)
    rank_e[order] = np.arange(t_i.size) - starts[ec[order]]
    c = ec[e]
    below = np.zeros((n_cls, n + 1), np.int64)  # members of class cc among the points < l
    for cc in range(n_cls):
        below[cc, 1:] = np.cumsum(codes == cc)
    return base[c] + rank_e[e] * (n - counts[c]) + (l - below[c, l])


def count_triplets(codes, target_i) -> int:
    """The number of triplets of the full structure, Σ_e (n − n_class(i_e)), without building it."""
    codes = np.asarray(codes, dtype=np.int64)
    counts = np.bincount(codes)
    return int(np.sum(codes.size - counts[codes[np.asarray(target_i, dtype=np.int64)]]))
