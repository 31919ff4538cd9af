"""KCR (Sriperumbudur et al. 2008): formulas, the projection onto N, the exact model and
bad inputs (cvxkml.formulas.kcr, cvxkml.declare.kcr, cvxkml.solvers.kcr); the paper's
Algorithm 1 and alternating projections, the baseline ``bench kcr alg1`` times, are in
benchmarks.bench.kcr."""

import warnings

import numpy as np
import pytest

from benchmarks.bench.kcr import alternating_projections, kcr_subgradient
from cvxkml.declare.kcr import KCR
from cvxkml.errors import ConvergenceWarning, CvxkmlError, InvalidInputError, NotPSDError
from cvxkml.formulas.kcr import basis_orthogonal_to_ones, label_structure, project_onto_N, rule_predict, whitening
from cvxkml.kernels import gaussian_kernel


def _instance(seed=0, n=12, n_classes=3, gamma=0.5):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % n_classes
    X = rng.normal(size=(n, 3)) + y[:, None]
    return gaussian_kernel(X, gamma=gamma), y


# --------------------------------------------------------------------------- formulas
def test_objective_matches_a_plain_loop():
    K, y = _instance(1, n=9)
    rng = np.random.default_rng(2)
    A = rng.normal(size=(9, 4))
    A -= A.mean(axis=0)
    Sigma = A @ A.T
    h, lam = 0.7, 0.3
    p = KCR(K, y, lam)
    total = 0.0
    for i in range(9):
        inner = 0.0
        n_plus = sum(y[j] == y[i] for j in range(9))
        for j in range(9):
            t = 1.0 if y[i] == y[j] else -1.0
            v = K[:, i] - K[:, j]
            inner += max(0.0, 1.0 + t * (v @ Sigma @ v) - t * h)
        total += max(0.0, 2.0 - n_plus + inner)
    total += lam * np.trace(K @ Sigma)
    assert p.objective(Sigma, h) == pytest.approx(total, rel=1e-12)
    assert p.objective_factor(A, h) == pytest.approx(total, rel=1e-10)


def test_label_structure():
    classes, codes, tau, c = label_structure(np.array(["b", "a", "b", "a", "a"]))
    assert list(classes) == ["a", "b"] and list(codes) == [1, 0, 1, 0, 0]
    assert tau[0, 2] == 1 and tau[0, 1] == -1 and np.all(np.diag(tau) == 1)
    assert list(c) == [0.0, -1.0, 0.0, -1.0, -1.0]


def test_whitening_coordinates():
    K, _ = _instance(3, n=10)
    T, F = whitening(K)
    assert np.allclose(T.T @ np.ones(10), 0.0, atol=1e-10)
    assert np.allclose(T.T @ K @ T, np.eye(T.shape[1]), atol=1e-8)
    assert np.allclose(F, K @ T)


# --------------------------------------------------------------------------- projection onto N
def _random_symmetric(seed, n):
    A = np.random.default_rng(seed).normal(size=(n, n))
    return A + A.T


@pytest.mark.parametrize("seed", range(5))
def test_projection_onto_N_is_exact(seed):
    n = 7
    X = _random_symmetric(seed, n)
    P = project_onto_N(X)
    V = basis_orthogonal_to_ones(n)
    scale = np.linalg.norm(X)
    # feasibility: P ⪰ 0, 1ᵀP1 = 0 (hence P1 = 0)
    assert np.linalg.eigvalsh(P)[0] >= -1e-12 * scale
    assert abs(P.sum()) <= 1e-12 * scale and np.allclose(P @ np.ones(n), 0.0, atol=1e-12 * scale)
    # optimality on a closed convex cone: X − P in the polar cone {Z : VᵀZV ⪯ 0}, ⟨X − P, P⟩ = 0
    assert np.linalg.eigvalsh(V.T @ (X - P) @ V)[-1] <= 1e-10 * scale
    assert abs(np.sum((X - P) * P)) <= 1e-10 * scale**2
    # idempotent, and the closed form P_PSD(HXH)
    assert np.allclose(project_onto_N(P), P, atol=1e-12 * scale)
    H = np.eye(n) - np.ones((n, n)) / n
    w, U = np.linalg.eigh(H @ X @ H)
    assert np.allclose(P, (U * np.maximum(w, 0)) @ U.T, atol=1e-10 * scale)


