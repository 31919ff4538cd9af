"""Fast solver for the kernel classification rule SDP (Sriperumbudur et al. 2008, eq. 9):
restarted primal-dual hybrid gradient with a certified duality gap.

Problem, in the whitened coordinates of :func:`cvxkml.formulas.kcr.whitening`
(Σ = T X Tᵀ, tr(KΣ) = tr X, D_ij = z_ijᵀ X z_ij with z_ij = f_i − f_j):

    min_{X ⪰ 0, h̃ >= h_min}  Σ_i φ_i(1 + tau_i·∘(A(X)_i· − h̃)) + λ tr X,
    φ_i(u) = [c_i + Σ_j [u_j]₊]₊ = max_{0 <= s_j <= t <= 1} t c_i + sᵀu,

a convex piecewise-linear function of a linear map of (X, h̃) plus a linear term over a
cone.  The saddle form min_{X, h̃} max_{s ∈ [0,1]^{n×n}} L(X, h̃, s) with

    L = Σ_ij s_ij + Σ_i c_i max_j s_ij + ⟨λI + Aᵀ(tau∘s), X⟩ − h̃ Σ_ij tau_ij s_ij

(c_i <= 0 because every class has at least two members) is solved by PDHG
(Chambolle–Pock), each step exact and cheap:

* primal: X⁺ = P_PSD(X − α(Aᵀ(tau∘s) + λI)) — only the positive eigenpairs are needed
  (X* has low rank), and consecutive matrices differ little, so
  :class:`PositivePartTracker` updates them by one block-Krylov Rayleigh–Ritz step
  from the previous Ritz vectors, applying the matrix as X V − α(Fᵀ L(s) F V + λV)
  without forming it; a LAPACK eigendecomposition re-seeds it after every certificate
  and whenever the Ritz residual still exceeds ``eig_step_factor`` (½) times the last
  primal step after two refinements on a deeper block Krylov space (block Lanczos: the
  positive eigenvalues are small against the negative part of the matrix);
  h̃⁺ = max(h_min, h̃ + α_h Σ tau∘s);
* dual: per row, the proximal map of −(σ-scaled) t c_i over {0 <= s_j <= t <= 1} —
  s_j = min(max(v_j, 0), t) with t ∈ [0, 1] solving Σ_j (v_j − t)₊ = σ|c_i| (water
  filling; Numba);
* Aᵀ(W) = Fᵀ(diag((W + Wᵀ)1) − W − Wᵀ)F and A(X) from the Gram matrix F X Fᵀ (BLAS).

Diagonal preconditioning (``scaling``): the iteration runs on Y with X = D Y D, D the
diagonal that shrinks the spread of the whitened feature-column norms √μ_k (μ the centred
kernel spectrum), which is the conditioning of A; the PSD cone is invariant and the trace
term becomes λ tr(D Y D).  The norms are those of the centred columns (F = KT carries a common part K1 that the
pair differences cancel), and d_k is capped at λ d_k² <= ‖A‖; the exponent is 0.75
(``scaling``; the measurements behind it are in ``reference/sriperumbudur2008-kcr.md``).

Convergence machinery (as in PDLP / r2HPDHG, Applegate et al. 2021, Lu & Yang 2024):
adaptive restarts on the fixed-point residual ‖T(z) − z‖; primal-weight updates at
restarts; adaptive step sizes η <= ‖Δz‖²_ω / (2|⟨Δs, 𝒦Δx⟩|); optionally reflected
Halpern iterations z ← w(2T(z) − z) + (1 − w)z₀, w = (k+1)/(k+2) between restarts
(``halpern=True``; off by default: the plain iteration needed fewer iterations on most
instances, see the reference sheet).  With a rank-k iterate and a tracked PSD step an
iteration costs O(n²(k + p) + n r p) for a block of p ≈ k + 10 vectors instead of the
O(n²r + nr² + r³) of forming the r × r matrix and decomposing it.

The certificate lags the primal: late in a solve the primal value can be close to
the optimum for hundreds of iterations while the bound from the dual iterate s is not,
partly because S = Σ tau∘s is not exactly 0 and the bound charges a positive S at the
bandwidth bound h_max ~ 1e4.  :func:`balance_dual` moves s to S = 0 (self weights, then
the similar pairs of smallest ‖z_ij‖², with the exact change of Aᵀ) and the better of the
two bounds is kept (``balance=True``).

Dual polishing (``polish``, :func:`polish_dual`): even with balanced weights the bound
lags because λI + Aᵀ(τ∘s) is slightly indefinite on range(X), and the bound pays
R·|λ_min| or the θ-scaling for it.  Below a certified gap of ``polish`` (0.1) a
certificate also solves, for the weights of the pairs nearest their kink in rows whose
outer hinge is active, the least-norm change that makes the dual slack vanish on range(X)
(then on its negative eigenvectors) with Σ τ∘s = 0 — complementary slackness, linear in
the weights — and bounds at every round's point.

Working set (``working_set``, :class:`_WorkingSet`): at the optimum most rows have
their outer hinge clearly inactive (s = 0) or clearly active (t = 1), and in the active
ones most pairs are clearly active (s = 1) or inactive (s = 0); only the pairs near a kink
and the rows near the outer kink are free.  The working-set phase iterates on those only
(the fixed active pairs enter as one r × r matrix), certifies on all n² pairs at each
check and moves what the full primal point shows violated back into the free part, so
``converged`` still means certified for the whole problem.

Stopping rule: a certified duality gap.  Every ``check_every`` iterations the objective
f(X, h̃) (:func:`cvxkml.formulas.kcr.kcr_objective`) of the current primal point and the
Lagrangian lower bound g(s) (:func:`cvxkml.formulas.kcr.dual_lower_bound`, one
λ_min computation) are evaluated; the solver stops with ``converged=True`` as soon as
(f_best − g_best) / max(1, |f_best|) <= tol.  Otherwise it stops at ``max_iter`` or
``time_limit`` with ``converged=False``: the returned gap is then still a valid bound on
the suboptimality.

The paper's own Algorithm 1 (subgradient step + the paper's alternating projections onto N,
which :func:`cvxkml.formulas.kcr.project_onto_N` replaces by an exact one) has no certificate
and no stopping rule; it is not installed: the baseline ``python -m benchmarks bench kcr alg1``
times against this solver is ``benchmarks/bench/kcr.py`` in a source checkout.
"""

