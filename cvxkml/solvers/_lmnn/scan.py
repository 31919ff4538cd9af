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
def _scan_block(W, D, i0, e0, e1, target_i, codes, sq, fuzz, dt, margin, cap, known, out_e, out_l, out_z):
    """One block of :func:`impostor_scan`: the entries e0 … e1 − 1 (points i0 + row of ``D``);
    the hinge argument of entry e and impostor l (another class than i) is 1 + dt[e] − D[i − i0, l]
    from the GEMM distances ``D``, within a = fuzz·(‖W_i‖² + ‖W_l‖²) of the exact value (read
    in place: no entries × n temporaries); a candidate within a of −margin or of 0 is
    recomputed from the rows (a sum of squares), the others keep the GEMM value and add a to
    the hinge sum's error allowance.  Returns (Σ [z]_+ + allowance, candidates above −margin,
    kept) and writes the kept triplets (outside ``known``, at most ``cap`` per entry: the largest
    z, in index order)."""
    n = D.shape[1]
    r = W.shape[1]
    hinge = 0.0
    total = 0
    cnt = 0
    idx = np.empty(n, np.int64)
    zz = np.empty(n)
    nk = known.shape[0]
    room = min(n, max(4 * cap, 64))  # kept candidates before a selection trims them to ``cap``
    for e in range(e0, e1):
        i = target_i[e]
        ci = codes[i]
        row = i - i0
        base = 1.0 + dt[e]
        m = 0
        thr = -np.inf  # the cap-th largest z kept so far (once trimmed): smaller ones cannot enter
        for l in range(n):
            if codes[l] == ci:
                continue
            z = base - D[row, l]
            a = fuzz * (sq[i] + sq[l])
            if not z + a > -margin:
                continue
            exact = False
            if abs(z + margin) <= a or abs(z) <= a:
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
            if cap == 0 or z <= thr:  # a later tie of the threshold loses to the earlier ones
                continue
            if nk > 0:
                key = e * n + l
                p = np.searchsorted(known, key)
                if p < nk and known[p] == key:
                    continue
            idx[m] = l
            zz[m] = z
            m += 1
            if m == room and m > cap:
                thr = _keep_largest(idx, zz, m, cap)
                m = cap
        if m > cap:
            _keep_largest(idx, zz, m, cap)
            m = cap
        for t in range(m):
            out_e[cnt] = e
            out_l[cnt] = idx[t]
            out_z[cnt] = zz[t]
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
    the GEMM, O(n²k) for the selection, O(n·k·``_SCAN_ROWS``) memory.

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
        D = W[i0:i1] @ W.T
        D *= -2.0
        D += sq[i0:i1, None]
        D += sq[None, :]
        m = n if cap is None else min(cap, n)
        oe = np.empty((e1 - e0) * m, np.int64)
        ol = np.empty_like(oe)
        oz = np.empty(oe.size)
        h, tot, cnt = _scan_block(W, D, i0, e0, e1, target_i, codes, sq, fuzz, dt, float(margin), m, known, oe, ol, oz)
        del D
        hinge += h
        total += tot
        ents.append(oe[:cnt].copy())
        imps.append(ol[:cnt].copy())
        zs.append(oz[:cnt].copy())
    cat = lambda a, t: np.concatenate(a).astype(t) if a else np.zeros(0, t)
    return cat(ents, np.int64), cat(imps, np.int64), cat(zs, np.float64), hinge, int(total)


def _keys(entries, impostors, n) -> np.ndarray:
    return np.asarray(entries, dtype=np.int64) * n + np.asarray(impostors, dtype=np.int64)
