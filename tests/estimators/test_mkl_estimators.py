"""scikit-learn estimators LMNN and LMNNMKL (cvxkml.estimators.mkl)."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.neighbors import KNeighborsClassifier

from cvxkml.errors import ConvergenceWarning, InvalidInputError
from cvxkml.estimators.mkl import LMNN, LMNNMKL
from cvxkml.kernels import Kernel

KS = [Kernel("linear"), Kernel("gaussian", {"sigma": 1.0})]


# --------------------------------------------------------------------------- Wine
def _nn(Atr, ytr, Ate, yte):
    return KNeighborsClassifier(n_neighbors=1).fit(Atr, ytr).score(Ate, yte)


@pytest.fixture(scope="module")
def fitted(wine):
    Xtr, _, ytr, _ = wine
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return {
            "linear": LMNN().fit(Xtr, ytr),
            "P": LMNNMKL(
                kernels=[Kernel("linear"), Kernel("polynomial", {"degree": 2}), Kernel("gaussian", {"sigma": 2.0})],
                max_iter=1000,
                max_outer=4,
            ).fit(Xtr, ytr),
        }


def test_wine_one_nn_accuracy(wine, fitted):
    # Measured on this split (72 test points): Euclidean 1-NN 68/72; linear LMNN 69/72
    # (converged, certified gap <= 1e-5); LMNN-MKL_P with linear, poly-2 and Gaussian
    # σ = 2 kernels, 1000 iterations per metric step: 71/72.
    Xtr, Xte, ytr, yte = wine
    assert _nn(Xtr, ytr, Xte, yte) == pytest.approx(68 / 72)
    lin, mkl = fitted["linear"], fitted["P"]
    assert lin.solution_.converged
    assert _nn(lin.transform(Xtr), ytr, lin.transform(Xte), yte) >= 69 / 72 - 1e-12
    assert _nn(mkl.transform(Xtr), ytr, mkl.transform(Xte), yte) >= 71 / 72 - 1e-12
    assert mkl.weights_.shape == (3,) and mkl.weights_.sum() == pytest.approx(1.0)
    assert np.all(mkl.weights_ >= 0)
    assert mkl.result_.n_outer == mkl.n_iter_ >= 1


def test_mkl_weight_steps_carry_their_certificates(fitted):
    """Algorithm 1's rank-one weight steps (result_.weight_results) are Solutions whose
    dual_value, the relaxation's Lagrange bound, lies below their objective h(μμᵀ)."""
    from cvxkml.solution import Solution

    res = fitted["P"].result_
    # one per outer iteration, except those skipped because F was already below the outer tol
    skipped = [h["weights_skipped"] for h in res.history[1:]]
    assert len(res.weight_results) == res.n_outer - sum(skipped) >= 1 and not skipped[0]
    for h in res.history[1:]:
        if h["weights_skipped"]:
            assert h["objective_after_weights"] <= fitted["P"].outer_tol * max(1.0, h["objective_after_weights"])
    for r in res.weight_results:
        assert isinstance(r, Solution) and r.rank_one
        assert r.gap is not None and r.gap >= -1e-8 * max(1.0, r.objective)
        np.testing.assert_allclose(r.matrix, np.outer(r.mu, r.mu), atol=1e-15)


def test_metric_and_pairs_agree_with_transform(wine, fitted):
    Xtr, Xte, ytr, _ = wine
    for est in fitted.values():
        f = pickle.loads(pickle.dumps(est.get_metric()))
        d = est.transform(Xte[:1]) - est.transform(Xte[1:2])
        assert f(Xte[0], Xte[1]) == pytest.approx(float(np.linalg.norm(d)), rel=1e-10)
        pairs = np.stack([Xte[:5], Xte[5:10]], axis=1)
        np.testing.assert_allclose(
            est.pair_distance(pairs), np.linalg.norm(est.transform(Xte[:5]) - est.transform(Xte[5:10]), axis=1)
        )
    lin = fitted["linear"]
    A = lin.get_mahalanobis_matrix()
    np.testing.assert_allclose(A, lin.solution_.matrix, rtol=1e-8, atol=1e-10)