from __future__ import annotations

import time
from functools import partial

import numpy as np
import scipy.linalg as sla  # noqa: F401  (the LAPACK module the PSD step calls, patched by tests)

from .._config import blas_limit
from ..errors import InvalidInputError, SolverError
from ._kcr.certificate import _Certificate, balance_dual, polish_dual
from ._kcr.kernels import _adjoint, _dual_step_stats, _halpern, _laplacian_weights, _laplacian_weights_codes, _sq_dist
from ._kcr.psd import PositivePartTracker, _max_similar_sq_norm, operator_norm, operator_norm_lanczos
from ._kcr.psd import _psd_part as _psd_part
from ._kcr.state import _checkpoint, _codes_of, _Setup, _State, _Step
from ._kcr.working_set import _ws_phase
from .result import NOT_CONVERGED, OK, FastResult

__all__ = [
    "kcr_pdhg",
    "balance_dual",
    "polish_dual",
    "operator_norm",
]


#: Cap of the preconditioner: λ d_k² <= _TRACE_CAP · ‖A‖ (in the preconditioned
#: coordinates), see :func:`_setup`.
_TRACE_CAP = 1.0

#: From this whitened rank the operator-norm estimate of the setup is Lanczos in float32
#: (below it, the float64 power iteration of earlier versions, so small solves take the same
#: path).
_NORM_FLOAT32_MIN_R = 500


