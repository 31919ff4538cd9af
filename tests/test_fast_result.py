"""FastResult, the fast-solver protocol: ``stop_value`` is the value a solver's own stopping
rule compared with ``tol``; its former name ``dual_change`` still works for one release,
with a DeprecationWarning, and the constructor says what is missing or unknown."""

import numpy as np
import pytest

from cvxkml.solvers.result import OK, FastResult


def args():
    return (np.eye(2), np.zeros(1), np.zeros(0), 3)


def test_positional_and_keyword_construction_agree():
    a = FastResult(*args(), 1e-4, OK, -1, 0.5, {"solver": "x"})
    b = FastResult(*args(), stop_value=1e-4, code=OK, bad_index=-1, time=0.5, extra={"solver": "x"})
    for r in (a, b):
        assert (r.stop_value, r.code, r.bad_index, r.time, r.extra, r.sweeps) == (1e-4, OK, -1, 0.5, {"solver": "x"}, 3)
    assert FastResult(**{**a.__dict__, "lam": np.ones(1)}).lam[0] == 1.0  # rebuilt from its fields
    assert FastResult(*args(), 0.0, OK, -1, 0.0).extra == {}


def test_the_former_name_warns_and_still_works():
    with pytest.warns(DeprecationWarning, match="FastResult.dual_change is now FastResult.stop_value"):
        r = FastResult(*args(), dual_change=2e-3, code=OK, bad_index=-1, time=0.0)
    assert r.stop_value == 2e-3
    with pytest.warns(DeprecationWarning, match="stop_value"):
        assert r.dual_change == 2e-3
    with pytest.warns(DeprecationWarning, match="stop_value"):
        r.dual_change = 5e-3  # a solver that sets it after construction
    assert r.stop_value == 5e-3


def test_missing_duplicated_and_unknown_arguments_are_type_errors():
    with pytest.raises(TypeError, match="missing required argument.*stop_value, code, bad_index, time"):
        FastResult(*args())
    with pytest.raises(TypeError, match="both stop_value and its former name"), pytest.warns(DeprecationWarning):
        FastResult(*args(), 1.0, OK, -1, 0.0, dual_change=1.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'gap'"):
        FastResult(*args(), 1.0, OK, -1, 0.0, gap=1.0)
