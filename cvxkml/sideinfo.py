"""Side information: constraint families on the learned matrix, each one atom
(:class:`ConstraintAtom`) — pair distances, relative (triplet) comparisons, similarities
(learned inner products), linear inequalities tr(C_t M) <= b_t and equalities
tr(C_t M) = b_t, or a user's own family — hard or soft (:class:`Hinge`, :class:`Squared`),
plus their generation from labels.

Distances are always **squared** learned distances, d(i, j) = (e_i − e_j)ᵀK(e_i − e_j)
for a kernel matrix K, or (x_i − x_j)ᵀW(x_i − x_j) for a Mahalanobis matrix W.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable

import cvxpy as cp
import numpy as np

from ._validation import (
    as_float_array,
    as_generator,
    check_choice,
    check_index_array,
    check_int,
    check_labels,
    check_magnitude,
    check_number,
    check_symmetric,
)
from .errors import InvalidInputError

__all__ = [
    "ConstraintAtom",
    "ATOM_METHODS",
    "atom_family",
    "check_atom",
    "PairConstraints",
    "RelativeConstraints",
    "SimilarityConstraints",
    "LinearConstraints",
    "LinearEqualities",
    "Hinge",
    "Squared",
    "pairs_from_labels",
    "random_pairs_from_labels",
    "percentile_bounds",
    "baseline_metric",
    "baseline_kernel",
]


def sample_index_pairs(n: int, max_pairs: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """All index pairs i < j of n points when there are at most ``max_pairs`` of them, else
    ``max_pairs`` uniform draws (i, j) from the generator ``rng`` with i = j dropped."""
    if n * (n - 1) // 2 <= max_pairs:
        return np.triu_indices(n, 1)
    i = rng.integers(0, n, max_pairs)
    j = rng.integers(0, n, max_pairs)
    ok = i != j
    return i[ok], j[ok]


def _values(a, name: str, size: int) -> np.ndarray:
    """A 1-D float vector of per-constraint values (a scalar is broadcast to ``size``);
    NaN/inf are left to the caller's own, more specific check."""
    v = as_float_array(a, name, finite=False).ravel()
    return np.full(size, float(v[0])) if v.size == 1 and size != 1 else v


