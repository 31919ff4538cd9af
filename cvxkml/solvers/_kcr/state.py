"""The state records of the KCR solver: the problem set-up, the iterate, one step's
quantities, and the check bookkeeping they share."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ...errors import InvalidInputError
from ...solution import CALLBACK_STOP


def _codes_of(tau) -> np.ndarray:
    """Class codes with tau_ij = +1 iff codes_i = codes_j (tau from
    :func:`cvxkml.formulas.kcr.label_structure`); InvalidInputError for any other matrix."""
    n = tau.shape[0]
    first = np.argmax(tau > 0, axis=1)  # the first point of i's class
    codes = np.unique(first, return_inverse=True)[1].astype(np.int64)
    if tau.shape != (n, n) or not np.array_equal(tau, np.where(codes[:, None] == codes[None, :], 1.0, -1.0)):
        raise InvalidInputError(
            "tau must be the ±1 class matrix of label_structure "
            "(+1 for equal labels, −1 otherwise, +1 on the diagonal)."
        )
    return codes


# --------------------------------------------------------------------------- PDHG: setup
@dataclass
class _Setup:
    """What stays fixed during a solve: the data, the preconditioner D (X = D Y D), the
    iteration's features F D (in the iteration precision), the operator norm and the
    bounds the certificate needs."""

    F: np.ndarray
    tau: np.ndarray
    c: np.ndarray
    codes: np.ndarray
    lam: float
    h_min: float
    d: np.ndarray
    Fs: np.ndarray
    lam_d: np.ndarray
    norm_A: float
    hsc: float
    zmax: float
    Zsq: np.ndarray
    fdt: type
    F_it: np.ndarray
    scaling: float
    balance: bool

    @property
    def n(self) -> int:
        return self.F.shape[0]

    @property
    def lam_d_it(self) -> np.ndarray:
        """λ D² in the iteration precision: a float64 vector in the tracked PSD step's
        products would promote the whole block, and every float32 operand after it, to
        float64 (copies of F D included)."""
        return self.lam_d.astype(self.fdt)

    @property
    def r(self) -> int:
        return self.F.shape[1]


@dataclass
class _State:
    """The PDHG iterate (Y, h̃, s) with its caches: B = (F D) Y (F D)ᵀ, S = Σ τ∘s, the
    Laplacian weights of s in the iteration precision, an explicit Aᵀ(τ∘s) and a factor of
    Y when at hand; the step size η and the primal weight ω."""

    X: np.ndarray
    h: float
    s: np.ndarray
    B: np.ndarray
    St: float
    omega: float
    eta: float
    W_it: np.ndarray
    deg_it: np.ndarray
    X_fac: np.ndarray | None = None
    G_exp: np.ndarray | None = None


# --------------------------------------------------------------------------- PDHG: one step
@dataclass
class _Step:
    """The result of one PDHG step T(z): the new primal factor P (Y⁺ = P Pᵀ), its positive
    eigenvalues w, B⁺, h̃⁺, s⁺, S⁺ and the squared fixed-point residual ``num``."""

    P: np.ndarray
    w: np.ndarray
    Bn: np.ndarray
    hn: float
    sn: np.ndarray
    Sn: float
    Xn: np.ndarray
    num: float
    dx2: float


def _checkpoint(cert, st, step, Gn, rs, k_total, history, t0, c0, tol, verbose, callback, time_limit):
    """Certify the step's primal and dual points, log them, and decide whether to stop:
    returns the final status ("converged", "stopped by callback", "time_limit reached") or
    None to go on."""
    gap = cert.check(step.P, step.Bn, step.hn, step.sn, Gn)
    if gap > tol and cert.polish_due(gap):
        gap = cert.polish(tol)
    history.append((k_total, cert.f, cert.g, gap, time.perf_counter() - t0, time.process_time() - c0))
    if verbose:
        print(
            f"it {k_total:6d}  f {cert.f:.8g}  lb {cert.g:.8g}  gap {gap:.2e}  h {step.hn:.4g}  "
            f"rank {step.w.size}  omega {st.omega:.3g}  eta·‖A‖ {st.eta * cert.su.norm_A:.3g}  "
            f"restarts {rs.count}"
        )
    if gap <= tol:
        return "converged"
    info = dict(iteration=k_total, objective=cert.f, lower_bound=cert.g, gap=gap, h=step.hn, n_restarts=rs.count)
    if callback is not None and callback(info):
        return CALLBACK_STOP
    if time_limit is not None and time.perf_counter() - t0 > time_limit:
        return "time_limit reached"
    return None