def _setup(F, tau, c, lam, h_min, scaling, precision, balance) -> _Setup:
    """Check the options and build the fixed part of a solve (preconditioner, operator norm)."""
    F = np.asarray(F, dtype=np.float64)
    # Only the differences z_ij = f_i − f_j enter the problem, so the column means of F
    # are dropped: the centred columns have the norms √μ_k the preconditioner is meant
    # to equalize (F = KT has a common part K1 of about the kernel's mean, which on a
    # wide kernel hides the spread of the centred norms behind a much larger one),
    # and the float32 Gram matrices of the iteration lose no digits to that common part.
    F = np.ascontiguousarray(F - F.mean(axis=0))
    tau = np.ascontiguousarray(tau, dtype=np.float64)
    c = np.ascontiguousarray(c, dtype=np.float64)
    r = F.shape[1]
    # τ_ij = +1 iff the class codes agree: the per-iteration kernels read the codes
    # instead of the n × n array
    codes = _codes_of(tau)
    if precision not in ("mixed", "double"):
        raise ValueError(f"precision must be 'mixed' or 'double'; got {precision!r}.")
    scaling = float(scaling)
    if not 0.0 <= scaling <= 1.0:
        raise ValueError(f"scaling must be in [0, 1]; got {scaling!r}.")
    lam = float(lam)
    zmax, Zsq = _max_similar_sq_norm(F, tau, return_matrix=True)
    # diagonal preconditioning: iterate on Y with X = D Y D (X ⪰ 0 ⟺ Y ⪰ 0), i.e. on the
    # features F D and the linear cost λ D²; certificates stay in the X coordinates.
    # d_k is capped so that λ d_k² <= ‖A‖ (of the features F D before the cap): the
    # trace term's diagonal then stays on the scale of the data term in the PSD step's
    # matrix Y − α(Aᵀ(τ∘s) + λD²), whose float32 eigen-steps otherwise lose their
    # accuracy to it (n = 102, λ = 10, d up to 236: λ d² = 5.6e5 against ‖A‖ = 82; the
    # solve stalled at a gap of 9e-6 and the tracker's steps were rejected; capped,
    # 1e-6 in 470 iterations)
    cn = np.sqrt(np.sum(F * F, axis=0))
    d = (cn / cn.max()) ** -scaling if scaling > 0.0 and cn.size and cn.max() > 0 else np.ones(r)
    d = np.where(np.isfinite(d), d, 1.0)
    Fs = F * d
    # ‖A‖, O(n²r) per product: by power iteration, and for a high-rank kernel (r close to n)
    # by Lanczos in float32 (12–15 products where the power iteration's 30 stop 2e-3 short:
    # ‖A‖ only sets the first step size, the scale of h̃ and the preconditioner's cap; a
    # different estimate sends the solve down another path of restarts, no better or worse)
    norm = operator_norm if r < _NORM_FLOAT32_MIN_R else partial(operator_norm_lanczos, dtype=np.float32)
    norm_A = norm(Fs)
    cap = np.sqrt(_TRACE_CAP * norm_A / lam) if lam > 0.0 else np.inf
    if np.any(d > cap):
        d = np.minimum(d, max(cap, 1.0))
        Fs = F * d
        norm_A = norm(Fs)
    fdt = np.float32 if precision == "mixed" else np.float64
    return _Setup(
        F=F,
        tau=tau,
        c=c,
        codes=codes,
        lam=lam,
        h_min=float(h_min),
        d=d,
        Fs=Fs,
        lam_d=lam * d * d,
        norm_A=norm_A,
        hsc=F.shape[0] / norm_A,  # h̃ is scaled so that its column of 𝒦 has norm ‖A‖
        zmax=zmax,
        Zsq=Zsq,
        fdt=fdt,
        F_it=Fs.astype(fdt) if fdt is np.float32 else Fs,
        scaling=scaling,
        balance=bool(balance),
    )