def test_kernel_lmnn_training_transform_reproduces_the_objective(wine):
    """transform of the training points gives the distances the solver optimized."""
    Xtr, _, ytr, _ = wine
    est = LMNN(kernel="gaussian", kernel_params={"gamma": 1 / 13}, max_iter=300, tol=1e-5)
    # (the smoothed phase certifies this full-rank problem, optimum 0, within 300 iterations;
    # the PDHG alone did not)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est.fit(Xtr[:60], ytr[:60])
    assert est.converged_ and est.solution_.objective <= 1e-5
    Z = est.transform(Xtr[:60])
    sol = est.solution_
    from cvxkml.declare.lmnn import LMNNProblem
    from cvxkml.kernels import gaussian_kernel

    prob = LMNNProblem.kernel(gaussian_kernel(Xtr[:60], gamma=1 / 13), ytr[:60])
    tr = prob.triplets
    p = np.sum((Z[tr.pi] - Z[tr.pj]) ** 2, axis=1)
    from cvxkml.formulas.lmnn import lmnn_objective

    assert lmnn_objective(p, tr, 0.5) == pytest.approx(sol.objective, rel=1e-6)
    # precomputed gives the same map
    from cvxkml.kernels import gaussian_kernel as gk

    pre = LMNN(kernel="precomputed", max_iter=300, tol=1e-5)
    pre.fit(gk(Xtr[:60], gamma=1 / 13), ytr[:60])
    np.testing.assert_allclose(pre.transform(gk(Xtr[:60], Xtr[:60], gamma=1 / 13)), Z, rtol=1e-6, atol=1e-8)
    with pytest.raises(InvalidInputError, match="precomputed"):
        pre.get_metric()


