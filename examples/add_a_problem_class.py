"""
Add a problem class: Xing et al.'s MMC, with no solve() of its own
===================================================================

A problem that is not spectral — Xing, Ng, Jordan and Russell (2002), "MMC":

    min_W  Σ_{(i,j) ∈ S} d_W(x_i, x_j)   s.t.   Σ_{(k,l) ∈ D} √d_W(x_k, x_l) >= 1,   W ⪰ 0,

with d_W(x, y) = (x − y)ᵀ W (x − y) — declared as a ``cvxkml.declare.Problem`` subclass.
The class gives the contract's parts and nothing else:

* ``to_cvxpy()``: the exact model (DCP: √ of an affine form is concave);
* ``objective(W)``, ``violations(W)``: NumPy;
* ``dual_value(w)``: a Lagrange lower bound for any w >= 0 (derived below);
* ``read_cvxpy(prob)``: the exact model's answer as (W, w).

It inherits ``solve_reference()`` and ``solve()``: dispatch to the solver registered for it
with ``register_fast_solver(MMC, solver)``, validation of what the solver returns, objective,
violations and dual value recomputed by the class's own formulas, ``converged`` only when the
certificate holds, a ``ConvergenceWarning`` otherwise.

**The dual bound.** With A = Σ_S δδᵀ and D_k = δ_kδ_kᵀ, for any w >= 0 with
A − Σ_k w_k D_k ⪰ 0 and any feasible W: tr(WA) >= Σ w_k d_k (W ⪰ 0) and, by Cauchy–Schwarz,
1 <= (Σ √d_k)² <= (Σ w_k d_k)(Σ 1/w_k); so tr(WA) >= 1/Σ_k(1/w_k).  Any w >= 0 scaled by the
largest s <= 1 keeping A − sΣ w_k D_k ⪰ 0 gives g(w) = s/Σ_k(1/w_k).  At the optimum,
w_k = f*/√d_k(W*) attains it (strong duality: the KKT multiplier ν = 2f* of the √-constraint,
w_k = ν/(2√d_k)).

**The fast solver.** Whitened by A (W = A^-½ V A^-½), MMC is max h(V) = Σ_k √(u_kᵀ V u_k)
over the spectraplex {V ⪰ 0, tr V = 1}, u_k = A^-½ δ_k: accelerated projected gradient ascent
(projection: eigenvalues onto the simplex), then W = A^-½ V A^-½ / h(V)².

Run it yourself::

    python examples/add_a_problem_class.py
"""

import time

import cvxpy as cp
import numpy as np

from cvxkml.declare import Problem, register_fast_solver
from cvxkml.errors import InvalidInputError
from cvxkml.solvers import FastResult, Status


class MMC(Problem):
    """Xing et al. (2002): similar pairs (i, j) close, dissimilar pairs (k, l) far."""

    def __init__(self, X, similar, dissimilar):
        X = np.asarray(X, dtype=float)
        (i, j), (k, l) = (np.asarray(a) for a in similar), (np.asarray(a) for a in dissimilar)
        S = X[i] - X[j]
        self.A = S.T @ S
        self.D = X[k] - X[l]
        w, V = np.linalg.eigh(self.A)
        if w[0] <= 1e-10 * w[-1]:
            raise InvalidInputError("MMC: give similar pairs whose differences span the features (A ≻ 0).")
        self.A_isqrt = (V / np.sqrt(w)) @ V.T  # A^-½
        self.d = X.shape[1]

    # -------------------------------------------------------------- the contract
    def to_cvxpy(self):
        # well scaled for the conic solver: W = c·Ŵ with c = 1/(Σ‖δ_k‖)² (the feasible c·I),
        # the objective divided by c·tr A and the constraint by Σ‖δ_k‖, so Ŵ, the objective
        # and the multiplier are all of order 1 (read_cvxpy maps them back)
        norms = np.linalg.norm(self.D, axis=1).sum()
        self._c, self._obj_unit = 1.0 / norms**2, np.trace(self.A) / norms**2
        Wh = cp.Variable((self.d, self.d), PSD=True, name="W_scaled")
        dist = cp.sum(cp.multiply(self.D @ Wh, self.D), axis=1)
        self._far = cp.sum(cp.sqrt(dist)) / norms >= 1
        return cp.Problem(cp.Minimize(cp.sum(cp.multiply(self.A / np.trace(self.A), Wh))), [self._far])

    def objective(self, W):
        return float(np.sum(self.A * W))

    def violations(self, W):
        dist = np.einsum("ij,jk,ik->i", self.D, W, self.D)
        return np.array([max(0.0, 1.0 - float(np.sum(np.sqrt(np.maximum(dist, 0.0)))))])

    def dual_value(self, w):
        w = np.asarray(w, dtype=float)
        if w.shape != (len(self.D),) or np.any(w < 0) or not np.all(np.isfinite(w)):
            return -np.inf
        if np.any(w == 0):
            return 0.0
        U = self.D @ self.A_isqrt
        top = float(np.linalg.eigvalsh((U * w[:, None]).T @ U)[-1])
        s = 1.0 if top <= 1.0 else 1.0 / top
        return s / float(np.sum(1.0 / w))

    def read_cvxpy(self, prob):
        W = self._c * np.asarray(prob.var_dict["W_scaled"].value, dtype=float)
        nu = self._obj_unit * float(self._far.dual_value)  # the multiplier of Σ√d_k >= 1
        dist = np.einsum("ij,jk,ik->i", self.D, W, self.D)
        return W, nu / (2.0 * np.sqrt(np.maximum(dist, 1e-300)))

    def exact_size(self):
        return self.d

    def primal_shape(self):  # what an answer's W must be (the pipeline checks it)
        return (self.d, self.d)


