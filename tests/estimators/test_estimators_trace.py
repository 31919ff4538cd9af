"""The scikit-learn transformer TraceSSIKDR (cvxkml.estimators.trace; Jain et al. 2012 §5.4)."""

import pickle
import warnings

import numpy as np
import pytest
from budget import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.linalg import eig
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.neighbors import KNeighborsClassifier

from cvxkml.errors import ConvergenceWarning, CvxkmlError
from cvxkml.estimators.trace import TraceSSIKDR


# --------------------------------------------------------------------------- digits (sklearn)
@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(y))
    tr, te = idx[:60], idx[60:360]
    return X[tr], y[tr], X[te], y[te]


GAMMA = {"gamma": 0.1}  # 1 / median squared distance of the 60 training digits (0.1035)


@pytest.fixture(scope="module")
def fitted(digits):
    Xtr, ytr, _, _ = digits
    return TraceSSIKDR(
        kernel_params=GAMMA, tau=1.0, n_similar=15, n_dissimilar=15, percentiles=(1, 99), tol=1e-8, random_state=0
    ).fit(Xtr, ytr)


def test_fit_attributes_and_learned_kernel(digits, fitted):
    Xtr, _, Xte, _ = digits
    est = fitted
    assert est.solution_.converged and est.solution_.max_violation <= 1e-6 * max(1.0, est.constraints_.bound.max())
    # n_components=None: every learned direction, k = rank_ = number of eigenvalues
    assert est.n_components_ == est.rank_ == est.eigenvalues_.size >= 1
    assert np.all(np.diff(est.eigenvalues_) <= 0) and est.eigenvalues_[-1] > 0
    Z = est.transform(Xtr)
    np.testing.assert_allclose(Z, est.embedding_, atol=1e-10)
    K = est.solution_.matrix
    np.testing.assert_allclose(Z @ Z.T, K, atol=1e-8 * np.abs(K).max())  # inner products = K
    assert est.transform(Xte).shape == (len(Xte), est.rank_)
    names = est.get_feature_names_out()
    assert list(names) == [f"tracessikdr{i}" for i in range(est.rank_)]


def test_transform_is_algorithm2_lemma10_form(digits, fitted):
    """transform = x ↦ diag(√s) D_k V_kᵀ k_x with V_k the top right eigenvectors of C K0
    (C = −Σ z_c δ_c (e_i − e_j)(e_i − e_j)ᵀ from the solver's multipliers z), eigenvalues
    λ_k > τ, s = (λ_k − τ)/2 and D_k = 1/√(v_kᵀ K0 v_k) — Algorithm 2's output, with the
    ½ of the Frobenius term and Lemma 10's normalisation written out."""
    Xtr, _, Xte, _ = digits
    est = fitted
    K0 = est.kernel_(Xtr, Xtr)
    P = est.constraints_
    n = len(Xtr)
    E = np.zeros((len(P), n))
    E[np.arange(len(P)), P.i] = 1.0
    E[np.arange(len(P)), P.j] = -1.0
    z = est.solution_.dual
    assert np.all(z >= 0)
    C = -(E.T * (z * P.y)) @ E
    lam, V = eig(C @ K0)
    lam, V = lam.real, V.real
    top = np.argsort(-lam)[: est.rank_]
    lam, V = lam[top], V[:, top]
    assert np.all(lam > est.tau)
    np.testing.assert_allclose((lam - est.tau) / 2, est.eigenvalues_, rtol=1e-5)
    D = 1.0 / np.sqrt(np.einsum("ik,ij,jk->k", V, K0, V))
    kx = est.kernel_(Xte, Xtr)
    alg2 = (kx @ V) * D * np.sqrt((lam - est.tau) / 2)
    ours = est.transform(Xte)
    sign = np.sign(np.sum(alg2 * ours, axis=0))
    scale = np.abs(ours).max()
    np.testing.assert_allclose(alg2 * sign, ours, atol=1e-4 * scale)


def test_learned_embedding_beats_base_kernel_knn(digits, fitted):
    # Measured (this split, 60 training / 300 test digits, 5-NN against the training
    # points): base Gaussian kernel 0.7533, learned k-dim coordinates (k = 20) 0.7833.
    Xtr, ytr, Xte, yte = digits
    knn = lambda A, B: KNeighborsClassifier(5).fit(A, ytr).score(B, yte)
    K = fitted.kernel_
    base = knn(np.sqrt(np.maximum(2 - 2 * K(Xtr, Xtr), 0)), np.sqrt(np.maximum(2 - 2 * K(Xte, Xtr), 0)))
    learned = knn(fitted.transform(Xtr), fitted.transform(Xte))
    assert learned >= base + 0.02


def test_n_components_truncates_and_reports(digits, fitted):
    Xtr, ytr, Xte, _ = digits
    two = clone(fitted).set_params(n_components=2).fit(Xtr, ytr)
    assert two.rank_ == fitted.rank_ and two.n_components_ == 2
    np.testing.assert_allclose(two.transform(Xte), fitted.transform(Xte)[:, :2], atol=1e-10)
    assert two.projection_.shape == (len(Xtr), 2) and two.embedding_.shape == (len(Xtr), 2)
    assert list(two.get_feature_names_out()) == ["tracessikdr0", "tracessikdr1"]
    big = fitted.rank_ + 5
    with pytest.warns(UserWarning, match=f"n_components={big} but the learned transformation has rank"):
        many = clone(fitted).set_params(n_components=big).fit(Xtr, ytr)
    assert many.n_components_ == many.rank_ == fitted.rank_


