"""SDPs with a LogDet barrier (Jain et al. 2012 §5.3, eq. 23–25; Kulis, Sra & Dhillon 2009).

    (23)  min_{W ⪰ 0} tr(W Φ C0 Φᵀ)                     s.t. tr(W Φ C_i Φᵀ) <= b_i
    (24)  min_{W ≻ 0} tr(W Φ C0 Φᵀ) − γ log det W       s.t. the same constraints

**Not a spectral regularizer.** The objective involves C0, so the regularizer object
:class:`LinearLogDet` must know the whitening T of the problem (learned M = T X̂ Tᵀ).
It is *bound* by the problem classes below: ``LinearLogDet(C0, gamma)`` holds C0 on the
learned matrix's own space and ``.whitened(T)`` returns a copy holding Ĉ0 = Tᵀ C0 T, the
objective matrix of the whitened variable,

    f(X̂) = tr(X̂ Ĉ0) − γ log det X̂     (γ = 0: the plain SDP (23), X̂ ⪰ 0).

Use it through

- :class:`SDPLogDetKernel` ``(K0, constraints, C0, gamma)``: learned K (n × n) on the range
  of K0 (K = G0 X̂ G0ᵀ, K0 = G0 G0ᵀ), objective tr(K C0) − γ log det(K0^-½ K K0^-½) with C0
  n × n;  for a full-rank K0 this is tr(K C0) − γ log det K + const.
- :class:`SDPLogDetMetric` ``(X, constraints, C0, gamma)``: learned W (d × d), objective
  tr(W XᵀC0X) − γ log det W (Φ = Xᵀ: C0 is n × n on the points, as in (23)).

With X of full column rank and K0 = X Xᵀ both give the same problem (the whitened
matrices differ by a rotation), so K* = X W* Xᵀ.  (In feature space with d > rank Φ the
barrier (24) is unbounded along null(Φᵀ), which neither the objective nor the
constraints see; the kernel form works on the range space — the learned kernel on new
points then uses α = 1 on the complement, eq. 18: the convention of the LogDet prior.)

Lagrange dual (every constraint tr(X̂Â_c) <= t_c in the whitened space):
with Z(λ) = Ĉ0 + Σλ_cÂ_c,

    γ > 0:  g(λ) = γ log det Z(λ) + γ r (1 − log γ) − λᵀt   (Z ≻ 0),  X̂(λ) = γ Z(λ)⁻¹;
    γ = 0:  g(λ) = −λᵀt  when Z(λ) ⪰ 0 (the SDP dual), −inf otherwise.

At the barrier optimum X̂_γ, λ_γ is feasible for the SDP dual and the SDP gap is
tr(X̂_γ Z) = γ r, so 0 <= tr(X̂_γ Ĉ0) − p*_SDP <= γ r, and tr(X̂_γ Ĉ0) is non-decreasing
in γ (see :func:`barrier_path`).
"""

from __future__ import annotations

import copy
import warnings

import cvxpy as cp
import numpy as np

from .._validation import as_float_array, check_number, check_positive, check_symmetric
from ..errors import InvalidInputError, SolverError, UnboundedError
from .logdet import ITML, LogDetKernel
from .regularizers import Regularizer

__all__ = ["UnboundedError", "LinearLogDet", "SDPLogDetKernel", "SDPLogDetMetric", "barrier_path"]

_PSD_TOL = 1e-8  # relative tolerance of the γ = 0 dual / primal PSD tests