def _initial_state(su: _Setup, warm_start, omega0) -> _State:
    """The cold start (Y = 0, h̃ = 1, s = 0) or a warm start from ``FastResult.extra["warm"]``."""
    n, r, lam = su.n, su.r, su.lam
    omega = lam * np.sqrt(r) / n if omega0 is None else float(omega0)
    eta = 0.9 / (np.sqrt(2.0) * su.norm_A)
    if warm_start is not None:
        X = np.array(warm_start["X"], dtype=np.float64)
        h = max(su.h_min, float(warm_start["h"]))
        s = np.clip(np.array(warm_start["s"], dtype=np.float64), 0.0, 1.0)
        if X.shape != (r, r) or s.shape != (n, n):
            raise InvalidInputError(
                f"warm_start has X {X.shape} and s {s.shape}; this problem needs ({r}, {r}) "
                f"and ({n}, {n}) (a warm start must come from a problem with the same points)."
            )
        if not (np.all(np.isfinite(X)) and np.all(np.isfinite(s)) and np.isfinite(h)):
            raise InvalidInputError("warm_start contains NaN or infinite values.")
        omega = float(warm_start.get("omega", omega))
        eta = float(warm_start.get("eta", eta))
        X = X / np.outer(su.d, su.d)  # Y = D⁻¹ X D⁻¹
    else:
        X = np.zeros((r, r))
        h = max(su.h_min, 1.0)
        s = np.zeros((n, n))
    W_it, deg_it = np.empty((n, n), su.fdt), np.empty(n, su.fdt)
    _laplacian_weights(s, su.tau, W_it, deg_it)  # Aᵀ(τ∘s) = Fᵀ(diag(deg) − W)F
    B = su.Fs @ X @ su.Fs.T
    return _State(X=X, h=h, s=s, B=B, St=float(np.sum(su.tau * s)), omega=omega, eta=eta, W_it=W_it, deg_it=deg_it)


def _psd_apply(su: _Setup, st: _State, alpha: float):
    """M V = Y V − α(Fᵀ L(s) F V + λ D² V) without forming M (the tracked PSD step)."""
    F_it, W_it, deg_it, lam_d = su.F_it, st.W_it, st.deg_it, su.lam_d_it
    alpha = float(alpha)  # a NumPy float64 scalar would promote the float32 block
    if st.X_fac is not None:  # Y = X_fac X_facᵀ (plain PDHG)
        Pt = st.X_fac.astype(su.fdt)

        def X_apply(V):
            return Pt @ (Pt.T @ V)
    else:
        Xt = st.X.astype(su.fdt)

        def X_apply(V):
            return Xt @ V

    def apply_M(V):
        FV = F_it @ V
        return X_apply(V) - alpha * (F_it.T @ (deg_it[:, None] * FV - W_it @ FV) + lam_d[:, None] * V)

    return apply_M


def _psd_explicit(su: _Setup, st: _State, alpha: float):
    """M = Y − α(Aᵀ(τ∘s) + λ D²), formed (the LAPACK PSD step)."""
    if st.G_exp is None:
        st.G_exp = _adjoint(su.F_it, st.s, su.tau, st.W_it, st.deg_it)
    M = st.X - alpha * (st.G_exp + np.diag(su.lam_d))
    return 0.5 * (M + M.T)