class ConstraintAtom:
    """The extension point of the spectral problems' constraints: one family of m
    constraints g_c(M) <= t_c (``equality = True``: g_c(M) = t_c) on the learned matrix
    M = T X̂ Tᵀ, each linear in M.  A family is one class; a user's subclass defined outside
    the package works wherever a built-in family does (every space, the exact model, the
    generic certified dual solver, :class:`Hinge` / :class:`Squared`, violations, duals,
    certificates, ``extend()``), and a problem may hold several objects of one family.

    The protocol (m = ``len(atom)``, r = the side of the whitened matrix X̂; the sign
    convention is always "g − t <= 0 is satisfied"):

    ``__len__()`` -> int
        m, the number of constraints (at least one).
    ``targets()`` -> ndarray (m,)
        t, the right-hand sides.
    ``scales()`` -> ndarray (m,)
        What a relative violation divides by (default max(1, |t|)).
    ``values(space, M)`` -> ndarray (m,)
        g(M), NumPy, from the learned matrix M of the problem's space; ``space`` is the
        problem (``space.pair_values(M, i, j)`` the squared learned distances,
        ``space.pair_inner(M, j, l)`` the learned inner products).  The objective, the
        violations and the certificate are computed from it.
    ``terms(F, T)`` -> (U, w, counts)
        The whitened form tr(X̂ Â_c) = g_c(T X̂ Tᵀ) as signed rank-one terms
        Â_c = Σ_a w_a u_a u_aᵀ: U (Σcounts, r) the vectors u_a, w (Σcounts,) their weights,
        counts (m,) int64 how many terms each constraint has, in order.  ``F`` (points × r)
        holds the points' whitened coordinates (a pair distance is (F_i − F_j)ᵀ X̂ (F_i − F_j)),
        ``T`` (N × r) maps X̂ to M.  The fast dual solvers and the Lagrange dual read only this.
    ``cvx_values(F, T, X)`` -> expression (m,), or (expression, list of constraints)
        g as a vectorized CVXPY expression of the r × r variable X̂ (the exact model); a
        family may bring auxiliary variables with the constraints that define them.
    ``validate_space(n_points, dim)``
        Check indices and sizes against the problem (default ``self.validate(n_points)``).

    Class attributes: ``equality`` (multipliers free in sign, "== t"), ``order`` (the
    family's place in ``violations()`` order: the built-in families 0–4, a user family 100
    by default; atoms of equal order keep the order given).

    A native solver written for a built-in family takes a subclass only when the subclass
    keeps the family's formulas (:data:`ATOM_METHODS`, :func:`atom_family`); otherwise the
    generic dual solver (any atom with the protocol above) solves it.
    """

    equality = False
    order = 100

    def __len__(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def targets(self) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def scales(self) -> np.ndarray:
        return np.maximum(1.0, np.abs(self.targets()))

    def values(self, space, M) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def terms(self, F, T):  # pragma: no cover - abstract
        raise NotImplementedError

    def cvx_values(self, F, T, X):  # pragma: no cover - abstract
        raise NotImplementedError

    def validate_space(self, n_points: int, dim: int):
        validate = getattr(self, "validate", None)
        return validate(n_points) if callable(validate) else self


#: the methods (and attributes) that define a constraint family's formulas: a subclass that
#: redefines one of them is a family of its own
ATOM_METHODS = ("targets", "scales", "values", "terms", "cvx_values", "validate_space", "equality", "order")
#: the methods an atom must implement (the base class leaves them abstract)
ATOM_REQUIRED = ("__len__", "targets", "values", "terms", "cvx_values")


def atom_family(atom) -> type:
    """The family ``atom`` belongs to: its nearest cvxkml class when its own class keeps that
    class's formulas (:data:`ATOM_METHODS`; e.g. a user's subclass of
    :class:`PairConstraints` that only adds a constructor), else its own class."""
    cls = type(atom)
    for lib in cls.__mro__:
        if lib.__module__.split(".")[0] == "cvxkml":
            break
    else:  # pragma: no cover - every atom derives from ConstraintAtom
        return cls
    if lib is ConstraintAtom:
        return cls
    if all(getattr(cls, n, None) is getattr(lib, n, None) for n in ATOM_METHODS):
        return lib
    return cls


def check_atom(atom, owner: str = "This problem"):
    """``atom`` checked against the protocol of :class:`ConstraintAtom`: the required methods
    implemented, at least one constraint, targets of that length and finite.  Returns it."""
    cls = type(atom)
    missing = [n for n in ATOM_REQUIRED if getattr(cls, n, None) is getattr(ConstraintAtom, n, None)]
    if missing:
        raise InvalidInputError(
            f"{cls.__name__} is a ConstraintAtom without {', '.join(missing)}; a constraint family "
            "implements __len__, targets, values, terms and cvx_values (see cvxkml.sideinfo.ConstraintAtom)."
        )
    try:
        m = len(atom)
        t = np.asarray(atom.targets(), dtype=float)
    except InvalidInputError:
        raise
    except Exception as exc:
        raise InvalidInputError(f"{cls.__name__}: len() or targets() failed ({type(exc).__name__}: {exc}).") from exc
    if not isinstance(m, (int, np.integer)) or m < 1:
        raise InvalidInputError(f"{owner}: {cls.__name__} holds no constraint (len {m!r}); give at least one.")
    if t.shape != (m,) or not np.all(np.isfinite(t)):
        raise InvalidInputError(
            f"{cls.__name__}.targets() must return {m} finite numbers (one per constraint); got shape {t.shape}"
            f"{'' if t.shape != (m,) else ' with non-finite entries'}."
        )
    return atom


def _quad_rows(V, X):
    """Σ_k (V X)_ik V_ik: the quadratic forms v_iᵀ X v_i of a CVXPY X."""
    return cp.sum(cp.multiply(V @ X, V), axis=1)


@dataclass(frozen=True)
class PairConstraints(ConstraintAtom):
    """Pairwise distance constraints.

    ``y[t] = +1`` (similar): d(i_t, j_t) <= bound_t;  ``y[t] = −1`` (dissimilar):
    d(i_t, j_t) >= bound_t.  Validated on construction: equal lengths, i ≠ j,
    non-negative indices, y ∈ {−1, +1}, finite positive bounds.  Indices are checked
    against the number of points by :meth:`validate` (the problem objects call it).
    """

    order = 0

    i: np.ndarray
    j: np.ndarray
    y: np.ndarray
    bound: np.ndarray

    def __post_init__(self):
        i = check_index_array(self.i, "i")
        j = check_index_array(self.j, "j")
        y = as_float_array(self.y, "y", finite=False).ravel()
        b = _values(self.bound, "bound", i.size)
        if not (i.size == j.size == y.size == b.size):
            raise InvalidInputError(
                f"i, j, y and bound must have the same length; got {i.size}, {j.size}, {y.size}, {b.size}."
            )
        if i.size == 0:
            raise InvalidInputError("PairConstraints needs at least one pair.")
        same = np.flatnonzero(i == j)
        if same.size:
            raise InvalidInputError(
                f"Pair {same[0]} has i = j = {i[same[0]]}; a point's distance to itself is always 0. Remove such pairs."
            )
        if not np.all(np.isin(y, (-1.0, 1.0))):
            raise InvalidInputError("y must be +1 (similar) or -1 (dissimilar) for every pair.")
        if not np.all(np.isfinite(b)) or np.any(b <= 0):
            raise InvalidInputError(
                f"Pair bounds must be finite and positive (they are squared distances); got min {np.min(b):.3g}."
            )
        check_magnitude(b, "bound")
        object.__setattr__(self, "i", i)
        object.__setattr__(self, "j", j)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "bound", b)

    def __len__(self) -> int:
        return int(self.i.size)

    def validate(self, n: int) -> "PairConstraints":
        check_index_array(self.i, "PairConstraints.i", n)
        check_index_array(self.j, "PairConstraints.j", n)
        return self

    # the atom (ConstraintAtom): δ_c·d(i, j) <= δ_c·bound_c
    def targets(self):
        return self.y * self.bound

    def scales(self):
        return np.maximum(1.0, np.abs(self.bound))

    def values(self, space, M):
        return self.y * space.pair_values(M, self.i, self.j)

    def terms(self, F, T):
        return F[self.i] - F[self.j], self.y.astype(float), np.ones(len(self), dtype=np.int64)

    def cvx_values(self, F, T, X):
        return cp.multiply(self.y, _quad_rows(F[self.i] - F[self.j], X))

    @classmethod
    def from_labels(
        cls,
        labels,
        baseline: Callable[[np.ndarray, np.ndarray], np.ndarray],
        *,
        scheme: str = "jain",
        n_similar: int = 100,
        n_dissimilar: int = 100,
        n_constraints: int | None = None,
        percentiles=(5.0, 95.0),
        random_state=None,
    ) -> "PairConstraints":
        """Pairs from class labels with bounds from percentiles of baseline distances.

        ``scheme="jain"``: :func:`pairs_from_labels` (Jain et al. 2012 §6);
        ``scheme="itml"``: :func:`random_pairs_from_labels` (the ITML code).
        ``baseline(i, j)`` returns squared baseline distances (see :func:`baseline_metric`,
        :func:`baseline_kernel`); u, l = ``percentiles`` of their distribution over all
        pairs of points (a seeded sample of 100 000 pairs when there are more), as in
        :func:`percentile_bounds`.  Pairs at baseline distance zero are dropped with a warning.
        """
        rng = as_generator(random_state)
        labels = check_labels(labels, "labels")
        check_choice(scheme, "scheme", ("jain", "itml"))
        _check_baseline(baseline)
        if scheme == "jain":
            i, j, y = pairs_from_labels(labels, n_similar, n_dissimilar, rng)
        else:
            i, j, y = random_pairs_from_labels(labels, n_constraints, rng)
        u, l = percentile_bounds(baseline, labels.size, percentiles, rng)
        d0 = _baseline_distances(baseline, i, j)
        keep = d0 > 1e-12 * max(u, l)  # relative: data of any scale
        if not np.all(keep):
            warnings.warn(
                f"Dropped {int(np.sum(~keep))} pair(s) with zero baseline distance (duplicate "
                "points): a Bregman projection on them is undefined.",
                UserWarning,
                stacklevel=2,
            )
            i, j, y = i[keep], j[keep], y[keep]
        if i.size == 0:
            raise InvalidInputError("No usable pairs: all sampled pairs have zero baseline distance.")
        return cls(i, j, y, np.where(y > 0, u, l))


