r"""
Scale your own regularizer from 100 points to 60 000, certified at every size
=============================================================================

A user declares the symmetrized LogDet ("Jeffreys") regularizer as a
:class:`~cvxkml.declare.Regularizer` subclass (nothing of it is built in), then solves
kernel learning with hinge-slack pair constraints (Jain et al. 2012, eq. 12)

.. math::

    \min_K\; f(K_0^{-1/2} K K_0^{-1/2}) + \sum_c C\,\xi_c \quad\text{s.t.}\quad
    d_K(i_c, j_c) \le u + \xi_c \text{ (similar)},\quad d_K(i_c, j_c) \ge l - \xi_c \text{ (dissimilar)},

* dense (:class:`~cvxkml.declare.SpectralKernel`): Gaussian K0 on n points, m = 2n pairs
  from labels (the ITML sampling scheme), n = 100 … a few hundred (``--full``: to 1 000);
* factored (:class:`~cvxkml.declare.FactoredSpectralKernel`): K0 = G0 G0ᵀ with G0 an
  r = 100 Nyström factor of a Gaussian kernel, computed from the features without ever
  forming an n × n matrix, 10 000 hinge pairs + 1 000 hinge triplets, n up to 60 000.

Each solve is the generic certified dual solver (``problem.solve()``); the script prints
the wall time, Newton iterations and the Lagrange certificate (relative duality gap, largest
relative violation, ``converged``, which means certified). The gallery runs ``--quick``.

Run it yourself::

    python examples/scale_a_variant.py            # dense n = 100, 200, 400; factored
                                                  # n = 5 000, 20 000, 60 000; ~50 s
    python examples/scale_a_variant.py --quick    # seconds: dense n = 60, 100; factored
                                                  # n = 2 000, 1 000 pairs, 100 triplets
    python examples/scale_a_variant.py --full     # dense up to n = 1 000; ~70 s

(one BLAS thread, 2-core box at load ~2: reference/variant-scale.md has the measured table)
"""

from __future__ import annotations

import argparse
import time

import cvxpy as cp
import numpy as np

from cvxkml.declare import FactoredSpectralKernel, Regularizer, SpectralKernel
from cvxkml.kernels import gaussian_kernel
from cvxkml.sideinfo import Hinge, PairConstraints, RelativeConstraints, baseline_kernel
from cvxkml.testing import check_regularizer, triplets


# ------------------------------------------------------------------ the user's regularizer
# The same class is defined once more in benchmarks/bench/variants.py for
# `python -m benchmarks bench variants --scale`; the duplication is intended: this file shows what a
# user writes, the benchmark must not depend on an example.
class Jeffreys(Regularizer):
    """Symmetrized LogDet: f_s(x) = x − log x − 1 + c(x + 1/x − 2), the LogDet divergence
    D(X, I) plus c times D(X⁻¹, I) (argmin at x = 1, so alpha = 1).

    Its convex conjugate has a closed form: f_s'(x) = (1 + c) − 1/x − c/x² = μ gives, for
    μ < 1 + c, x(μ) = (1 + √(1 + 4c(1 + c − μ))) / (2(1 + c − μ)); f*_s(μ) = x μ − f_s(x),
    (f*_s)'(μ) = x(μ), (f*_s)''(μ) = 1 / f_s''(x) with f_s''(x) = 1/x² + 2c/x³.
    """

    name = "Jeffreys"
    alpha = 1.0  # argmin of f_s: the prior K0 is the unconstrained optimum
    implies_psd = True  # log_det in the CVXPY form keeps X ≻ 0

    def __init__(self, c: float = 0.5):
        self.c = float(c)

    def f_s(self, x):
        x = np.asarray(x, dtype=float)
        pos = x > 0
        xs = np.where(pos, x, 1.0)
        return np.where(pos, xs - np.log(xs) - 1 + self.c * (xs + 1 / xs - 2), np.inf)

    def _x(self, mu):
        """x(μ) = (f_s')⁻¹(μ), +inf outside the domain μ < 1 + c."""
        a = 1 + self.c - np.asarray(mu, dtype=float)
        ok = a > 0
        a_s = np.where(ok, a, 1.0)
        return np.where(ok, (1 + np.sqrt(1 + 4 * self.c * a_s)) / (2 * a_s), np.inf)

    def conj_s(self, mu):
        x = self._x(mu)
        fin = np.isfinite(x)
        xs = np.where(fin, x, 1.0)
        return np.where(fin, xs * np.asarray(mu, dtype=float) - self.f_s(xs), np.inf)

    def conj_grad_s(self, mu):
        return self._x(mu)

    def conj_hess_s(self, mu):
        x = self._x(mu)
        with np.errstate(divide="ignore", invalid="ignore"):
            return 1.0 / (1 / x**2 + 2 * self.c / x**3)

    def cvx(self, X):
        n = X.shape[0]
        return (1 + self.c) * cp.trace(X) - cp.log_det(X) - n + self.c * (cp.tr_inv(X) - 2 * n)