def _pdhg_step(su: _Setup, st: _State, tracker, exact: bool, k: int) -> tuple[_Step, bool]:
    """One PDHG step T(z) at the current η, ω and the step-size test; returns the step and
    whether η passed (η is updated in ``st`` either way, as PDLP's adaptive rule does)."""
    alpha = st.eta / st.omega
    beta = st.eta * st.omega
    apply_M = _psd_apply(su, st, alpha) if tracker.enabled else None
    P, w = tracker(apply_M, lambda: _psd_explicit(su, st, alpha), exact=exact or not tracker.enabled)
    FP = su.Fs @ P
    Bn = FP @ FP.T
    hn = max(su.h_min, st.h + alpha / su.hsc**2 * st.St)
    sn = np.empty((su.n, su.n))
    Sn, ds2, inter = _dual_step_stats(st.s, Bn, st.B, st.h, hn, su.codes, beta, su.c, sn)
    if not (np.isfinite(Sn) and np.isfinite(hn)):
        raise SolverError(
            f"KCR PDHG produced a non-finite iterate at iteration {k} "
            f"(step size {st.eta:.3g}, primal weight {st.omega:.3g}). Check the kernel matrix "
            "for huge entries, or solve without the warm start."
        )
    Xn = P @ P.T
    dh = hn - st.h
    inter = abs(inter)
    dx2 = _sq_dist(Xn, st.X)
    num = st.omega * (dx2 + (dh * su.hsc) ** 2) + ds2 / st.omega
    eta_max = num / (2.0 * inter) if inter > 0 else np.inf
    accept = st.eta <= eta_max
    eta_next = min((1.0 - (k + 1) ** -0.3) * eta_max, (1.0 + (k + 1) ** -0.6) * st.eta)
    st.eta = eta_next if np.isfinite(eta_next) else st.eta
    return _Step(P=P, w=w, Bn=Bn, hn=hn, sn=sn, Sn=Sn, Xn=Xn, num=num, dx2=dx2), accept


# --------------------------------------------------------------------------- PDHG: restarts
class _Restarts:
    """Adaptive restarts on the fixed-point residual (PDLP): the anchor z₀, the residual at
    the last restart and at the last test, and the primal-weight update at a restart."""

    def __init__(self, st: _State, params):
        self.params = params
        self.anchor(st.X, st.h, st.s, st.B, st.St)
        self.count = 0
        self.k_in = 0

    def anchor(self, X, h, s, B, S):
        self.z0 = (X.copy(), h, s.copy(), None if B is None else B.copy(), S)
        self.res0 = None
        self.res_prev = np.inf

    def due(self, res: float, k_total: int, test: bool) -> bool:
        """Whether to restart now (tested every ``restart_every`` iterations)."""
        if self.res0 is None:
            self.res0 = res
        if not test or self.k_in == 0:
            return False
        b_suff, b_nec, b_art = self.params
        restart = (
            res <= b_suff * self.res0
            or (res <= b_nec * self.res0 and res > self.res_prev)
            or self.k_in >= b_art * k_total
        )
        self.res_prev = res
        return restart

    def restart(self, su: _Setup, st: _State, step: _Step) -> None:
        """Restart at the new point: update ω from the primal and dual moves since z₀."""
        self.count += 1
        X0, h0, s0 = self.z0[0], self.z0[1], self.z0[2]
        Xn = step.Xn if step.Xn is not None else step.P @ step.P.T  # the working set keeps factors only
        dx = np.sqrt(np.sum((Xn - X0) ** 2) + ((step.hn - h0) * su.hsc) ** 2)
        dy = float(np.linalg.norm(step.sn - s0))
        if dx > 1e-12 and dy > 1e-12:
            st.omega = float(np.exp(0.5 * np.log(dy / dx) + 0.5 * np.log(st.omega)))
        self.anchor(Xn, step.hn, step.sn, step.Bn, step.Sn)
        self.k_in = 0