class LinearLogDet(Regularizer):
    """f(X̂) = tr(X̂ Ĉ0) − γ log det X̂ (Jain et al. eq. 24; γ = 0: the linear SDP objective (23)).

    Parameters
    ----------
    C0 : symmetric matrix on the learned matrix's space (n × n for a kernel K, d × d for a
        metric W).  gamma : barrier weight γ >= 0.

    Not spectral (α undefined): use it through :class:`SDPLogDetKernel` /
    :class:`SDPLogDetMetric`, which call :meth:`whitened` with the problem's T.
    Conjugate (over X̂ ⪰ 0): f*_+(M) = Σ_i f*_s(μ_i(M − Ĉ0)) with
    f*_s(μ) = −γ + γ log γ − γ log(−μ) for μ < 0 (+inf otherwise); γ = 0: 0 / +inf.
    """

    name = "LinearLogDet"
    alpha = np.nan
    has_slack = False

    def __init__(self, C0, gamma: float = 1.0):
        self.C0 = check_symmetric(C0, "C0")
        g = check_number(gamma, "gamma", low=0.0, what="a finite number >= 0 (0: the plain SDP)")
        self.gamma = g
        self.implies_psd = g > 0  # log_det brings the PSD cone; γ = 0 states X ⪰ 0
        self.C0h = None

    # ------------------------------------------------------------------ binding
    def whitened(self, T) -> "LinearLogDet":
        """A copy bound to the whitening T (N × r): Ĉ0 = Tᵀ C0 T."""
        T = np.asarray(T, dtype=float)
        if T.shape[0] != self.C0.shape[0]:
            raise InvalidInputError(
                f"C0 is {self.C0.shape[0]} × {self.C0.shape[0]} but the learned matrix is {T.shape[0]} × {T.shape[0]}."
            )
        out = copy.copy(self)
        Ch = T.T @ self.C0 @ T
        out.C0h = 0.5 * (Ch + Ch.T)
        return out

    def _Ch(self):
        if self.C0h is None:
            raise InvalidInputError(
                "LinearLogDet is not a spectral regularizer (its objective involves C0); use it "
                "through SDPLogDetKernel(K0, constraints, C0, gamma) or SDPLogDetMetric(X, …), "
                "which whiten C0."
            )
        return self.C0h

    def check_theorem4(self):
        self._Ch()
        raise InvalidInputError("LinearLogDet is not spectral; use SDPLogDetKernel / SDPLogDetMetric.")

    # ------------------------------------------------------------------ values
    def value(self, A) -> float:
        C = self._Ch()
        A = 0.5 * (np.asarray(A, dtype=float) + np.asarray(A, dtype=float).T)
        lam = np.linalg.eigvalsh(A)
        lin = float(np.sum(A * C))
        if self.gamma > 0:
            return lin - self.gamma * float(np.sum(np.log(lam))) if lam[0] > 0 else np.inf
        return lin if lam[0] >= -_PSD_TOL * max(1.0, float(np.max(np.abs(lam)))) else np.inf

    def linear_value(self, A) -> float:
        """tr(X̂ Ĉ0) (the SDP objective (23) at X̂)."""
        return float(np.sum(np.asarray(A, dtype=float) * self._Ch()))

    def cvx(self, X):
        lin = cp.sum(cp.multiply(self._Ch(), X))
        return lin - self.gamma * cp.log_det(X) if self.gamma > 0 else lin

    def conj_shift(self, r):
        return -self._Ch()

    def conj_s(self, mu):
        g = self.gamma
        mu = np.asarray(mu, dtype=float)
        if g == 0:
            return np.where(mu <= 0, 0.0, np.inf)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(mu < 0, -g + g * np.log(g) - g * np.log(np.where(mu < 0, -mu, 1.0)), np.inf)

    def conj(self, M) -> float:
        C = self._Ch()
        M = np.asarray(M, dtype=float)
        mu = np.linalg.eigvalsh(0.5 * (M + M.T) - C)
        if self.gamma == 0:
            scale = max(1.0, float(np.max(np.abs(np.linalg.eigvalsh(C)))), float(np.max(np.abs(mu))))
            return 0.0 if mu[-1] <= _PSD_TOL * scale else np.inf
        return float(np.sum(self.conj_s(mu)))

    def conj_grad_s(self, mu):
        return -self.gamma / mu

    def conj_hess_s(self, mu):
        return self.gamma / mu**2

    def conj_grad(self, M):
        """∇f*_+(M) = γ (Ĉ0 − M)⁻¹ (the primal X̂(λ) for M = −Σλ_cÂ_c)."""
        mu, U = np.linalg.eigh(0.5 * (M + M.T) - self._Ch())
        return (U * self.conj_grad_s(mu)) @ U.T

    def __repr__(self):
        return f"LinearLogDet(C0=<{self.C0.shape[0]}×{self.C0.shape[0]}>, gamma={self.gamma:g})"


