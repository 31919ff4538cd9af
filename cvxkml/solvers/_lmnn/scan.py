"""The impostor scan of the active-set LMNN solver (Weinberger & Saul §6): every triplet
near its margin under the current metric, in blocks of points, without the full triplet list."""

from __future__ import annotations

import numba as nb
import numpy as np

# --------------------------------------------------------------------------- active set of impostors
_SCAN_ROWS = 256  # points per distance block of the impostor scan


def _entry_offsets(target_i, n) -> np.ndarray:
    """off[i] … off[i + 1] − 1: the target entries of point i (target_i sorted)."""
    return np.searchsorted(target_i, np.arange(n + 1)).astype(np.int64)


@nb.njit(cache=True, error_model="numpy")
def _keep_largest(idx, zz, m, cap):
    """Keep the ``cap`` largest of zz[:m] (ties: the first ones) in place, in their order, with
    their idx; returns the smallest kept.  A selection (O(m)), not a sort: at the start every
    impostor is a candidate of the nearest-impostor scan."""
    thr = np.partition(zz[:m], m - cap)[m - cap]
    ties = cap
    for t in range(m):
        if zz[t] > thr:
            ties -= 1
    k = 0
    for t in range(m):
        if zz[t] > thr or (zz[t] == thr and ties > 0):
            if zz[t] == thr:
                ties -= 1
            idx[k] = idx[t]
            zz[k] = zz[t]
            k += 1
    return thr


@nb.njit(cache=True, error_model="numpy")
def _scan_block(W, P, i0, i1, off, target_i, codes, sq, fuzz, dt, margin, cap, known, out_e, out_l, out_z):
    """One block of :func:`impostor_scan`: the points i0 … i1 − 1 (rows of the GEMM products
    ``P`` = W[i0:i1] Wᵀ) and their target entries off[i0] … off[i1] − 1.  The hinge argument
    of entry e (of point i) and impostor l (another class than i) is 1 + dt[e] − D with the
    GEMM distance D = ‖W_i‖² + ‖W_l‖² − 2 P[i − i0, l], within a = fuzz·(‖W_i‖² + ‖W_l‖²) of
    the exact value (formed here, read once per (i, l) for all of i's entries: no block-sized
    temporaries, and an impostor too far for i's widest target is passed over in one test); a
    candidate within a of −margin or of 0 is recomputed from the rows (a sum of squares, once
    per (i, l)), the others keep the GEMM value and add a to the hinge sum's error allowance.
    Returns (Σ [z]_+ + allowance, candidates above −margin, kept) and writes the kept triplets
    (outside ``known``, at most ``cap`` per entry: the largest z, in index order), entry by
    entry."""
    n = P.shape[1]
    r = W.shape[1]
    hinge = 0.0
    total = 0
    cnt = 0
    nk = known.shape[0]
    room = min(n, max(4 * cap, 64))  # kept candidates before a selection trims them to ``cap``
    kmax = 1
    for i in range(i0, i1):
        kmax = max(kmax, off[i + 1] - off[i])
    idx = np.empty((kmax, room), np.int64)
    zz = np.empty((kmax, room))
    m = np.zeros(kmax, np.int64)
    thr = np.empty(kmax)  # per entry: the cap-th largest z kept so far (once trimmed)
    for i in range(i0, i1):
        e0 = off[i]
        ke = off[i + 1] - e0
        if ke == 0:
            continue
        ci = codes[i]
        row = i - i0
        sqi = sq[i]
        top = -np.inf  # the largest 1 + dt over i's entries: z <= top − D for every entry
        for q in range(ke):
            m[q] = 0
            thr[q] = -np.inf
            if 1.0 + dt[e0 + q] > top:
                top = 1.0 + dt[e0 + q]
        for l in range(n):
            if codes[l] == ci:
                continue
            D = sqi + sq[l] - 2.0 * P[row, l]
            a = fuzz * (sqi + sq[l])
            if not top - D + a > -margin:
                continue
            s = -1.0  # the exact distance, once needed
            for q in range(ke):
                e = e0 + q
                z = 1.0 + dt[e] - D
                if not z + a > -margin:
                    continue
                exact = False
                if abs(z + margin) <= a or abs(z) <= a:
                    if s < 0.0:
                        s = 0.0
                        for c in range(r):
                            d = W[i, c] - W[l, c]
                            s += d * d
                    z = 1.0 + dt[e] - s
                    exact = True
                    if not z > -margin:
                        continue
                total += 1
                if z > 0.0:
                    hinge += z if exact else z + a
                if cap == 0 or z <= thr[q]:  # a later tie of the threshold loses to the earlier ones
                    continue
                if nk > 0:
                    key = e * n + l
                    p = np.searchsorted(known, key)
                    if p < nk and known[p] == key:
                        continue
                mq = m[q]
                idx[q, mq] = l
                zz[q, mq] = z
                mq += 1
                if mq == room and mq > cap:
                    thr[q] = _keep_largest(idx[q], zz[q], mq, cap)
                    mq = cap
                m[q] = mq
        for q in range(ke):
            mq = m[q]
            if mq > cap:
                _keep_largest(idx[q], zz[q], mq, cap)
                mq = cap
            for t in range(mq):
                out_e[cnt] = e0 + q
                out_l[cnt] = idx[q, t]
                out_z[cnt] = zz[q, t]
                cnt += 1
    return hinge, total, cnt


