"""The working-set phase of the KCR solver: PDHG on the pairs near a kink and the rows near
the outer kink only, certified on all n² pairs at each check."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import SolverError
from ...formulas.kcr import sq_distances_from_gram
from .kernels import _adjoint, _factor_sq_dist, _pair_dual_step, _pair_laplacian_apply, _pair_sq_dists, _rows_dual_step
from .state import _checkpoint, _Setup, _State, _Step

# --------------------------------------------------------------------------- working set
_OFF, _ON, _NEAR = 0, 1, 2  # row kinds


_ZERO, _ONE, _FREE = 0, 1, 2  # pair classes inside ON rows


class _WorkingSet:
    """The pairs PDHG iterates on, once the iterate shows which hinges are active.

    Rows whose outer hinge is clearly inactive (``OFF``: t_i = max_j s_ij = 0 and
    ρ_i = c_i + Σ_j [u_ij]₊ well below 0) are dropped (s = 0).  Rows whose outer hinge is
    clearly active (``ON``: t_i = 1, ρ_i well above 0) keep t_i = 1, and in them the pairs
    with u_ij well above 0 and s_ij = 1 are fixed at 1 (``ONE``: they enter the primal step
    as one constant r × r matrix G₁ = Aᵀ(τ∘1_ONE), in the tracked step's products as its
    dense rows L₁ in Fᵀ L₁ F V while few rows are ON, and the h̃ step as Σ τ), those well below
    0 with s_ij = 0 are fixed at 0 (``ZERO``), the others are free pairs with the box prox.
    All other rows (``NEAR``) keep all n pairs and the water-filling prox.  So the
    iteration solves eq. 9 with each fixed hinge replaced by its active (linear) or
    inactive (zero) piece; every dual iterate is a dual point of the whole problem, and
    the certificate is evaluated on all n² pairs (:meth:`full_dual`).  At each certificate
    :meth:`update` moves what the full primal point shows violated (a fixed pair whose u
    came within ``margin`` / 2 of 0, a row whose ρ came within ``row_margin`` / 2 of 0) back
    to the free part, and with ``shrink=True`` fixes what settled (beyond 2 × the margins,
    dual at its bound).  A reclassification never changes the full dual point.
    """

    def __init__(self, su: _Setup, margin: float, row_margin: float):
        self.su = su
        self.margin = float(margin)
        self.row_margin = float(row_margin)
        n = su.n
        self.kind = np.full(n, _NEAR, np.int8)
        self.cls = np.full((n, n), _FREE, np.int8)
        self.one = np.zeros((n, n), bool)
        self.G1 = np.zeros((su.r, su.r))
        self.S1 = 0.0
        self._W64 = np.empty((n, n))
        self._deg64 = np.empty(n)

    # ---- classification
    def update(self, U, s, shrink: bool, first: bool = False) -> bool:
        """Reclassify from u = 1 + τ∘(D − h̃) at the current primal point and the full dual
        s; returns whether anything changed."""
        m, rm = self.margin, self.row_margin
        rho = self.su.c + np.maximum(U, 0.0).sum(axis=1)
        t = s.max(axis=1)
        kind = self.kind.copy()
        was_on = kind == _ON
        if first or shrink:
            f = 1.0 if first else 2.0
            near = kind == _NEAR
            kind[near & (t >= 1.0) & (rho > f * rm)] = _ON
            kind[near & (t <= 0.0) & (rho < -f * rm)] = _OFF
        kind[(kind == _ON) & (rho < 0.5 * rm)] = _NEAR
        kind[(kind == _OFF) & (rho > -0.5 * rm)] = _NEAR
        cls = self.cls.copy()
        new_on = (kind == _ON) & ~was_on
        if new_on.any():  # rows entering ON: classify their pairs afresh
            f = 1.0 if first else 2.0
            Un, sn = U[new_on], s[new_on]
            cls[new_on] = np.where(
                (Un > f * m) & (sn >= 1.0), _ONE, np.where((Un < -f * m) & (sn <= 0.0), _ZERO, _FREE)
            )
        cls[(cls == _ONE) & (U < 0.5 * m)] = _FREE
        cls[(cls == _ZERO) & (U > -0.5 * m)] = _FREE
        if shrink:
            free = cls == _FREE
            cls[free & (U > 2.0 * m) & (s >= 1.0)] = _ONE
            cls[free & (U < -2.0 * m) & (s <= 0.0)] = _ZERO
        changed = first or not (
            np.array_equal(kind, self.kind) and np.array_equal(cls[kind == _ON], self.cls[kind == _ON])
        )
        if changed:
            self._set(kind, cls, s)
        return changed

    def _set(self, kind, cls, s):
        su = self.su
        on = kind == _ON
        one = on[:, None] & (cls == _ONE)
        added, removed = one & ~self.one, self.one & ~one
        n_change = int(added.sum() + removed.sum())
        if n_change * su.r < su.n * su.n:  # G₁ by the changed pairs' rank-one terms
            for mask, sign in ((added, 1.0), (removed, -1.0)):
                I, J = np.nonzero(mask)
                if I.size:
                    Z = su.Fs[I] - su.Fs[J]
                    self.G1 += sign * (Z.T @ (su.tau[I, J][:, None] * Z))
        else:
            self.G1 = _adjoint(su.Fs, one.astype(np.float64), su.tau, self._W64, self._deg64)
        self.G1 = 0.5 * (self.G1 + self.G1.T)
        self.one = one
        self.S1 = float(np.sum(su.tau[one]))
        self.kind, self.cls = kind, cls
        self.rows = np.flatnonzero(kind == _NEAR)
        I, J = np.nonzero(on[:, None] & (cls == _FREE))
        self.I, self.J = I, J
        self.tw = su.tau[I, J]
        self.nw = I.size
        self.tau_rows = su.tau[self.rows]
        self.tau_rows32 = self.tau_rows.astype(su.fdt)
        # the tracked step's products need G₁ V: with few ON rows the fixed pairs applied as
        # dense rows in the n-space product (O(n_on n p)) instead of the r × r G₁ (O(r² p))
        on_rows = np.flatnonzero(on)
        if 2 * on_rows.size * su.n < su.r * su.r:
            w1 = su.tau[on_rows] * one[on_rows]
            deg1 = w1.sum(axis=0)
            deg1[on_rows] += w1.sum(axis=1)
            self.one_rows, self.one_w = on_rows, (w1.astype(su.fdt), deg1.astype(su.fdt))
            self.G1_it = None
        else:
            self.one_rows, self.one_w = None, None
            self.G1_it = self.G1.astype(su.fdt)
        # the dual iterate of the free part: the free pairs, then the NEAR rows
        self.s = np.concatenate([s[I, J], s[self.rows].ravel()])

    def describe(self) -> dict:
        """Sizes: free pairs (in ON rows), NEAR / ON / OFF rows, pairs fixed at 1, and the
        free entries in all (free pairs + n × NEAR rows) against n²."""
        k = np.bincount(self.kind, minlength=3)
        free = self.nw + self.su.n * int(k[_NEAR])
        return dict(
            free_pairs=self.nw,
            near_rows=int(k[_NEAR]),
            on_rows=int(k[_ON]),
            off_rows=int(k[_OFF]),
            fixed_one=int(self.one.sum()),
            free_fraction=free / self.su.n**2,
        )

    # ---- views and assembly
    def split(self, vec):
        """(pair part, row part) views of a free-part vector."""
        return vec[: self.nw], vec[self.nw :].reshape(self.rows.size, self.su.n)

    def full_dual(self, vec) -> np.ndarray:
        """The n × n dual point of the whole problem: 1 on fixed ONE pairs, the free part,
        0 elsewhere."""
        sw, sr = self.split(vec)
        s = self.one.astype(np.float64)
        s[self.I, self.J] = sw
        s[self.rows] = sr
        return s

    def distances(self, FP):
        """Learned squared distances of the free pairs and of the NEAR rows at the primal
        point with features FP (n × k)."""
        dw = np.empty(self.nw)
        _pair_sq_dists(FP, self.I, self.J, dw)
        q = np.sum(FP * FP, axis=1)
        dr = q[self.rows, None] + q[None, :] - 2.0 * (FP[self.rows] @ FP.T)
        return dw, np.maximum(dr, 0.0)

    # ---- the adjoint Aᵀ(τ∘s) = G₁ + Fᵀ L(s_free) F
    def weights(self, vec, dtype):
        """Laplacian weights τ∘s of the free part (pairs, rows) and the degree vector of the
        row part, in ``dtype``."""
        sw, sr = self.split(vec)
        ww = (self.tw * sw).astype(dtype)
        wr = (self.tau_rows32 if dtype is self.su.fdt else self.tau_rows) * sr.astype(dtype)
        deg = wr.sum(axis=0)
        deg[self.rows] += wr.sum(axis=1)
        return ww, wr, deg

    def laplacian_apply(self, wts, FV):
        """L(s_free) FV (n × p) for the weights of :meth:`weights`."""
        ww, wr, deg = wts
        Y = deg[:, None] * FV
        Y[self.rows] -= wr @ FV
        Y -= wr.T @ FV[self.rows]
        _pair_laplacian_apply(self.I, self.J, ww, FV, Y)
        return Y

    def fixed_apply(self, FV, Y) -> None:
        """Y += L₁ FV for the Laplacian L₁ of the fixed ONE pairs (G₁ = Fᵀ L₁ F), from their
        dense rows (set when that is cheaper than G₁ V)."""
        w1, deg1 = self.one_w
        Y += deg1[:, None] * FV
        Y[self.one_rows] -= w1 @ FV
        Y -= w1.T @ FV[self.one_rows]

    def adjoint(self, wts, F, G1) -> np.ndarray:
        """Aᵀ(τ∘s) (r × r) in F's coordinates and precision, as float64."""
        G = (F.T @ self.laplacian_apply(wts, F)).astype(np.float64) + G1
        return 0.5 * (G + G.T)


