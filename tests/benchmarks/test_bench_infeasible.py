"""``python -m benchmarks bench infeasible``: every generated problem is infeasible, and the
generic dual solver says so (a typed InfeasibleError) on each; the command prints one row per
generator and size."""

from cli_output import run_cli_ok, table_after

from benchmarks.bench.infeasible import GENERATORS, verdict_rows


def test_every_generator_gets_its_verdict():
    rows = verdict_rows(sizes=(60,), seeds=2, first_seed=5)
    assert [r["generator"] for r in rows] == list(GENERATORS)
    assert all(r["verdicts"] == "2/2" for r in rows), rows


def test_quick_command_prints_one_row_per_generator_and_size():
    out = run_cli_ok(["bench", "infeasible", "--quick"])
    headers, rows = table_after(out, "generator")
    assert len(rows) == 2 * len(GENERATORS)
    verdicts = headers.index("verdicts")
    assert all(r[verdicts] == "1/1" for r in rows), rows
