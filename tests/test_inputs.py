"""Bad input gives a typed error that says what to do; nothing returns NaN."""

import warnings

import numpy as np
import pytest

import cvxkml
from cvxkml import kernels
from cvxkml.errors import ConvergenceWarning, InfeasibleError, InvalidInputError, NotPSDError
from cvxkml.mkl_kernels import KernelSet, paper_kernels
from cvxkml.sideinfo import LinearConstraints, PairConstraints, RelativeConstraints, baseline_metric


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(8, 3))
    return X, PairConstraints([0, 1, 2], [3, 4, 5], [1, -1, 1], [1.0, 5.0, 1.0])


def test_nan_and_inf(data):
    X, pc = data
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(InvalidInputError, match="NaN or inf"):
        cvxkml.ITML(Xn, pc)
    K = X @ X.T + np.eye(8)
    K[1, 2] = K[2, 1] = np.inf
    with pytest.raises(InvalidInputError, match="NaN or inf"):
        cvxkml.LogDetKernel(K, pc)


def test_kernel_shape_symmetry_psd(data):
    X, pc = data
    with pytest.raises(InvalidInputError, match="square"):
        cvxkml.LogDetKernel(np.ones((8, 7)), pc)
    A = X @ X.T + np.eye(8)
    A[0, 1] += 1.0
    with pytest.raises(InvalidInputError, match="symmetric"):
        cvxkml.LogDetKernel(A, pc)
    with pytest.raises(NotPSDError, match="not positive semidefinite"):
        cvxkml.LogDetKernel(X @ X.T - 3 * np.eye(8), pc)
    with pytest.raises(NotPSDError, match="positive definite"):
        cvxkml.ITML(X, pc, W0=np.diag([1.0, 1.0, 0.0]))


def test_pair_constraint_validation():
    with pytest.raises(InvalidInputError, match="i = j"):
        PairConstraints([0, 1], [0, 2], [1, 1], [1.0, 1.0])
    with pytest.raises(InvalidInputError, match="finite and positive"):
        PairConstraints([0], [1], [1], [0.0])
    with pytest.raises(InvalidInputError, match="finite and positive"):
        PairConstraints([0], [1], [1], [np.nan])
    with pytest.raises(InvalidInputError, match=r"\+1 \(similar\) or -1"):
        PairConstraints([0], [1], [0], [1.0])
    with pytest.raises(InvalidInputError, match="same length"):
        PairConstraints([0, 1], [1], [1], [1.0])
    with pytest.raises(InvalidInputError, match="integer"):
        PairConstraints([0.5], [1], [1], [1.0])


def test_index_out_of_range(data):
    X, _ = data
    pc = PairConstraints([0, 9], [1, 2], [1, 1], [1.0, 1.0])
    with pytest.raises(InvalidInputError, match="index 9, out of range for 8 points"):
        cvxkml.ITML(X, pc)
    with pytest.raises(InvalidInputError, match="out of range"):
        cvxkml.LogDetKernel(X @ X.T + np.eye(8), pc)


def test_zero_baseline_distance_pair():
    X = np.array([[0.0, 1.0], [0.0, 1.0], [2.0, 0.0]])
    pc = PairConstraints([0, 0], [1, 2], [-1, -1], [1.0, 1.0])
    with pytest.raises(InvalidInputError, match="zero distance under the baseline"):
        cvxkml.ITML(X, pc)
    with pytest.warns(UserWarning, match="zero baseline distance"):
        got = PairConstraints.from_labels([0, 1, 0], baseline_metric(X), n_similar=20, n_dissimilar=20, random_state=0)
    assert not np.any((np.minimum(got.i, got.j) == 0) & (np.maximum(got.i, got.j) == 1))