MAX_SAMPLED_PAIRS = 10_000_000  # draws per class / in total (duplicates are removed anyway)


def _dedupe(i, j, y):
    a, b = np.minimum(i, j), np.maximum(i, j)
    _, first = np.unique(np.stack([a, b]), axis=1, return_index=True)
    first = np.sort(first)
    return i[first], j[first], y[first]


def _check_baseline(baseline) -> None:
    if not callable(baseline):
        raise InvalidInputError(
            f"baseline must be a callable (i, j) -> squared baseline distances, e.g. "
            f"baseline_metric(X) or baseline_kernel(K0); got {type(baseline).__name__}."
        )


def _baseline_distances(baseline, i, j) -> np.ndarray:
    """baseline(i, j) as a finite, non-negative float vector of one entry per pair."""
    _check_baseline(baseline)
    d = as_float_array(baseline(i, j), "baseline(i, j)", finite=False).ravel()
    if d.size != np.size(i):
        raise InvalidInputError(
            f"baseline(i, j) must return one squared distance per pair ({np.size(i)}); got {d.size}."
        )
    if not np.all(np.isfinite(d)) or np.any(d < 0):
        raise InvalidInputError(
            "baseline(i, j) returned NaN, inf or negative squared distances; check the data "
            "(finite X, a PSD baseline kernel) behind the baseline."
        )
    return d


