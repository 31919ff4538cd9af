"""Fast solver of the MKL_P weight step (Wang, Do, Woznica & Kalousis 2011, eq. 15):

    min_P  ⟨C, P⟩ + Σ_t c_t [b_t + ⟨D_t, P⟩]_+      s.t.  P ⪰ 0,  P >= 0,  Σ_ij P_ij = 1,

a linear-plus-hinge objective over the doubly non-negative slice S of m × m matrices
(m = number of kernels).  For LMNN, C = (1 − γ) Σ_S Q_ij + w·W, c_t = γ, b_t = 1 and
D_t = Q_ij − Q_il (pair matrices of eq. 7), so the problem has m(m+1)/2 unknowns and
one hinge per triplet (thousands to hundreds of thousands).

Algorithm: a primal–dual interior-point method (Mehrotra predictor–corrector, NT scaling
for the PSD block) on a *reduced* problem, inside a working-set loop over the hinges.

* Working set.  Every hinge t is either linearized (set A: [x]_+ -> x, i.e. α_t = c_t),
  dropped (set I: [x]_+ -> 0, α_t = 0) or kept (set K).  Both x <= [x]_+ and 0 <= [x]_+,
  so the reduced objective is a lower bound of the true one everywhere, and equal to it
  at every P where the hinges of A are active and those of I inactive.  The loop solves
  the reduced problem, evaluates all hinges at its solution, moves every hinge whose
  linearization or dropping was wrong there into K (K only grows, so the loop ends),
  and stops when the discrepancy is below the tolerance: the reduced optimum is then
  the optimum of the full problem.  Hinges of one sign on all of S (b_t + min_ij (D_t)_ij
  >= 0, or b_t + max_ij (D_t)_ij <= 0) are linearized / dropped for good.  The others are
  classified at a start point: warm (the previous P* of the convex iteration), K = the
  2·m(m+1)/2 hinges nearest their kink; cold, all of them in K when that is cheap, else
  the solution of a uniform sample of 2000 of them (weights scaled up) is the start
  point and K its 2000 hinges nearest the kink (classified at the centre of S instead,
  the reduced solution overshoots and K grows to a large share of the hinges:
  ``reference/wang2011-mkl.md``).
* Interior point.  The reduced problem is a small conic program: P ⪰ 0 (one m × m
  block), P_ij >= 0 (i < j), and per kept hinge ξ_t >= 0, ξ_t >= b_t + ⟨D_t, P⟩.  After
  eliminating the hinge variables, each Newton system is one (m(m+1)/2 + 1)-square
  bordered positive definite system: the symmetric-Kronecker NT block of the PSD cone +
  a diagonal + Σ_{t ∈ K} e_t d_t d_tᵀ (d_t = svec D_t).  For hinges on differences of
  pair matrices the last term is formed through the pairs, Q_Πᵀ L Q_Π with L a sparse
  weighted Laplacian on the pairs touched by K.  One step length for primal and dual,
  backtracked to keep every complementarity product >= 10⁻³ × their mean (a wide
  neighbourhood: without it the Mehrotra steps stalled at 10⁻²–10⁻³ on the Sonar
  instances); the Mehrotra second-order term is dropped when it shortens the step; ΔZ
  comes from the linearized dual equation, so the dual residual stays at round-off.
  Precision: the objective data are scaled to magnitude 1, so when w·W dominates C
  (w >= 10⁶) the hinge part sits near the round-off of the scaled data and a single
  (15) solve certifies only a relative gap of about 10⁻⁷ (w = 10⁶) to 10⁻³ (w = 10⁸);
  the relaxation (W = 0), whose bound certifies the weight step, reaches 10⁻⁹.

Output: P, and the Lagrange multipliers of *every* constraint — α ∈ [0, c] for all hinges
(c_t on A, 0 on I, the interior-point ones on K), ν for Σ P = 1, N >= 0 for P >= 0 — from
which the caller builds the certified bound

    Σ_t α_t b_t + ν + min(0, λ_min(C + Σ_t α_t D_t − ν 11ᵀ − N))  <=  min over S,

valid for any such multipliers (the declare side computes it; a solver does not certify
its own answer).  NumPy / SciPy only: no CVXPY.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from .._config import blas_limit
from ..formulas.mkl import HingeTerms, _skron, _svec_index, lagrange_bound, smat, svec
from .result import NONFINITE, NOT_CONVERGED, OK, FastResult

__all__ = ["HingeTerms", "weight_step_ipm", "svec", "smat", "lagrange_bound", "dnn_hinge_ipm", "start_point"]

#: the wide neighbourhood of the interior-point iterates: every complementarity product stays
#: >= NEIGHBOURHOOD · (mean product) (step lengths are backtracked until it holds)
NEIGHBOURHOOD = 1e-3
#: duality gap of the scaled problem (data of magnitude <= 1) accepted whatever the objective
ABS_GAP = 1e-12


# --------------------------------------------------------------------------- the IPM
class _Rows:
    """The kept hinges' linear maps for the interior point: D x, Dᵀ y and the Schur term
    Σ_k e_k d_k d_kᵀ (d_k = svec D_k), from explicit rows (K × n_p)."""

    def __init__(self, D):
        self.D = np.ascontiguousarray(D, dtype=float)
        self.K, self.n_p = self.D.shape

    def dot(self, x):
        return self.D @ x

    def tdot(self, y):
        return y @ self.D

    def schur(self, e):
        return self.D.T @ (self.D * e[:, None])

    def row_absmax(self):
        return np.abs(self.D).max(axis=1) if self.K else np.zeros(0)


class _PairRows(_Rows):
    """:class:`_Rows` for hinges on pair differences, D_k = Q[a_k] − Q[b_k], through the
    n_Π pairs they touch: D x = (Q_Π x)[a] − (Q_Π x)[b], Dᵀ y = Q_Πᵀ (scatter of y), and
    Σ_k e_k d_k d_kᵀ = Q_Πᵀ L(e) Q_Π with L(e) the weighted signed Laplacian of the
    hinges on the pairs (a sparse n_Π × n_Π matrix whose pattern is built once)."""

    def __init__(self, QP, a, b):
        self.QP = np.ascontiguousarray(QP, dtype=float)
        self.a = a
        self.b = b
        self.K = a.size
        self.n_pairs, self.n_p = QP.shape
        if b is None:
            rows, cols, sign = a, a, np.ones(self.K)
        else:
            rows = np.concatenate([a, b, a, b])
            cols = np.concatenate([a, b, b, a])
            sign = np.concatenate([np.ones(2 * self.K), -np.ones(2 * self.K)])
        key = rows * self.n_pairs + cols
        uniq, self._pos = np.unique(key, return_inverse=True)
        self._sign = sign
        r, c = np.divmod(uniq, self.n_pairs)
        self._indptr = np.concatenate([[0], np.cumsum(np.bincount(r, minlength=self.n_pairs))])
        self._indices = c.astype(np.int32)
        self._nnz = uniq.size

    def dot(self, x):
        q = self.QP @ x
        return q[self.a] - q[self.b] if self.b is not None else q[self.a]

    def _scatter(self, y):
        w = np.bincount(self.a, weights=y, minlength=self.n_pairs)
        if self.b is not None:
            w -= np.bincount(self.b, weights=y, minlength=self.n_pairs)
        return w

    def tdot(self, y):
        return self._scatter(y) @ self.QP

    def schur(self, e):
        reps = self._sign.size // self.K
        data = np.bincount(self._pos, weights=self._sign * (np.tile(e, reps) if reps > 1 else e), minlength=self._nnz)
        L = sp.csr_matrix((data, self._indices, self._indptr), shape=(self.n_pairs, self.n_pairs))
        return self.QP.T @ (L @ self.QP)

    def row_absmax(self):
        if self.K == 0:
            return np.zeros(0)
        # max |entries| of D_k <= max|Q_a| + max|Q_b| (a bound is enough: it only scales)
        qa = np.abs(self.QP).max(axis=1)
        return qa[self.a] + (qa[self.b] if self.b is not None else 0.0)


def _kept_rows(terms: "HingeTerms", idx) -> _Rows:
    """The linear maps of the hinges ``idx``: through their pairs when those are fewer."""
    plus = terms.plus[idx]
    minus = terms.minus[idx] if terms.minus is not None else None
    touched = np.unique(plus if minus is None else np.concatenate([plus, minus]))
    if idx.size == 0 or touched.size >= 0.6 * idx.size:
        return _Rows(terms.rows(idx))
    loc = np.full(terms.Qs.shape[0], -1, dtype=np.int64)
    loc[touched] = np.arange(touched.size)
    return _PairRows(terms.Qs[touched], loc[plus], None if minus is None else loc[minus])


class _IPM:
    """The iterate and the fixed data of :func:`dnn_hinge_ipm` (the objective scaled so its
    data are O(1)): P (p = svec P) ⪰ 0 with its off-diagonal part pn >= 0, the hinge values
    ξ and slacks s, and the dual (Z, N = nmat(nn), ν, α, β)."""

    def __init__(self, Cs, D, b, c, m: int):
        self.I, self.J, f, self.off = _svec_index(m)
        self.m, self.n_p = m, self.I.size
        self.D = D if isinstance(D, _Rows) else _Rows(np.asarray(D, dtype=float).reshape(-1, self.n_p))
        self.K = K = self.D.K
        self.b = b
        # scale the objective so its data are O(1) (hinge data are constraint rows: unscaled)
        self.scale = max(
            float(np.abs(Cs).max(initial=0.0)), float(np.max(c * self.D.row_absmax(), initial=0.0)), 1e-300
        )
        self.Cn, self.cn = Cs / self.scale, c / self.scale
        self.a = f.copy()  # svec(11ᵀ): ⟨11ᵀ, P⟩ = a·p
        self.Io, self.Jo = self.I[self.off], self.J[self.off]
        # start: P0 = (I/m + 11ᵀ/m²)/2 (strictly inside S), a dual-feasible (Z, N, ν, α, β)
        self.P = 0.5 * (np.eye(m) / m + np.full((m, m), 1.0 / m**2))
        self.p = svec(self.P)
        arg0 = b + self.D.dot(self.p) if K else np.zeros(0)
        self.theta = max(1.0, float(np.median(np.abs(arg0)))) if K else 1.0
        self.xi = np.maximum(arg0, 0.0) + self.theta
        self.s = self.xi - arg0
        self.alpha, self.beta = 0.5 * self.cn, 0.5 * self.cn
        G0 = smat(self.Cn + (self.D.tdot(self.alpha) if K else 0.0), m)
        lam0 = np.linalg.eigvalsh(G0)
        t0 = max(0.0, -lam0[0]) + max(1.0, float(np.abs(lam0).max()))
        self.nu = -t0
        self.nn = np.full(self.Io.size, 2.0 * t0)  # N = t0 (11ᵀ − I): N_ij = nn/2
        self.Z = G0 + t0 * np.eye(m)
        self.theta_deg = m + self.Io.size + 2 * K

    def nmat(self, x):
        X = np.zeros((self.m, self.m))
        X[self.Io, self.Jo] = 0.5 * x
        X[self.Jo, self.Io] = 0.5 * x
        return X

    def residuals(self):
        """(R_P, r_ξ, r_h, r_e, complementarity, μ, primal and dual objective, residual)."""
        pn = self.P[self.Io, self.Jo]
        K, D, m = self.K, self.D, self.m
        Dp = D.dot(self.p) if K else np.zeros(0)
        Da = smat(D.tdot(self.alpha), m) if K else 0.0
        R_P = smat(self.Cn, m) - self.Z - self.nmat(self.nn) + Da - self.nu
        r_xi = self.cn - self.alpha - self.beta
        r_h = self.xi - self.b - Dp - self.s
        r_e = float(self.a @ self.p) - 1.0
        comp = (
            float(np.sum(self.P * self.Z))
            + float(pn @ self.nn)
            + float(self.xi @ self.beta)
            + float(self.s @ self.alpha)
        )
        pobj = float(self.Cn @ self.p) + float(self.cn @ self.xi)
        dobj = float(self.b @ self.alpha) + self.nu
        res = max(
            float(np.abs(R_P).max()),
            float(np.abs(r_xi).max(initial=0.0)),
            float(np.abs(r_h).max(initial=0.0)) / max(1.0, self.theta),
            abs(r_e),
        )
        return R_P, r_xi, r_h, r_e, comp, comp / self.theta_deg, pobj, dobj, res


def _max_step_psd(Lam_isqrt, A):
    """The largest t with Λ + tA ⪰ 0, given Λ^{-1/2}."""
    Ms = Lam_isqrt[:, None] * A * Lam_isqrt[None, :]
    lmin = float(np.linalg.eigvalsh(0.5 * (Ms + Ms.T))[0])
    return np.inf if lmin >= 0 else -1.0 / lmin


def _max_step_lp(x, dx):
    neg = dx < 0
    return float(np.min(-x[neg] / dx[neg])) if np.any(neg) else np.inf


class _Newton:
    """One interior-point iteration's linear algebra: the NT scaling of the PSD block
    (RᵀZR = R⁻¹PR⁻ᵀ = Λ), the factorized Schur complement M, and the Newton directions and
    step lengths for given complementarity right-hand sides."""

    def __init__(self, st: _IPM, resid):
        self.st = st
        self.R_P, self.r_xi, self.r_h, self.r_e = resid[:4]
        Ls = np.linalg.cholesky(st.P)  # LinAlgError: the caller stops ("stalled")
        Lz = np.linalg.cholesky(st.Z)
        U, lam, Vt = np.linalg.svd(Lz.T @ Ls)
        self.lam = lam
        self.lis = 1.0 / np.sqrt(lam)
        self.R = Ls @ Vt.T * self.lis[None, :]
        self.Rinv = (self.lis[:, None] * U.T) @ Lz.T
        Winv = self.Rinv.T @ self.Rinv  # W_nt⁻¹
        self.pn = st.P[st.Io, st.Jo]
        self.w3 = st.beta / st.xi
        self.w4 = st.alpha / st.s
        self.e = self.w3 * self.w4 / (self.w3 + self.w4)
        n_p, off = st.n_p, st.off
        M = _skron(Winv)
        M[np.arange(n_p)[off], np.arange(n_p)[off]] += st.nn / (2.0 * self.pn)
        M = M + st.D.schur(self.e) if st.K else M
        M = 0.5 * (M + M.T)
        try:
            cho = sla.cho_factor(M, lower=True, check_finite=False)
            self.solveM = lambda v: sla.cho_solve(cho, v, check_finite=False)
        except (np.linalg.LinAlgError, sla.LinAlgError):
            reg = 1e-14 * float(np.abs(np.diag(M)).max())
            lu = sla.lu_factor(M + reg * np.eye(n_p), check_finite=False)
            self.solveM = lambda v: sla.lu_solve(lu, v, check_finite=False)
        self.Ma = self.solveM(st.a)
        self.aMa = float(st.a @ self.Ma)

    def direction(self, Zrhs, d_n, d_b, d_a):
        st, pn, w3, w4 = self.st, self.pn, self.w3, self.w4
        K, D, m = st.K, st.D, st.m
        g = d_b / st.xi + d_a / st.s - w4 * self.r_h - self.r_xi
        q = d_a / st.s - w4 * self.r_h - w4 * g / (w3 + w4)
        rhs = svec(-self.R_P + Zrhs + st.nmat(d_n / pn)) - (D.tdot(q) if K else 0.0)
        Mr = self.solveM(rhs)
        dnu = (-self.r_e - float(st.a @ Mr)) / self.aMa
        dp = Mr + dnu * self.Ma
        dP = smat(dp, m)
        delta = D.dot(dp) if K else np.zeros(0)
        dxi = (g + w4 * delta) / (w3 + w4)
        ds = dxi - delta + self.r_h
        dal = q + self.e * delta
        dbe = (d_b - st.beta * dxi) / st.xi
        dnn = (d_n - st.nn * dP[st.Io, st.Jo]) / pn
        # ΔZ from the linearized dual equation (not from the complementarity row, whose
        # W⁻¹ΔPW⁻¹ amplifies round-off near the end): the dual residual then stays exact
        dZ = self.R_P - st.nmat(dnn) + (smat(D.tdot(dal), m) if K else 0.0) - dnu
        dZ = 0.5 * (dZ + dZ.T)
        return dp, dP, dxi, ds, dal, dbe, dnn, dZ, dnu

    def steps(self, dP, dxi, ds, dal, dbe, dnn, dZ):
        st = self.st
        A_ = self.Rinv @ dP @ self.Rinv.T
        B_ = self.R.T @ dZ @ self.R
        tp = min(
            _max_step_psd(self.lis, A_),
            _max_step_lp(self.pn, dP[st.Io, st.Jo]),
            _max_step_lp(st.xi, dxi),
            _max_step_lp(st.s, ds),
        )
        td = min(
            _max_step_psd(self.lis, B_),
            _max_step_lp(st.nn, dnn),
            _max_step_lp(st.alpha, dal),
            _max_step_lp(st.beta, dbe),
        )
        return tp, td, A_, B_

    def predictor_corrector(self, comp, mu):
        """Mehrotra's predictor–corrector direction and its step lengths (d, tp, td)."""
        st, pn = self.st, self.pn
        P, Z, xi, s, alpha, beta, nn = st.P, st.Z, st.xi, st.s, st.alpha, st.beta, st.nn
        dp, dP, dxi, ds, dal, dbe, dnn, dZ, dnu = self.direction(-Z, -pn * nn, -xi * beta, -s * alpha)
        tp, td, A_, B_ = self.steps(dP, dxi, ds, dal, dbe, dnn, dZ)
        tp = td = min(1.0, tp, td)
        comp_aff = (
            float(np.sum((P + tp * dP) * (Z + td * dZ)))
            + float((pn + tp * dP[st.Io, st.Jo]) @ (nn + td * dnn))
            + float((xi + tp * dxi) @ (beta + td * dbe))
            + float((s + tp * ds) @ (alpha + td * dal))
        )
        sigma = min(1.0, max(0.0, comp_aff / comp)) ** 3
        tpa, tda = tp, td  # corrector (Mehrotra): second-order terms of the affine step
        lam = self.lam

        def combined(kc):
            Dm = sigma * mu * np.eye(st.m) - np.diag(lam**2) - 0.5 * kc * (A_ @ B_ + B_ @ A_)
            E = 2.0 * Dm / (lam[:, None] + lam[None, :])
            Zrhs = self.Rinv.T @ E @ self.Rinv
            d_n = sigma * mu - pn * nn - kc * dP[st.Io, st.Jo] * dnn
            d_b = sigma * mu - xi * beta - kc * dxi * dbe
            d_a = sigma * mu - s * alpha - kc * ds * dal
            d = self.direction(Zrhs, d_n, d_b, d_a)
            return d, self.steps(*d[1:8])[:2]

        d, (tp, td) = combined(1.0)
        if min(tp, td) < 0.5 * min(tpa, tda, 1.0):
            # the second-order (Mehrotra) term hurt: keep the better of it and plain centring
            d2, (tp2, td2) = combined(0.0)
            if min(tp2, td2) > min(tp, td):
                d, tp, td = d2, tp2, td2
        return d, min(1.0, 0.99 * tp, 0.99 * td)


