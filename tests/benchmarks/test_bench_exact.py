"""`python -m benchmarks bench exact-limits` (smoke: tiny sizes, a few seconds) and the recorded limits."""

import json

import numpy as np
import pytest

import cvxkml.declare._limits as limits_module
from benchmarks.bench.exact import FAMILIES, _child, _fmt, build, measure, recorded_limits
from benchmarks.cli import main
from cvxkml import declare
from cvxkml.declare import problem as problem_module
from cvxkml.errors import SolverError
from cvxkml.testing import kernel_instance


def test_cli_reports_a_limit(tmp_path, capsys):
    """Two sizes of a cheap family (n = 8, 12, capped at 12): both pass, the table and the
    JSON report the largest one with its solver, status, time, memory and the fast solve."""
    md, js = tmp_path / "limits.md", tmp_path / "limits.json"
    assert (
        main(
            [
                "bench",
                "exact-limits",
                "--families",
                "EmbeddingWeightProblem",
                "--start",
                "8",
                "--max-n",
                "12",
                "--time-limit",
                "30",
                "--out",
                str(md),
                "--json",
                str(js),
            ]
        )
        == 0
    )
    data = json.loads(js.read_text())
    assert data["limits"] == {"EmbeddingWeightProblem": 12}
    (row,) = data["rows"]
    assert [r["n"] for r in row["runs"]] == [8, 12] and row["capped"] and row["over"] is None
    best = row["best"]
    assert best["exact_size"] == 12 and best["status"] == "optimal" and abs(best["rel_gap"]) <= 1e-6
    assert 0 <= best["time"] <= 30 and best["peak_mib"] > 0
    assert row["fast"]["converged"] is True
    table = md.read_text()
    assert table in capsys.readouterr().out
    line = next(ln for ln in table.splitlines() if ln.startswith("| EmbeddingWeightProblem |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    header = next(ln for ln in table.splitlines() if ln.startswith("| family |"))
    assert len(cells) == len(header.strip("|").split("|"))
    assert cells[2] == "12" and "not reached (n capped at 12)" in cells[8]


def test_memory_limit_kills_the_child():
    """A 50 MiB limit is passed while the child imports: it is killed and reported over."""
    r = measure("EmbeddingWeightProblem", 8, time_limit=30.0, mem_limit_gib=50 / 1024)
    assert r["over"] == "memory" and "killed at" in r["killed"] and r["peak_mib"] > 50


def test_child_reports_errors_instead_of_raising(capsys):
    _child("SDPLogDetKernel", 1)  # one point: no pairs can be drawn
    out = json.loads(capsys.readouterr().out.strip()[2:])
    assert "error" in out and out["peak_mib"] > 0


def test_table_formats_failures():
    rows = [
        {
            "family": "X",
            "description": "d",
            "cap": 100,
            "capped": False,
            "best": {
                "n": 8,
                "exact_size": 8,
                "solver": "CLARABEL",
                "time": 1.0,
                "peak_mib": 200.0,
                "status": "optimal_inaccurate",
                "accepted_by_certificate": True,
                "rel_gap": 1e-7,
            },
            "passed": {"n": 8, "exact_size": 8},
            "over": {"n": 12, "killed": "killed after 120 s", "over": "time"},
            "errors": [{"n": 10, "error": "SolverError: a | b"}],
        }
    ]
    table = _fmt(rows, 60.0, 4.0)
    assert "accepted by certificate" in table and "killed after 120 s" in table and "a / b" in table
    assert recorded_limits(rows) == {"X": 8}


def test_instances_have_the_requested_size():
    for family in ("ITML", "LogDetKernel", "KCR", "MuWeightStep", "SpectralKernel[Frobenius]"):
        p = build(family, 9)
        assert p.exact_size() == 9
    p = build("SpectralMetric[VonNeumann]", 9)
    assert isinstance(p, declare.SpectralMetric) and type(p.regularizer).__name__ == "VonNeumann"


def test_every_benchmarked_family_has_a_recorded_limit():
    assert set(FAMILIES) <= set(limits_module.EXACT_LIMITS)
    assert all(isinstance(v, int) and v >= 8 for v in limits_module.EXACT_LIMITS.values())


def test_size_guard(monkeypatch):
    """Beyond LARGE_FACTOR x the measured limit solve_reference refuses up front with a
    SolverError that says what to do; allow_large=True solves anyway."""
    from cvxkml.declare import LogDetKernel
    from cvxkml.errors import SolverError

    LARGE_FACTOR = problem_module.LARGE_FACTOR
    p = LogDetKernel(*kernel_instance(0, 9, 6, hard=False), gamma=1.0)
    monkeypatch.setitem(limits_module.EXACT_LIMITS, "LogDetKernel", 4)
    assert p.exact_limit() == 4 and p.exact_size() > LARGE_FACTOR * 4
    with pytest.raises(SolverError, match="allow_large=True"):
        p.solve_reference()
    sol = p.solve_reference(allow_large=True)
    assert sol.converged and np.isfinite(sol.gap)
    monkeypatch.setitem(limits_module.EXACT_LIMITS, "LogDetKernel", 5)  # 9 <= 2 x 5
    assert p.solve_reference().converged


def test_size_guard_covers_a_mixins_solve_reference(monkeypatch):
    """A solve_reference that a problem class inherits from a mixin (not a Problem subclass,
    as LMNN's exact model) is behind the same guard as one defined in the class."""
    from cvxkml.declare import LogDetKernel
    from cvxkml.errors import SolverError

    class Model:
        def solve_reference(self, **opts):
            return "solved"

    class Variant(Model, LogDetKernel):
        pass

    p = Variant(*kernel_instance(0, 9, 6, hard=False), gamma=1.0)
    monkeypatch.setitem(limits_module.EXACT_LIMITS, "LogDetKernel", 4)
    with pytest.raises(SolverError, match="allow_large=True"):
        p.solve_reference()
    assert p.solve_reference(allow_large=True) == "solved"


def test_limit_lookup_order():
    """The class's own entry wins over its base's; spectral problems are looked up per
    regularizer; a user's subclass inherits its parent's limit; the guard uses the cost limit
    where the family stopped on accuracy; a problem with families besides pairs takes the
    smaller of its limit and its regularizer's mixed-family limit."""
    from cvxkml.declare import LMNNProblem, POLAKernel, SpectralKernel, TraceSSIKDR
    from cvxkml.testing import contract_cases

    cases = contract_cases()
    lim = limits_module.EXACT_LIMITS
    for cls in (POLAKernel, TraceSSIKDR, SpectralKernel, LMNNProblem):
        p = cases[cls]["factory"](0)
        reg = getattr(p, "regularizer", None)
        key = cls.__name__ if cls.__name__ in lim else f"{cls.__name__}[{type(reg).__name__}]"
        expected = lim[key]
        if getattr(p, "pairs_only", True) is False:
            expected = min(expected, lim.get(f"[{type(reg).__name__}]+mixed", expected))
        assert p.exact_limit() == expected, cls

        class Variant(cls):
            pass

        p.__class__ = Variant
        assert p.exact_limit() == expected, cls
    p = cases[LMNNProblem]["factory"](0)
    assert limits_module.COST_LIMITS["LMNNProblem"] > lim["LMNNProblem"]
    p.exact_size = lambda: problem_module.LARGE_FACTOR * limits_module.COST_LIMITS["LMNNProblem"] + 1
    with pytest.raises(SolverError, match="allow_large=True"):
        p.solve_reference()
