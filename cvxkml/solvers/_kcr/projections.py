"""The paper's own method for the KCR problem (Sriperumbudur et al. 2008, Algorithm 1:
subgradient step, projection onto N) and the two iterative projections onto N."""

from __future__ import annotations

import time

import numpy as np

from ..._config import blas_limit
from ...formulas.kcr import kcr_objective, project_onto_N, sq_distances_from_gram


# --------------------------------------------------------------------------- the paper's method
@blas_limit()
def alternating_projections(X, n_iter: int = 1000) -> np.ndarray:
    """The paper's projection onto N (§4.1): B_m = A_m − (1ᵀA_m1/n²)11ᵀ,
    A_{m+1} = P_PSD(B_m), starting from A_0 = P_PSD(X).  Converges to *a* point of N —
    in general not the nearest one — and only sublinearly (N has no interior)."""
    A = np.asarray(X, dtype=np.float64)
    A = 0.5 * (A + A.T)
    n = A.shape[0]
    A = _psd(A)
    for _ in range(int(n_iter)):
        Bm = A - A.sum() / n**2
        A = _psd(Bm)
    return A


@blas_limit()
def dykstra_projections(X, n_iter: int = 1000) -> np.ndarray:
    """Dykstra's alternating projections onto {1ᵀΣ1 = 0} and the PSD cone: converges to
    the nearest point P_N(X) (Boyle & Dykstra 1986), slowly here (no Slater point)."""
    x = np.asarray(X, dtype=np.float64)
    x = 0.5 * (x + x.T)
    n = x.shape[0]
    p = np.zeros_like(x)
    q = np.zeros_like(x)
    for _ in range(int(n_iter)):
        y = x + p
        y = y - y.sum() / n**2
        p = x + p - y
        x_new = _psd(y + q)
        q = y + q - x_new
        x = x_new
    return x


def _psd(M):
    w, U = np.linalg.eigh(0.5 * (M + M.T))
    keep = w > 0
    return (U[:, keep] * w[keep]) @ U[:, keep].T


@blas_limit()
def kcr_subgradient(
    K,
    tau,
    c,
    lam,
    h_min=1e-6,
    step=None,
    max_iter=1000,
    projection="exact",
    n_proj=20,
    time_limit=None,
    h0=1.0,
    cpu_limit=None,
) -> dict:
    """The paper's Algorithm 1 on Σ (n × n): subgradient step, then projection onto N.

    Σ_{t+1} = P_N(Σ_t − α_t(Σ_{(i,j)∈N_t} tau_ij M_ij + λK)),
    h̃_{t+1} = max(h_min, h̃_t + α_t Σ_{(i,j)∈N_t} tau_ij), with N_t the (i, j) whose
    inner hinge is active in a row whose outer hinge is active (steps 3–5) and
    M_ij = (k_i − k_j)(k_i − k_j)ᵀ.  The paper leaves {α_t} open; here
    α_t = step / √(t + 1) (``step`` default: 1 / (‖K‖² · n)).  ``projection="exact"``
    uses :func:`cvxkml.formulas.kcr.project_onto_N`; ``"alternating"`` runs ``n_proj``
    sweeps of :func:`alternating_projections` (the paper).  Returns the best iterate as
    a dict (Sigma, h, objective, n_iter, time, history).  ``time_limit`` / ``cpu_limit``
    bound wall / CPU seconds.  A baseline for benchmarks: it has no certificate and no
    reliable stopping rule.
    """
    t0 = time.perf_counter()
    c0 = time.process_time()
    K = np.asarray(K, dtype=np.float64)
    n = K.shape[0]
    if step is None:
        step = 1.0 / (np.linalg.norm(K, 2) ** 2 * n)
    Sigma = np.zeros((n, n))
    h = max(h_min, float(h0))
    best = dict(objective=np.inf, Sigma=Sigma.copy(), h=h)
    history = []
    for t in range(int(max_iter)):
        Bm = K @ Sigma @ K
        D = sq_distances_from_gram(Bm)
        f = kcr_objective(D, h, tau, c, float(np.sum(K * Sigma)), lam)
        if f < best["objective"]:
            best.update(objective=f, Sigma=Sigma.copy(), h=h)
        history.append((t, f, time.perf_counter() - t0))
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            break
        if cpu_limit is not None and time.process_time() - c0 > cpu_limit:
            break
        U = 1.0 + tau * (D - h)
        rows = (c + np.maximum(U, 0.0).sum(axis=1)) > 0.0  # outer hinge active
        act = (U > 0.0) & rows[:, None]  # N_t = B_t \ A_t
        Wt = np.where(act, tau, 0.0)
        Ws = Wt + Wt.T
        Lap = np.diag(Ws.sum(axis=1)) - Ws
        grad = K @ Lap @ K + lam * K  # Σ_{N_t} tau M_ij + λK
        alpha = step / np.sqrt(t + 1.0)
        Y = Sigma - alpha * grad
        Sigma = project_onto_N(Y) if projection == "exact" else alternating_projections(Y, n_proj)
        h = max(h_min, h + alpha * float(Wt.sum()))
    best.update(n_iter=len(history), time=time.perf_counter() - t0, history=history)
    return best