def _psd(M):
    w, U = np.linalg.eigh(0.5 * (M + M.T))
    return (U[:, w > 0] * w[w > 0]) @ U[:, w > 0].T


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


def test_projection_is_the_limit_of_dykstra_not_of_plain_alternation():
    """Dykstra's alternating projections converge to P_N(X) (slowly: N has no interior);
    the paper's plain alternation converges to a point of N that is in general farther."""
    X = _random_symmetric(0, 6)
    P = project_onto_N(X)
    errs = [np.linalg.norm(dykstra_projections(X, k) - P) for k in (10, 100, 1000, 4000)]
    assert all(b < a for a, b in zip(errs, errs[1:])), errs
    assert errs[-1] < 0.1 * np.linalg.norm(X - P)
    A = alternating_projections(X, 4000)
    assert np.linalg.eigvalsh(A)[0] >= -1e-10 and abs(A.sum()) < 1e-2  # (nearly) in N
    assert np.linalg.norm(X - A) > np.linalg.norm(X - P) + 0.1  # but not the nearest


# --------------------------------------------------------------------------- the exact model
@pytest.mark.parametrize("par", ["whitened", "reduced", "full"])
def test_model_expression_equals_numpy_objective(par):
    """The CVXPY objective at a feasible point equals the numpy formula (one formula)."""
    K, y = _instance(4, n=8)
    p = KCR(K, y, 0.4)
    prob = p.to_cvxpy(par)
    S, h = prob.var_dict["S"], prob.var_dict["h"]
    rng = np.random.default_rng(5)
    A = rng.normal(size=(S.shape[0], 3))
    M = A @ A.T
    S.value = M
    h.value = np.array(0.9)
    if par == "full":
        M = project_onto_N(M)
        S.value = M
        Sigma = M
    elif par == "reduced":
        V = basis_orthogonal_to_ones(8)
        Sigma = V @ M @ V.T
    else:
        Sigma = p.T @ M @ p.T.T
    # the epigraph variables at their smallest feasible values are the hinges
    I, J, tp, E = p._pairs()
    D = p.distances(Sigma)
    t = np.maximum(0.0, 1 + tp * (D[I, J] - 0.9))
    v = max(0.0, 1 - 0.9)
    prob.var_dict["t"].value = t
    prob.var_dict["v"].value = np.array(v)
    prob.var_dict["r"].value = np.maximum(0.0, p.c + E @ t + v)
    assert prob.objective.value == pytest.approx(p.objective(Sigma, 0.9), rel=1e-9)
    assert all(np.all(np.asarray(c.violation()) <= 1e-9 * max(1.0, np.abs(D).max())) for c in prob.constraints[:3])
    assert prob.is_dcp()