def _labels_ok(labels):
    labels = check_labels(labels, "labels")
    classes, inv = np.unique(labels, return_inverse=True)
    if labels.size < 2:
        raise InvalidInputError("Need at least two labelled points to build pair constraints.")
    return classes, inv


def pairs_from_labels(labels, n_similar: int = 100, n_dissimilar: int = 100, random_state=None):
    """Jain et al. (2012) §6: for each class, ``n_similar`` random within-class pairs
    (+1) and ``n_dissimilar`` pairs of a class member with a point of another class (−1).

    Duplicate pairs (in either order) are removed, so a small class yields fewer pairs.
    Returns index arrays (i, j, y).
    """
    rng = as_generator(random_state)
    classes, inv = _labels_ok(labels)
    n_similar = check_int(n_similar, "n_similar", minimum=0, maximum=MAX_SAMPLED_PAIRS)
    n_dissimilar = check_int(n_dissimilar, "n_dissimilar", minimum=0, maximum=MAX_SAMPLED_PAIRS)
    I, J, Y = [], [], []
    for c in range(classes.size):
        members = np.flatnonzero(inv == c)
        others = np.flatnonzero(inv != c)
        if members.size >= 2 and n_similar > 0:
            a = rng.choice(members, n_similar)
            b = rng.choice(members, n_similar)
            ok = a != b
            I.append(a[ok])
            J.append(b[ok])
            Y.append(np.ones(ok.sum()))
        if others.size and n_dissimilar > 0:
            I.append(rng.choice(members, n_dissimilar))
            J.append(rng.choice(others, n_dissimilar))
            Y.append(-np.ones(n_dissimilar))
    if not I:
        raise InvalidInputError("No pairs could be formed: every class has a single point and there is one class.")
    if sum(a.size for a in I) == 0:
        raise InvalidInputError(
            f"No pairs were drawn: there is one class, and each of its {n_similar} random "
            "within-class draws paired a point with itself. Raise n_similar, or give labels "
            "of more than one class."
        )
    return _dedupe(np.concatenate(I).astype(np.int64), np.concatenate(J).astype(np.int64), np.concatenate(Y))


def random_pairs_from_labels(labels, n_constraints: int | None = None, random_state=None):
    """The ITML code's scheme: ``n_constraints`` (default 40·c·(c−1), c the number of
    classes) random pairs, +1 when both points share a class and −1 otherwise.
    Duplicates and i = j draws are removed.  Returns (i, j, y)."""
    rng = as_generator(random_state)
    classes, inv = _labels_ok(labels)
    c = classes.size
    m = check_int(n_constraints, "n_constraints", minimum=None, maximum=MAX_SAMPLED_PAIRS, allow_none=True)
    m = 40 * c * (c - 1) if m is None else m
    if m <= 0:
        raise InvalidInputError("n_constraints must be positive (the default 40·c·(c−1) is 0 for a single class).")
    n = inv.size
    a = rng.integers(0, n, m)
    b = rng.integers(0, n, m)
    ok = a != b
    a, b = a[ok], b[ok]
    return _dedupe(a, b, np.where(inv[a] == inv[b], 1.0, -1.0))