def _neighbourhood_step(st: _IPM, nt: _Newton, d, t, mu) -> None:
    """Take the step t (shortened by 0.8 until every complementarity product is >= γ·μ(t),
    γ = NEIGHBOURHOOD or half the current ratio when the iterate is not yet inside it)."""
    dp, dP, dxi, ds, dal, dbe, dnn, dZ, dnu = d
    pn, lam = nt.pn, nt.lam
    now = (
        min(
            float(np.min(lam**2)),
            float(np.min(pn * st.nn, initial=np.inf)),
            float(np.min(st.xi * st.beta, initial=np.inf)),
            float(np.min(st.s * st.alpha, initial=np.inf)),
        )
        / mu
    )
    gam = min(NEIGHBOURHOOD, 0.5 * now)
    for _ in range(30):
        try:
            Lt = np.linalg.cholesky(st.P + t * dP)
            pz = np.linalg.eigvalsh(Lt.T @ (st.Z + t * dZ) @ Lt)
        except np.linalg.LinAlgError:
            pz = np.array([-1.0])
        prods = [
            pz,
            (pn + t * dP[st.Io, st.Jo]) * (st.nn + t * dnn),
            (st.xi + t * dxi) * (st.beta + t * dbe),
            (st.s + t * ds) * (st.alpha + t * dal),
        ]
        mut = sum(float(np.sum(x)) for x in prods) / st.theta_deg
        if min(float(np.min(x, initial=np.inf)) for x in prods) >= gam * mut:
            break
        t = 0.8 * t
    st.p = st.p + t * dp
    st.P = smat(st.p, st.m)
    st.xi = st.xi + t * dxi
    st.s = st.s + t * ds
    Z = st.Z + t * dZ
    st.Z = 0.5 * (Z + Z.T)
    st.nn = st.nn + t * dnn
    st.alpha = st.alpha + t * dal
    st.beta = st.beta + t * dbe
    st.nu = st.nu + t * dnu