def test_precomputed_equals_named_kernel_and_pairs(digits, fitted):
    Xtr, ytr, Xte, _ = digits
    K = fitted.kernel_
    pre = TraceSSIKDR(
        kernel="precomputed", tau=1.0, n_similar=15, n_dissimilar=15, percentiles=(1, 99), tol=1e-8, random_state=0
    ).fit(K(Xtr, Xtr), ytr)
    np.testing.assert_allclose(pre.transform(K(Xte, Xtr)), fitted.transform(Xte), atol=1e-8)
    A, B = Xte[:20], Xte[20:40]
    d = fitted.pair_distance(np.stack([A, B], axis=1))
    np.testing.assert_allclose(d, np.linalg.norm(fitted.transform(A) - fitted.transform(B), axis=1), rtol=1e-10)
    np.testing.assert_allclose(fitted.pair_score(np.stack([A, B], axis=1)), -d)
    with pytest.raises(CvxkmlError, match="precomputed"):
        pre.pair_distance(np.stack([A, B], axis=1))


def test_tau_raises_rank_never(digits):
    Xtr, ytr, _, _ = digits
    ranks = [
        TraceSSIKDR(kernel_params=GAMMA, tau=t, n_similar=10, n_dissimilar=10, tol=1e-6, random_state=1)
        .fit(Xtr, ytr)
        .rank_
        for t in (0.1, 1.0, 10.0)
    ]
    assert ranks[0] >= ranks[1] >= ranks[2] >= 1, ranks


def test_pickle_roundtrip(digits, fitted):
    _, _, Xte, _ = digits
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(again.transform(Xte), fitted.transform(Xte))


@pytest.mark.parametrize(
    "params, match",
    [
        ({"tau": 0.0}, "tau"),
        ({"tau": -1.0}, "tau"),
        ({"n_components": 0}, "n_components"),
        ({"n_components": 1.5}, "n_components"),
        ({"scheme": "bogus"}, "scheme"),
        ({"percentiles": (99, 1)}, "percentiles"),
        ({"max_sweeps": 0}, "max_sweeps"),
        ({"kernel": "cosine"}, "kernel must be"),
        ({"kernel_params": {"sigma": 1.0, "degree": 2}}, "Unknown kernel_params"),
    ],
)
def test_bad_parameters(digits, params, match):
    Xtr, ytr, _, _ = digits
    with pytest.raises(CvxkmlError, match=match):
        TraceSSIKDR(**params).fit(Xtr, ytr)


def test_one_class_and_early_stop_warning(digits):
    Xtr, ytr, _, _ = digits
    with pytest.raises(CvxkmlError, match="at least 2 classes"):
        TraceSSIKDR().fit(Xtr, np.zeros(len(ytr)))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        est = TraceSSIKDR(kernel_params=GAMMA, max_sweeps=2, random_state=0).fit(Xtr, ytr)
    assert not est.solution_.converged and est.n_iter_ == 2
    assert any(issubclass(w.category, ConvergenceWarning) for w in rec)


# --------------------------------------------------------------------------- the Newton solver
@settings(max_examples=examples(30))
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(4, 12),
    m=st.integers(1, 11),
    kind=st.sampled_from(["gaussian", "linear-ridge", "lowrank"]),
    tau=st.sampled_from([0.01, 0.3, 3.0]),
)
def test_pair_newton_matches_exact_model_and_uzawa(seed, n, m, kind, tau):
    """trace_pair_newton (the estimator's solver) against the exact CVXPY model (through
    both certificates, 1e-6) and the Uzawa solver (objective, within its certificate), certified by the
    problem's own Lagrange certificate (1e-8)."""
    from cvxkml.declare.trace import TraceSSIKDR as Problem
    from cvxkml.solvers.trace import trace_pair_newton
    from cvxkml.testing import assert_matches_reference, kernel_instance, reference_or_discard

    K0, pc = kernel_instance(seed, n, m, hard=True, kind=kind)
    prob = Problem(K0, pc, tau=tau)
    P = prob.pairs
    res = trace_pair_newton(prob.F[P.i] - prob.F[P.j], P.y, P.y * P.bound, tau, tol=1e-8)
    assume(res.code == 0)
    res.matrix = prob.matrix_from_whitened(res.matrix)
    fast = prob._fast_solution(res, res.sweeps, res.time)
    scale = max(1.0, abs(fast.objective))
    assert abs(fast.gap) <= 1e-8 * scale and fast.info["max_relative_violation"] <= 1e-8
    uzawa = prob.solve(tol=1e-10, max_iter=50_000, method="native")
    if uzawa.converged:  # certified by its default gap_tol, 1e-6
        assert abs(fast.objective - uzawa.objective) <= 2e-6 * scale
    fast.converged = True
    exact = reference_or_discard(prob, cert_rtol=1e-6, viol_tol=1e-6)
    assert_matches_reference(prob, fast, exact, rtol=1e-6, viol=1e-6)


def test_fit_uses_the_newton_solver_and_callback_stops(digits, fitted):
    assert fitted.solution_.solver.startswith("trace-newton")
    assert fitted.converged_ and fitted.n_iter_ <= 50
    Xtr, ytr, _, _ = digits
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = TraceSSIKDR(
            kernel_params=GAMMA,
            n_similar=15,
            n_dissimilar=15,
            tol=1e-10,
            random_state=0,
            callback=lambda info: seen.append(info) or True,
        ).fit(Xtr, ytr)
    assert len(seen) == 1 and not est.converged_