def percentile_bounds(
    baseline, n: int, percentiles=(5.0, 95.0), random_state=None, max_pairs: int = 100_000
) -> tuple[float, float]:
    """(u, l) = the given percentiles of the squared baseline distances over all pairs of
    the n points (a seeded random sample of ``max_pairs`` pairs when there are more).

    Jain et al. (2012) use (1, 99); Davis et al. (2007) and Kulis et al. (2009) (5, 95).
    Pairs at distance zero are excluded from the distribution.
    """
    try:
        lo, hi = percentiles
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"percentiles must be a pair (lower, upper); got {percentiles!r}.") from exc
    lo = check_number(lo, "the lower percentile", low=0.0, high=100.0)
    hi = check_number(hi, "the upper percentile", low=0.0, high=100.0)
    if not lo < hi:
        raise InvalidInputError(f"percentiles must satisfy 0 <= lower < upper <= 100; got {percentiles}.")
    n = check_int(n, "n", minimum=2)
    max_pairs = check_int(max_pairs, "max_pairs", minimum=1)
    i, j = sample_index_pairs(n, max_pairs, as_generator(random_state))
    d = _baseline_distances(baseline, i, j)
    d = d[d > 1e-12 * (float(np.max(d)) if d.size else 0.0)]  # relative: any scale
    if d.size == 0:
        raise InvalidInputError(
            "All baseline distances are zero: the points coincide. Give distinct points (check "
            "for constant or duplicated rows in X, or a constant kernel)."
        )
    u, l = np.percentile(d, [lo, hi])
    return float(u), float(l)


#: floats of difference rows :func:`baseline_metric` holds at a time (32 MB)
BASELINE_CHUNK = 4 * 2**20