def _simplex(v):
    """Euclidean projection of v onto {x >= 0, Σx = 1}."""
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    k = np.flatnonzero(u - css / np.arange(1, v.size + 1) > 0)[-1]
    return np.maximum(v - css[k] / (k + 1.0), 0.0)


def mmc_solve(problem, tol, max_iter, callback=None):
    """Accelerated projected gradient ascent on the whitened MMC; stops on the certificate's
    relative gap 1 − s (s of dual_value at w_k = f/√d_k)."""
    t0 = time.perf_counter()
    U = problem.D @ problem.A_isqrt
    d = U.shape[1]

    def h_grad(V):
        q = np.einsum("ij,jk,ik->i", U, V, U)
        q = np.maximum(q, 1e-16 * float(np.max(q)))  # a pair at zero distance: a bounded slope
        r = np.sqrt(q)
        return float(r.sum()), (U / (2.0 * r)[:, None]).T @ U, r

    def project(V):
        lam, Q = np.linalg.eigh(0.5 * (V + V.T))
        return (Q * _simplex(lam)) @ Q.T

    V = np.eye(d) / d
    Y, t_k, step, gap, code, stopped = V, 1.0, 1.0, np.inf, Status.NOT_CONVERGED, False
    for it in range(1, max_iter + 1):
        hy, gy, _ = h_grad(Y)
        while True:  # backtracking on the quadratic lower model of the concave h
            Vn = project(Y + step * gy)
            hn = h_grad(Vn)[0]
            if hn >= hy + np.sum(gy * (Vn - Y)) - np.sum((Vn - Y) ** 2) / (2 * step) - 1e-15 * abs(hy):
                break
            step *= 0.5
        t_n = 0.5 * (1 + np.sqrt(1 + 4 * t_k * t_k))
        if hn < h_grad(V)[0]:  # restart the momentum when the ascent stalls
            Y, t_n = V, 1.0
        else:
            Y = Vn + ((t_k - 1) / t_n) * (Vn - V)
            V = Vn
        t_k, step = t_n, min(step * 1.2, 1e6)
        h, g, _ = h_grad(V)
        gap = 1.0 - h / (2.0 * float(np.linalg.eigvalsh(g)[-1]))  # 1 − s at w_k = f/√d_k
        if callback is not None and it % 10 == 0 and callback({"iteration": it, "relative_gap": gap}):
            stopped = True
            break
        if gap <= tol:
            code = Status.OK
            break
    h, _, r = h_grad(V)
    W = problem.A_isqrt @ V @ problem.A_isqrt / h**2
    w = 1.0 / (h * r)  # f / √d_k(W) with f = 1/h², √d_k(W) = r_k / h
    return FastResult(
        matrix=0.5 * (W + W.T),
        lam=w,
        xi=np.zeros(0),
        sweeps=it,
        stop_value=gap,
        code=int(code),
        bad_index=-1,
        time=time.perf_counter() - t0,
        extra={"solver": "mmc-apg", "stopped": stopped},
    )


register_fast_solver(MMC, mmc_solve)


def random_mmc(seed, n=40, d=5, m=30):
    """Three Gaussian classes in d dimensions; m similar and m dissimilar pairs."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = rng.normal(size=(n, d)) + 2.0 * rng.normal(size=(3, d))[y]
    i, j = rng.integers(0, n, (2, 8 * m))
    same, diff = (y[i] == y[j]) & (i != j), y[i] != y[j]
    return MMC(X, (i[same][:m], j[same][:m]), (i[diff][:m], j[diff][:m]))


if __name__ == "__main__":
    for seed in range(3):
        problem = random_mmc(seed)
        exact = problem.solve_reference()
        fast = problem.solve(tol=1e-8, max_iter=20_000)
        rel = abs(fast.objective - exact.objective) / abs(exact.objective)
        print(
            f"seed {seed}: exact {exact.objective:.8g} (gap {exact.gap:.1e}, {exact.solver}) | fast "
            f"{fast.objective:.8g} (gap {fast.gap:.1e}, {fast.n_iter} iterations, {fast.solver}, "
            f"converged {fast.converged}) | rel. diff {rel:.1e}"
        )

    # %%
    # Validate the solver without trusting it: cvxkml.testing recomputes every number from W
    # and w through the class's own formulas; a planted bug (W 0.1 % too large) is caught.
    from cvxkml.testing import validate_answer

    problem = random_mmc(0)
    good = problem.solve(tol=1e-8, max_iter=20_000)
    validate_answer(problem, good)
    bad = problem.evaluate(good.matrix * 1.001, good.dual, converged=True)
    print(
        "planted 0.1 % scale: converged =",
        bad.converged,
        "| relative gap",
        f"{bad.info['certificate']['relative_gap']:.1e}",
    )
