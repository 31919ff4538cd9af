"""The benchopt benchmark in benchmarks/metric_learning: its files exist and parse (always);
with benchopt installed, its objective, datasets and solvers load through benchopt's own
loader and the objective scores answers by recomputation.  Never runs ``benchopt run``."""

import ast
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "metric_learning"
FILES = {
    "objective.py": "Objective",
    "datasets/offline.py": "Dataset",
    "datasets/simulated.py": "Dataset",
    "solvers/cvxkml_fast.py": "Solver",
    "solvers/cvxpy_clarabel.py": "Solver",
    "solvers/cvxpy_scs.py": "Solver",
    "benchmark_utils/__init__.py": None,
}
SOLVERS = {"cvxkml-fast", "cvxpy-clarabel", "cvxpy-scs"}


def _class_attrs(tree, cls):
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    attrs = {}
    for stmt in node.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            try:
                attrs[stmt.targets[0].id] = ast.literal_eval(stmt.value)
            except ValueError:
                attrs[stmt.targets[0].id] = ast.dump(stmt.value)
    return attrs


@pytest.mark.parametrize("rel", sorted(FILES))
def test_file_exists_parses_and_defines_its_class(rel):
    path = BENCH / rel
    assert path.is_file(), f"missing {path}"
    tree = ast.parse(path.read_text(), filename=str(path))
    cls = FILES[rel]
    if cls is None:
        return
    attrs = _class_attrs(tree, cls)
    assert isinstance(attrs.get("name"), str) and attrs["name"]
    if cls == "Solver":
        assert attrs["name"] in SOLVERS
        assert attrs["sampling_strategy"] == "iteration"
        # benchopt reads requirements statically: a literal list of strings
        assert isinstance(attrs["requirements"], list)
        assert all(isinstance(r, str) for r in attrs["requirements"])
        methods = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert {"set_objective", "run", "get_result"} <= methods


def test_objective_declares_both_problems():
    attrs = _class_attrs(ast.parse((BENCH / "objective.py").read_text()), "Objective")
    assert attrs["parameters"] == {"problem": ["itml", "lmnn"]}


@pytest.fixture(scope="module")
def bench():
    pytest.importorskip("benchopt")
    from benchopt.benchmark import Benchmark

    return Benchmark(BENCH)


def test_benchopt_loads_the_benchmark(bench):
    assert {s.name for s in bench.get_solvers()} == SOLVERS
    assert {d.name for d in bench.get_datasets()} == {"offline", "Simulated"}
    assert bench.get_benchmark_objective().name == "cvxkml metric learning"


def test_objective_scores_by_recomputation(bench):
    Dataset = next(d for d in bench.get_datasets() if d.name == "Simulated")
    data = Dataset.get_instance(n_samples=30, n_features=4, seed=0).get_data()
    objective = bench.get_benchmark_objective().get_instance(problem="itml")
    objective.set_data(**data)
    problem = objective.get_objective()["problem"]
    Solver = next(s for s in bench.get_solvers() if s.name == "cvxkml-fast")
    solver = Solver.get_instance()
    solver.set_objective(**objective.get_objective())
    solver.run(2000)
    good = objective.evaluate_result(**solver.get_result())
    assert good["valid"] == 1.0 and good["certified"] == 1.0
    assert abs(good["suboptimality"]) <= 1e-8 and good["violation"] <= 1e-7
    assert good["distance"] <= 1e-4  # ITML: strictly convex, unique optimum
    solver.run(1)  # one sweep: valid, not optimal
    early = objective.evaluate_result(**solver.get_result())
    assert early["valid"] == 1.0 and early["merit"] > 1e3 * good["merit"]
    # a liar: the optimum's claims on another matrix are recomputed, not trusted
    liar = solver.get_result()["answer"]
    sol = problem.solve(max_iter=2000, tol=1e-12)
    liar.objective, liar.violations = sol.objective, np.zeros_like(sol.violations)
    assert objective.evaluate_result(answer=liar)["valid"] == 0.0
    none = objective.evaluate_result(answer=None)
    assert none["answered"] == 0.0 and none["merit"] == pytest.approx(1e4) and np.isnan(none["value"])


def test_stopping_rule_waits_for_an_answer_then_stops_on_certificates(bench):
    import benchmark_utils as bu  # importable once benchopt loaded the benchmark

    crit = bu.AnsweredProgressCriterion().get_runner_instance(max_runs=50)
    no = {"objective_merit": bu.NO_ANSWER, "objective_valid": 0.0, "objective_certified": 0.0}
    curve = [no] * 10  # a conic solver capped before any point
    assert not any(crit.check_convergence(curve[:k])[0] for k in range(1, 11))
    ok = {"objective_merit": 1e-9, "objective_valid": 1.0, "objective_certified": 1.0}
    curve += [ok, ok]
    assert not crit.check_convergence(curve[:11])[0] and not crit.check_convergence(curve)[0]
    assert crit.check_convergence(curve + [ok])[0]  # three certified points in a row
