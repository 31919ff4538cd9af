"""Trace-SSIKDR (Jain et al. 2012, §5.4, eq. 26–28, Algorithm 2, Lemma 10), derived for
exactly (26):  min_{K̃ ⪰ 0} τ tr K̃ + ‖K̃‖²_F  s.t. tr(C_i K) <= b_i,  K = K0^½ K̃ K0^½.

With a factor K0 = G Gᵀ (G n × r) the problem lives on r × r matrices K̂ (K = G K̂ Gᵀ, the
spectrum of K̂ is that of K0^-½KK0^-½); this replaces Lemma 10's eigenvectors of C K0: the
eigenpairs of C K0 with non-zero eigenvalue are those of GᵀCG (v = G u up to scaling).
For multipliers z >= 0 of the constraints tr(Â_c K̂) <= t_c (whitened), the Lagrangian is
minimized by

    K̂(z) = ½ U (μ − τ)₊ Uᵀ,   U diag(μ) Uᵀ = −Σ_c z_c Â_c,

(the factor ½ comes from the ‖·‖²_F term; the printed update (27) omits it), and the dual
g(z) = −Σ_k (μ_k − τ)₊²/4 − zᵀt is concave with ∇g_c = tr(Â_c K̂(z)) − t_c, Lipschitz with
L = ½ λ_max(Gram), Gram_cd = tr(Â_c Â_d).  The Uzawa / SVT iteration is projected gradient
ascent z ← max(z + δ ∇g(z), 0) — which, unlike the printed one-sided update
z ← z − δ max(viol, 0), can release a multiplier whose constraint is slack at the optimum —
here accelerated (FISTA with gradient restart) with δ = 1/L.  Only the eigenpairs with
μ_k > τ are needed: dense `eigh` for r <= ``dense_max``, else Lanczos (`eigsh`) on the
operator u ↦ −Σ z_c Â_c u with k grown until the k-th eigenvalue falls below τ.

Stopping: primal violation max_c (tr(Â_c K̂) − t_c)₊ <= tol_feas·scale, relative dual change
<= tol, and the duality gap (primal at K̂(z) minus g(z), meaningful when feasible) reported.

:func:`trace_pair_newton` solves the same dual by projected Newton-CG: −∇²g = 𝒜*𝒥𝒜 with
𝒥 the Daleckii–Krein derivative of ½(μ − τ)₊, applied in the eigenbasis on the k
eigenvalues above τ only (O(m r k) per Hessian product), Levenberg–Marquardt damped
(the Hessian is singular), stopped on the duality-gap certificate.  On an ill-conditioned
K0 it needs about a dozen steps where the Uzawa iteration needs hundreds
(reference/estimator-speed.md); :class:`cvxkml.estimators.TraceSSIKDR` uses it.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.sparse.linalg import ArpackError, LinearOperator, eigsh

from .._config import blas_limit
from ._newton import cg, projected_armijo, round_off
from .result import NOT_CONVERGED, OK, FastResult

__all__ = ["trace_uzawa", "trace_pair_newton", "top_eigs_above"]


@blas_limit()
def top_eigs_above(matvec, dense, r, tau, dense_max=1024, k0=6):
    """Eigenpairs (μ, U) of a symmetric r × r operator with μ > τ.

    Dense ``eigh`` for r <= ``dense_max``; above, Lanczos (``eigsh``) from a fixed start
    vector, widening k until the smallest returned eigenvalue is <= τ, and dense ``eigh``
    once k passes r/4 (Lanczos for a quarter of the spectrum costs more than all of it).  Lanczos cannot start
    on an operator that maps everything to zero (ARPACK error -9, 'Starting vector is zero':
    Trace-SSIKDR at z = 0 on n >= 257 points); that operator has no eigenvalue above τ >= 0.
    When ARPACK fails otherwise, the dense matrix is used if ``dense`` is given."""
    if dense is not None and r <= dense_max:
        mu, U = np.linalg.eigh(dense())
        keep = mu > tau
        return mu[keep], U[:, keep]
    v0 = np.random.default_rng(0).standard_normal(r)
    if not np.any(matvec(v0)):  # the zero operator (z = 0)
        return np.zeros(0), np.zeros((r, 0))
    op = LinearOperator((r, r), matvec=matvec, dtype=float)
    k = min(k0, r - 1)
    while True:
        try:
            mu, U = eigsh(op, k=k, which="LA", tol=1e-12, v0=v0)
        except ArpackError:
            if dense is None:
                raise
            mu, U = np.linalg.eigh(dense())
            keep = mu > tau
            return mu[keep], U[:, keep]
        if mu.min() <= tau or k >= r - 1:
            keep = mu > tau
            return mu[keep], U[:, keep]
        k = min(2 * k, r - 1)
        if dense is not None and 4 * k > r:  # many eigenvalues above τ: Lanczos with
            mu, U = np.linalg.eigh(dense())  # k ~ r is far slower than one dense eigh
            keep = mu > tau
            return mu[keep], U[:, keep]


@blas_limit()
def trace_uzawa(V, delta, t, tau, tol=1e-8, tol_feas=1e-7, max_iter=20_000, dense_max=1024, z0=None):
    """Solve the whitened Trace-SSIKDR dual for rank-one constraints Â_c = δ_c v_c v_cᵀ
    (rows v_c of V, targets t_c); returns a FastResult with matrix = K̂, lam = z and
    extra = {eigenvalues, eigenvectors (kept part), gap, iterations}."""
    V0 = np.ascontiguousarray(V, dtype=float)
    m, r = V0.shape
    delta = np.asarray(delta, dtype=float)
    # Jacobi scaling: constraint c divided by ‖v_c‖² (same feasible set; z_c scales by ‖v_c‖²)
    nrm2 = np.maximum(np.einsum("ij,ij->i", V0, V0), np.finfo(float).tiny)
    V = V0 / np.sqrt(nrm2)[:, None]
    t = np.asarray(t, dtype=float) / nrm2
    Gram = (V @ V.T) ** 2
    L = 0.5 * float(np.linalg.eigvalsh(Gram)[-1]) if m else 1.0
    step = 1.0 / max(L, np.finfo(float).tiny)
    z = np.zeros(m) if z0 is None else np.maximum(np.asarray(z0, dtype=float), 0.0) * nrm2
    y = z.copy()
    theta = 1.0
    scale = max(1.0, float(np.max(np.abs(t * nrm2)))) if m else 1.0

    # with m < r constraints, −Σ z_c Â_c = −Vᵀ diag(w) V = Q (−R diag(w) Rᵀ) Qᵀ (Vᵀ = QR, Q r × m
    # orthonormal): its eigenpairs are those of the m × m middle matrix, mapped by Q — exact
    QR = np.linalg.qr(V.T) if 0 < m < r else None

    def eigs_above(w):
        if QR is not None:
            Q, R = QR
            mu, u = np.linalg.eigh(-(R * w) @ R.T)
            keep = mu > tau
            return mu[keep], Q @ u[:, keep]
        return top_eigs_above(lambda u: -(V.T @ (w * (V @ u))), lambda: -(V.T * w) @ V, r, tau, dense_max)

    def primal(zz):
        w = delta * zz
        mu, U = eigs_above(w)
        s = 0.5 * (mu - tau)
        P = V @ U  # m × k
        vals = delta * ((P * P) @ s)  # tr(Â_c K̂)
        g = -float(np.sum((mu - tau) ** 2)) / 4.0 - float(zz @ t)
        return vals - t, g, mu, U, s

    t0 = time.perf_counter()
    grad, g_y, *_ = primal(y)
    code = NOT_CONVERGED
    change = np.inf
    it = 0
    for it in range(1, max_iter + 1):
        z_new = np.maximum(y + step * grad, 0.0)
        theta_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * theta * theta))
        mom = (theta - 1.0) / theta_new
        y_new = z_new + mom * (z_new - z)
        # gradient restart (O'Donoghue & Candès): drop momentum when it points downhill
        if (z_new - z) @ (y - z_new) > 0:
            y_new = z_new.copy()
            theta_new = 1.0
        den = float(np.sum(np.abs(z_new)) + np.sum(np.abs(z)))
        change = float(np.sum(np.abs(z_new - z))) / den if den > 0 else 0.0
        z, y, theta = z_new, y_new, theta_new
        grad, _, *_ = primal(y)
        if change <= tol or it % 25 == 0:
            res_z, g_z, mu, U, s = primal(z)
            viol = float(np.max(np.maximum(res_z * nrm2, 0.0), initial=0.0))  # unscaled units
            if viol <= tol_feas * scale and change <= tol:
                code = OK
                break
    elapsed = time.perf_counter() - t0
    res_z, g_z, mu, U, s = primal(z)
    Kh = (U * s) @ U.T
    return FastResult(
        0.5 * (Kh + Kh.T),
        z / nrm2,
        np.zeros(0),
        it,
        change,
        code,
        -1,
        elapsed,
        extra={
            "eigenvalues": mu,
            "rank": int(mu.size),
            "dual_value_whitened": g_z,
            "step": step,
            "solver": "uzawa-fista",
        },
    )


@blas_limit()
def _trace_newton_direction(st, V, dl, tau, bound_curv, cert, boost, cg_maxiter):
    """The damped projected Newton direction of :func:`trace_pair_newton` at the dual point
    ``st`` (its ``evaluate`` dict; ``cert`` = max(relative gap, relative violation), ``boost``
    the damping's scale): Jacobi-preconditioned CG on the Levenberg–Marquardt system over the
    free variables, the scaled gradient (curvature ``bound_curv`` where the Hessian gives
    none) on the ε-active ones.  Returns (direction, CG iterations, whether CG ran)."""
    z, grad, mu, U, act = st["z"], st["grad"], st["mu"], st["U"], st["act"]
    # eigenbasis: active eigenvalues first (P), then the flat ones (Z)
    P = np.flatnonzero(act)
    Zf = np.flatnonzero(~act)
    order = np.concatenate([P, Zf])
    Y = V @ U[:, order]
    k = P.size
    xm = 0.5 * np.maximum(mu[order] - tau, 0.0)
    dm = mu[order][:, None] - mu[order][None, :]
    tie = np.abs(dm) <= 1e-12 * max(1.0, float(np.max(np.abs(mu))))
    Gam = np.where(
        tie,
        0.5 * ((mu[order][:, None] > tau) & (mu[order][None, :] > tau)),
        (xm[:, None] - xm[None, :]) / np.where(tie, 1.0, dm),
    )[:k]  # rows P
    YP = Y[:, :k]
    YZ = Y[:, k:]
    Y2 = Y * Y
    hdiag = np.einsum("ck,ck->c", (Y2[:, :k] @ Gam), Y2)  # diag of 𝒜*𝒥𝒜 (P rows, both halves)
    hdiag = hdiag + np.einsum("ck,ck->c", Y2[:, k:] @ Gam[:, k:].T, Y2[:, :k])
    eps = min(1e-3, float(np.max(np.abs(z - np.maximum(z + grad, 0.0)), initial=0.0)))
    free = ~((z <= eps) & (grad < 0))
    floor = 1e-12 * max(float(np.max(hdiag, initial=0.0)), np.finfo(float).tiny)
    rho = min(1e8, boost * min(1e-2, max(1e-12, np.sqrt(cert))))
    damp = rho * np.maximum(hdiag, floor) + floor
    curv = np.where(hdiag > floor, hdiag + damp, bound_curv)
    d = grad / curv  # scaled gradient (active set)
    steps = 0
    newton = bool(np.any(free) and k)
    if newton:
        F = np.flatnonzero(free)
        YPf, Yf, YZf = YP[F], Y[F], YZ[F]
        dlf, gf, pre, dampf = dl[F], grad[F], 1.0 / curv[F], damp[F]

        def hv(u):
            c = dlf * u
            Dp = (YPf * c[:, None]).T @ Yf  # rows P of Yᵀ diag(c) Y
            Mp = Gam * Dp
            q = np.einsum("ij,ij->i", YPf @ Mp, Yf)
            if YZf.shape[1]:
                q += np.einsum("ij,ij->i", YZf @ Mp[:, k:].T, YPf)
            return dlf * q + dampf * u

        eta = min(0.1, max(1e-12, np.sqrt(cert)))
        u, steps = cg(hv, gf, eta, cg_maxiter, precond=pre)
        d[F] = u
    return d, steps, newton


def trace_pair_newton(V, delta, t, tau, *, tol=1e-6, max_iter=200, callback=None, cg_maxiter=300):
    """Trace-SSIKDR (eq. 26) with pair constraints on its Lagrange dual by projected
    Newton-CG, in the eigenbasis of the dual matrix (the same problem as :func:`trace_uzawa`,
    stopped on the certificate).

    Constraints tr(Â_c K̂) <= t_c with Â_c = δ_c v_c v_cᵀ (rows v_c of V).  For z >= 0,
    with U diag(μ) Uᵀ = −Σ_c z_c Â_c,

        K̂(z) = ½ U (μ − τ)₊ Uᵀ,   g(z) = −¼ Σ_k (μ_k − τ)₊² − zᵀt,
        ∇g_c = δ_c v_cᵀ K̂ v_c − t_c,   −∇²g = 𝒜*𝒥𝒜,

    𝒥 the Daleckii–Krein derivative of ½(·−τ)₊ (Γ_kl = ½((μ_k−τ)₊ − (μ_l−τ)₊)/(μ_k − μ_l),
    zero where μ_k, μ_l <= τ).  Only the k eigenpairs with μ > τ enter: with Y = V U the
    distances are (Y_k² ) s, and a Hessian product costs O(m r k) (rows of Γ ∘ Yᵀ diag Y
    on the k active eigenvalues only).  −∇²g is singular (flat f* below τ, m > rank), so
    the Newton system is Levenberg–Marquardt damped, ρ·diag(H) with ρ = min(10⁻², √gap)
    (scaled by 10 after a short step, by 0.1 after a full one), solved by Jacobi-
    preconditioned conjugate gradients; projected Newton on z >= 0 (Bertsekas 1982) with
    an Armijo search along the projection arc.

    Stopping rule (the certificate): relative duality gap Σ_c z_c (t_c − tr(Â_c K̂)) /
    max(1, |f(K̂)|) <= ``tol`` and relative violation max_c (tr(Â_c K̂) − t_c)₊ / max(1,
    |t_c|) <= ``tol``.

    Returns a FastResult (matrix = K̂ r × r, lam = z, sweeps = Newton steps, stop_value
    = max(relative gap, relative violation), code OK only when certified; extra =
    {eigenvalues, rank, gap, cg_iterations, evaluations, solver})."""
    V = np.ascontiguousarray(V, dtype=float)
    m, r = V.shape
    dl = np.asarray(delta, dtype=float)
    t = np.asarray(t, dtype=float)
    tau = float(tau)
    scale_t = np.maximum(np.abs(t), 1.0)
    t0 = time.perf_counter()
    n_eval = 0

    def evaluate(z):
        nonlocal n_eval
        n_eval += 1
        w = dl * z
        nz = np.flatnonzero(w)
        if nz.size:
            Vn = V[nz]
            C = (Vn.T * w[nz]) @ Vn
            mu, U = np.linalg.eigh(-0.5 * (C + C.T))
        else:
            mu, U = np.zeros(r), np.eye(r)
        act = mu > tau
        s = 0.5 * (mu[act] - tau)
        Yk = V @ U[:, act]  # m × k
        grad = dl * ((Yk * Yk) @ s) - t
        g = -float(np.sum((mu[act] - tau) ** 2)) / 4.0 - float(z @ t)
        f = float(tau * np.sum(s) + np.sum(s * s))  # τ tr K̂ + ‖K̂‖²_F
        if not (np.isfinite(g) and np.all(np.isfinite(grad))):
            return None
        return {"z": z, "g": g, "f": f, "grad": grad, "mu": mu, "U": U, "act": act, "s": s}

    def certificate(st):
        gap = float(st["z"] @ (-st["grad"]))
        rel_gap = abs(gap) / max(1.0, abs(st["f"]))
        rel_viol = float(np.max(np.maximum(st["grad"], 0.0) / scale_t, initial=0.0))
        return rel_gap, rel_viol

    # curvature bound of −g along e_c (Γ <= ½, ‖Â_c‖²_F = ‖v_c‖⁴): the scale of a gradient
    # step where the Hessian gives none (z = 0: K̂ = 0, g linear)
    bound_curv = np.maximum(0.5 * np.einsum("ij,ij->i", V, V) ** 2, np.finfo(float).tiny)
    st = evaluate(np.zeros(m))
    code, it, cg_total, boost = NOT_CONVERGED, 0, 0, 1.0
    rel_gap = rel_viol = np.inf
    while True:
        rel_gap, rel_viol = certificate(st)
        if rel_gap <= tol and rel_viol <= tol:
            code = OK
            break
        if it >= max_iter:
            break
        if callback is not None and callback(
            {"iteration": it, "objective": st["f"], "gap": rel_gap, "violation": rel_viol, "dual": st["z"].copy()}
        ):
            break
        z, grad = st["z"], st["grad"]
        d, steps, newton = _trace_newton_direction(
            st, V, dl, tau, bound_curv, max(rel_gap, rel_viol), boost, cg_maxiter
        )
        cg_total += steps
        new, step = projected_armijo(evaluate, z, d, st["g"], grad)
        if new is not None and step == 1.0 and not newton:
            # a pure scaled-gradient step taken in full: the curvature bound may be far too
            # large (g linear where every μ <= τ), so the step doubles while g increases
            for _ in range(40):
                cand = np.maximum(z + 2.0 * (new["z"] - z), 0.0)
                c = evaluate(cand)
                if c is None or c["g"] <= new["g"]:
                    break
                new = c
        it += 1
        boost = max(1.0, boost / 10.0) if (new is not None and step == 1.0) else min(boost * 10.0, 1e12)
        if new is None or new["g"] < st["g"] - round_off(st["g"]):
            break  # no ascent left at round-off
        st = new
    elapsed = time.perf_counter() - t0
    U, act, s = st["U"], st["act"], st["s"]
    Uk = U[:, act]
    Kh = (Uk * s) @ Uk.T
    return FastResult(
        0.5 * (Kh + Kh.T),
        st["z"],
        np.zeros(0),
        it,
        float(max(rel_gap, rel_viol)),
        code,
        -1,
        elapsed,
        extra={
            "eigenvalues": st["mu"][act],
            "rank": int(np.sum(act)),
            "gap": float(rel_gap),
            "cg_iterations": int(cg_total),
            "evaluations": int(n_eval),
            "solver": "trace-newton",
        },
    )