class _SDPMixin:
    @property
    def barrier_gamma(self) -> float:
        """The barrier weight γ (the problem's ``gamma`` attribute is the pair slack, None)."""
        return self.regularizer.gamma

    def solve(
        self,
        tol: float = 1e-9,
        max_iter: int = 20_000,
        lam0=None,
        *,
        warm_start=None,
        max_sweeps: int | None = None,
        **kw,
    ):
        """Fast solver: Bregman projections under the barrier
        (:func:`cvxkml.solvers.sdp_logdet.barrier_bregman`; when Ĉ0 is not positive definite a
        phase I with an auxiliary trace bound finds a dual-feasible start).  Stops when the
        largest relative KKT residual of a sweep (feasibility and complementary slackness,
        ``info["kkt_residual"]``, also in ``info["stop_value"]``) is below ``tol``;
        otherwise warns (ConvergenceWarning) with ``converged=False``.  Sweeps needed grow
        like 1/γ (``reference/jain2012-spectral.md``).  Raises
        :class:`UnboundedError` (no dual-feasible point), :class:`InfeasibleError` (a
        constraint no positive definite matrix satisfies) and, for gamma = 0,
        :class:`InvalidInputError` (use :meth:`solve_reference`).

        ``warm_start`` (one multiplier per constraint, in the order of :meth:`violations`;
        ``lam0`` is its former name here) warm-starts the dual; any λ with Ĉ0 + Σλ_cÂ_c ≻ 0
        skips phase I — the optimal λ of the same problem with another γ is one (that matrix
        does not involve γ)."""
        if lam0 is not None and warm_start is not None:
            raise InvalidInputError("Give warm_start (lam0 is its former name), not both.")
        warm_start = lam0 if warm_start is None else warm_start
        if warm_start is not None:
            warm_start = as_float_array(warm_start, "warm_start", finite=False).ravel()
            if warm_start.size != self.n_constraints or not np.all(np.isfinite(warm_start)) or np.any(warm_start < 0):
                raise InvalidInputError(
                    f"warm_start (lam0) must hold {self.n_constraints} finite non-negative multipliers."
                )
        if max_sweeps is not None:
            warnings.warn(
                "solve(max_sweeps=...) is deprecated and will be removed in the next release; use max_iter=...",
                DeprecationWarning,
                stacklevel=2,
            )
            max_iter = max_sweeps
        sol = super().solve(tol=tol, max_iter=max_iter, warm_start=warm_start, **kw)
        sol.info["linear_objective"] = self.linear_objective(sol.matrix)
        return sol

    def solve_reference(self, solver=None, eps=None, accept_inaccurate=False, **opts):
        """The exact CVXPY model (``log_det``; for gamma = 0 the SDP (23) with X̂ ⪰ 0).
        Raises :class:`UnboundedError` when the conic solver reports unboundedness."""
        try:
            sol = super().solve_reference(solver=solver, eps=eps, accept_inaccurate=accept_inaccurate, **opts)
        except SolverError as exc:
            if "unbounded" in str(exc).lower():
                raise UnboundedError(
                    f"The exact model is unbounded below ({exc}). For gamma = 0 the SDP (23) has no "
                    "finite optimum on these constraints; for gamma > 0 the barrier problem (24) "
                    "has a recession direction. Add bounding constraints."
                ) from exc
            raise
        sol.info["linear_objective"] = self.linear_objective(sol.matrix)
        return sol

    def with_gamma(self, gamma: float):
        """The same problem with barrier weight ``gamma`` (0: the plain SDP (23))."""
        out = copy.copy(self)
        out.regularizer = LinearLogDet(self._C0_learned, gamma).whitened(self.T)
        return out

    def solve_sdp(self, **kw):
        """The plain SDP (23) on the same data and constraints (exact model, gamma = 0)."""
        return self.with_gamma(0.0).solve_reference(**kw)

    def linear_objective(self, M) -> float:
        """tr(M C0') — the SDP objective (23) at a learned matrix M (C0' = C0 for a kernel,
        XᵀC0X for a metric)."""
        return float(np.sum(np.asarray(M, dtype=float) * self._C0_learned))


def _check_C0(C0, n):
    C0 = check_symmetric(C0, "C0")
    if C0.shape != (n, n):
        raise InvalidInputError(f"C0 must be {n} × {n} (one row per point); got {C0.shape}.")
    return C0


class SDPLogDetKernel(_SDPMixin, LogDetKernel):
    """Kernel form of (24): min_K tr(K C0) − γ log det(K0^-½ K K0^-½) s.t. constraints on K,
    K on the range of K0 (PSD; rank-deficient K0: the r × r range-space problem).

    Parameters
    ----------
    K0 : (n, n) PSD kernel matrix.  constraints : PairConstraints, RelativeConstraints,
    SimilarityConstraints, LinearConstraints (all handled by the fast solver).
    C0 : (n, n) symmetric objective matrix.  gamma : barrier weight >= 0 (0: the SDP (23),
    exact model only).
    """

    def __init__(self, K0, constraints, C0, gamma: float = 1.0, rank_rtol: float = 1e-10):
        n = as_float_array(K0, "K0", ndim=2).shape[0]
        self._C0_learned = _check_C0(C0, n)
        self.regularizer = LinearLogDet(self._C0_learned, gamma)
        # K0 as passed: its dtype sets the PSD and rank tolerances (float32: n·eps)
        super().__init__(K0, constraints, gamma=None, rank_rtol=rank_rtol)
        self.regularizer = self.regularizer.whitened(self.T)
        self.solver_tag = "kernel-sdp-logdet"


