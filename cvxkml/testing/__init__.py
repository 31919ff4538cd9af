"""Tools to validate a fast solver against the exact model (public; used by cvxkml's own tests).

The rules they enforce:

* **Ground truth is trustworthy or unused.**  :func:`trusted_reference` returns a conic
  solution only when its status is ``optimal``, its own Lagrange certificate (``gap``) is
  within ``cert_rtol`` of its objective and its violations are within ``viol_tol``; it
  re-solves with the other conic solver at a tighter tolerance before giving up with
  :class:`UntrustedReference`.  Inside a Hypothesis test, :func:`reference_or_discard`
  turns that into a discarded draw (``assume(False)``) and counts it (:func:`discards`).
* **``converged`` means certified.**  :func:`solve_fast_honestly` checks that a fast solve
  warns (:class:`~cvxkml.errors.ConvergenceWarning`) exactly when it says
  ``converged=False``, and that a converged solution's certificate is not negative beyond
  rounding.
* **Certificates are the arbiter.**  :func:`assert_matches_reference` compares a certified
  fast solution with a trusted reference through both certificates: each side's lower
  bound is below the other's objective, and the fast objective is within ``rtol`` of the
  best lower bound.

Examples
--------
>>> from cvxkml.testing import solve_fast_honestly, trusted_reference, assert_matches_reference
>>> fast = solve_fast_honestly(problem, tol=1e-12)              # doctest: +SKIP
>>> exact = trusted_reference(problem)                            # doctest: +SKIP
>>> assert_matches_reference(problem, fast, exact, rtol=1e-6)     # doctest: +SKIP
"""
from __future__ import annotations

import os
import warnings
from collections import Counter

import numpy as np

from ._optima import list_optima, load_optimum
from ..errors import ConvergenceWarning, CvxkmlError, InfeasibleError, SolverError

__all__ = ["UntrustedReference", "trusted_reference", "reference_or_discard", "discards",
           "solve_fast_honestly", "assert_matches_reference", "relative_violation",
           "check_regularizer", "check_contract", "contract_cases", "register_contract_case",
           "metric_instance", "kernel_instance", "factor_instance",
           "random_pairs", "forest_pairs", "triplets", "variant_instance", "feasible_instance",
           "problems", "make_random_instance",
           "cross_check", "load_optimum", "list_optima"]

_DISCARDS: Counter = Counter()


class UntrustedReference(CvxkmlError):
    """No conic solve of the exact model met the trust rules (status, certificate, violations)."""


def _scale(sol) -> float:
    return max(1.0, abs(float(sol.objective)))


def relative_violation(problem, sol) -> float:
    """Largest violation of ``sol`` relative to max(1, |target|) when the problem knows its
    targets (spectral problems), else the absolute largest violation."""
    rel = getattr(problem, "_max_relative_violation", None)
    if rel is not None:
        return float(rel(sol.violations))
    if "max_relative_violation" in sol.info:       # the Problem contract's own measure
        return float(sol.info["max_relative_violation"])
    return sol.max_violation


def _untrusted_reason(problem, sol, cert_rtol, viol_tol, require_certificate) -> str | None:
    if sol.status != "optimal":
        return f"status {sol.status!r}"
    if not np.isfinite(sol.objective):
        return "non-finite objective"
    gap = sol.gap
    if gap is None:
        if require_certificate:
            return "no certificate (dual value)"
    elif abs(gap) > cert_rtol * _scale(sol):
        return f"certificate {gap:.3g} beyond {cert_rtol:g} x {_scale(sol):.3g}"
    viol = relative_violation(problem, sol)
    if viol > viol_tol:
        return f"violation {viol:.3g} > {viol_tol:g}"
    return None


def _attempts(problem):
    """(solver, eps) pairs to try: the problem's default first, then the other conic solver
    at a tighter tolerance, then the default again at a tighter tolerance."""
    default = getattr(problem, "default_solver", lambda: "CLARABEL")().upper()
    other = "SCS" if default == "CLARABEL" else "CLARABEL"
    tight = {"CLARABEL": 1e-10, "SCS": 1e-10}
    return [(default, None), (other, tight[other]), (default, tight[default])]


def trusted_reference(problem, cert_rtol: float = 1e-7, viol_tol: float = 1e-7,
                      require_certificate: bool = True, **opts):
    """The exact model's solution, used only if it can be trusted.

    Parameters
    ----------
    problem : a declared problem with ``solve_reference(solver=, eps=, accept_inaccurate=)``.
    cert_rtol : float
        Largest accepted |objective − dual value| relative to max(1, |objective|).
    viol_tol : float
        Largest accepted (relative) constraint violation.
    require_certificate : bool
        Reject a solution without a dual value (default).  False for an exact model that
        carries none (a user's variant; every cvxkml family carries one): then status and
        violations decide.
    **opts : passed to ``solve_reference``.

    Returns
    -------
    Solution
        The first attempt that is ``optimal`` with a certificate within ``cert_rtol`` and
        violations within ``viol_tol`` (``info["reference_attempts"]`` lists the tries).

    Raises
    ------
    UntrustedReference
        When no attempt qualifies (the message lists why each was rejected).
    InfeasibleError
        When every attempt reports the problem infeasible (one solver's infeasibility
        claim against another's optimum makes the reference untrusted instead).
    """
    tried, infeasible = [], []
    for solver, eps in _attempts(problem):
        try:
            sol = problem.solve_reference(solver=solver, eps=eps, accept_inaccurate=True, **opts)
        except InfeasibleError as exc:          # a conic claim, checked against the others
            infeasible.append(exc)
            tried.append(f"{solver}(eps={eps}): {exc}")
            continue
        except SolverError as exc:
            tried.append(f"{solver}(eps={eps}): {exc}")
            continue
        reason = _untrusted_reason(problem, sol, cert_rtol, viol_tol, require_certificate)
        if reason is None:
            sol.info["reference_attempts"] = tried + [f"{solver}(eps={eps}): trusted"]
            return sol
        tried.append(f"{solver}(eps={eps}): {reason}")
    if len(infeasible) == len(tried):
        raise infeasible[0]                     # every attempt says infeasible
    raise UntrustedReference("No trustworthy exact solution: " + "; ".join(tried))