# ------------------------------------------------------------------ the problems
def dense_problem(n: int, seed: int = 0, reg: Regularizer | None = None, C: float = 1.0):
    """Gaussian K0 (σ = median distance) on n points in 5-d with 3 labels; m = 2n hinge
    pairs from the labels (ITML scheme, bounds at the 5th/95th percentile of K0 distances)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = rng.integers(0, 3, n)
    sq = np.sum((X[:, None] - X[None]) ** 2, -1)
    K0 = gaussian_kernel(X, sigma=float(np.sqrt(np.median(sq[sq > 0]))))
    pairs = PairConstraints.from_labels(
        y, baseline_kernel(K0), scheme="itml", n_constraints=2 * n, percentiles=(5, 95), random_state=seed
    )
    return SpectralKernel(K0, [Hinge(pairs, C)], reg if reg is not None else Jeffreys())


def nystroem_factor(X, r: int, sigma: float, seed: int = 0) -> np.ndarray:
    """G0 = K(X, X_P) L_P^-ᵀ with K(X_P, X_P) = L_P L_Pᵀ for r random landmarks P: the
    Nyström factor of the Gaussian kernel, O(n r) memory (never the n × n kernel;
    :func:`cvxkml.factor.factorize` does the same from a full K0)."""
    rng = np.random.default_rng(seed)
    P = np.sort(rng.choice(X.shape[0], r, replace=False))
    Kpp = gaussian_kernel(X[P], sigma=sigma)
    L = np.linalg.cholesky(Kpp + 1e-10 * np.eye(r))
    return np.linalg.solve(L, gaussian_kernel(X[P], X, sigma=sigma)).T


def factored_problem(
    n: int,
    r: int = 100,
    n_pairs: int = 10_000,
    n_triplets: int = 1_000,
    seed: int = 0,
    reg: Regularizer | None = None,
    C: float = 1.0,
):
    """K0 = G0 G0ᵀ (r-landmark Nyström factor of a Gaussian kernel on n points in 10-d with
    5 classes); ``n_pairs`` hinge pairs from the labels (ITML scheme, bounds at the 5th/95th
    percentile of the factored distances) and ``n_triplets`` hinge triplets (j in i's class,
    k not; margin: the median pair distance / 2)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 5, n)
    X = rng.normal(size=(n, 10))
    X[:, :5] += 1.5 * np.eye(5)[y]  # the classes overlap
    sub = X[rng.choice(n, min(n, 2_000), replace=False)]
    sq = np.sum((sub[:, None] - sub[None]) ** 2, -1)
    G0 = nystroem_factor(X, r, float(np.sqrt(np.median(sq[sq > 0]))), seed)

    def dist(i, j):  # squared distances under K0
        D = G0[i] - G0[j]
        return np.einsum("ij,ij->i", D, D)

    pairs = PairConstraints.from_labels(
        y, dist, scheme="itml", n_constraints=n_pairs, percentiles=(5, 95), random_state=seed
    )
    i, j, k = triplets(rng, y, n_triplets)
    margin = np.full(i.size, 0.5 * float(np.median(dist(pairs.i, pairs.j))))
    cons = [Hinge(pairs, C), Hinge(RelativeConstraints(i, j, k, margin), C)]
    return FactoredSpectralKernel(G0, cons, reg if reg is not None else Jeffreys())