def test_infeasible_hard_constraints():
    """d(0,1) <= 1 and d(0,1) >= 4 cannot both hold: the exact model says so and
    suggests slack; so does the fast solver (a Farkas ray, or a breakdown); slack solves it."""
    X = np.random.default_rng(1).normal(size=(4, 2))
    pc = PairConstraints([0, 1], [1, 0], [1, -1], [1.0, 4.0])
    prob = cvxkml.ITML(X, pc)
    with pytest.raises(InfeasibleError, match="gamma"):
        prob.solve_reference()
    with pytest.raises(InfeasibleError, match="gamma"):
        prob.solve(max_iter=200)
    sol = cvxkml.ITML(X, pc, gamma=1.0).solve()
    assert sol.converged and np.all(np.isfinite(sol.matrix)) and np.isfinite(sol.objective)


def test_parameters(data):
    X, pc = data
    for bad in (0.0, -1.0, np.inf, "a"):
        with pytest.raises(InvalidInputError, match="gamma"):
            cvxkml.ITML(X, pc, gamma=bad)
    with pytest.raises(InvalidInputError, match="tol"):
        cvxkml.ITML(X, pc, gamma=1.0).solve(tol=0)
    with pytest.raises(InvalidInputError, match="max_iter"):
        cvxkml.ITML(X, pc, gamma=1.0).solve(max_iter=0)
    with pytest.raises(InvalidInputError, match="W0 must be 3 × 3"):
        cvxkml.ITML(X, pc, W0=np.eye(4))


def test_native_solver_rejects_unsupported_constraints(data):
    X, pc = data
    rel = RelativeConstraints([0], [1], [2], 0.5)
    prob = cvxkml.ITML(X, [pc, rel])
    with pytest.raises(InvalidInputError, match="solve_reference"):
        prob.solve(method="native")  # Bregman takes pairs; 'auto' goes dual
    # several objects of one family are one problem's constraints (open families); the native
    # Bregman solver takes one object per family, so "native" refuses and "auto" goes dual
    two = cvxkml.ITML(X, [pc, pc])
    assert two.n_constraints == 2 * len(pc) and two.fast_solver().generic
    with pytest.raises(InvalidInputError, match="one object per constraint family"):
        two.solve(method="native")
    with pytest.raises(InvalidInputError, match="Unsupported constraint"):
        cvxkml.ITML(X, [pc, "x"])
    with pytest.raises(InvalidInputError, match="3 × 3"):
        cvxkml.ITML(X, LinearConstraints(b=[1.0], Z=np.ones((1, 4))))


def test_relative_and_linear_constraints_in_exact_model(data):
    """The exact model enforces relative and general linear constraints."""
    X, pc = data
    rel = RelativeConstraints([0, 1], [1, 2], [2, 3], [0.5, 0.5])
    lin = LinearConstraints(b=[0.8], C=np.eye(3)[None] * 0.5)  # tr(W)/2 <= 0.8
    prob = cvxkml.ITML(X, [rel, lin])
    sol = prob.solve_reference()
    assert sol.max_violation <= 1e-6
    assert np.trace(sol.matrix) / 2 <= 0.8 + 1e-6
    d = prob.pair_values(sol.matrix, [0, 1, 0, 1], [1, 2, 2, 3])
    assert d[0] + 0.5 <= d[2] + 1e-6 and d[1] + 0.5 <= d[3] + 1e-6
    K0 = X @ X.T + np.eye(8)
    lin_k = LinearConstraints(b=[-0.1], Z=np.eye(8)[[0]] - np.eye(8)[[1]])  # impossible: distance <= -0.1
    with pytest.raises(InfeasibleError, match="gamma"):
        cvxkml.LogDetKernel(K0, lin_k).solve_reference()


