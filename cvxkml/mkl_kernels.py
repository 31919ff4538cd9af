"""Kernel sets for metric learning with multiple kernels (Wang, Do, Woznica & Kalousis,
NIPS 2011, §6).

A :class:`KernelSet` is a list of base kernels, each optionally restricted to a subset of
the feature columns (one data *source*), and normalized by the mean of its diagonal on
the training points (the paper: "each basic kernel K_k was normalized by the average of
its diag(K_k)").  The scale is fitted once, on the training points, and reused for
cross-kernels with new points, so κ_l(x, x') / c_l is one fixed kernel function.

* :func:`paper_kernels` — the 20 kernels of §6.1: polynomial of degree 1 … 10,
  (xᵀx' + 1)^d, and Gaussian exp(−‖x − x'‖² / (2σ²)) for
  σ ∈ {0.5, 1, 2, 5, 7, 10, 12, 15, 17, 20} (features standardized beforehand).
* :func:`nr_kernels` — the three kernels of NR-LMNN-MKL in §6.1: linear, polynomial of
  degree 2 and Gaussian with σ = 0.5.
* :func:`source_kernels` — §6.2: one Gaussian kernel per source with σ0 = the mean
  pairwise Euclidean distance of that source (on the training points).

The paper does not give the polynomial offset; (xᵀx' + 1)^d is our choice (degree 1 is
then the linear kernel plus a constant, which the mean-diagonal normalization keeps).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validation import check_data, check_int, check_scalar
from .errors import InvalidInputError
from .kernels import Kernel, _sq_euclidean

__all__ = [
    "SourceKernel",
    "KernelSet",
    "paper_kernels",
    "nr_kernels",
    "source_kernels",
    "PAPER_SIGMAS",
    "PAPER_DEGREES",
]

PAPER_DEGREES = tuple(range(1, 11))
PAPER_SIGMAS = (0.5, 1.0, 2.0, 5.0, 7.0, 10.0, 12.0, 15.0, 17.0, 20.0)


@dataclass(frozen=True)
class SourceKernel:
    """A base kernel on a subset of the feature columns (None = all columns).

    Parameters
    ----------
    kernel : Kernel
    columns : slice, int array or None
    name : str, optional label (default: derived from the kernel)
    """

    kernel: Kernel
    columns: object = None
    name: str = ""

    def label(self) -> str:
        if self.name:
            return self.name
        p = ",".join(
            f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}" for k, v in sorted(self.kernel.params.items())
        )
        return f"{self.kernel.name}({p})"

    def _cols(self, X):
        return X if self.columns is None else X[:, self.columns]

    def __call__(self, X, Y=None) -> np.ndarray:
        X = check_data(X, "X")
        Y = X if Y is None else check_data(Y, "Y")
        return self.kernel(self._cols(X), self._cols(Y))

    def diag(self, X) -> np.ndarray:
        X = check_data(X, "X")
        return self.kernel.diag(self._cols(X))


def _as_source(k) -> SourceKernel:
    if isinstance(k, SourceKernel):
        return k
    if isinstance(k, Kernel):
        if k.precomputed:
            raise InvalidInputError(
                "A KernelSet needs kernel functions; 'precomputed' kernels cannot "
                "be evaluated on new points (pass the matrices directly instead)."
            )
        return SourceKernel(k)
    if isinstance(k, tuple) and len(k) == 2 and isinstance(k[0], Kernel):
        return SourceKernel(k[0], k[1])
    raise InvalidInputError(f"Kernel set entries must be Kernel, (Kernel, columns) or SourceKernel objects; got {k!r}.")


class KernelSet:
    """A list of base kernels with mean-diagonal normalization fitted on training points.

    Parameters
    ----------
    kernels : list of Kernel, (Kernel, columns) or SourceKernel
    normalize : bool, default=True
        Divide each kernel by the mean of its diagonal on the training points.

    Examples
    --------
    >>> import numpy as np
    >>> from cvxkml.mkl_kernels import paper_kernels
    >>> rng = np.random.default_rng(0)
    >>> X_train, X_test = rng.normal(size=(30, 4)), rng.normal(size=(10, 4))
    >>> ks = paper_kernels()
    >>> Ks = ks.fit_matrices(X_train)            # 20 normalized n × n matrices
    >>> Kc = ks.cross_matrices(X_test, X_train)  # the same kernels between test and train
    >>> len(Ks), Ks[0].shape, Kc[0].shape
    (20, (30, 30), (10, 30))
    """

    def __init__(self, kernels, normalize: bool = True):
        try:
            items = list(kernels)
        except TypeError as exc:
            raise InvalidInputError("kernels must be a list of kernels.") from exc
        if not items:
            raise InvalidInputError("A kernel set needs at least one kernel.")
        self.kernels = [_as_source(k) for k in items]
        self.normalize = bool(normalize)
        self.scales_ = None

    def __len__(self) -> int:
        return len(self.kernels)

    def labels(self) -> list[str]:
        return [k.label() for k in self.kernels]

    def fit_matrices(self, X) -> list[np.ndarray]:
        """Fit the scales on X and return the normalized training matrices K_l (n × n)."""
        X = check_data(X, "X")
        mats, scales = [], []
        for l, k in enumerate(self.kernels):
            K = k(X)
            K = 0.5 * (K + K.T)
            c = float(np.mean(np.diag(K))) if self.normalize else 1.0
            if not (np.isfinite(c) and c > 0):
                raise InvalidInputError(
                    f"Kernel {l} ({k.label()}) has a non-positive or non-finite mean diagonal "
                    f"({c!r}) on the training points and cannot be normalized."
                )
            if not np.all(np.isfinite(K)):
                raise InvalidInputError(
                    f"Kernel {l} ({k.label()}) overflows on these data (non-finite values); "
                    "standardize the features or lower the polynomial degree."
                )
            mats.append(K / c)
            scales.append(c)
        self.scales_ = np.array(scales)
        return mats

    def cross_matrices(self, X, X_train) -> list[np.ndarray]:
        """The normalized kernels κ_l(X, X_train) / c_l (scales from :meth:`fit_matrices`)."""
        if self.scales_ is None:
            raise InvalidInputError("Call fit_matrices(X_train) first (it fixes the normalization).")
        return [k(X, X_train) / c for k, c in zip(self.kernels, self.scales_)]

    def diag(self, X) -> list[np.ndarray]:
        """κ_l(x, x) / c_l for every row of X."""
        if self.scales_ is None:
            raise InvalidInputError("Call fit_matrices(X_train) first (it fixes the normalization).")
        return [k.diag(X) / c for k, c in zip(self.kernels, self.scales_)]


def _listed(values, name: str, what: str) -> list:
    """``values`` as a list (one entry per kernel); InvalidInputError when it is not a list."""
    try:
        flat = not isinstance(values, (str, bytes)) and np.ndim(values) == 1
    except (TypeError, ValueError):  # ragged
        flat = False
    if not flat:
        raise InvalidInputError(f"{name} must be a list of {what}; got {values!r}.")
    return list(values)


def paper_kernels(degrees=PAPER_DEGREES, sigmas=PAPER_SIGMAS) -> KernelSet:
    """The 20 kernels of Wang et al. §6.1: (xᵀx' + 1)^d, d = 1 … 10, and Gaussians with
    σ ∈ {0.5, 1, 2, 5, 7, 10, 12, 15, 17, 20}; each normalized by its mean diagonal.

    ``degrees`` and ``sigmas`` are checked as every kernel parameter is: each degree a positive
    integer (not a float that :func:`int` would truncate), each σ one finite positive real number
    (:class:`~cvxkml.kernels.Kernel`); InvalidInputError otherwise."""
    ks = [
        Kernel("polynomial", {"degree": check_int(d, "degree", minimum=1), "coef0": 1.0})
        for d in _listed(degrees, "degrees", "positive integers")
    ]
    ks += [
        Kernel("gaussian", {"sigma": check_scalar(s, "sigma", low=0.0, low_open=True, what="a finite positive number")})
        for s in _listed(sigmas, "sigmas", "finite positive numbers")
    ]
    return KernelSet(ks)


def nr_kernels() -> KernelSet:
    """The NR-LMNN-MKL kernels of §6.1: linear, polynomial of degree 2 ((xᵀx' + 1)²) and
    Gaussian with σ = 0.5; each normalized by its mean diagonal."""
    return KernelSet(
        [Kernel("linear"), Kernel("polynomial", {"degree": 2, "coef0": 1.0}), Kernel("gaussian", {"sigma": 0.5})]
    )


def mean_pairwise_distance(X) -> float:
    """Mean Euclidean distance over all pairs of distinct rows (σ0 of §6.2)."""
    X = check_data(X, "X")
    n = X.shape[0]
    if n < 2:
        raise InvalidInputError("The mean pairwise distance needs at least two points.")
    D = np.sqrt(_sq_euclidean(X, X))
    return float(D[np.triu_indices(n, 1)].mean())


def source_kernels(X, sources) -> KernelSet:
    """One Gaussian kernel per source, σ0 = the mean pairwise distance of the source on X
    (Wang et al. §6.2).

    Parameters
    ----------
    X : array-like of shape (n, d)
        Training features, all sources side by side.
    sources : list of column index arrays / slices, or dict name -> columns
        The columns of each source.
    """
    X = check_data(X, "X")
    items = list(sources.items()) if isinstance(sources, dict) else [("", c) for c in sources]
    if not items:
        raise InvalidInputError("sources must name at least one set of columns.")
    out = []
    for name, cols in items:
        Xs = X[:, cols]
        if Xs.ndim != 2 or Xs.shape[1] == 0:
            raise InvalidInputError(f"Source {name or cols!r} selects no columns.")
        sigma = mean_pairwise_distance(Xs)
        if not sigma > 0:
            raise InvalidInputError(f"Source {name or cols!r} has identical points (σ0 = 0).")
        out.append(
            SourceKernel(
                Kernel("gaussian", {"sigma": sigma}), cols, name=f"{name or 'source'}:gaussian(sigma={sigma:.4g})"
            )
        )
    return KernelSet(out)