def impostor_scan(W, codes, target_i, target_j, margin: float, cap: int | None = None, known=None):
    """Every triplet (e, l) whose hinge argument 1 + d(i, j) − d(i, l) exceeds −``margin``
    under the distances of the rows of W (n × q: d(a, b) = ‖W_a − W_b‖²), never forming the
    full list of triplets (Weinberger & Saul's impostor search, in blocks of points).

    Distances come from a block GEMM (‖W_i‖² + ‖W_l‖² − 2 W_i·W_l), each within a round-off
    allowance a = 64ε(q + 2)(‖W_i‖² + ‖W_l‖²) of the exact one; candidates within a of a
    threshold (−margin, or 0 for the hinge) are recomputed from the rows (a sum of squares), so
    no triplet with z > −margin is missed, and the hinge sum returned is an upper bound on the
    exact Σ[z]_+ (by at most Σ a over the positive hinges: round-off).  Cost O(n²q) flops for
    the GEMM, O(n²) for the selection (an impostor beyond a point's widest target margin is passed
    over in one test for all of its k entries), O(n·k·``_SCAN_ROWS``) memory.

    Parameters
    ----------
    W : ndarray (n, q)
        Coordinates of the points under the current metric.
    codes : int array (n,)
        Class code of each point.
    target_i, target_j : int arrays (E,)
        The target entries (i, j), target_i sorted.
    margin : float >= 0
        Triplets whose hinge argument z exceeds −margin are returned.
    cap : int, optional
        Return at most this many triplets per target entry outside ``known`` (the largest z).
    known : sorted int64 array, optional
        Keys e·n + l of triplets that are not returned (already in a set).

    Returns
    -------
    entries, impostors : int64 arrays (Q,), the triplets outside ``known`` with z > −margin
    z : float array (Q,), their hinge arguments (to round-off)
    hinge_sum : float, an upper bound (to round-off) on Σ [z]_+ over every triplet
    n_candidates : int, the triplets with z > −margin (known or not)
    """
    W = np.ascontiguousarray(W, dtype=np.float64)
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    n = W.shape[0]
    off = _entry_offsets(target_i, n)
    sq = np.einsum("ij,ij->i", W, W)
    Dt = W[target_i] - W[target_j]
    dt = np.einsum("ij,ij->i", Dt, Dt)
    fuzz = 64.0 * np.finfo(float).eps * (W.shape[1] + 2)
    known = np.zeros(0, np.int64) if known is None else np.asarray(known, dtype=np.int64)
    ents, imps, zs = [], [], []
    total, hinge = 0, 0.0
    for i0 in range(0, n, _SCAN_ROWS):
        i1 = min(n, i0 + _SCAN_ROWS)
        e0, e1 = off[i0], off[i1]
        if e1 == e0:
            continue
        P = W[i0:i1] @ W.T
        m = n if cap is None else min(cap, n)
        oe = np.empty((e1 - e0) * m, np.int64)
        ol = np.empty_like(oe)
        oz = np.empty(oe.size)
        h, tot, cnt = _scan_block(W, P, i0, i1, off, target_i, codes, sq, fuzz, dt, float(margin), m, known, oe, ol, oz)
        del P
        hinge += h
        total += tot
        ents.append(oe[:cnt].copy())
        imps.append(ol[:cnt].copy())
        zs.append(oz[:cnt].copy())
    cat = lambda a, t: np.concatenate(a).astype(t) if a else np.zeros(0, t)
    return cat(ents, np.int64), cat(imps, np.int64), cat(zs, np.float64), hinge, int(total)


def _keys(entries, impostors, n) -> np.ndarray:
    return np.asarray(entries, dtype=np.int64) * n + np.asarray(impostors, dtype=np.int64)