def _advance(su: _Setup, st: _State, step: _Step, rs: _Restarts, restart: bool, halpern: bool, Gn) -> None:
    """Move the iterate: to T(z) (plain PDHG or a restart), or by a reflected Halpern step
    towards the anchor; then refresh the Laplacian weights of s."""
    if restart or not halpern:
        if restart:
            rs.restart(su, st, step)
        else:
            rs.k_in += 1
        # plain PDHG: fresh arrays every iteration, no copies needed
        st.X, st.h, st.s, st.B, st.St = step.Xn, step.hn, step.sn, step.Bn, step.Sn
        st.X_fac, st.G_exp = step.P, Gn
    else:
        wk = (rs.k_in + 1.0) / (rs.k_in + 2.0)
        z0 = rs.z0
        _halpern(step.Xn, st.X, z0[0], wk)
        _halpern(step.sn, st.s, z0[2], wk)
        _halpern(step.Bn, st.B, z0[3], wk)
        st.h = wk * (2.0 * step.hn - st.h) + (1.0 - wk) * z0[1]
        st.St = wk * (2.0 * step.Sn - st.St) + (1.0 - wk) * z0[4]
        rs.k_in += 1
        st.G_exp = st.X_fac = None
    _laplacian_weights_codes(st.s, su.codes, st.W_it, st.deg_it)


