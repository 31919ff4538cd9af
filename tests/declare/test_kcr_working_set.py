"""The working-set phase of the KCR solver (``kcr_pdhg(working_set=…)``): PDHG on the free
pairs only, with the active hinges fixed at their linear piece and the inactive ones
dropped, certified on all n² pairs.

* Hypothesis instances of the property-test family, the working set switched on at the
  first certificate: the answer is certified (the gap recomputed by ``KCR.solve`` from the
  returned Σ, h̃ and dual weights, not the solver's) and matches the exact model to 1e-3.
* n = 102 (tracked PSD steps switched on): the working set holds a fraction of the pairs,
  and reaches the optimum certified by the full solver.
* The options are checked.
"""

import numpy as np
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from test_kcr_properties import check_fast_vs_exact, kinds, lams, nu_factors, seeds

from benchmarks.bench.kcr import random_instance, random_problem
from cvxkml.errors import InvalidInputError
from cvxkml.solvers.kcr import kcr_pdhg
from cvxkml.solvers.result import OK

EARLY = dict(start=10.0)  # from the first certificate on


@settings(max_examples=examples(8))
@given(
    seed=seeds,
    sizes=st.lists(st.integers(3, 9), min_size=2, max_size=3),
    kind=kinds,
    nu_factor=nu_factors,
    lam=lams,
)
def test_working_set_matches_exact(seed, sizes, kind, nu_factor, lam):
    check_fast_vs_exact(random_instance(seed, sizes, kind, nu_factor, lam), working_set=EARLY)


@pytest.fixture(scope="module")
def mid_problem():
    return random_problem(34, 3, lam=1.0, seed=2)  # n = 102


def test_working_set_is_a_fraction_of_the_pairs_and_certifies_the_same_optimum(mid_problem):
    p = mid_problem
    args = (p.F, p.tau, p.c, p.lam)
    full = kcr_pdhg(*args, h_min=p.h_min, tol=1e-4, max_iter=50_000, eig_min_size=0)
    ws = kcr_pdhg(*args, h_min=p.h_min, tol=1e-4, max_iter=50_000, eig_min_size=0, working_set=EARLY)
    assert full.code == OK and ws.code == OK
    info = ws.extra["working_set"]
    assert 0.0 < info["free_fraction"] < 0.5, info
    assert info["off_rows"] + info["on_rows"] > 0, info
    scale = max(1.0, abs(full.extra["objective"]))
    assert ws.extra["lower_bound"] <= full.extra["objective"] + 1e-9 * scale
    assert full.extra["lower_bound"] <= ws.extra["objective"] + 1e-9 * scale
    # the returned dual is a dual point of the whole problem: n × n, in the box
    s = ws.lam.reshape(p.n, p.n)
    assert s.min() >= 0.0 and s.max() <= 1.0
    sol = p.solve(tol=1e-4, working_set=EARLY, eig_min_size=0)
    assert sol.converged and sol.info["gap"] <= 1e-4
    assert sol.dual_value == pytest.approx(p.dual_value(sol.dual, sol.objective / p.lam))


def test_working_set_options_are_checked(mid_problem):
    p = mid_problem
    with pytest.raises(InvalidInputError, match="working_set"):
        p.solve(working_set=dict(begin=0.1))
    with pytest.raises(InvalidInputError, match="working_set"):
        p.solve(working_set="yes")
    with pytest.raises(InvalidInputError, match="halpern"):
        p.solve(working_set=True, halpern=True)
    assert np.isfinite(p.solve(working_set=True, max_iter=20, warn=False).objective)