class SDPLogDetMetric(_SDPMixin, ITML):
    """Metric form (24): min_W tr(W XᵀC0X) − γ log det W s.t. constraints on W (Φ = Xᵀ).

    Parameters
    ----------
    X : (n, d) data.  constraints : as for :class:`SDPLogDetKernel` (linear constraints on
    W, d × d).  C0 : (n, n) symmetric matrix on the points (the paper's C0; the objective
    matrix on W is XᵀC0X).  gamma : barrier weight >= 0.

    With gamma > 0 and rank(X) < d (e.g. d > n) and no linear constraints, the barrier is
    unbounded along null(X): use :class:`SDPLogDetKernel` with K0 = X Xᵀ instead.
    """

    def __init__(self, X, constraints, C0, gamma: float = 1.0):
        X = as_float_array(X, "X", ndim=2)
        C0 = _check_C0(C0, X.shape[0])
        self._C0_learned = X.T @ C0 @ X
        self._C0_learned = 0.5 * (self._C0_learned + self._C0_learned.T)
        self.regularizer = LinearLogDet(self._C0_learned, gamma)
        super().__init__(X, constraints, W0=None, gamma=None, space="features")
        self.regularizer = self.regularizer.whitened(self.T)
        self.solver_tag = "metric-sdp-logdet"
        d = X.shape[1]
        if self.regularizer.gamma > 0 and self.linear is None and np.linalg.matrix_rank(X) < d:
            raise UnboundedError(
                f"X has rank {np.linalg.matrix_rank(X)} < d = {d}: −γ log det W is unbounded along "
                "null(X), which neither tr(W XᵀC0X) nor the pair constraints see. Use "
                "SDPLogDetKernel(X @ X.T, constraints, C0, gamma) (the range-space form)."
            )


def barrier_path(problem, gammas, fast: bool = True, warm_start: bool = True, **solve_kw):
    """How the barrier optimum approaches the SDP optimum as γ → 0.

    Solves ``problem.with_gamma(γ)`` for each γ in the given order (fast solver, warm-
    started from the previous γ's multipliers when ``warm_start``; or the exact model with
    ``fast=False``) and the plain SDP (23) once (exact).  Returns (p_sdp, rows) with one
    dict per γ: ``gamma``, ``linear`` = tr(X̂_γĈ0), ``excess`` = linear − p_sdp,
    ``bound`` = γ r (the central-path gap: 0 <= excess <= γ r), ``distance`` =
    ‖M_γ − M_sdp‖_F / ‖M_sdp‖_F (M_sdp the conic solver's SDP solution; when the SDP
    optimum is not unique the barrier path tends to the analytic centre of the optimal
    face, so this measures the distance to that one solution), ``objective`` (barrier
    objective), ``sweeps``, ``converged``, ``time`` and ``matrix`` (the learned M_γ).
    """
    if not isinstance(problem, _SDPMixin):
        raise InvalidInputError(
            f"barrier_path needs an SDPLogDetKernel or SDPLogDetMetric problem; got {type(problem).__name__}."
        )
    try:
        gammas = [check_positive(g, "each gamma of the path") for g in gammas]
    except TypeError as exc:
        raise InvalidInputError(f"gammas must be a sequence of positive numbers; got {gammas!r}.") from exc
    sdp = problem.solve_sdp()
    p_sdp = sdp.info["linear_objective"]
    M_sdp = np.asarray(sdp.matrix, dtype=float)
    nrm = max(float(np.linalg.norm(M_sdp)), np.finfo(float).tiny)
    r = problem.T.shape[1]
    rows = []
    lam = None
    for g in gammas:
        pg = problem.with_gamma(float(g))
        if fast:
            sol = pg.solve(lam0=lam if warm_start else None, **solve_kw)
            lam = sol.dual
        else:
            sol = pg.solve_reference(**solve_kw)
        lin = sol.info["linear_objective"]
        rows.append(
            dict(
                gamma=float(g),
                linear=lin,
                excess=lin - p_sdp,
                bound=float(g) * r,
                distance=float(np.linalg.norm(sol.matrix - M_sdp)) / nrm,
                objective=sol.objective,
                sweeps=sol.n_iter,
                converged=sol.converged,
                time=sol.time,
                matrix=sol.matrix,
            )
        )
    return p_sdp, rows