def baseline_metric(X, W0=None):
    """Squared baseline Mahalanobis distances (x_i − x_j)ᵀW0(x_i − x_j) as a callable (i, j).

    The difference rows are formed :data:`BASELINE_CHUNK` floats at a time, so a percentile
    sample of 10⁵ pairs on wide data (d = 10 000) costs O(m d) time and 32 MB, not m × d
    floats at once (8 GB)."""
    X = as_float_array(X, "X", ndim=2)
    W0 = None if W0 is None else check_symmetric(W0, "W0")
    if W0 is not None and W0.shape[0] != X.shape[1]:
        raise InvalidInputError(f"W0 must be {X.shape[1]} × {X.shape[1]} to match X; got {W0.shape}.")
    n, d = X.shape
    step = max(1, BASELINE_CHUNK // max(d, 1))
    gram = []  # X Xᵀ, made on first use of the Gram path

    def rows(i, j):
        V = X[i] - X[j]
        return np.einsum("ij,ij->i", V, V) if W0 is None else np.einsum("ij,ij->i", V @ W0, V)

    def direct(i, j):
        if i.size <= step:
            return rows(i, j)
        return np.concatenate([rows(i[s : s + step], j[s : s + step]) for s in range(0, i.size, step)])

    def dist(i, j):
        i = check_index_array(i, "i", n, ndim=None)
        j = check_index_array(j, "j", n, ndim=None)
        if i.ndim != 1 or i.shape != j.shape:
            return rows(i, j)
        if W0 is not None or i.size * d <= 4 * n * n or n > _GRAM_MAX_POINTS:
            return direct(i, j)
        # many pairs of few wide points: g_ii + g_jj − 2 g_ij from the Gram matrix (one BLAS
        # product), and directly where cancellation could cost digits (small distances)
        if not gram:
            G = X @ X.T
            gram.append((G, np.diag(G).copy()))
        G, g = gram[0]
        out = g[i] + g[j] - 2.0 * G[i, j]
        near = out <= 1e-4 * (g[i] + g[j])
        if np.any(near):
            out[near] = direct(i[near], j[near])
        return out

    return dist


#: the Gram path of :func:`baseline_metric` holds an n × n matrix: at most 4096² floats (128 MB)
_GRAM_MAX_POINTS = 4096


def baseline_kernel(K0):
    """Squared baseline kernel distances K0_ii + K0_jj − 2 K0_ij as a callable (i, j)."""
    K0 = check_symmetric(K0, "K0")

    def dist(i, j):
        i = check_index_array(i, "i", K0.shape[0], ndim=None)
        j = check_index_array(j, "j", K0.shape[0], ndim=None)
        return K0[i, i] + K0[j, j] - 2.0 * K0[i, j]

    return dist


@dataclass(frozen=True)
class RelativeConstraints(ConstraintAtom):
    """Relative comparisons d(i, j) + margin <= d(i, k) (hard constraints)."""

    order = 1

    i: np.ndarray
    j: np.ndarray
    k: np.ndarray
    margin: np.ndarray

    def __post_init__(self):
        i, j, k = (check_index_array(a, nm) for a, nm in ((self.i, "i"), (self.j, "j"), (self.k, "k")))
        mg = _values(self.margin, "margin", i.size)
        if not (i.size == j.size == k.size == mg.size) or i.size == 0:
            raise InvalidInputError("i, j, k and margin must be non-empty and of equal length.")
        if np.any(i == j) or np.any(i == k) or np.any(j == k):
            raise InvalidInputError("Relative constraints need three distinct points i, j, k.")
        if not np.all(np.isfinite(mg)) or np.any(mg < 0):
            raise InvalidInputError("Margins must be finite and non-negative.")
        check_magnitude(mg, "margin")
        for nm, a in (("i", i), ("j", j), ("k", k), ("margin", mg)):
            object.__setattr__(self, nm, a)

    def __len__(self) -> int:
        return int(self.i.size)

    def validate(self, n: int) -> "RelativeConstraints":
        for nm in ("i", "j", "k"):
            check_index_array(getattr(self, nm), f"RelativeConstraints.{nm}", n)
        return self

    # the atom: d(i, j) − d(i, k) <= −margin
    def targets(self):
        return -self.margin

    def values(self, space, M):
        return space.pair_values(M, self.i, self.j) - space.pair_values(M, self.i, self.k)

    def terms(self, F, T):
        m = len(self)
        U = np.empty((2 * m, F.shape[1]))
        U[0::2] = F[self.i] - F[self.j]
        U[1::2] = F[self.i] - F[self.k]
        w = np.empty(2 * m)
        w[0::2] = 1.0
        w[1::2] = -1.0
        return U, w, np.full(m, 2, dtype=np.int64)

    def cvx_values(self, F, T, X):
        return _quad_rows(F[self.i] - F[self.j], X) - _quad_rows(F[self.i] - F[self.k], X)


@dataclass(frozen=True)
class LinearConstraints(ConstraintAtom):
    """General linear constraints tr(C_t M) <= b_t on the learned matrix M (K or W).

    Give ``C`` as an (m, N, N) array of symmetric matrices, or ``Z`` as an (m, N)
    array of vectors meaning C_t = z_t z_tᵀ (then tr(C_t M) = z_tᵀ M z_t).
    """

    order = 3

    b: np.ndarray
    C: np.ndarray | None = None
    Z: np.ndarray | None = None

    def __post_init__(self):
        if (self.C is None) == (self.Z is None):
            raise InvalidInputError("Give exactly one of C (dense matrices) or Z (rank-one vectors).")
        b = check_magnitude(as_float_array(self.b, "b").ravel(), "b")
        if self.C is not None:
            C = as_float_array(self.C, "C")
            if C.ndim == 2:
                C = C[None]
            if C.ndim != 3 or C.shape[1] != C.shape[2]:
                raise InvalidInputError(f"C must have shape (m, N, N); got {C.shape}.")
            if not np.allclose(C, np.transpose(C, (0, 2, 1)), atol=1e-12, rtol=1e-10):
                raise InvalidInputError("Each C_t must be symmetric (use (C + C.T) / 2).")
            object.__setattr__(self, "C", 0.5 * (C + np.transpose(C, (0, 2, 1))))
            m = C.shape[0]
        else:
            Z = as_float_array(self.Z, "Z")
            if Z.ndim == 1:
                Z = Z[None]
            if Z.ndim != 2:
                raise InvalidInputError(f"Z must have shape (m, N); got {Z.shape}.")
            object.__setattr__(self, "Z", Z)
            m = Z.shape[0]
        if b.size != m or m == 0:
            raise InvalidInputError(f"b must have one entry per constraint ({m}); got {b.size}.")
        object.__setattr__(self, "b", b)

    def __len__(self) -> int:
        return int(self.b.size)

    @property
    def dim(self) -> int:
        return int(self.C.shape[1] if self.C is not None else self.Z.shape[1])

    def validate(self, n: int) -> "LinearConstraints":
        if self.dim != n:
            raise InvalidInputError(
                f"Linear constraint matrices are {self.dim} × {self.dim} but the learned matrix is "
                f"{n} × {n}; give C of shape (m, {n}, {n}) or Z of shape (m, {n})."
            )
        return self

    # the atom: tr(C_t M) <= b_t (LinearEqualities: = b_t)
    def targets(self):
        return self.b

    def values(self, space, M):
        M = np.asarray(M, dtype=float)
        return np.einsum("tab,ab->t", self.C, M) if self.C is not None else np.einsum("ta,ta->t", self.Z @ M, self.Z)

    def terms(self, F, T, eig_rtol: float = 1e-14):
        if self.C is None:
            return self.Z @ T, np.ones(len(self)), np.ones(len(self), dtype=np.int64)
        Us, ws, counts = [], [], []
        for C in np.einsum("ai,tab,bj->tij", T, self.C, T):
            lam, V = np.linalg.eigh(0.5 * (C + C.T))
            keep = np.abs(lam) > eig_rtol * max(float(np.max(np.abs(lam))), np.finfo(float).tiny)
            Us.append(V[:, keep].T)
            ws.append(lam[keep])
            counts.append(int(keep.sum()))
        return (
            np.concatenate(Us, axis=0).reshape(-1, T.shape[1]),
            np.concatenate(ws),
            np.asarray(counts, dtype=np.int64),
        )

    def cvx_values(self, F, T, X):
        if self.C is None:
            return _quad_rows(self.Z @ T, X)
        Ch = np.einsum("ai,tab,bj->tij", T, self.C, T)
        return Ch.reshape(len(self), -1) @ cp.vec(X, order="C")

    def validate_space(self, n_points: int, dim: int):
        return self.validate(dim)


@dataclass(frozen=True)
class LinearEqualities(LinearConstraints):
    """Linear equalities tr(C_t M) = b_t on the learned matrix M (e.g. tr K = n, common in
    kernel learning: ``LinearEqualities(b=[n], C=np.eye(n)[None])``): the family of
    :class:`LinearConstraints` with ``equality = True`` — its multipliers are free in sign,
    hard in the exact model (``==``), or soft under :class:`Hinge` (C·|g − b|) or
    :class:`Squared` ((C/2)·(g − b)²).  The whole family is this class (the
    :class:`ConstraintAtom` extension point)."""

    equality = True
    order = 4


@dataclass(frozen=True)
class SimilarityConstraints(ConstraintAtom):
    """Similarity constraints on learned inner products: M-inner(j, l) >= bound, i.e.
    K_jl >= b_t for a kernel matrix (Kulis et al. 2009 §6.2.2); hard constraints."""

    order = 2

    j: np.ndarray
    l: np.ndarray
    bound: np.ndarray

    def __post_init__(self):
        j = check_index_array(self.j, "j")
        l = check_index_array(self.l, "l")
        b = _values(self.bound, "bound", j.size)
        if not (j.size == l.size == b.size) or j.size == 0:
            raise InvalidInputError("j, l and bound must be non-empty and of equal length.")
        if np.any(j == l):
            raise InvalidInputError(
                "Similarity constraints need j ≠ l (a diagonal entry is a norm, use LinearConstraints for it)."
            )
        if not np.all(np.isfinite(b)):
            raise InvalidInputError("Similarity bounds must be finite.")
        check_magnitude(b, "bound")
        for nm, a in (("j", j), ("l", l), ("bound", b)):
            object.__setattr__(self, nm, a)

    def __len__(self) -> int:
        return int(self.j.size)

    def validate(self, n: int) -> "SimilarityConstraints":
        check_index_array(self.j, "SimilarityConstraints.j", n)
        check_index_array(self.l, "SimilarityConstraints.l", n)
        return self

    # the atom: −inner(j, l) <= −bound
    def targets(self):
        return -self.bound

    def values(self, space, M):
        return -space.pair_inner(M, self.j, self.l)

    def terms(self, F, T):
        m = len(self)
        Fj, Fl = F[self.j], F[self.l]
        U = np.empty((2 * m, F.shape[1]))
        U[0::2] = Fj + Fl
        U[1::2] = Fj - Fl
        w = np.empty(2 * m)
        w[0::2] = -0.25
        w[1::2] = 0.25
        return U, w, np.full(m, 2, dtype=np.int64)

    def cvx_values(self, F, T, X):
        return -cp.sum(cp.multiply(F[self.j] @ X, F[self.l]), axis=1)


class Hinge:
    """Soft constraints with hinge (ℓ1) slack: wrap a constraint object so that each of its
    constraints g_c(M) <= t_c may be violated at a cost C_c per unit,

        min f(M) + Σ_c C_c ξ_c   s.t.  g_c(M) <= t_c + ξ_c,  ξ_c >= 0,

    i.e. the penalty C_c·max(0, g_c(M) − t_c) in the objective (the dual multipliers are
    then boxed, 0 <= λ_c <= C_c).  Works for every family of the spectral problems, a
    user's :class:`ConstraintAtom` too, in the exact model and the fast solve.

    Parameters
    ----------
    constraints : ConstraintAtom
        One constraint object (PairConstraints, RelativeConstraints, …, or a user's atom).
    C : float or array-like of shape (len(constraints),), default=1.0
        The cost per unit of violation, positive and finite (one value, or one per
        constraint).  In a pair constraint the unit is the squared distance; in a relative
        constraint, the difference of squared distances.

    Examples
    --------
    >>> import numpy as np
    >>> from cvxkml.declare import LogDetKernel
    >>> from cvxkml.kernels import gaussian_kernel
    >>> from cvxkml.sideinfo import Hinge, RelativeConstraints
    >>> K0 = gaussian_kernel(np.random.default_rng(0).normal(size=(12, 3)), sigma=1.0)
    >>> triplets = RelativeConstraints([0, 1, 2], [3, 4, 5], [6, 7, 8], margin=[0.1, 0.1, 0.1])
    >>> sol = LogDetKernel(K0, Hinge(triplets, C=0.5)).solve()
    >>> sol.converged
    True
    """

    #: the penalty: "hinge" C·max(0, g − t) (C·|g − t| for an equality)
    loss = "hinge"

    def __init__(self, constraints, C=1.0):
        if not isinstance(constraints, ConstraintAtom):
            raise InvalidInputError(
                f"{type(self).__name__} wraps one constraint object (PairConstraints, "
                "RelativeConstraints, SimilarityConstraints, LinearConstraints, LinearEqualities or "
                f"another ConstraintAtom); got {type(constraints).__name__}."
            )
        check_atom(constraints, type(self).__name__)
        m = len(constraints)
        C = as_float_array(C, "C", finite=False)
        if C.ndim > 1 or C.size not in (1, m):
            raise InvalidInputError(f"C must be one number or one per constraint ({m}); got shape {C.shape}.")
        if not np.all(np.isfinite(C)) or np.any(C <= 0):
            raise InvalidInputError(
                "C must be positive and finite (use the constraint object itself, without Hinge, for hard constraints)."
            )
        check_magnitude(C, "C")
        self.constraints = constraints
        self.C = np.broadcast_to(C.ravel(), (m,)).astype(np.float64).copy()

    def __len__(self) -> int:
        return len(self.constraints)

    def __repr__(self) -> str:
        c = f"{self.C[0]:g}" if np.all(self.C == self.C[0]) else f"<{self.C.size} values>"
        return f"{type(self).__name__}({type(self.constraints).__name__}[{len(self)}], C={c})"

    def dual_box(self):
        """(lower, upper, quad) of the multipliers of these constraints in the Lagrange dual:
        the conjugate of the penalty φ(ρ) = sup_{lower <= λ <= upper} λρ − ½ quad·λ²."""
        m = len(self)
        lower = -self.C if self.constraints.equality else np.zeros(m)
        return lower, self.C.copy(), np.zeros(m)


class Squared(Hinge):
    """Soft constraints with squared-hinge (ℓ2) slack: the penalty (C_c/2)·max(0, g_c(M) − t_c)²
    ((C_c/2)·(g_c(M) − t_c)² for :class:`LinearEqualities`) in the objective; smooth, so the
    multipliers are unbounded and the dual gains −Σ λ_c²/(2C_c).  Same arguments as
    :class:`Hinge`."""

    loss = "squared"

    def dual_box(self):
        m = len(self)
        lower = np.full(m, -np.inf) if self.constraints.equality else np.zeros(m)
        return lower, np.full(m, np.inf), 1.0 / self.C