def test_parameterizations_agree():
    K, y = _instance(6, n=10)
    p = KCR(K, y, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vals = {
            par: p.solve_reference(parameterization=par, accept_inaccurate=True)
            for par in ("whitened", "reduced", "full")
        }
    ref = vals["whitened"].objective
    for par, sol in vals.items():
        assert sol.objective == pytest.approx(ref, rel=2e-4), (par, sol)
        assert sol.max_violation <= 1e-9 * max(1.0, np.linalg.norm(sol.matrix))


def test_dual_value_is_a_lower_bound():
    K, y = _instance(7, n=10)
    p = KCR(K, y, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opt = p.solve_reference(accept_inaccurate=True).objective
    rng = np.random.default_rng(8)
    for _ in range(20):
        s = rng.uniform(size=(10, 10)) * rng.uniform()
        assert p.dual_value(s) <= opt + 1e-6
    fast = p.solve(tol=1e-4)
    assert p.dual_value(fast.dual) <= opt + 1e-6
    assert fast.dual_value <= opt + 1e-6 <= fast.objective + 2e-6


def test_paper_algorithm1_baseline_is_feasible_and_descends():
    K, y = _instance(9, n=10)
    p = KCR(K, y, 1.0)
    res = kcr_subgradient(K, p.tau, p.c, p.lam, max_iter=200)
    assert res["objective"] < res["history"][0][1]
    S = res["Sigma"]
    assert np.linalg.eigvalsh(S)[0] >= -1e-10 and abs(S.sum()) < 1e-10
    assert res["objective"] >= p.solve(tol=1e-4).dual_value - 1e-9


# --------------------------------------------------------------------------- the rule (eq. 2)
def test_rule_counts_and_tie_rules():
    codes = np.array([0, 0, 1, 1, 2])
    # query 0: balls hold 1 point of class 0 and 1 of class 1 (tie), nearest is class 1
    # query 1: empty ball; the nearest point is the class-2 one
    # query 2: two class-1 points inside, no tie
    D = np.array([[0.9, 5.0, 0.2, 5.0, 5.0], [3.0, 3.0, 3.0, 3.0, 2.5], [0.1, 5.0, 0.5, 0.6, 5.0]])
    assert list(rule_predict(D, codes, 3, 1.0, "nearest")) == [1, 2, 1]
    assert list(rule_predict(D, codes, 3, 1.0, "first")) == [0, 0, 1]
    # everything inside the ball: majority vote (class 0 and 1 tie at 2, nearest decides)
    big = rule_predict(D, codes, 3, 1e9, "nearest")
    assert set(big) <= {0, 1}
    assert list(rule_predict(D, np.array([0, 0, 0, 1, 1]), 2, 1e9)) == [0, 0, 0]


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "make, err, match",
    [
        (lambda K, y: KCR(K, np.zeros(12, int), 1.0), InvalidInputError, "at least 2 classes"),
        (lambda K, y: KCR(K, np.r_[y[:-1], 7], 1.0), InvalidInputError, "at least 2 members"),
        (lambda K, y: KCR(np.where(np.eye(12) > 0, np.nan, K), y, 1.0), InvalidInputError, "NaN"),
        (lambda K, y: KCR(K, y, 0.0), InvalidInputError, "lam must be a finite positive"),
        (lambda K, y: KCR(K, y, -1.0), InvalidInputError, "lam must be a finite positive"),
        (lambda K, y: KCR(K - 3 * np.eye(12), y, 1.0), NotPSDError, "positive semidefinite"),
        (lambda K, y: KCR(K, y[:5], 1.0), InvalidInputError, r"y must have shape \(12,\)"),
        (lambda K, y: KCR(np.ones((12, 12)), y, 1.0), InvalidInputError, "constant"),
        (lambda K, y: KCR(K, y, 1.0).to_cvxpy("dense"), InvalidInputError, "parameterization"),
        (lambda K, y: KCR(K, y, 1.0).solve(max_iter=0), InvalidInputError, "max_iter"),
    ],
)
def test_bad_input(make, err, match):
    K, y = _instance(10)
    with pytest.raises(err, match=match):
        make(K, y)


def test_non_converged_solve_warns_and_says_so():
    K, y = _instance(11, n=14, gamma=0.05)
    p = KCR(K, y, 1e-3)
    with pytest.warns(ConvergenceWarning, match="certified relative gap"):
        sol = p.solve(tol=1e-6, max_iter=30)
    assert not sol.converged and sol.status == "max_iter reached"
    assert sol.info["gap"] > 1e-6
    assert sol.dual_value <= sol.objective
    assert isinstance(ConvergenceWarning("x"), Warning) and issubclass(InvalidInputError, CvxkmlError)


def test_psd_step_survives_a_lapack_mrrr_failure(monkeypatch):
    """?syevr occasionally reports an internal error (seen once, float32, during the Wine
    reproduction); the PSD step then falls back to divide and conquer in float64."""
    import scipy.linalg

    from cvxkml.solvers import kcr as ks

    M = _random_symmetric(3, 40)
    ref_w = np.linalg.eigvalsh(M)
    ref = (lambda w, U: (U * np.maximum(w, 0)) @ U.T)(*np.linalg.eigh(M))

    def broken(*args, **kwargs):
        raise np.linalg.LinAlgError("Internal Error.")

    monkeypatch.setattr(ks.sla, "eigh", broken)
    assert ks.sla is scipy.linalg
    P, w = ks._psd_part(M, 1, np.float32)  # rank hint 1: the partial (evr) path
    assert np.allclose(P @ P.T, ref, atol=1e-10 * np.abs(M).max())
    assert np.allclose(np.sort(w), ref_w[ref_w > 0])
    # the tracked PSD step's LAPACK path (a top-p subset by index) falls back the same way
    tr = ks.PositivePartTracker(40, np.float32, guard=4, min_size=0)
    P, w = tr(lambda V: M.astype(np.float32) @ V, lambda: M, exact=True)
    assert np.allclose(P @ P.T, ref, atol=1e-5 * np.abs(M).max()) and tr.n_exact == 1
    # and a whole solve (its certificate's λ_min also uses evr) still certifies
    K, y = _instance(12, n=10)
    sol = KCR(K, y, 1.0).solve(tol=1e-3)
    assert sol.converged


# --------------------------------------------------------------------------- the exact certificate
@pytest.mark.parametrize("seed,n,lam", [(0, 12, 0.01), (1, 12, 1.0), (2, 18, 0.1), (3, 24, 0.01)])
def test_exact_solve_carries_a_lagrange_certificate(seed, n, lam):
    """The epigraph model's multipliers give dual weights s in [0, 1]^{n×n}; KCR.dual_value(s)
    is a lower bound (below the fast solver's certified value too) within 1e-4 of the
    exact objective, and an 'optimal_inaccurate' answer is accepted only on that ground."""
    K, y = _instance(seed, n=n)
    p = KCR(K, y, lam)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # CVXPY's "may be inaccurate"
        ref = p.solve_reference()
    scale = max(1.0, abs(ref.objective))
    assert ref.converged and ref.dual.shape == (n, n)
    assert ref.dual.min() >= 0.0 and ref.dual.max() <= 1.0
    assert ref.dual_value == pytest.approx(p.dual_value(ref.dual))
    assert -1e-9 * scale <= ref.gap <= p.inaccurate_rtol * scale
    if ref.status == "optimal_inaccurate":
        assert ref.info["accepted_by_certificate"]
    fast = p.solve(tol=1e-6, max_iter=100_000)
    assert fast.converged
    assert ref.dual_value <= fast.objective + 1e-9 * scale
    assert fast.dual_value <= ref.objective + 1e-9 * scale


def test_exact_solve_refuses_an_unvouched_inaccurate_answer(monkeypatch):
    """With a stricter acceptance than Clarabel's stall point the same answer raises."""
    from cvxkml.errors import SolverError

    K, y = _instance(0, n=24)
    p = KCR(K, y, 0.01)
    monkeypatch.setattr(p, "inaccurate_rtol", 1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        try:
            sol = p.solve_reference()
        except SolverError as exc:
            assert "does not vouch" in str(exc)
        else:  # Clarabel reached 'optimal' after all
            assert sol.status == "optimal"


def test_fast_solve_callback_and_solution_warm_start():
    K, y = _instance(2, n=15)
    p = KCR(K, y, 0.05)
    seen = []
    with pytest.warns(ConvergenceWarning):
        stopped = p.solve(tol=1e-12, check_every=5, callback=lambda info: seen.append(info) or len(seen) >= 2)
    assert stopped.status == "stopped by callback" and not stopped.converged
    assert len(seen) == 2 and {"iteration", "objective", "gap", "lower_bound"} <= set(seen[0])
    first = p.solve(tol=1e-5)
    warm = p.with_lam(0.06).solve(tol=1e-5, warm_start=first)
    assert warm.converged
    with pytest.raises(InvalidInputError, match="callback"):
        p.solve(callback=3)
    with pytest.raises(InvalidInputError, match="warm_start"):
        p.solve(warm_start=p.solve_reference(accept_inaccurate=True))