# --------------------------------------------------------------------------- PDHG: the solver
def kcr_pdhg(
    F,
    tau,
    c,
    lam,
    h_min=1e-6,
    tol=1e-3,
    max_iter=20_000,
    time_limit=None,
    check_every=None,
    warm_start=None,
    verbose=False,
    halpern=False,
    restart_params=(0.2, 0.5, 0.2),
    omega0=None,
    precision="mixed",
    eig="track",
    eig_tol=1e-3,
    eig_step_factor=0.5,
    eig_guard=10,
    eig_min_size=200,
    restart_every=10,
    blas_threads="config",
    scaling=0.75,
    callback=None,
    balance=True,
    working_set=None,
    polish=0.1,
) -> FastResult:
    """Restarted PDHG (plain, or Halpern with ``halpern=True``) for eq. 9 in whitened
    coordinates, diagonally preconditioned, stopped by a certified duality gap (see the
    module text; measurements behind the defaults: ``reference/sriperumbudur2008-kcr.md``).

    Parameters
    ----------
    F : (n, r) array
        Whitened kernel features (:func:`cvxkml.formulas.kcr.whitening`).
    tau : (n, n) array of ±1
        Pair labels τ_ij = y_i y_j (the class matrix of ``label_structure``).
    c : (n,) array
        c_i = 2 − n_i⁺ <= 0 (eq. 9).
    lam : float > 0
        The regularization weight λ.
    h_min, tol : float
        Lower bound ε on h̃; target certified relative gap (f − g) / max(1, |f|).
    max_iter, time_limit : int, float or None
        Iteration limit; seconds before the solve stops (uncertified unless certified).
    check_every : int or None
        Iterations between certificates (default 10, or n/25 above n = 250).
    warm_start : dict or None
        ``FastResult.extra["warm"]`` of an earlier solve on the same points (``X``, ``h``,
        ``s``, ``omega``, ``eta``), e.g. at a neighbouring λ.
    verbose, halpern : bool
        Log each certificate; reflected Halpern iterations between restarts (default plain).
    restart_params : (sufficient, necessary, artificial)
        Restart when the fixed-point residual fell below ``sufficient`` × its value at the
        last restart, or below ``necessary`` × and grew since the last test, or after
        ``artificial`` × the total iteration count without a restart.
    omega0 : float or None
        Initial primal weight (default λ√r / n).
    precision : {"mixed", "double"}
        ``"mixed"``: the adjoint and the PSD step in float32, every certificate and
        returned point in float64; ``"double"``: all float64.
    eig : {"track", "exact"}
        PSD step by :class:`PositivePartTracker` (LAPACK at every certificate and when the
        tracked pairs miss their tolerance) or by LAPACK at every iteration.
    eig_tol, eig_step_factor : float
        Ritz-residual tolerance of the tracked step: min(``eig_tol`` · ‖θ₊‖,
        ``eig_step_factor`` · ‖Y_k − Y_{k−1}‖_F), so the projection error vanishes with
        the primal step (a fixed tolerance stalls tight solves at its error floor).
    eig_guard, eig_min_size, restart_every : int
        Guard vectors of the tracked block; the smallest r at which the tracker is used;
        iterations between restart tests.
    blas_threads : "config", int or None
        BLAS/LAPACK threads during the solve (:func:`cvxkml._config.blas_limit`; default:
        the ``blas_threads`` option, 1); ``None`` leaves the process setting alone.
    scaling : float in [0, 1]
        Diagonal preconditioning X = D Y D, d_k = (‖F_k‖ / max_l ‖F_l‖)^(−scaling)
        over the centred columns of F (‖F_k − mean‖ = √μ_k), capped at λ d_k² <= ‖A‖;
        the cone and the problem are unchanged, the iteration sees F D and λ D².
    callback : callable or None
        Called at every certificate that does not converge with a dict (``iteration``,
        ``objective``, ``lower_bound``, ``gap``, ``h``, ``n_restarts``); a truthy return
        stops the solve (status ``"stopped by callback"``).
    balance : bool
        Also bound at :func:`balance_dual` (s) at each certificate; keep the better bound.
    polish : float
        Certified gap below which certificates also try :func:`polish_dual` (dual weights
        made complementary to the primal iterate; at spaced checks, ``polish_due``); 0: off.
    working_set : None, bool or dict
        Iterate on a working set of pairs (:class:`_WorkingSet`) once the certified gap is
        below ``start``; the certificate still covers all pairs.  A dict sets ``start``,
        ``margin``, ``row_margin``, ``shrink_every`` (defaults in ``_WS_DEFAULTS``);
        ``None`` (default): on from n = 800 (plain PDHG only).

    Returns
    -------
    FastResult
        ``matrix`` the best primal point X (r × r, whitened coordinates), ``lam`` the
        certified dual weights θs (n × n, flattened), ``sweeps`` the iterations,
        ``stop_value`` the certified relative gap, ``code`` ``OK`` (certified to
        ``tol``) or ``NOT_CONVERGED``, ``time`` wall seconds; ``extra``: ``factor``
        (r × k, X = factor factorᵀ), ``h``, ``theta``, ``objective``, ``lower_bound``,
        ``converged``, ``status`` (text), ``n_restarts``, ``warm`` (a ``warm_start``),
        ``history`` rows (iteration, objective, bound, gap, wall s, CPU s),
        ``eig_exact`` / ``eig_tracked`` (PSD steps by LAPACK / by the tracker).
    """
    if blas_threads is not None:
        args = dict(locals(), blas_threads=None)  # every parameter, as passed
        with blas_limit(blas_threads):
            return kcr_pdhg(**args)
    t0, c0 = time.perf_counter(), time.process_time()
    su = _setup(F, tau, c, lam, h_min, scaling, precision, balance)
    if check_every is None:  # a certificate costs about two iterations at n = 250
        check_every = 10 if su.n <= 250 else round(su.n / 25)
    check_every = max(1, int(check_every))
    opts = dict(check_every=check_every, restart_every=max(1, int(restart_every)), eig_step_factor=eig_step_factor)
    opts.update(check=(tol, verbose, callback, time_limit), ws=_working_set_options(working_set, halpern, su.n))
    tracker = _make_tracker(su, eig, eig_guard, eig_tol, eig_min_size)
    st = _initial_state(su, warm_start, omega0)
    if not tracker.enabled:  # rank hint of the LAPACK step (the tracker starts at 0)
        tracker.k = su.r if warm_start is None else int(np.linalg.matrix_rank(st.X)) if st.X.any() else 0
    cert, rs = _Certificate(su, st.h), _Restarts(st, restart_params)
    cert.polish_start = float(polish)
    k_total, history, status, step, extra = 0, [], None, None, {}
    while k_total < max_iter:
        while True:  # one PDHG step T(z), repeated until the adaptive step size passes
            exact = st.G_exp is not None or (halpern and (k_total + 1) % check_every == 0)
            k_total += 1
            step, accept = _pdhg_step(su, st, tracker, exact, k_total)
            if accept or k_total >= max_iter:
                break
        check = k_total % check_every == 0 or k_total >= max_iter
        Gn = cert.adjoint(step.sn) if check else None  # float64 certificate
        if check:
            status = _checkpoint(cert, st, step, Gn, rs, k_total, history, t0, c0, *opts["check"])
            if status is not None:
                break
            if opts["ws"] is not None and cert.gap <= opts["ws"]["start"]:  # on to the working set
                k_total, status, last, extra["working_set"] = _ws_phase(
                    su, st, step, cert, tracker, rs, k_total, max_iter, opts, history, t0, c0
                )
                step = last or step
                break
        restart = rs.due(np.sqrt(step.num), k_total, k_total % opts["restart_every"] == 0)
        _advance(su, st, step, rs, restart, halpern, Gn)
        tracker.abs_tol = eig_step_factor * np.sqrt(step.dx2)  # PSD-step error vs the last step
    extra.update(status=status or "max_iter reached", history=history, n_restarts=rs.count)
    return _result(cert, st, step, tracker, k_total, status == "converged", extra, t0)


