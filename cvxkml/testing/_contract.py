"""Checks of declared problems and regularizers against their exact models: the
:class:`~cvxkml.declare.Problem` contract, cross-checks over many draws, and the
regularizer check (see :mod:`cvxkml.testing`)."""

from __future__ import annotations

import numpy as np

from ..errors import InfeasibleError
from ._instances import (
    factor_instance,
    forest_pairs,
    kernel_instance,
    median_gaussian,
    metric_instance,
    random_pairs,
    variant_instance,
)
from ._reference import UntrustedReference, _scale, assert_matches_reference, solve_fast_honestly, trusted_reference


# --------------------------------------------------------------------------- regularizers
def check_regularizer(reg, seed: int = 0, n_points: int = 40, rtol: float = 1e-6) -> dict:
    """Check a spectral :class:`~cvxkml.declare.regularizers.Regularizer` before trusting
    its exact model and certificates (Jain et al. 2012, Definition 3 and Theorem 4).

    Checks, each on ``n_points`` random points:

    1. the CVXPY form ``cvx(X)`` is convex (DCP) and equals ``value(X)`` = Σ f_s(λ_i(X))
       (a form with auxiliary variables, ``(expression, constraints)``: its minimum over them)
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

    from ..declare.base import cvx_part

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
        expr, aux = cvx_part(reg.cvx(X), f"{type(reg).__name__}.cvx")
        assert expr.is_convex(), f"{reg!r}: cvx(X) is not convex under DCP rules"
        if aux:  # auxiliary variables: the form's value at A is its minimum over them
            fixed = cp.Problem(cp.Minimize(expr), [*aux, X == A])
            fixed.solve(solver="CLARABEL")
            assert fixed.status == cp.OPTIMAL, f"{reg!r}: cvx(X) with its constraints is {fixed.status} at X = A"
            got = float(fixed.value)
        else:
            X.value = A
            got = float(expr.value)
        want = reg.value(A)
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
            assert not bad.size, (
                f"{reg!r}: Fenchel–Young fails, f_s({xs[ok][bad[0]]:g}) + f*_s({mu:g}) < "
                f"x·μ (conj_s is not the conjugate of f_s over x >= 0)"
            )
            try:
                xm = float(np.asarray(reg.conj_grad_s(np.array([mu])), dtype=float).ravel()[0])
            except NotImplementedError:
                continue
            fxm = float(np.asarray(reg.f_s(np.array([xm])), dtype=float).ravel()[0])
            e = abs(fxm + c - xm * mu) / (1.0 + abs(fxm) + abs(c))
            assert e <= rtol, (
                f"{reg!r}: at μ = {mu:g}, x = conj_grad_s(μ) = {xm:g} does not attain "
                f"the conjugate: f_s(x) + f*_s(μ) − xμ = {fxm + c - xm * mu:.3g}"
            )
            err = max(err, e)
    out["fenchel_young"] = err
    # 3. derivatives by central differences
    for name, f, df in (("conj_grad", reg.conj_s, reg.conj_grad_s), ("conj_hess", reg.conj_grad_s, reg.conj_hess_s)):
        err = 0.0
        try:
            for mu in mus:
                h = 1e-5 * (1.0 + abs(mu))
                with np.errstate(all="ignore"):
                    f0, fp, fm = (
                        float(np.asarray(f(np.array([mu + s * h])), dtype=float).ravel()[0]) for s in (0, 1, -1)
                    )
                    d = float(np.asarray(df(np.array([mu])), dtype=float).ravel()[0])
                fd = (fp - fm) / (2 * h)
                if not (np.isfinite(fd) and np.isfinite(d)):
                    continue
                if abs((fp - f0) - (f0 - fm)) > 1e-3 * h * (1.0 + abs(fd)):
                    continue  # a kink (e.g. max(μ, 0) at 0): not differentiable
                e = abs(fd - d) / (1.0 + abs(d))
                assert e <= 1e-4, f"{reg!r}: {name}_s({mu:g}) = {d:.8g} but finite differences give {fd:.8g}"
                err = max(err, e)
        except NotImplementedError:
            err = None
        out[name] = err
    return out


def cross_check(
    problems_or_strategy,
    n_draws: int = 20,
    rtol: float = 1e-6,
    seed: int = 0,
    solver=None,
    distance_rtol: float | None = None,
    atol: float | None = None,
    **solve_kw,
) -> dict:
    """Validate a problem's fast solve against its trusted exact model on many draws.

    Parameters
    ----------
    problems_or_strategy : iterable, callable or strategy
        Problems, a callable ``seed -> problem``, or a Hypothesis strategy of problems (e.g.
        :func:`problems`).
    n_draws : int
        Number of problems drawn (callable / strategy).
    rtol : float
        Agreement asked of :func:`assert_matches_reference`.
    seed : int
        First seed for a callable (draws use seed, seed + 1, …).
    solver : callable ``problem -> answer`` or None
        The solver under test (e.g. your own), returning a :class:`~cvxkml.solution.Solution`
        (e.g. ``problem.evaluate(M, duals)``), a bare matrix, or ``(matrix, duals)``; every
        answer is recomputed (:func:`validate_answer`), never trusted.  None:
        ``problem.solve(**solve_kw)`` through :func:`solve_fast_honestly` (which also checks
        the warning/``converged`` rule).
    distance_rtol : float or None
        Largest accepted ‖M − M*‖_F / ‖M*‖_F where the optimum is unique; None: the bound
        derived from ``rtol`` (:func:`assert_matches_reference`), which is sound but of order
        sqrt(rtol) — pass e.g. 1e-4 to catch an answer 1e-3 off the optimum at rtol = 1e-6.
    atol : float or None
        An absolute tolerance on objective differences instead of ``rtol`` · S (S the
        answers' own magnitude, :func:`assert_matches_reference`), for optima at 0.
    **solve_kw
        Passed to ``problem.solve``.

    Returns
    -------
    dict with ``draws``, ``checked``, ``discarded`` (untrusted reference or infeasible),
    ``max_gap`` (largest relative |fast − exact| objective difference, recomputed),
    ``max_distance`` (largest ‖M − M*‖_F/‖M*‖_F where the optimum is unique; absent otherwise),
    ``distance_unchecked`` (the draws whose distance could not be checked, with the reason:
    one line each distinct reason, never silently skipped), ``scale_rule`` (the scale that
    judged the last draw) and ``failures`` (list of (problem, message)).  Failures of the solver under test are
    tallied, never raised; a problem whose exact model cannot be certified at all (e.g. a
    regularizer without a conjugate) raises :class:`~cvxkml.errors.InvalidInputError`.
    """
    if hasattr(problems_or_strategy, "example") and hasattr(problems_or_strategy, "map"):
        from hypothesis import HealthCheck, given, settings

        drawn = []

        @settings(max_examples=n_draws, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
        @given(problems_or_strategy)
        def _collect(p):
            drawn.append(p)

        _collect()
        items = drawn
    elif callable(problems_or_strategy):
        items = (problems_or_strategy(seed + k) for k in range(n_draws))
    else:
        items = problems_or_strategy
    out = {"draws": 0, "checked": 0, "discarded": 0, "max_gap": 0.0, "failures": [], "distance_unchecked": {}}
    for prob in items:
        out["draws"] += 1
        try:
            exact = trusted_reference(prob)
        except (UntrustedReference, InfeasibleError):
            out["discarded"] += 1
            continue
        try:
            fast = solve_fast_honestly(prob, **solve_kw) if solver is None else solver(prob)
            res = assert_matches_reference(
                prob, fast, exact, rtol=rtol, viol=rtol, distance_rtol=distance_rtol, atol=atol
            )
        except Exception as exc:  # noqa: BLE001 - a crash of the solver under test is a failure
            out["failures"].append((prob, f"{type(exc).__name__}: {exc}"))
            continue
        out["checked"] += 1
        out["max_gap"] = max(out["max_gap"], res["rel_diff"])
        out["scale_rule"] = res["scale_rule"]
        if res["distance"] is not None:
            out["max_distance"] = max(out.get("max_distance", 0.0), res["distance"])
        else:
            notes = out["distance_unchecked"]
            notes[res["distance_note"]] = notes.get(res["distance_note"], 0) + 1
    return out


# --------------------------------------------------------------------------- the contract
_CONTRACT_CASES: dict = {}


def register_contract_case(cls, factory, solve_kw=None, rtol: float = 1e-6, fast: bool = True):
    """Register how to build small instances of a :class:`~cvxkml.declare.Problem` subclass
    for :func:`check_contract` (cvxkml's contract test runs every registered class, and
    fails for a class in :mod:`cvxkml.declare` without one).

    Parameters
    ----------
    cls : type
        The problem class.
    factory : callable
        ``seed -> problem`` (a small instance whose exact model solves in about a second).
    solve_kw : dict or None
        Keyword arguments of ``problem.solve`` for the comparison (e.g. a tolerance).
    rtol : float
        The agreement asked of :func:`assert_matches_reference`.
    fast : bool
        False when the class has no fast solver (its ``solve()`` must then raise
        :class:`~cvxkml.errors.InvalidInputError` saying so).
    """
    _CONTRACT_CASES[cls] = {"factory": factory, "solve_kw": dict(solve_kw or {}), "rtol": rtol, "fast": fast}


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

    What a problem class must do to pass, method by method (a subclass of
    :class:`~cvxkml.declare.Problem` that implements ``to_cvxpy``, ``objective``,
    ``violations``, ``dual_value`` and ``read_cvxpy`` and inherits ``solve`` /
    ``solve_reference`` does all of it):

    * ``to_cvxpy()`` returns a DCP ``cvxpy.Problem``;
    * ``solve_reference(solver=3)`` and ``solve_reference(eps=-1.0)`` raise
      :class:`~cvxkml.errors.InvalidInputError` (a typed error, not a crash);
    * ``solve_reference()`` returns ``converged=True`` with status ``optimal``, a Lagrange
      certificate (``gap``) within 1e-7 of the objective's scale and violations within 1e-7;
    * with ``fast=True``: ``solve(tol=-1.0)`` and ``solve(callback=3)`` raise
      InvalidInputError; ``solve(**solve_kw)`` warns exactly when it is not converged, is
      certified (``converged=True`` with a ``gap``) and agrees with the exact answer;
    * with ``fast=False``: ``solve()`` raises InvalidInputError (no fast solver registered).

    Returns
    -------
    dict with ``exact_objective``, ``exact_gap`` (relative certificate), ``exact_time``, and
    with a fast solver ``fast_gap``, ``rel_diff`` (relative objective difference),
    ``fast_time``, ``scale_rule`` (the scale that judged them) and ``distance_note`` (None, or
    why the distance to the optimum was not checked).  Raises AssertionError naming what broke, and
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
        except Exception as exc:  # noqa: BLE001 - any other type breaks the contract
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
    out = {
        "exact_time": time.perf_counter() - t0,
        "exact_objective": float(exact.objective),
        "exact_gap": float(exact.gap) / max(_scale(exact, problem), 1e-300),
    }
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
    res = assert_matches_reference(problem, fast_sol, exact, rtol=rtol, viol=rtol)
    out["fast_gap"] = float(fast_sol.gap) / max(_scale(fast_sol, problem), 1e-300)
    out["rel_diff"] = res["rel_diff"]
    out["scale_rule"], out["distance_note"] = res["scale_rule"], res["distance_note"]
    return out


def _pola_instance(seed, kernel):
    from .. import declare
    from ..sideinfo import baseline_kernel, baseline_metric

    rng = np.random.default_rng(seed)
    n, d = 8, 3
    X = rng.normal(size=(n, d))
    A = X @ X.T + 0.5 * np.eye(n) if kernel else X
    i, j = forest_pairs(rng, n, n - 1 if kernel else d)
    y = rng.permutation(np.resize([1.0, -1.0], i.size))  # both kinds of pair
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
        return declare.KCR(median_gaussian(X), y, 1.0)

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
        return declare.ITML(X, pc, gamma=1.0).extend(term=lambda W: 0.1 * cp.sum(cp.abs(W - cp.diag(cp.diag(W)))))

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

    def _factored_instance(seed):
        from ..sideinfo import Hinge

        G0, pc = factor_instance(seed, 8, 3, 5, hard=False)
        return declare.FactoredSpectralKernel(G0, Hinge(pc, 1.0), declare.VonNeumann())

    def composed(seed):
        # a problem composed from its parts, no named constructor: kernel space, TraceNorm,
        # hinge pairs (the dispatcher picks the generic dual solver)
        from ..sideinfo import Hinge

        K0, pc = kernel_instance(seed, 8, 6, hard=False)
        return declare.SpectralProblem(declare.KernelSpace(K0), Hinge(pc, 1.0), declare.TraceNorm(0.5))

    def trace(seed):
        K0, pc = kernel_instance(seed, 8, 6, hard=False)
        return declare.TraceSSIKDR(K0, PairConstraints(pc.i, pc.j, pc.y, pc.bound), tau=1.0)

    cases = [
        (declare.ITML, lambda s: declare.ITML(*metric_instance(s, 8, 3, 6, hard=False), gamma=1.0), {"tol": 1e-10}),
        (
            declare.LogDetKernel,
            lambda s: declare.LogDetKernel(*kernel_instance(s, 8, 6, hard=False), gamma=1.0),
            {"tol": 1e-10},
        ),
        (
            declare.LowRankLogDet,
            lambda s: declare.LowRankLogDet(*factor_instance(s, 8, 3, 5, hard=False), gamma=1.0),
            {"tol": 1e-10},
        ),
        (declare.FactoredSpectralKernel, _factored_instance, {"tol": 1e-10}),
        (declare.SpectralMetric, lambda s: variant_instance(s, 8, 6, declare.VonNeumann()), {"tol": 1e-10}),
        (declare.SpectralKernel, spectral_kernel, {"tol": 1e-10}),
        (declare.SpectralProblem, composed, {"tol": 1e-10}),
        (
            declare.VonNeumannKernel,
            lambda s: declare.VonNeumannKernel(*kernel_instance(s, 8, 6, hard=False), gamma=1.0),
            {"tol": 1e-10},
        ),
        (declare.TraceSSIKDR, trace, {"tol": 1e-10}),
        (declare.POLAKernel, lambda s: _pola_instance(s, True), {"tol": 1e-10}),
        (declare.POLAMetric, lambda s: _pola_instance(s, False), {"tol": 1e-10}),
        (declare.SDPLogDetKernel, sdp(True), {"tol": 1e-10}),
        # the barrier's Bregman sweeps crawl on ill-conditioned optima
        (declare.SDPLogDetMetric, sdp(False), {"tol": 1e-10, "max_iter": 200_000}),
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
        return declare.RankOneWeightStep(
            CallablePObjective(3, lambda P: cp.sum(cp.multiply(C, P)), lambda P: float(np.sum(C * P)))
        )

    def mu_step(seed):
        C, c = mkl_quadratic(seed)
        return declare.MuWeightStep(lambda mu: cp.quad_form(mu, C) + c @ mu, m=3)

    register_contract_case(declare.RankOneWeightStep, rank_one_step, {"tol": 1e-6}, rtol=1e-6)
    register_contract_case(declare.MuWeightStep, mu_step, {"tol": 1e-7}, rtol=1e-6)