@dataclass
class _WSState:
    """The iterate of the working-set phase: Y (a factor, and Y itself once formed), h̃,
    the free dual part, S = Σ τ∘s over all pairs, and the learned distances of the free
    part at Y.  Y = X_fac X_facᵀ is formed only where a dense r × r matrix is needed (a
    LAPACK PSD step, a restart anchor): with r close to n that O(r²k) product and the
    O(r²) step length were a large share of an iteration, and the step length comes from
    the factors (:func:`_factor_sq_dist`)."""

    X: np.ndarray | None
    X_fac: np.ndarray
    FP: np.ndarray
    h: float
    s: np.ndarray
    St: float
    Dw: np.ndarray
    Dr: np.ndarray
    wts: tuple
    fresh: bool = True  # the next PSD step is a LAPACK re-seed
    G_exp: np.ndarray | None = None  # Aᵀ(τ∘s) at this s (float64), when a certificate formed it

    def dense(self) -> np.ndarray:
        """Y = X_fac X_facᵀ (r × r), formed once per iterate."""
        if self.X is None:
            self.X = self.X_fac @ self.X_fac.T
        return self.X


def _ws_state(ws: _WorkingSet, X, X_fac, h, s_full) -> _WSState:
    """The working-set iterate at the primal point Y = X_fac X_facᵀ and the full dual s."""
    su = ws.su
    FP = su.Fs @ X_fac
    Dw, Dr = ws.distances(FP)
    return _WSState(
        X=X,
        X_fac=X_fac,
        FP=FP,
        h=h,
        s=ws.s,
        St=float(np.sum(su.tau * s_full)),
        Dw=Dw,
        Dr=Dr,
        wts=ws.weights(ws.s, su.fdt),
    )