def _make_tracker(su: _Setup, eig, guard, tol, min_size) -> PositivePartTracker:
    """The PSD-step object; below ``min_size`` (or with eig="exact") it is LAPACK only."""
    if eig not in ("track", "exact"):
        raise ValueError(f"eig must be 'track' or 'exact'; got {eig!r}.")
    return PositivePartTracker(su.r, su.fdt, guard=guard, tol=tol, min_size=min_size if eig == "track" else su.r + 1)


_WS_DEFAULTS = dict(start=1.0, margin=0.1, row_margin=1.0, shrink_every=4)
_WS_AUTO_MIN_N = 800  # working_set=None: on from this n (below, the full iteration is faster)


def _working_set_options(working_set, halpern, n) -> dict | None:
    """The working-set options (``True``: the defaults; a dict overrides them; ``None``:
    the defaults from n = ``_WS_AUTO_MIN_N`` with plain PDHG, else off)."""
    if working_set is None:
        working_set = n >= _WS_AUTO_MIN_N and not halpern
    if working_set is False:
        return None
    if halpern:
        raise ValueError("working_set needs plain PDHG (halpern=False).")
    opts = dict(_WS_DEFAULTS)
    if isinstance(working_set, dict):
        unknown = set(working_set) - set(opts)
        if unknown:
            raise ValueError(f"unknown working_set options {sorted(unknown)}; known: {sorted(opts)}.")
        opts.update(working_set)
    elif working_set is not True:
        raise ValueError(f"working_set must be a bool or a dict; got {working_set!r}.")
    return opts


def _result(cert, st, step, tracker, k_total, converged, extra, t0) -> FastResult:
    """The :class:`FastResult` of a KCR solve (see :func:`kcr_pdhg`)."""
    Xb = cert.P @ cert.P.T
    sn = step.sn if step is not None else st.s
    return FastResult(
        matrix=Xb,
        lam=(cert.s * cert.theta).ravel(),
        xi=np.zeros(0),
        sweeps=int(k_total),
        stop_value=float(cert.gap),
        code=OK if converged else NOT_CONVERGED,
        bad_index=-1,
        time=time.perf_counter() - t0,
        extra=dict(
            solver="pdhg-kcr",
            factor=cert.P,
            h=float(cert.h),
            theta=float(cert.theta),
            objective=float(cert.f),
            lower_bound=float(cert.g),
            converged=bool(converged),
            warm=dict(X=Xb, h=cert.h, s=sn, omega=st.omega, eta=st.eta),
            eig_exact=tracker.n_exact,
            eig_tracked=tracker.n_tracked,
            **extra,
        ),
    )
