"""Stored high-accuracy optima of every declared problem family (package data).

``cvxkml/data/optima/<name>.npz`` holds one small deterministic instance of a family of
:mod:`cvxkml.declare` (built from scikit-learn's iris or wine, or a seeded generator): the
inputs that rebuild the declared problem (``in__<key>``) and the exact model's optimal matrix,
objective, dual value, gap, status, solver and solve time.  :func:`load_optimum` rebuilds the
problem (:func:`rebuild`, one function per family in :data:`FAMILIES`) and returns it with the
stored optimum; :func:`list_optima` names the stored files.  The regression test
``tests/test_reference_optima.py`` runs every family's fast solver against them.

An optimum is stored only when the exact solve is trustworthy:
:func:`cvxkml.testing.trusted_reference` (status ``optimal``, Lagrange certificate
|objective − dual value| <= 1e-7 · max(1, |objective|), violations <= 1e-7) where the
family carries a certificate.  Families whose exact model has no certificate yet (KCR,
the MKL weight steps) are stored on status and violations alone; their files say so
(``certificate`` is ``"none"``).

This module only reads the files.  The instances, the exact solve and the writing of the files
live in a source checkout, outside the installed package: ``python benchmarks/make_optima.py``
regenerates them all (a few minutes), ``python benchmarks/make_optima.py NAME ...`` some.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import declare
from ..errors import InvalidInputError
from ..sideinfo import PairConstraints

__all__ = ["FAMILIES", "OPTIMA_DIR", "StoredOptimum", "list_optima", "load_optimum", "rebuild"]

#: Where the stored optima live (package data).
OPTIMA_DIR = Path(__file__).resolve().parents[1] / "data" / "optima"


# --------------------------------------------------------------------------- stored inputs
def _pc(z) -> PairConstraints:
    return PairConstraints(z["i"], z["j"], z["y"], z["bound"])


def _gamma(z):
    g = float(z["gamma"])
    return None if np.isnan(g) else g


# --------------------------------------------------------------------------- regularizers
def _regularizer(z):
    name = str(z["regularizer"])
    if name == "Frobenius":
        return declare.Frobenius()
    if name == "TraceNorm":
        return declare.TraceNorm(float(z["tau"]))
    if name == "VonNeumann":
        return declare.VonNeumann()
    raise InvalidInputError(f"Unknown stored regularizer {name!r}.")


# --------------------------------------------------------------------------- families
def _yeung_beta(z):
    from ..declare.yeung import SpectralReweighting

    return SpectralReweighting(z["U"], z["eigenvalues"], np.column_stack([z["i"], z["j"]]), epsilon=float(z["epsilon"]))


def _yeung_embedding(z):
    from ..declare.yeung import EmbeddingWeightProblem

    return EmbeddingWeightProblem(z["G"], epsilon=float(z["epsilon"]))


def _mkl_weights(z):
    from ..formulas.lmnn import LMNNTriplets
    from ..kernels import kernel_sq_distances

    Ks = np.asarray(z["Ks"], dtype=float)
    tr = LMNNTriplets.from_labels(z["labels"], int(z["k"]), sq_dist=kernel_sq_distances(Ks.sum(axis=0)))
    return declare.LMNNWeightObjective.from_kernels(list(Ks), z["A"], tr, float(z["gamma"]))


def _mkl_mu(z):
    from ..declare.mkl import LMNNMuMajorizer

    return declare.MuWeightStep(LMNNMuMajorizer(_mkl_weights(z), z["mu_ref"]))


def _pola(z):
    return declare.pola_constraints(z["i"], z["j"], z["y"], float(z["b"]))


#: family -> the function that rebuilds its declared problem from a stored file's inputs
FAMILIES = {
    "itml": lambda z: declare.ITML(z["X"], _pc(z), gamma=_gamma(z)),
    "logdet-kernel": lambda z: declare.LogDetKernel(z["K0"], _pc(z), gamma=_gamma(z)),
    "lowrank-logdet": lambda z: declare.LowRankLogDet(z["G0"], _pc(z), gamma=_gamma(z)),
    "spectral-metric": lambda z: declare.SpectralMetric(z["X"], _pc(z), _regularizer(z), gamma=_gamma(z)),
    "spectral-kernel": lambda z: declare.SpectralKernel(z["K0"], _pc(z), _regularizer(z), gamma=_gamma(z)),
    "vonneumann-kernel": lambda z: declare.VonNeumannKernel(z["K0"], _pc(z), gamma=_gamma(z)),
    "trace-ssikdr": lambda z: declare.TraceSSIKDR(z["K0"], _pc(z), tau=float(z["tau"])),
    "pola-kernel": lambda z: declare.POLAKernel(z["K0"], _pola(z)),
    "pola-metric": lambda z: declare.POLAMetric(z["X"], _pola(z)),
    "sdp-logdet-kernel": lambda z: declare.SDPLogDetKernel(z["K0"], _pc(z), z["C0"], gamma=float(z["barrier"])),
    "sdp-logdet-metric": lambda z: declare.SDPLogDetMetric(z["X"], _pc(z), z["C0"], gamma=float(z["barrier"])),
    "iplr": lambda z: declare.IPLR.from_features(z["X"], _pc(z), basis=z["R"], gamma=_gamma(z)),
    "kcr": lambda z: declare.KCR(z["K"], z["labels"], float(z["lam"])),
    "lmnn": lambda z: declare.LMNNProblem.linear(z["X"], z["labels"], k=int(z["k"]), gamma=float(z["gamma"])),
    "yeung-reweighting": _yeung_beta,
    "yeung-embedding": _yeung_embedding,
    "mkl-p": lambda z: declare.RankOneWeightStep(_mkl_weights(z)),
    "mkl-mu": _mkl_mu,
}


def rebuild(family: str, inputs: dict):
    """The declared problem of a stored optimum, rebuilt from its inputs.

    Parameters
    ----------
    family : str
        One of :data:`FAMILIES` (a stored file's ``family``).
    inputs : dict
        The stored inputs: the file's ``in__<key>`` arrays keyed by ``<key>``
        (:attr:`StoredOptimum.inputs`).

    Returns
    -------
    object
        The declared problem (e.g. a :class:`~cvxkml.declare.ITML`).

    Raises
    ------
    InvalidInputError
        For a family that is not in :data:`FAMILIES`.
    """
    if not isinstance(family, str) or family not in FAMILIES:
        raise InvalidInputError(f"Unknown stored family {family!r}; the families are: {', '.join(FAMILIES)}.")
    return FAMILIES[family](inputs)


# --------------------------------------------------------------------------- loading
@dataclass
class StoredOptimum:
    """A stored optimum and the rebuilt declared problem.

    Attributes
    ----------
    name, family : str
        The instance and its problem family (see :func:`list_optima`).
    problem : object
        The declared problem rebuilt from the stored inputs (e.g. a
        :class:`~cvxkml.declare.ITML`, :class:`~cvxkml.declare.KCR`,
        :class:`~cvxkml.declare.RankOneWeightStep`).
    objective : float
        The exact model's optimal objective value.
    matrix : ndarray
        The optimal matrix (for IPLR the k × k F*; for the MKL μ step the weights μ; for
        the MKL P step the relaxation's P).
    dual_value : float or None
        The Lagrange dual value of the exact solution (None when the family has no
        certificate).
    gap : float or None
        objective − dual_value.
    status, solver : str
        The conic solver's status (always ``"optimal"``) and name.
    solve_time : float
        Seconds of the exact solve at regeneration.
    certificate : str
        ``"lagrange"`` or ``"none"``.
    note : str
        How the instance was built.
    inputs : dict
        The stored inputs (arrays).
    """

    name: str
    family: str
    problem: object
    objective: float
    matrix: np.ndarray
    dual_value: float | None
    gap: float | None
    status: str
    solver: str
    solve_time: float
    certificate: str
    note: str = ""
    inputs: dict = field(default_factory=dict, repr=False)


def list_optima(directory=None) -> list[str]:
    """Names of the stored optima.

    Parameters
    ----------
    directory : path-like, optional
        Where to look (default :data:`OPTIMA_DIR`, the package data).

    Returns
    -------
    list of str
        Sorted instance names, each loadable with :func:`load_optimum`.
    """
    d = OPTIMA_DIR if directory is None else Path(directory)
    return sorted(p.stem for p in d.glob("*.npz"))


def load_optimum(name: str, directory=None) -> StoredOptimum:
    """Load a stored optimum and rebuild its declared problem.

    Parameters
    ----------
    name : str
        One of :func:`list_optima`.
    directory : path-like, optional
        Where to look (default :data:`OPTIMA_DIR`, the package data).

    Returns
    -------
    StoredOptimum

    Raises
    ------
    InvalidInputError
        For a name that is not stored (the message lists the available names).

    Examples
    --------
    >>> from cvxkml.testing._optima import load_optimum
    >>> opt = load_optimum("itml_iris_slack")
    >>> sol = opt.problem.solve(tol=1e-12, max_iter=100_000)
    >>> bool(abs(sol.objective - opt.objective) <= 1e-6 * max(1.0, abs(opt.objective)))
    True
    """
    available = list_optima(directory)
    if not isinstance(name, str) or name not in available:
        raise InvalidInputError(
            f"No stored optimum named {name!r}. Available: {', '.join(available) or '(none)'}. "
            "They are made from a source checkout by `python benchmarks/make_optima.py`."
        )
    d = OPTIMA_DIR if directory is None else Path(directory)
    with np.load(d / f"{name}.npz", allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    family = str(data["family"])
    if family not in FAMILIES:
        raise InvalidInputError(f"Stored optimum {name!r} has an unknown family {family!r}.")
    inputs = {k[4:]: v for k, v in data.items() if k.startswith("in__")}
    for k, v in inputs.items():
        if v.ndim == 0 and v.dtype.kind == "U":
            inputs[k] = str(v)
    problem = rebuild(family, inputs)

    def opt(key):
        v = float(data[key])
        return None if np.isnan(v) else v

    return StoredOptimum(
        name=name,
        family=family,
        problem=problem,
        objective=float(data["objective"]),
        matrix=np.asarray(data["matrix"], dtype=float),
        dual_value=opt("dual_value"),
        gap=opt("gap"),
        status=str(data["status"]),
        solver=str(data["solver"]),
        solve_time=float(data["solve_time"]),
        certificate=str(data["certificate"]),
        note=str(data["note"]),
        inputs=inputs,
    )