def certificate(problem, sol) -> dict:
    """The certificate of a Solution, in the solver's own scale: relative gap
    (f − g) / max(1, |f|), largest relative violation, converged (= certified)."""
    return dict(
        rel_gap=float(sol.gap) / max(1.0, abs(sol.objective)),
        max_violation=float(sol.info.get("max_relative_violation", sol.max_violation)),
        converged=bool(sol.converged),
    )


def solve_and_report(label: str, problem, tol: float = 1e-6, max_iter: int = 3_000) -> dict:
    t0 = time.perf_counter()
    sol = problem.solve(tol=tol, max_iter=max_iter)
    secs = time.perf_counter() - t0
    row = dict(
        label=label,
        m=problem.n_constraints,
        seconds=secs,
        iterations=int(sol.n_iter),
        objective=float(sol.objective),
        **certificate(problem, sol),
        problem=problem,
        solution=sol,
    )
    print(
        f"{label:<28} m = {row['m']:>6}  {secs:8.2f} s  {row['iterations']:>5} it.  "
        f"rel. gap {row['rel_gap']:.1e}  max rel. viol. {row['max_violation']:.1e}  "
        f"converged {row['converged']}",
        flush=True,
    )
    return row


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description="Scale your own regularizer, certified at every size.")
    ap.add_argument("--quick", action="store_true", help="seconds: small sizes (for tests)")
    ap.add_argument("--full", action="store_true", help="dense up to n = 1 000 (about 70 s)")
    args = ap.parse_args(argv)
    check_regularizer(Jeffreys())  # f_s vs its CVXPY form, Fenchel–Young, derivatives
    if args.quick:
        dense, factored, fp = (60, 100), (2_000,), dict(n_pairs=1_000, n_triplets=100)
    else:
        dense = (100, 200, 400, 1_000) if args.full else (100, 200, 400)
        factored, fp = (5_000, 20_000, 60_000), {}
    rows = []
    print("dense SpectralKernel, Jeffreys(c = 0.5), Gaussian K0, m = 2n hinge pairs")
    for n in dense:
        rows.append(solve_and_report(f"dense n = {n}", dense_problem(n)))
    print("FactoredSpectralKernel, Jeffreys(c = 0.5), r = 100 Nyström factor, hinge pairs + triplets")
    for n in factored:
        rows.append(solve_and_report(f"factored n = {n}, r = 100", factored_problem(n, **fp)))
    return rows


def plot(rows):
    """Wall time and relative duality gap against n, dense and factored."""
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.8))
    for kind, marker in (("dense", "o"), ("factored", "s")):
        sel = [r for r in rows if r["label"].startswith(kind)]
        n = [int(r["label"].split("n = ")[1].split(",")[0]) for r in sel]
        a.loglog(n, [r["seconds"] for r in sel], marker=marker, label=kind)
        b.loglog(n, [max(abs(r["rel_gap"]), 1e-16) for r in sel], marker=marker, label=kind)
    a.set(xlabel="n (points)", ylabel="wall time (s)", title="certified solve time")
    b.set(xlabel="n (points)", ylabel="relative duality gap", title="certificate at stop")
    a.legend()
    fig.tight_layout()
    return fig


if __name__ == "__main__":
    import matplotlib.pyplot as plt

    plot(main())
    plt.show()