def dnn_hinge_ipm(Cs, D, b, c, m: int, tol: float = 1e-9, max_iter: int = 80, const: float = 0.0):
    """min ⟨C, P⟩ + const + Σ_k c_k [b_k + ⟨D_k, P⟩]_+ over S by a primal–dual
    interior-point method (Mehrotra predictor–corrector, NT scaling).

    Parameters
    ----------
    Cs : ndarray
        svec of C.
    D : ndarray of shape (K, n_p) or _Rows
        svec rows of the D_k, or a :class:`_Rows`.
    b, c : ndarray of shape (K,)
        Offsets and weights of the hinges.
    m : int
        Order of the matrix P (m × m).
    tol : float
        Relative duality gap (over max(1, |objective|)) and residual tolerance.
    max_iter : int
        Interior-point iterations.
    const : float
        Constant added to the objective.

    Returns
    -------
    dict with P, p (svec), Z, N (m × m, zero diagonal), alpha (K,), nu, iterations,
    status ("optimal", "max_iter", "stalled" or "nonfinite"), pobj, dobj (unscaled, incl.
    const).
    """
    st = _IPM(Cs, D, b, c, m)
    status = "max_iter"
    it = 0
    stall = 0
    for it in range(1, max_iter + 1):  # noqa: B007 (it is the iteration count returned after the loop)
        resid = st.residuals()
        comp, mu, pobj, dobj, res = resid[4:]
        # relative gap, or an absolute one at the round-off level of the O(1) scaled data
        # (when w·W dominates C the objective is tiny in scaled units: w = 1e8 makes it 1e-7)
        ref = max(abs(pobj + const / st.scale), 1.0 / st.scale, ABS_GAP / tol)
        if pobj - dobj <= tol * ref and res <= tol * max(1.0, float(np.abs(st.Cn).max())):
            status = "optimal"
            break
        if not (np.isfinite(comp) and np.isfinite(res)):
            status = "nonfinite"
            break
        try:
            nt = _Newton(st, resid)
        except np.linalg.LinAlgError:
            status = "stalled"
            break
        d, t = nt.predictor_corrector(comp, mu)
        if not np.isfinite(t) or not np.all(np.isfinite(d[0])):
            status = "nonfinite"
            break
        stall = stall + 1 if t < 1e-8 else 0
        if stall >= 3:
            status = "stalled"
            break
        _neighbourhood_step(st, nt, d, t, mu)
    return dict(
        P=st.P,
        p=st.p,
        Z=st.Z * st.scale,
        N=st.nmat(st.nn) * st.scale,
        alpha=np.clip(st.alpha * st.scale, 0.0, c),
        nu=st.nu * st.scale,
        iterations=it,
        status=status,
        pobj=pobj * st.scale + const,
        dobj=dobj * st.scale + const,
    )