def _ws_step(ws: _WorkingSet, w: _WSState, st: _State, tracker, k: int):
    """One PDHG step on the working set (plain PDHG; the step-size rule as in
    :func:`_pdhg_step`); returns (step, accepted, new distances)."""
    su = ws.su
    alpha, beta = st.eta / st.omega, st.eta * st.omega
    Pt = w.X_fac.astype(su.fdt)
    lam_d, a = su.lam_d_it, float(alpha)  # NumPy float64 scalars or vectors promote the block

    def apply_M(V):
        FV = su.F_it @ V
        Y = ws.laplacian_apply(w.wts, FV)
        if ws.one_w is not None:  # Aᵀ(τ∘s) V = Fᵀ (L₁ + L(s_free)) F V
            ws.fixed_apply(FV, Y)
            G = su.F_it.T @ Y
        else:
            G = ws.G1_it @ V + su.F_it.T @ Y
        return Pt @ (Pt.T @ V) - a * (G + lam_d[:, None] * V)

    def build():
        G = w.G_exp if w.G_exp is not None else ws.adjoint(w.wts, su.F_it, ws.G1)
        M = w.dense() - alpha * (G + np.diag(su.lam_d))
        return 0.5 * (M + M.T)

    P, ev = tracker(apply_M, build, exact=w.fresh or not tracker.enabled)
    FP = su.Fs @ P
    Dw, Dr = ws.distances(FP)
    hn = max(su.h_min, w.h + alpha / su.hsc**2 * w.St)
    sn = np.empty_like(w.s)
    sw, sr = ws.split(w.s)
    snw, snr = ws.split(sn)
    S1, q1, i1 = _pair_dual_step(sw, ws.tw, Dw, w.Dw, w.h, hn, beta, snw)
    S2, q2, i2 = _rows_dual_step(ws.rows, sr, Dr, w.Dr, su.codes, w.h, hn, beta, su.c, snr)
    Sn = ws.S1 + S1 + S2
    if not (np.isfinite(Sn) and np.isfinite(hn)):
        raise SolverError(
            f"KCR PDHG produced a non-finite iterate at iteration {k} "
            f"(step size {st.eta:.3g}, primal weight {st.omega:.3g}). Check the kernel matrix "
            "for huge entries, or solve without the warm start."
        )
    dx2 = _factor_sq_dist(P, w.X_fac)  # ‖Y⁺ − Y‖²_F without forming either
    num = st.omega * (dx2 + ((hn - w.h) * su.hsc) ** 2) + (q1 + q2) / st.omega
    inter = abs(i1 + i2)
    eta_max = num / (2.0 * inter) if inter > 0 else np.inf
    accept = st.eta <= eta_max
    eta_next = min((1.0 - (k + 1) ** -0.3) * eta_max, (1.0 + (k + 1) ** -0.6) * st.eta)
    st.eta = eta_next if np.isfinite(eta_next) else st.eta
    step = _Step(P=P, w=ev, Bn=None, hn=hn, sn=sn, Sn=Sn, Xn=None, num=num, dx2=dx2)
    return step, accept, (FP, Dw, Dr)