def test_infeasible_hard_constraints_raise_with_a_farkas_certificate():
    """The paper's stopping rule (relative dual change) can be met on infeasible hard
    constraints; the certificate is not, and the multipliers then grow along a Farkas ray
    (Σd_cÂ_c ⪰ 0, Σd_c t_c < 0): the fast path raises InfeasibleError like the exact
    model, instead of returning an uncertified point."""
    X = np.random.default_rng(1).normal(size=(4, 2))
    pc = PairConstraints([0, 1], [1, 0], [1, -1], [1.0, 4.0])  # d(0,1) <= 1 and >= 4
    with pytest.raises(InfeasibleError, match="Farkas certificate"):
        cvxkml.ITML(X, pc).solve(tol=0.5, max_iter=1000)
    with pytest.raises(InfeasibleError):
        cvxkml.ITML(X, pc).solve_reference()
    # the same pairs with slack are a fine problem: the soft pairs admit no Farkas ray
    sol = cvxkml.ITML(X, pc, gamma=1.0).solve(tol=1e-9)
    assert sol.converged and "farkas" not in sol.info
    # a feasible problem stopped early is reported uncertified, never infeasible
    ok = PairConstraints([0, 1], [1, 2], [1, -1], [1.0, 4.0])
    with pytest.warns(ConvergenceWarning):
        early = cvxkml.ITML(X, ok).solve(tol=1e-12, max_iter=1)
    assert not early.converged


# ---------------------------------------------------------------- kernel parameters
def _kitml(X, params):
    from cvxkml.estimators.logdet import KernelITML

    return KernelITML(kernel="gaussian", kernel_params=params).fit(X, np.arange(len(X)) % 2)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda X: _kitml(X, {"sigma": 1e300}), "sigma = 1e.300 is too large"),
        (lambda X: kernels.gaussian_kernel(X, sigma=1e-300), "sigma = 1e-300 is too small"),
        (lambda X: kernels.gaussian_kernel(X, sigma="a"), "sigma must be a finite positive number"),
        (lambda X: kernels.gaussian_kernel(X, sigma=1j), "sigma must be one real number"),
        (lambda X: kernels.gaussian_kernel(X, sigma=np.complex128(2.0)), "sigma must be one real number"),
        (lambda X: kernels.gaussian_kernel(X, sigma=np.array([1.0, 2.0])), "sigma must be one real number"),
        (lambda X: kernels.gaussian_kernel(X, gamma=1e300), "too small for the data's scale"),
        (lambda X: kernels.gaussian_kernel(X, sigma=1e9), "too large for the data's scale"),
        (lambda X: kernels.polynomial_kernel(X, coef0=np.nan), "coef0 must be a finite number >= 0"),
        (lambda X: kernels.polynomial_kernel(X, degree=True), "degree must be a positive integer"),
        (lambda X: kernels.polynomial_kernel(X, degree=400), "overflows float64"),
        (lambda X: kernels.polynomial_kernel(X, scale=np.inf), "scale must be a finite positive number"),
        (lambda X: kernels.polynomial_kernel(X, scale=1e-300, coef0=0.0), r"is 0 \(underflow\)"),
        (lambda X: kernels.Kernel("gaussian", {"sigma": 1.0, "width": 2.0}), "Unknown parameter"),
        (lambda X: kernels.Kernel("poly", {"coef0": np.nan}), "coef0"),
        (lambda X: kernels.Kernel("poly", {"degree": 3}).paired(X * 1e90, X * 1e90), "overflows float64"),
        (lambda X: paper_kernels(degrees=[2.5]), "degree must be a positive integer"),
        (lambda X: paper_kernels(sigmas=[1e-300]), "too small"),
        (lambda X: KernelSet([kernels.Kernel("gaussian", {"sigma": 1e-5})]).fit_matrices(X), "too small"),
    ],
)
def test_kernel_parameters(call, match):
    """Kernel parameters are validated like every other input: one typed line (these raised
    OverflowError, ZeroDivisionError, NumPy's TypeError, or returned NaN, inf or a matrix
    that is 0 or 1 between every two distinct points)."""
    X = np.random.default_rng(0).normal(size=(8, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(InvalidInputError, match=match) as exc:
            call(X)
    assert "\n" not in str(exc.value)


def test_a_far_new_point_is_not_a_bad_width():
    """Only the training matrix is refused for vanishing off-diagonal values: one new point far
    from every training point has a row of zeros at any width."""
    X = np.random.default_rng(0).normal(size=(8, 3))
    assert not np.any(kernels.gaussian_kernel(X[:2] + 1e3, X, sigma=1.0))
    K = kernels.gaussian_kernel(X, sigma=1.0)
    assert np.all(np.isfinite(K)) and 0 < K[0, 1] < 1