# --------------------------------------------------------------------------- working set
def start_point(W) -> np.ndarray | None:
    """μμᵀ for the direction W = I − uuᵀ of a warm start of the convex iteration (u the
    eigenvector of W's smallest eigenvalue, made non-negative, μ = u / Σu): where
    :func:`weight_step_ipm` classifies the hinges of the first solve.  None when u has no
    positive part."""
    lam, V = np.linalg.eigh(0.5 * (W + W.T))
    u = V[:, 0] if V[:, 0].sum() >= 0 else -V[:, 0]
    u = np.maximum(u, 0.0)
    if not u.sum() > 0:
        return None
    mu = u / u.sum()
    return np.outer(mu, mu)


def _default_start(m: int) -> np.ndarray:
    return 0.5 * (np.eye(m) / m + np.full((m, m), 1.0 / m**2))


def weight_step_ipm(
    terms: HingeTerms,
    L=None,
    P0=None,
    tol: float = 1e-9,
    max_iter: int = 80,
    kink_target: int | None = None,
    max_rounds: int = 50,
    cold_budget: float = 1e5,
    sample: int = 2000,
    blas_threads="config",
) -> FastResult:
    """Solve eq. 15: min h(P) + ⟨L, P⟩ over S (h = ``terms``, L e.g. w·W), by the working-set
    interior-point method of the module docstring.

    Parameters
    ----------
    terms : HingeTerms
        The linear-plus-hinge objective.
    L : ndarray of shape (m, m) or None
        Extra linear term.
    P0 : ndarray of shape (m, m) or None
        The point the hinges are classified at (a previous solution: a warm start), or None
        (a cold start).
    tol : float
        Relative duality gap of each interior-point solve and the relative discrepancy
        budget of the working set (both over max(1, |objective|)).
    max_iter : int
        Interior-point iterations per reduced solve.
    kink_target : int or None
        Warm start: how many hinges nearest their kink at P0 start in the kept set K
        (default 2·m(m+1)/2, at least 64); the rest are linearized or dropped by their sign
        at P0.
    max_rounds : int
        Working-set rounds.
    cold_budget : float
        Cold start: every hinge that can change sign on S starts in K when the
        pair-structured Newton system costs at most this many flops per iteration
        (n_pairs touched · (m(m+1)/2)²); otherwise the warm rule at the solution of a
        uniform sample of ``sample`` of them (weights scaled up to the whole; a cheap
        estimate of P*).  Default 1e5: the Newton system is not the whole cost (every
        kept hinge is touched per iteration); on the LMNNMKL weight steps of Wine and
        breast cancer the sample path gave the same μ (to 1e-6) many times faster
        (reference/lmnn-speed.md).  Hinges of one sign on all of S (:meth:`HingeTerms.safe_signs`)
        are never kept.
    sample : int
        The size of that sample.
    blas_threads : int, str or None, default "config"
        BLAS / LAPACK threads during the solve (:func:`cvxkml._config.blas_limit`).

    Returns
    -------
    FastResult
        ``matrix`` = P, ``lam`` = α (one multiplier in [0, c_t] per hinge), ``xi`` = the
        hinge arguments at P; ``extra``: ``nu``, ``N`` (m × m, >= 0 off the diagonal), ``Z``,
        ``value`` (h(P) + ⟨L, P⟩), ``reduced_value`` / ``reduced_dual`` (the last reduced
        problem's primal and dual objectives), ``rounds``, ``kept`` (|K| per round),
        ``ipm_iterations``, ``ipm_status``, ``discrepancy``.  ``code`` OK when the last
        reduced solve reached ``tol`` and the working set settled.
    """
    with blas_limit(blas_threads):
        return _weight_step_ipm(terms, L, P0, tol, max_iter, kink_target, max_rounds, cold_budget, int(sample))