def _ws_phase(su, st, step, cert, tracker, rs, k_total, max_iter, opts, history, t0, c0):
    """Continue the solve on a working set of pairs (see :class:`_WorkingSet`) from the
    full iterate ``step``, certifying on all pairs every ``check_every`` iterations and
    moving violated hinges back into the free part; returns (k_total, status)."""
    ws_opts = opts["ws"]
    ws = _WorkingSet(su, ws_opts["margin"], ws_opts["row_margin"])
    FP = su.Fs @ step.P
    s_full = step.sn
    U = 1.0 + su.tau * (sq_distances_from_gram(FP @ FP.T) - step.hn)
    ws.update(U, s_full, shrink=False, first=True)
    w = _ws_state(ws, step.Xn, step.P, step.hn, s_full)
    rs.anchor(w.dense(), w.h, w.s, None, w.St)
    n_checks, last = 0, None
    info = dict(start=k_total, **ws.describe(), updates=0)
    while k_total < max_iter:
        while True:
            k_total += 1
            step, accept, new = _ws_step(ws, w, st, tracker, k_total)
            if accept or k_total >= max_iter:
                break
        FP, Dw, Dr = new
        w.X, w.X_fac, w.FP, w.h, w.s, w.St, w.Dw, w.Dr = step.Xn, step.P, FP, step.hn, step.sn, step.Sn, Dw, Dr
        w.wts, w.fresh, w.G_exp = ws.weights(w.s, su.fdt), False, None
        tracker.abs_tol = opts["eig_step_factor"] * np.sqrt(step.dx2)
        if k_total % opts["check_every"] == 0 or k_total >= max_iter:
            n_checks += 1
            s_full = ws.full_dual(w.s)
            B = FP @ FP.T
            Gn = ws.adjoint(ws.weights(w.s, np.float64), su.Fs, ws.G1)
            last = _Step(step.P, step.w, B, step.hn, s_full, step.Sn, step.Xn, step.num, step.dx2)
            status = _checkpoint(cert, st, last, Gn, rs, k_total, history, t0, c0, *opts["check"])
            if status is not None:
                return k_total, status, last, info
            # re-seed the PSD step after a certificate, as the full phase does, from the
            # certificate's Aᵀ(τ∘s) (a reclassification below keeps the full dual, so it stays valid)
            w.fresh, w.G_exp = True, Gn
            U = 1.0 + su.tau * (sq_distances_from_gram(B) - step.hn)
            if ws.update(U, s_full, shrink=n_checks % ws_opts["shrink_every"] == 0):
                info.update(ws.describe(), updates=info["updates"] + 1)
                if opts["check"][1]:  # verbose
                    print(f"    working set: {ws.describe()}")
                w = _ws_state(ws, w.X, w.X_fac, w.h, s_full)
                w.G_exp = Gn
                rs.anchor(w.dense(), w.h, w.s, None, w.St)
                rs.k_in = 0
                continue
        if rs.due(np.sqrt(step.num), k_total, k_total % opts["restart_every"] == 0):
            rs.restart(su, st, step)
        else:
            rs.k_in += 1
    return k_total, None, last, info