def reference_or_discard(problem, **kw):
    """:func:`trusted_reference` inside a Hypothesis test: an untrusted reference discards
    the draw (``hypothesis.assume(False)``) and is counted under the running test's name
    (:func:`discards`)."""
    from hypothesis import assume, note
    try:
        return trusted_reference(problem, **kw)
    except UntrustedReference as exc:
        test = os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0]
        _DISCARDS[test] += 1
        note(str(exc))
        assume(False)


def discards() -> dict:
    """Draws discarded by :func:`reference_or_discard` so far, per test."""
    return dict(_DISCARDS)


def solve_fast_honestly(problem, gap_rtol: float | None = None, **kw):
    """``problem.solve(**kw)``, asserting the honesty rule: it warns (ConvergenceWarning)
    exactly when it returns ``converged=False``, and a converged solution with a
    certificate has a gap no more negative than ``gap_rtol`` (default: the solve's own
    ``info["gap_tol"]``, else 1e-6) times max(1, |objective|)."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        sol = problem.solve(**kw)
    warned = any(issubclass(w.category, ConvergenceWarning) for w in rec)
    assert warned == (not sol.converged), \
        f"a non-converged solve must warn, a converged one must not (converged={sol.converged}, warned={warned})"
    if sol.converged and sol.gap is not None:
        tol = gap_rtol if gap_rtol is not None else sol.info.get("gap_tol", 1e-6)
        assert sol.gap >= -tol * _scale(sol), f"converged with a negative certificate: {sol}"
    return sol


def assert_matches_reference(problem, fast, exact, rtol: float = 1e-6, viol: float = 1e-6):
    """Assert that a certified fast solution agrees with a trusted reference.

    * the fast solution is feasible: relative violation <= ``viol``;
    * weak duality across the two: each lower bound (dual value) is at most the other's
      objective + ``rtol``·scale;
    * the fast objective is within ``rtol``·scale of the best lower bound, and of the
      reference objective.
    """
    scale = max(_scale(fast), _scale(exact))
    assert relative_violation(problem, fast) <= viol, f"fast solution infeasible: {fast}"
    lower = [s.dual_value for s in (fast, exact) if s.dual_value is not None and np.isfinite(s.dual_value)]
    for lb in lower:
        assert lb <= fast.objective + rtol * scale and lb <= exact.objective + rtol * scale, \
            f"a lower bound exceeds an objective (weak duality): fast={fast}, exact={exact}"
    if lower:
        assert fast.objective - max(lower) <= rtol * scale, \
            f"fast objective above the best lower bound by more than rtol: fast={fast}, exact={exact}"
    assert abs(fast.objective - exact.objective) <= rtol * scale, (fast, exact)


# --------------------------------------------------------------------------- regularizers
def check_regularizer(reg, seed: int = 0, n_points: int = 40, rtol: float = 1e-6) -> dict:
    """Check a spectral :class:`~cvxkml.declare.regularizers.Regularizer` before trusting
    its exact model and certificates (Jain et al. 2012, Definition 3 and Theorem 4).

    Checks, each on ``n_points`` random points:

    1. the CVXPY form ``cvx(X)`` is convex (DCP) and equals ``value(X)`` = Σ f_s(λ_i(X))
       on random positive definite X;
    2. Fenchel–Young: f_s(x) + f*_s(μ) >= xμ for x >= 0, with equality at
       x = ``conj_grad_s(μ)`` (so ``conj_s`` is the conjugate over x >= 0 and
       ``conj_grad_s`` its maximizer);
    3. ``conj_grad_s`` against central finite differences of ``conj_s``, and
       ``conj_hess_s`` against those of ``conj_grad_s`` (when implemented);
    4. Theorem 4's condition on α (``check_theorem4``).

    Returns
    -------
    dict
        The largest relative error of each check (``cvx``, ``fenchel_young``,
        ``conj_grad``, ``conj_hess``).

    Raises
    ------
    AssertionError
        Naming the check that failed, the point and the two values.
    """
    import cvxpy as cp
    rng = np.random.default_rng(seed)
    reg.check_theorem4()
    out = {}
    # 1. CVXPY form vs value
    err = 0.0
    for _ in range(max(3, n_points // 8)):
        r = int(rng.integers(1, 5))
        B = rng.normal(size=(r, r))
        A = B @ B.T / r + 0.1 * np.eye(r)
        X = cp.Variable((r, r), symmetric=True)
        expr = reg.cvx(X)
        assert expr.is_convex(), f"{reg!r}: cvx(X) is not convex under DCP rules"
        X.value = A
        got, want = float(expr.value), reg.value(A)
        e = abs(got - want) / max(1.0, abs(want))
        assert e <= rtol, f"{reg!r}: cvx(X) = {got!r} but value(X) = {want!r} at X = {A.tolist()}"
        err = max(err, e)
    out["cvx"] = err
    # 2. Fenchel–Young on x >= 0, equality at the conjugate's maximizer
    a = max(float(reg.alpha), 0.0)
    mus = np.concatenate([rng.normal(size=n_points) * 2.0, [0.0]])
    with np.errstate(all="ignore"):
        fc = np.asarray(reg.conj_s(mus), dtype=float)
    mus, fc = mus[np.isfinite(fc)], fc[np.isfinite(fc)]
    assert mus.size, f"{reg!r}: conj_s is infinite at every probe μ"
    xs = np.abs(rng.normal(size=n_points)) * (1.0 + a) * 2.0
    err = 0.0
    with np.errstate(all="ignore"):
        for mu, c in zip(mus, fc):
            fx = np.asarray(reg.f_s(xs), dtype=float)
            ok = np.isfinite(fx)
            slack = fx[ok] + c - xs[ok] * mu
            scale = 1.0 + np.abs(fx[ok]) + abs(c)
            bad = np.flatnonzero(slack < -rtol * scale)
            assert not bad.size, (f"{reg!r}: Fenchel–Young fails, f_s({xs[ok][bad[0]]:g}) + f*_s({mu:g}) < "
                                  f"x·μ (conj_s is not the conjugate of f_s over x >= 0)")
            try:
                xm = float(np.asarray(reg.conj_grad_s(np.array([mu])), dtype=float).ravel()[0])
            except NotImplementedError:
                continue
            fxm = float(np.asarray(reg.f_s(np.array([xm])), dtype=float).ravel()[0])
            e = abs(fxm + c - xm * mu) / (1.0 + abs(fxm) + abs(c))
            assert e <= rtol, (f"{reg!r}: at μ = {mu:g}, x = conj_grad_s(μ) = {xm:g} does not attain "
                               f"the conjugate: f_s(x) + f*_s(μ) − xμ = {fxm + c - xm * mu:.3g}")
            err = max(err, e)
    out["fenchel_young"] = err
    # 3. derivatives by central differences
    for name, f, df in (("conj_grad", reg.conj_s, reg.conj_grad_s), ("conj_hess", reg.conj_grad_s, reg.conj_hess_s)):
        err = 0.0
        try:
            for mu in mus:
                h = 1e-5 * (1.0 + abs(mu))
                with np.errstate(all="ignore"):
                    f0, fp, fm = (float(np.asarray(f(np.array([mu + s * h])), dtype=float).ravel()[0])
                                  for s in (0, 1, -1))
                    d = float(np.asarray(df(np.array([mu])), dtype=float).ravel()[0])
                fd = (fp - fm) / (2 * h)
                if not (np.isfinite(fd) and np.isfinite(d)):
                    continue
                if abs((fp - f0) - (f0 - fm)) > 1e-3 * h * (1.0 + abs(fd)):
                    continue                     # a kink (e.g. max(μ, 0) at 0): not differentiable
                e = abs(fd - d) / (1.0 + abs(d))
                assert e <= 1e-4, f"{reg!r}: {name}_s({mu:g}) = {d:.8g} but finite differences give {fd:.8g}"
                err = max(err, e)
        except NotImplementedError:
            err = None
        out[name] = err
    return out


# --------------------------------------------------------------------------- instances
def random_pairs(rng, n, m):
    """m distinct index pairs i < j out of n points."""
    all_i, all_j = np.triu_indices(n, 1)
    pick = rng.choice(all_i.size, size=min(m, all_i.size), replace=False)
    return all_i[pick], all_j[pick]


def forest_pairs(rng, n, m):
    """Up to m edges of a random spanning tree: their difference vectors are generically
    independent, so any positive distances are attainable (hard draws stay feasible)."""
    order = rng.permutation(n)
    i, j = [], []
    for t in range(1, n):                        # random tree: attach order[t] to an earlier node
        i.append(order[t])
        j.append(order[rng.integers(0, t)])
    keep = rng.choice(n - 1, size=min(m, n - 1), replace=False)
    return np.array(i)[keep], np.array(j)[keep]


def _bounded_pairs(rng, i, j, baseline, n, percentiles):
    from ..sideinfo import PairConstraints, percentile_bounds
    y = rng.choice([-1.0, 1.0], size=i.size)
    u, l = percentile_bounds(baseline, n, percentiles, rng)
    return PairConstraints(i, j, y, np.where(y > 0, u, l))


def metric_instance(seed, n, d, m, hard, percentiles=(5.0, 95.0)):
    """(X, PairConstraints) for metric learning; hard draws use at most d forest pairs
    (feasible by construction), bounds are percentiles of squared baseline distances."""
    from ..sideinfo import baseline_metric
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 2.0, size=d)
    i, j = forest_pairs(rng, n, min(m, d)) if hard else random_pairs(rng, n, m)
    return X, _bounded_pairs(rng, i, j, baseline_metric(X), n, percentiles)


def kernel_instance(seed, n, m, hard, kind="gaussian", percentiles=(5.0, 95.0)):
    """(K0, PairConstraints); kind: 'gaussian' (PD), 'linear-ridge' (PD) or 'lowrank'
    (rank d < n: the range-space path).  Hard draws use at most rank(K0) forest pairs."""
    from ..kernels import gaussian_kernel
    from ..sideinfo import baseline_kernel
    rng = np.random.default_rng(seed)
    if kind == "lowrank":
        d = int(rng.integers(2, max(3, n - 1)))
        X = rng.normal(size=(n, d))
        K0 = X @ X.T
        rank = d
    else:
        X = rng.normal(size=(n, 3))
        if kind == "gaussian":
            sq = np.sum((X[:, None] - X[None]) ** 2, axis=-1)
            K0 = gaussian_kernel(X, sigma=float(np.sqrt(np.median(sq[sq > 0]))))
        else:
            K0 = X @ X.T + 0.5 * np.eye(n)
        rank = n
    i, j = forest_pairs(rng, n, min(m, rank)) if hard else random_pairs(rng, n, m)
    return K0, _bounded_pairs(rng, i, j, baseline_kernel(K0), n, percentiles)


def factor_instance(seed, n, r, m, hard):
    """(G0, PairConstraints) for low-rank LogDet on K0 = G0 G0ᵀ of rank r."""
    from ..sideinfo import PairConstraints, baseline_metric, percentile_bounds
    rng = np.random.default_rng(seed)
    G0 = rng.normal(size=(n, r)) * rng.uniform(0.5, 2.0, size=r)
    i, j = forest_pairs(rng, n, min(m, r)) if hard else random_pairs(rng, n, m)
    u, l = percentile_bounds(baseline_metric(G0), n, (5, 95), rng)   # bounds, then signs
    y = rng.choice([-1.0, 1.0], size=i.size)
    return G0, PairConstraints(i, j, y, np.where(y > 0, u, l))


def triplets(rng, labels_or_n, m):
    """m relative-comparison triplets (i, j, k): with labels, j shares i's class and k does
    not (the usual side information); with a number of points, random distinct triples."""
    out = []
    if np.ndim(labels_or_n) == 0:
        n = int(labels_or_n)
        while len(out) < m:
            out.append(tuple(rng.choice(n, 3, replace=False)))
    else:
        lab = np.asarray(labels_or_n)
        for _ in range(100 * m):
            if len(out) == m:
                break
            a, b, c = rng.integers(0, lab.size, 3)
            if a != b and lab[a] == lab[b] and lab[a] != lab[c]:
                out.append((a, b, c))
    t = np.array(out, dtype=np.int64).reshape(-1, 3)
    return t[:, 0], t[:, 1], t[:, 2]


def variant_instance(seed, n, m, regularizer=None, kernel=False, hard_pairs=True, C=1.0):
    """A declared variant mixing hard and hinge-slack constraints, feasible by construction:
    ``SpectralMetric`` (or ``SpectralKernel`` with ``kernel=True``, Gaussian K0) with the given
    regularizer (default LogDet), up to min(m, dim) hard forest pairs (``hard_pairs``; else
    random pairs under :class:`~cvxkml.sideinfo.Hinge`) and m relative triplets under
    ``Hinge(…, C)`` whose margin is the median squared baseline distance (so many are active)."""
    from .. import declare
    from ..kernels import gaussian_kernel
    from ..sideinfo import Hinge, RelativeConstraints, baseline_kernel, baseline_metric
    rng = np.random.default_rng(seed)
    d = 3
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 2.0, size=d)
    reg = declare.LogDet() if regularizer is None else regularizer
    if kernel:
        sq = np.sum((X[:, None] - X[None]) ** 2, axis=-1)
        K0 = gaussian_kernel(X, sigma=float(np.sqrt(np.median(sq[sq > 0]))))
        baseline, dim = baseline_kernel(K0), n
    else:
        baseline, dim = baseline_metric(X), d
    i, j = forest_pairs(rng, n, min(m, dim)) if hard_pairs else random_pairs(rng, n, m)
    pairs = _bounded_pairs(rng, i, j, baseline, n, (5.0, 95.0))
    ti, tj, tk = triplets(rng, n, m)
    margin = float(np.median(baseline(np.arange(n), np.roll(np.arange(n), 1))))
    rel = Hinge(RelativeConstraints(ti, tj, tk, np.full(ti.size, margin)), C)
    cons = [pairs if hard_pairs else Hinge(pairs, C), rel]
    return declare.SpectralKernel(K0, cons, reg) if kernel else declare.SpectralMetric(X, cons, reg)


_CONSTRAINT_FAMILIES = ("pairs", "triplets", "similarity", "linear")


def _random_spd(rng, k):
    """Q diag(e^g) Qᵀ: Q a random rotation, g ~ N(0, 0.7²) — above and below the identity."""
    Q = np.linalg.qr(rng.normal(size=(k, k)))[0]
    return (Q * np.exp(0.7 * rng.normal(size=k))) @ Q.T


def feasible_instance(seed, n, m, families=("pairs", "triplets"), regularizer=None, kernel=False,
                      hard=True, C=1.0, rank=None, d=3):
    """A declared spectral problem with any mix of constraint families, feasible by
    construction: every constraint holds with a 5 % margin at a random positive definite
    target M* (K* = K0^½ Q e^G Qᵀ K0^½ on range(K0) for a kernel problem, W* = Q e^G Qᵀ for
    a metric one, G diagonal N(0, 0.7²)), so hard constraints never conflict, while M0
    (M* with G = 0) violates many of them.

    Parameters
    ----------
    seed : int.  n : points.  m : constraints per family.
    families : subset of ("pairs", "triplets", "similarity", "linear").
    regularizer : the spectral regularizer (default LogDet()).
    kernel : SpectralKernel on a Gaussian K0 (True) or SpectralMetric on X (n × d).
    hard : True: hard constraints; False: every family under ``Hinge(…, C)``.
    rank : kernel problems only: a rank-``rank`` K0 (linear kernel of rank-``rank`` points)
        instead of the Gaussian one; the target stays on range(K0).
    d : features of X.

    Returns
    -------
    SpectralMetric or SpectralKernel
    """
    from .. import declare
    from ..kernels import gaussian_kernel
    from ..sideinfo import (Hinge, LinearConstraints, PairConstraints, RelativeConstraints,
                           SimilarityConstraints)
    bad = [f for f in families if f not in _CONSTRAINT_FAMILIES]
    if bad or not families:
        raise ValueError(f"families must be a non-empty subset of {_CONSTRAINT_FAMILIES}; got {families!r}")
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 2.0, size=d)
    if kernel:
        if rank is not None:
            Y = rng.normal(size=(n, rank))
            K0 = Y @ Y.T
        else:
            sq = np.sum((X[:, None] - X[None]) ** 2, axis=-1)
            K0 = gaussian_kernel(X, sigma=float(np.sqrt(np.median(sq[sq > 0]))))
        w, V = np.linalg.eigh(K0)
        keep = w > 1e-10 * w.max()
        half = V[:, keep] * np.sqrt(w[keep])                # K0 = half halfᵀ on its range
        target = half @ _random_spd(rng, half.shape[1]) @ half.T
        dist = lambda a, b: target[a, a] + target[b, b] - 2 * target[a, b]      # noqa: E731
        inner = lambda a, b: target[a, b]                                       # noqa: E731
        dim = n
    else:
        target = _random_spd(rng, d)
        dist = lambda a, b: np.einsum("ij,jk,ik->i", X[a] - X[b], target, X[a] - X[b])  # noqa: E731
        inner = lambda a, b: np.einsum("ij,jk,ik->i", X[a], target, X[b])               # noqa: E731
        dim = d
    wrap = (lambda c: c) if hard else (lambda c: Hinge(c, C))
    cons = []
    if "pairs" in families:
        i, j = random_pairs(rng, n, m)
        y = rng.choice([-1.0, 1.0], size=i.size)
        dd = dist(i, j)
        keep = dd > 1e-9 * max(1.0, float(np.max(dd)))
        i, j, y, dd = i[keep], j[keep], y[keep], dd[keep]
        cons.append(wrap(PairConstraints(i, j, y, np.where(y > 0, 1.05 * dd, 0.95 * dd))))
    if "triplets" in families:
        ti, tj, tk = triplets(rng, n, m)
        dj, dk = dist(ti, tj), dist(ti, tk)
        swap = dj > dk                                        # orient so d*(i, j) <= d*(i, k)
        tj, tk = np.where(swap, tk, tj), np.where(swap, tj, tk)
        cons.append(wrap(RelativeConstraints(ti, tj, tk, 0.5 * np.abs(dk - dj))))
    if "similarity" in families:
        a, b = random_pairs(rng, n, m)
        s_ab = inner(a, b)
        cons.append(wrap(SimilarityConstraints(a, b, s_ab - 0.05 * np.maximum(np.abs(s_ab), 1e-3))))
    if "linear" in families:
        # ± z zᵀ: an upper bound where M0 exceeds M* along z, a lower bound where it falls
        # short, each 10 % of the way from M* to M0 — met by M*, violated by M0
        Z = rng.normal(size=(m, dim))
        M0 = K0 if kernel else np.eye(d)
        at_target = np.einsum("ti,ij,tj->t", Z, target, Z)
        at_start = np.einsum("ti,ij,tj->t", Z, M0, Z)
        sign = np.where(at_start > at_target, 1.0, -1.0)
        Cs = sign[:, None, None] * np.einsum("ti,tj->tij", Z, Z)
        cons.append(wrap(LinearConstraints(b=sign * (at_target + 0.1 * (at_start - at_target)), C=Cs)))
    reg = declare.LogDet() if regularizer is None else regularizer
    return declare.SpectralKernel(K0, cons, reg) if kernel else declare.SpectralMetric(X, cons, reg)


def make_random_instance(n: int, d: int, n_pairs: int, gamma: float | None = 1.0,
                         kind: str = "metric", random_state=None, n_classes: int = 2,
                         percentiles=(5.0, 95.0)):
    """A small random LogDet problem with pair constraints.

    n points in d dimensions are drawn from ``n_classes`` Gaussian clusters (standard
    normal centres, standard normal noise, so the clusters overlap).  ``n_pairs`` distinct pairs of points are
    drawn without replacement; a pair is similar (+1) when both points come from the
    same cluster, dissimilar (−1) otherwise.  The bounds u, l are the ``percentiles``
    of the squared baseline distances over all pairs.

    ``kind="metric"``: :class:`cvxkml.ITML` on X with W0 = I (d × d matrix).
    ``kind="kernel"``: :class:`cvxkml.LogDetKernel` on K0 = the Gaussian kernel of X with
    σ² = median squared distance / 2, plus 1e-3·I so that K0 is safely positive definite
    (n × n matrix).  ``gamma`` is the LogDet slack weight (``None``: hard constraints,
    which random pairs may make infeasible).  Returns the problem object; its
    ``pairs`` hold the constraints, ``M0`` the prior, ``X`` (metric) the points.
    """
    from .. import declare
    from ..errors import InvalidInputError
    from ..kernels import gaussian_kernel, kernel_sq_distances
    from ..sideinfo import PairConstraints

    n, d, n_pairs = int(n), int(d), int(n_pairs)
    if n < 2 or d < 1:
        raise InvalidInputError(f"Need n >= 2 points and d >= 1 dimensions; got n={n}, d={d}.")
    total = n * (n - 1) // 2
    if not 1 <= n_pairs <= total:
        raise InvalidInputError(f"n_pairs must be between 1 and n(n-1)/2 = {total}; got {n_pairs}.")
    if kind not in ("metric", "kernel"):
        raise InvalidInputError(f"kind must be 'metric' or 'kernel'; got {kind!r}.")
    rng = np.random.default_rng(random_state)
    labels = rng.integers(0, max(1, int(n_classes)), n)
    centres = rng.standard_normal((max(1, int(n_classes)), d))
    X = centres[labels] + rng.standard_normal((n, d))
    iu, ju = np.triu_indices(n, 1)
    pick = rng.choice(total, n_pairs, replace=False)
    i, j = iu[pick], ju[pick]
    y = np.where(labels[i] == labels[j], 1.0, -1.0)
    D = kernel_sq_distances(X @ X.T)
    if kind == "kernel":
        sigma2 = float(np.median(D[iu, ju])) / 2.0
        K0 = gaussian_kernel(X, gamma=1.0 / (2.0 * sigma2)) + 1e-3 * np.eye(n)
        D = kernel_sq_distances(K0)
    u, l = np.percentile(D[iu, ju], percentiles)
    pairs = PairConstraints(i, j, y, np.where(y > 0, u, l))
    if kind == "metric":
        return declare.ITML(X, pairs, gamma=gamma)
    return declare.LogDetKernel(K0, pairs, gamma=gamma)


def cross_check(problems_or_strategy, n_draws: int = 20, rtol: float = 1e-6, seed: int = 0,
                solver=None, **solve_kw) -> dict:
    """Validate a problem's fast solve against its trusted exact model on many draws.

    Parameters
    ----------
    problems_or_strategy : iterable of problems, a callable ``seed -> problem``, or a
        Hypothesis strategy of problems (e.g. :func:`problems`).
    n_draws : number of problems drawn (callable / strategy).
    rtol : agreement asked of :func:`assert_matches_reference`.
    seed : first seed for a callable (draws use seed, seed + 1, …).
    solver : callable ``problem -> Solution`` or None
        The solver under test (e.g. your own); None: ``problem.solve(**solve_kw)`` through
        :func:`solve_fast_honestly` (which also checks the warning/``converged`` rule).
    solve_kw : passed to ``problem.solve``.

    Returns
    -------
    dict with ``draws``, ``checked``, ``discarded`` (untrusted reference or infeasible),
    ``max_gap`` (largest relative |fast − exact| objective difference) and ``failures``
    (list of (problem, message)).  Nothing is raised: the caller asserts on the tally.
    """
    if hasattr(problems_or_strategy, "example") and hasattr(problems_or_strategy, "map"):
        from hypothesis import HealthCheck, given, settings
        drawn = []

        @settings(max_examples=n_draws, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        @given(problems_or_strategy)
        def _collect(p):
            drawn.append(p)
        _collect()
        items = drawn
    elif callable(problems_or_strategy):
        items = (problems_or_strategy(seed + k) for k in range(n_draws))
    else:
        items = problems_or_strategy
    out = {"draws": 0, "checked": 0, "discarded": 0, "max_gap": 0.0, "failures": []}
    for prob in items:
        out["draws"] += 1
        try:
            exact = trusted_reference(prob)
        except (UntrustedReference, InfeasibleError):
            out["discarded"] += 1
            continue
        try:
            fast = solve_fast_honestly(prob, **solve_kw) if solver is None else solver(prob)
            assert_matches_reference(prob, fast, exact, rtol=rtol, viol=rtol)
        except Exception as exc:                # noqa: BLE001 - a crash of the solver under test is a failure
            out["failures"].append((prob, f"{type(exc).__name__}: {exc}"))
            continue
        out["checked"] += 1
        out["max_gap"] = max(out["max_gap"], abs(fast.objective - exact.objective) / _scale(exact))
    return out


_FAMILIES = ("itml", "logdet-kernel", "lowrank", "vonneumann-metric", "vonneumann-kernel",
             "hinge-metric", "hinge-kernel", "feasible-metric", "feasible-kernel")


def problems(family: str, hard: bool | None = None, max_n: int = 12, max_m: int = 12,
             gammas=(0.1, 1.0, 10.0), regularizer=None, families=None):
    """A Hypothesis strategy of declared problems of one family, feasible when hard.

    Parameters
    ----------
    family : 'itml', 'logdet-kernel', 'lowrank', 'vonneumann-metric', 'vonneumann-kernel',
        or 'hinge-metric' / 'hinge-kernel' (:func:`variant_instance`: any ``regularizer``,
        hinge-slack triplets, pairs hard or under Hinge), or 'feasible-metric' /
        'feasible-kernel' (:func:`feasible_instance`: any ``regularizer``, any non-empty
        subset of the constraint ``families`` drawn — pairs, triplets, similarity, linear —
        hard or under Hinge; the kernel ones on a Gaussian or a rank-deficient K0).
    families : the constraint families the 'feasible-*' strategies draw from (default all).
    hard : True (hard constraints, feasible by construction), False (slack, γ drawn from
        ``gammas``; hinge families: pairs under Hinge) or None (both).
    regularizer : the hinge families' regularizer (default LogDet()).
    max_n, max_m : largest number of points and of pair constraints.

    Examples
    --------
    >>> from hypothesis import given
    >>> @given(problems("itml", max_n=8))                        # doctest: +SKIP
    ... def test_my_solver(problem):
    ...     fast = solve_fast_honestly(problem, tol=1e-12)
    ...     assert_matches_reference(problem, fast, reference_or_discard(problem))
    """
    from hypothesis import strategies as st
    from .. import declare
    if family not in _FAMILIES:
        raise ValueError(f"family must be one of {', '.join(_FAMILIES)}; got {family!r}")
    if max_n < 3 or max_m < 1:
        raise ValueError("max_n must be >= 3 and max_m >= 1")

    def build(seed, n, m, is_hard, gamma, kind, d, fams):
        g = None if is_hard else gamma
        if family.startswith("feasible-"):
            rank = min(d, n - 1) if kind == "lowrank" else None
            return feasible_instance(seed, n, m, fams, regularizer, kernel=family == "feasible-kernel",
                                     hard=is_hard, C=gamma, rank=rank)
        if family.startswith("hinge-"):
            return variant_instance(seed, n, m, regularizer, kernel=family == "hinge-kernel",
                                    hard_pairs=is_hard, C=gamma)
        if family == "itml":
            X, pc = metric_instance(seed, n, d, m, is_hard)
            return declare.ITML(X, pc, gamma=g)
        if family == "vonneumann-metric":
            X, pc = metric_instance(seed, n, d, m, is_hard)
            return declare.SpectralMetric(X, pc, declare.VonNeumann(), gamma=g)
        if family == "lowrank":
            G0, pc = factor_instance(seed, n, min(d, n), m, is_hard)
            return declare.LowRankLogDet(G0, pc, gamma=g)
        K0, pc = kernel_instance(seed, n, m, is_hard, kind=kind)
        if family == "logdet-kernel":
            return declare.LogDetKernel(K0, pc, gamma=g)
        return declare.VonNeumannKernel(K0, pc, gamma=g)

    hards = st.just(hard) if hard is not None else st.booleans()
    pool = list(_CONSTRAINT_FAMILIES if families is None else families)
    fams = st.lists(st.sampled_from(pool), min_size=1, max_size=len(pool), unique=True).map(tuple)
    return st.builds(build, seed=st.integers(0, 2**31 - 1), n=st.integers(3, max_n),
                     m=st.integers(1, max_m), is_hard=hards, gamma=st.sampled_from(list(gammas)),
                     kind=st.sampled_from(["gaussian", "linear-ridge", "lowrank"]),
                     d=st.integers(1, 6), fams=fams)


# --------------------------------------------------------------------------- the contract
_CONTRACT_CASES: dict = {}


def register_contract_case(cls, factory, solve_kw=None, rtol: float = 1e-6, fast: bool = True):
    """Register how to build small instances of a :class:`~cvxkml.declare.Problem` subclass
    for :func:`check_contract` (cvxkml's contract test runs every registered class, and
    fails for a class in :mod:`cvxkml.declare` without one).

    Parameters
    ----------
    cls : the problem class.
    factory : callable ``seed -> problem`` (a small instance whose exact model solves in
        about a second).
    solve_kw : keyword arguments of ``problem.solve`` for the comparison (e.g. a tolerance).
    rtol : the agreement asked of :func:`assert_matches_reference`.
    fast : False when the class has no fast solver (its ``solve()`` must then raise
        :class:`~cvxkml.errors.InvalidInputError` saying so).
    """
    _CONTRACT_CASES[cls] = {"factory": factory, "solve_kw": dict(solve_kw or {}), "rtol": rtol,
                            "fast": fast}


def contract_cases() -> dict:
    """{problem class: case} of every registered class (cvxkml's own are registered on
    first use; see :func:`register_contract_case`)."""
    if not _CONTRACT_CASES or not getattr(contract_cases, "_builtin", False):
        _register_builtin_cases()
        contract_cases._builtin = True
    return dict(_CONTRACT_CASES)


def check_contract(problem, solve_kw=None, rtol: float = 1e-6, fast: bool = True) -> dict:
    """Run one declared problem through the :class:`~cvxkml.declare.Problem` contract.

    Checks, in order: it is a ``Problem``; ``to_cvxpy()`` is a DCP ``cvxpy.Problem``; bad
    ``solve_reference`` / ``solve`` options raise :class:`~cvxkml.errors.InvalidInputError`;
    the exact answer is trustworthy (:func:`trusted_reference`: ``optimal``, its own
    certificate within 1e-7, violations within 1e-7); the fast solve is honest
    (:func:`solve_fast_honestly`) and certified, and agrees with the exact answer through
    both certificates (:func:`assert_matches_reference` at ``rtol``).

    Returns
    -------
    dict with ``exact_objective``, ``exact_gap`` (relative certificate), ``exact_time``, and
    with a fast solver ``fast_gap``, ``rel_diff`` (relative objective difference),
    ``fast_time``.  Raises AssertionError naming what broke, and
    :class:`UntrustedReference` / InfeasibleError when the exact side cannot be trusted
    (the caller counts those draws as discarded).
    """
    import time

    import cvxpy as cp

    from ..declare.problem import Problem
    from ..errors import InvalidInputError

    def raises(call, what):
        try:
            call()
        except InvalidInputError:
            return
        except Exception as exc:                 # noqa: BLE001 - any other type breaks the contract
            raise AssertionError(f"{what}: raised {type(exc).__name__}, not InvalidInputError: {exc}") from exc
        raise AssertionError(f"{what}: accepted")

    name = type(problem).__name__
    assert isinstance(problem, Problem), f"{name} is not a cvxkml.declare.Problem"
    model = problem.to_cvxpy()
    assert isinstance(model, cp.Problem) and model.is_dcp(), f"{name}.to_cvxpy() is not a DCP cvxpy.Problem"
    raises(lambda: problem.solve_reference(solver=3), f"{name}.solve_reference(solver=3)")
    raises(lambda: problem.solve_reference(eps=-1.0), f"{name}.solve_reference(eps=-1.0)")
    t0 = time.perf_counter()
    exact = trusted_reference(problem)
    out = {"exact_time": time.perf_counter() - t0, "exact_objective": float(exact.objective),
           "exact_gap": float(exact.gap) / _scale(exact)}
    assert exact.converged, f"{name}: a trusted reference must say converged=True: {exact}"
    if not fast:
        raises(lambda: problem.solve(), f"{name}.solve() (no fast solver)")
        return out
    raises(lambda: problem.solve(tol=-1.0), f"{name}.solve(tol=-1.0)")
    raises(lambda: problem.solve(callback=3), f"{name}.solve(callback=3)")
    kw = dict(solve_kw or {})
    t0 = time.perf_counter()
    fast_sol = solve_fast_honestly(problem, **kw)
    out["fast_time"] = time.perf_counter() - t0
    assert fast_sol.converged, f"{name}: the fast solve did not certify: {fast_sol}"
    assert fast_sol.gap is not None, f"{name}: a converged fast solve carries no certificate"
    assert_matches_reference(problem, fast_sol, exact, rtol=rtol, viol=rtol)
    out["fast_gap"] = float(fast_sol.gap) / _scale(fast_sol)
    out["rel_diff"] = abs(fast_sol.objective - exact.objective) / max(_scale(fast_sol), _scale(exact))
    return out


def _pola_instance(seed, kernel):
    from .. import declare
    from ..sideinfo import baseline_kernel, baseline_metric
    rng = np.random.default_rng(seed)
    n, d = 8, 3
    X = rng.normal(size=(n, d))
    A = X @ X.T + 0.5 * np.eye(n) if kernel else X
    i, j = forest_pairs(rng, n, n - 1 if kernel else d)
    y = rng.permutation(np.resize([1.0, -1.0], i.size))           # both kinds of pair
    base = (baseline_kernel(A) if kernel else baseline_metric(X))(i, j)
    pc = declare.pola_constraints(i, j, y, 1.0 + float(np.median(base)))
    return declare.POLAKernel(A, pc) if kernel else declare.POLAMetric(X, pc)


def _labelled(seed, n=10, n_classes=2, d=3, shift=1.0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % n_classes
    rng.shuffle(y)
    return rng.normal(size=(n, d)) + shift * y[:, None], y


def _register_builtin_cases():
    """cvxkml's own classes: small instances of each (n <= 12), feasible by construction."""
    import cvxpy as cp

    from .. import declare
    from ..kernels import gaussian_kernel
    from ..sideinfo import PairConstraints

    def spectral_kernel(seed):
        return variant_instance(seed, 8, 6, declare.Frobenius(), kernel=True)

    def kcr(seed):
        X, y = _labelled(seed, n=10)
        sq = np.sum((X[:, None] - X[None]) ** 2, axis=-1)
        return declare.KCR(gaussian_kernel(X, sigma=float(np.sqrt(np.median(sq[sq > 0])))), y, 1.0)

    def embedding(seed):
        rng = np.random.default_rng(seed)
        A = rng.normal(size=(5, 3))
        return declare.EmbeddingWeightProblem(A @ A.T + 0.1 * np.eye(5))

    def reweighting(seed):
        X, y = _labelled(seed, n=12)
        rng = np.random.default_rng(seed)
        i, j = random_pairs(rng, 12, 6)
        same = y[i] == y[j]
        pairs = np.stack([i[same], j[same]], axis=1) if same.any() else np.array([[0, 1]])
        return declare.SpectralReweighting.from_kernel(gaussian_kernel(X, sigma=2.0), pairs)

    def extended(seed):
        X, pc = metric_instance(seed, 8, 3, 5, hard=False)
        return declare.ITML(X, pc, gamma=1.0).extend(
            term=lambda W: 0.1 * cp.sum(cp.abs(W - cp.diag(cp.diag(W)))))

    def iplr(seed):
        X, pc = metric_instance(seed, 10, 4, 6, hard=False)
        return declare.IPLR.from_features(X, pc, k=3, gamma=1.0)

    def lmnn(seed):
        X, y = _labelled(seed, n=12, n_classes=2, d=2, shift=0.8)
        return declare.LMNNProblem.linear(X, y, 2, 0.5)

    def sdp(kernel):
        def build(seed):
            if kernel:
                K0, pc = kernel_instance(seed, 7, 5, hard=False)
                return declare.SDPLogDetKernel(K0, pc, np.eye(7), 1.0)
            X, pc = metric_instance(seed, 7, 3, 5, hard=False)
            return declare.SDPLogDetMetric(X, pc, np.eye(7), 1.0)
        return build

    def trace(seed):
        K0, pc = kernel_instance(seed, 8, 6, hard=False)
        return declare.TraceSSIKDR(K0, PairConstraints(pc.i, pc.j, pc.y, pc.bound), tau=1.0)

    cases = [
        (declare.ITML, lambda s: declare.ITML(*metric_instance(s, 8, 3, 6, hard=False), gamma=1.0), {"tol": 1e-10}),
        (declare.LogDetKernel, lambda s: declare.LogDetKernel(*kernel_instance(s, 8, 6, hard=False), gamma=1.0),
         {"tol": 1e-10}),
        (declare.LowRankLogDet, lambda s: declare.LowRankLogDet(*factor_instance(s, 8, 3, 5, hard=False), gamma=1.0),
         {"tol": 1e-10}),
        (declare.SpectralMetric, lambda s: variant_instance(s, 8, 6, declare.VonNeumann()), {"tol": 1e-10}),
        (declare.SpectralKernel, spectral_kernel, {"tol": 1e-10}),
        (declare.VonNeumannKernel, lambda s: declare.VonNeumannKernel(*kernel_instance(s, 8, 6, hard=False), gamma=1.0),
         {"tol": 1e-10}),
        (declare.TraceSSIKDR, trace, {"tol": 1e-10}),
        (declare.POLAKernel, lambda s: _pola_instance(s, True), {"tol": 1e-10}),
        (declare.POLAMetric, lambda s: _pola_instance(s, False), {"tol": 1e-10}),
        (declare.SDPLogDetKernel, sdp(True), {"tol": 1e-10}),
        (declare.SDPLogDetMetric, sdp(False), {"tol": 1e-10}),
        (declare.IPLR, iplr, {"tol": 1e-10}),
        (declare.SpectralReweighting, reweighting, {}),
        (declare.EmbeddingWeightProblem, embedding, {}),
    ]
    for cls, factory, kw in cases:
        register_contract_case(cls, factory, kw)
    register_contract_case(declare.KCR, kcr, {"tol": 1e-7, "max_iter": 200_000}, rtol=1e-6)
    register_contract_case(declare.LMNNProblem, lmnn, {"tol": 1e-7}, rtol=1e-6)
    register_contract_case(declare.ExtendedProblem, extended, fast=False)

    def mkl_quadratic(seed, m=3):
        rng = np.random.default_rng(seed)
        G = rng.normal(size=(m, m + 2))
        return G @ G.T / (m + 2) + 0.1 * np.eye(m), rng.normal(size=m)

    def rank_one_step(seed):
        # a linear h(P) = <C, P> on m = 3 kernels: the relaxation (15) with W = 0 is tight
        # (doubly nonnegative = completely positive for m <= 4), so the fast solve must certify
        from ..declare.mkl import CallablePObjective
        C, _ = mkl_quadratic(seed)
        return declare.RankOneWeightStep(CallablePObjective(
            3, lambda P: cp.sum(cp.multiply(C, P)), lambda P: float(np.sum(C * P))))

    def mu_step(seed):
        C, c = mkl_quadratic(seed)
        return declare.MuWeightStep(lambda mu: cp.quad_form(mu, C) + c @ mu, m=3)

    register_contract_case(declare.RankOneWeightStep, rank_one_step, {"tol": 1e-6}, rtol=1e-6)
    register_contract_case(declare.MuWeightStep, mu_step, {"tol": 1e-7}, rtol=1e-6)