def _weight_step_ipm(terms, L, P0, tol, max_iter, kink_target, max_rounds, cold_budget, sample):
    t0 = time.perf_counter()
    m, T = terms.m, terms.n_terms
    I, J, f, off = _svec_index(m)
    n_p = I.size
    Ls = np.zeros(n_p) if L is None else svec(0.5 * (np.asarray(L, float) + np.asarray(L, float).T))
    Cbase = terms.Cs + Ls
    always_on, always_off = terms.safe_signs()
    free = ~(always_on | always_off)
    kept = np.zeros(T, dtype=bool)
    cold = P0 is None
    free_idx = np.flatnonzero(free)
    if cold and free.any() and terms.pairs_touched(free_idx) * n_p**2 <= cold_budget:
        kept = free.copy()
        arg = np.zeros(T)
    else:
        if cold and free_idx.size > sample:
            # too many hinges for a cold solve with all of them: classify at the solution of a
            # uniform sample of the free ones (weights scaled up by T_free / sample; the
            # hinges of one sign on S exact), solved with all its hinges kept
            pick = np.sort(np.random.default_rng(0).choice(free_idx, sample, replace=False))
            sub = np.concatenate([pick, np.flatnonzero(always_on | always_off)])
            scale_w = np.ones(sub.size)
            scale_w[: pick.size] = free_idx.size / pick.size
            st = terms.subset(sub)
            st.c = st.c * scale_w
            st._safe = (always_on[sub], always_off[sub])
            P0 = _weight_step_ipm(st, L, None, max(tol, 1e-6), max_iter, kink_target, max_rounds, np.inf, sample).matrix
        target = max(64, 2 * n_p) if kink_target is None else int(kink_target)
        if cold and free_idx.size > sample:
            target = max(target, sample)  # the sample's P is rougher than a previous P*
        P0 = _default_start(m) if P0 is None else np.asarray(P0, dtype=float)
        arg = terms.arguments(svec(0.5 * (P0 + P0.T)))
        cand = np.flatnonzero(free)
        if cand.size:
            order = cand[np.argsort(np.abs(arg[cand]))]
            kept[order[: min(target, order.size)]] = True
            kept |= free & (np.abs(arg) <= 1e-9 * (1.0 + np.abs(terms.b)))
    lin = ~kept & (always_on | (free & (arg > 0)))
    history, ipm_its, rounds = [], 0, 0
    code = OK
    out = None
    disc = 0.0
    for rounds in range(1, max_rounds + 1):  # noqa: B007 (rounds is reported after the loop)
        idx = np.flatnonzero(kept)
        lin_idx = np.flatnonzero(lin)
        Chat = Cbase + (terms.adjoint(np.where(lin, terms.c, 0.0)) if lin_idx.size else 0.0)
        const = float(terms.c[lin_idx] @ terms.b[lin_idx])
        out = dnn_hinge_ipm(
            Chat, _kept_rows(terms, idx), terms.b[idx], terms.c[idx], m, tol=tol, max_iter=max_iter, const=const
        )
        ipm_its += out["iterations"]
        history.append(int(idx.size))
        p = out["p"]
        arg = terms.arguments(p)
        value = float(Cbase @ p) + float(terms.c @ np.maximum(arg, 0.0))
        bad = np.where(lin, np.maximum(-arg, 0.0), np.where(~kept, np.maximum(arg, 0.0), 0.0)) * terms.c
        disc = float(bad.sum())
        if out["status"] == "nonfinite":
            code = NONFINITE
            break
        if disc <= 0.1 * tol * max(1.0, abs(value)):
            if out["status"] != "optimal":
                code = NOT_CONVERGED
            break
        kept |= bad > 0
        lin &= ~kept
    else:
        code = NOT_CONVERGED
    alpha = np.where(lin, terms.c, 0.0)
    alpha[idx] = out["alpha"]
    return FastResult(
        matrix=out["P"],
        lam=alpha,
        xi=arg,
        sweeps=ipm_its,
        stop_value=disc,
        code=code,
        bad_index=-1,
        time=time.perf_counter() - t0,
        extra=dict(
            solver="working-set-ipm",
            nu=out["nu"],
            N=out["N"],
            Z=out["Z"],
            value=value,
            reduced_value=out["pobj"],
            reduced_dual=out["dobj"],
            rounds=rounds,
            kept=history,
            ipm_iterations=ipm_its,
            ipm_status=out["status"],
            discrepancy=disc,
            cold=cold,
        ),
    )
