"""
Use your variant in an estimator with GridSearchCV
==================================================

A user's regularizer goes straight into cvxkml's scikit-learn estimators:
``SpectralMetricLearner(regularizer=AlphaPower())`` learns a Mahalanobis metric
min_W Σ f_s(λ_i(W)) under pair constraints from the labels (hinge slack of cost ``C``: a
regularizer without a slack divergence of its own gets hinge slack), solved by the generic
certified dual solver. In a ``Pipeline`` with ``KNeighborsClassifier`` it is tuned like any
transformer: ``GridSearchCV`` over ``learn__C``, 3-fold, on the wine data shipped with
scikit-learn (offline).

Each fit carries its Lagrange certificate (``converged_`` is True only when certified); a
second scorer, next to the accuracy, records it for every fit of the search.

The regularizer is the alpha-power divergence of "Add a regularizer",
f_s(x) = (x^{3/2} − 1.5x + 0.5)/0.75 (its exact CVXPY form is not needed here: the
estimator uses the fast solver, which reads ``f_s`` and the conjugate).

Run it yourself::

    python examples/variant_in_gridsearch.py
"""

import time

import numpy as np
from sklearn.datasets import load_wine
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from cvxkml.declare import Regularizer
from cvxkml.estimators import SpectralMetricLearner


class AlphaPower(Regularizer):
    """f_s(x) = (x^{3/2} − 1.5x + 0.5)/0.75 (the tutorial "Add a regularizer"; no CVXPY form)."""

    name, alpha = "alpha-power(1.5)", 1.0

    def f_s(self, x):
        with np.errstate(invalid="ignore"):
            return np.where(x >= 0, (np.abs(x) ** 1.5 - 1.5 * x + 0.5) / 0.75, np.inf)

    def conj_grad_s(self, mu):  # x(μ) = argmax_x xμ − f_s(x) = max(1 + μ/2, 0)²
        return np.maximum(1 + 0.5 * mu, 0.0) ** 2

    def conj_s(self, mu):
        x = self.conj_grad_s(mu)
        return x * mu - self.f_s(x)

    def conj_hess_s(self, mu):
        return np.maximum(1 + 0.5 * mu, 0.0)


def certified(estimator, X, y):
    """A scorer: 1 when the fitted metric learner's solve was certified, else 0."""
    return float(estimator.named_steps["learn"].converged_)


def search(X, y, Cs=(0.1, 1.0, 10.0), n_pairs=60):
    """GridSearchCV over the hinge cost C of the metric learner in a 5-NN pipeline, 3-fold."""
    pipe = Pipeline(
        [
            ("learn", SpectralMetricLearner(AlphaPower(), n_similar=n_pairs, n_dissimilar=n_pairs, random_state=0)),
            ("knn", KNeighborsClassifier(5)),
        ]
    )
    grid = GridSearchCV(
        pipe,
        {"learn__C": list(Cs)},
        cv=StratifiedKFold(3, shuffle=True, random_state=0),
        scoring={"accuracy": "accuracy", "certified": certified},
        refit="accuracy",
    )
    return grid.fit(X, y)


if __name__ == "__main__":
    X, y = load_wine(return_X_y=True)
    print(f"wine: {X.shape[0]} samples, {X.shape[1]} features, {np.unique(y).size} classes")

    # %%
    # The search: 3 values of C × 3 folds, then a refit on all the data at the best C.
    t0 = time.perf_counter()
    grid = search(X, y)
    elapsed = time.perf_counter() - t0
    res = grid.cv_results_
    for k, C in enumerate(res["param_learn__C"]):
        print(
            f"C = {C:<5g} accuracy {res['mean_test_accuracy'][k]:.3f} ± {res['std_test_accuracy'][k]:.3f}  "
            f"certified {round(3 * res['mean_test_certified'][k])}/3 folds"
        )
    n_cert = sum(int(res[f"split{f}_test_certified"].sum()) for f in range(3))
    best = grid.best_estimator_.named_steps["learn"]
    sol = best.solution_
    print(f"best params {grid.best_params_}, mean CV accuracy {grid.best_score_:.3f} ({elapsed:.1f} s)")
    print(f"certified fits: {n_cert}/9 in the search, refit certified {best.converged_}")
    print(
        f"refit: {sol.solver}, {sol.n_iter} iterations, objective {sol.objective:.6f}, "
        f"relative gap {sol.gap / max(1.0, abs(sol.objective)):.1e}, {len(sol.violations)} hinge pairs"
    )

    # %%
    # The baseline: 5-NN on standardized features, same folds.
    base = cross_val_score(
        make_pipeline(StandardScaler(), KNeighborsClassifier(5)),
        X,
        y,
        cv=StratifiedKFold(3, shuffle=True, random_state=0),
    )
    print(f"Euclidean 5-NN (standardized): {base.mean():.3f} ± {base.std():.3f}")