@pytest.mark.parametrize("variant", ["NR", "mu"])
def test_other_variants_fit_and_transform(wine, variant):
    Xtr, Xte, ytr, yte = wine
    est = LMNNMKL(variant=variant, kernels=KS, k=3, max_iter=300, max_outer=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(Xtr[:45], ytr[:45])
    Z = est.transform(Xte)
    assert Z.shape[0] == len(Xte) and np.all(np.isfinite(Z))
    if variant == "NR":
        assert est.weights_ is None and est.components_.shape[1] == 2 * 45
    else:
        assert est.weights_.sum() == pytest.approx(1.0)
    assert _nn(est.transform(Xtr[:45]), ytr[:45], Z, yte) > 0.8


def test_small_classes(wine):
    Xtr, _, ytr, _ = wine
    y = ytr.copy()
    y[np.flatnonzero(y == 2)[3:]] = 0  # class 2 keeps 3 members
    with pytest.raises(InvalidInputError, match="k \\+ 1 = 6 members"):
        LMNN().fit(Xtr, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = LMNN(small_classes="shrink", max_iter=200).fit(Xtr, y)
    assert np.all(np.isfinite(est.transform(Xtr)))
    with pytest.raises(InvalidInputError, match="small_classes"):
        LMNN(small_classes="drop").fit(Xtr, y)


def test_parameter_errors(wine):
    Xtr, _, ytr, _ = wine
    for bad in (
        dict(k=0),
        dict(gamma=0.0),
        dict(tol=-1.0),
        dict(max_iter=0),
        dict(kernel="nope"),
        dict(kernel="gaussian", kernel_params={"degree": 2}),
    ):
        with pytest.raises(InvalidInputError):
            LMNN(**bad).fit(Xtr, ytr)
    with pytest.raises(InvalidInputError, match="variant"):
        LMNNMKL(variant="X").fit(Xtr, ytr)
    with pytest.raises(InvalidInputError, match="kernels must be"):
        LMNNMKL(kernels="all").fit(Xtr, ytr)
    with pytest.raises(InvalidInputError, match="at least 2 classes"):
        LMNN().fit(Xtr, np.zeros(len(ytr)))


def test_stall_iter_reaches_the_solver():
    """``stall_iter`` of the estimators is the solver's stall rule (``info["stall_iter"]``).  With
    a tolerance below what the PDHG reaches (1e-13) the exact working-set finish certifies the
    fit (gap 2e-12 absolute, measured) whatever the rule: it starts before the stall rule, once
    the gap is below 1e-2 with few triplets near the margin, so 400 and 0 (off) give the same
    certified answer, long before ``max_iter``."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 4))
    y = np.repeat([0, 1], 20)
    X[y == 1] += 0.8
    for stall in (400, 0):
        est = LMNN(k=3, tol=1e-13, max_iter=6000, stall_iter=stall).fit(X, y)
        sol = est.solution_
        assert sol.info["stall_iter"] == stall
        assert sol.n_iter < 6000 and sol.info["exact_finish"]["rounds"] >= 1
        assert est.converged_ and sol.dual_value <= sol.objective
        assert sol.objective - sol.dual_value <= 1e-13 * sol.objective
        # the multiple-kernel estimator on the linear kernel alone is the instance above
        mkl = LMNNMKL(variant="NR", kernels=[Kernel("linear")], k=3, tol=1e-13, max_iter=6000, stall_iter=stall)
        mkl.fit(X, y)
        assert mkl.solution_.info["stall_iter"] == stall
        assert mkl.converged_ and mkl.solution_.n_iter < 6000 and "exact_finish" in mkl.solution_.info


def test_auto_kernels_take_the_gaussian_width_from_the_training_points():
    """kernels="auto" (default): linear, (x'x + 1)^2 and a Gaussian of width sigma0 / 4, sigma0
    the mean pairwise distance of the standardized training points; "nr" keeps the paper's
    sigma = 0.5."""
    from sklearn.datasets import load_wine
    from sklearn.preprocessing import StandardScaler

    from cvxkml.estimators.mkl import AUTO_SIGMA_FRACTION
    from cvxkml.mkl_kernels import mean_pairwise_distance

    X, y = load_wine(return_X_y=True)
    X, y = X[::3], y[::3]
    est = LMNNMKL(variant="NR", max_iter=200).fit(X, y)
    names = [sk.kernel.name for sk in est.kernel_set_.kernels]
    assert names == ["linear", "polynomial", "gaussian"]
    gauss = est.kernel_set_.kernels[2].kernel
    sigma0 = mean_pairwise_distance(StandardScaler().fit_transform(X))
    assert gauss.params["sigma"] == pytest.approx(AUTO_SIGMA_FRACTION * sigma0, rel=1e-12)
    nr = LMNNMKL(variant="NR", kernels="nr", max_iter=200).fit(X, y)
    assert nr.kernel_set_.kernels[2].kernel.params["sigma"] == 0.5


def _iris_small():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    idx = np.r_[0:12, 50:62, 100:112]
    return X[idx], y[idx]


def test_tie_break_reaches_the_solver_and_selects_the_least_norm_metric():
    """With a narrow Gaussian kernel (nearly the identity) the optimum F* = 0 is a face of
    metrics; tie_break="min-norm" makes the estimator return the face's least-norm member,
    the same metric LMNNProblem.solve(tie_break="min-norm") selects, certified."""
    from cvxkml.declare.lmnn import LMNNProblem
    from cvxkml.estimators._maps import training_kernel

    X, y = _iris_small()
    est = LMNN(kernel="gaussian", kernel_params={"sigma": 0.5}, k=2, tie_break="min-norm").fit(X, y)
    record = est.solution_.info["tie_break"]
    assert est.converged_ and record["applied"], record
    prob = LMNNProblem.kernel(training_kernel(est.kernel_, est.X_fit_), y, 2, 0.5)
    direct = prob.solve(tol=1e-3, tie_break="min-norm", impostors="all")
    Z_est, Z_dir = est.transform(X), prob.factor(direct.info["X"], direct.info.get("complement"))
    # the learned squared distances are the selected metric's (unique): compare Gram matrices
    K = training_kernel(est.kernel_, est.X_fit_)
    G_dir = K @ Z_dir.T @ Z_dir @ K
    G_est = Z_est @ Z_est.T
    np.testing.assert_allclose(G_est, G_dir, atol=1e-6 * np.abs(G_dir).max())
    nr = LMNNMKL(variant="NR", k=2, tie_break="min-norm").fit(X, y)
    assert nr.converged_ and nr.solution_.info["tie_break"]["applied"]
    assert LMNN(k=2).fit(X, y).solution_.info.get("tie_break") is None  # default: no selection
    with pytest.raises(InvalidInputError, match="tie_break must be None or 'min-norm'"):
        LMNN(tie_break="least").fit(X, y)
