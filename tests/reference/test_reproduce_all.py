"""``python -m benchmarks reproduce all`` (reference.reproduce.all): the quick smoke run, the
recorded summary in reference/, and the rules that make a row."""

import json
import re
from pathlib import Path

import pytest

from benchmarks.cli import main
from cvxkml._cli import EXIT_USAGE
from reference.reproduce import all as ra

REF = Path(__file__).resolve().parents[2] / "reference"
FIELDS = {
    "paper",
    "table",
    "dataset",
    "method",
    "metric",
    "published",
    "published_std",
    "measured",
    "std",
    "differs",
    "certified",
    "certified_fits",
    "protocol_difference",
    "command",
    "source",
    "sheet",
    "explanation",
    "uncertified_why",
}


def _headings(sheet: Path) -> set:
    return {ra.anchor(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", sheet.read_text(), re.M)}


def test_quick_runs_every_table_and_writes_the_summary(data_dir, tmp_path, capsys):
    status = main(["reproduce", "all", "--quick", "--out", str(tmp_path), "--data-dir", str(data_dir)])
    assert status == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["mode"] == "quick"
    assert {s["key"] for s in summary["sections"]} == set(ra.SECTIONS)  # every table and figure
    assert set(summary["groups"]) == set(ra.GROUPS)
    assert all(g["source"] == "run" for g in summary["groups"].values())
    for rec in summary["records"]:
        assert FIELDS <= set(rec)
        assert rec["command"] == ra.QUICK_COMMAND and rec["source"] == "this run"
        assert rec["certified"] in (True, False, None)
        if rec["certified"] is not None:  # a count "k/n" of certified fits
            k, n = map(int, rec["certified_fits"].split("/"))
            assert 0 <= k <= n and rec["certified"] == (k == n)
    assert any(r["certified"] is not None for r in summary["records"])
    md = (tmp_path / "SUMMARY.md").read_text()
    assert "smoke test, not a reproduction" in md
    assert md == ra.render_markdown(summary)
    for s in summary["sections"]:
        assert f"## {s['paper']} — {s['table']}" in md
    out = capsys.readouterr().out
    assert "wrote" in out and "reproduce all finished" in out


def test_recorded_summary_in_reference_is_generated():
    # reference/SUMMARY.md and summary.json are exactly what `python -m benchmarks reproduce all --recorded` makes
    summary = ra.collect("recorded", ref=REF)
    committed = json.loads((REF / "summary.json").read_text())
    fresh = json.loads(json.dumps({k: v for k, v in summary.items() if k != "groups"}, ensure_ascii=False))
    assert fresh == committed
    assert (REF / "SUMMARY.md").read_text() == ra.render_markdown(committed)


def test_recorded_rows_come_from_the_results_files():
    summary = ra.collect("recorded", ref=REF)
    recs = summary["records"]
    kcr = json.loads((REF / "sriperumbudur2008-kcr-table1-full.json").read_text())["results"]
    row = next(r for r in recs if r["dataset"] == "wine" and r["method"] == "KCR" and r["metric"] == "test error %")
    assert [row["measured"], row["std"]] == kcr["wine"]["result"]["kcr_test"]
    assert row["published"] == 2.13 and row["published_std"] == 1.24
    assert row["certified_fits"] == f"{kcr['wine']['result']['chosen_converged']}/20"
    yeung = json.loads((REF / "yeung2007-results.json").read_text())
    row = next(r for r in recs if r["table"] == "Table 1" and r["method"] == "input space")
    assert row["measured"] == yeung["table1"]["input"]
    recorded = json.loads((REF / ra.RECORDED_FILE).read_text())
    row = next(r for r in recs if r["dataset"] == "ionosphere" and r["method"] == "LogDet linear")
    assert row["measured"] == recorded["jain2012_table1"]["result"]["ionosphere"]["mean"][1]
    assert row["certified"] is True and row["certified_fits"] == "20/20"
    for name, command in ra.MKL_FULL_RUNS.items():  # every full-protocol MKL run has its rows
        run = json.loads((REF / name).read_text())
        tables = [(d, r) for d, r in (run["table1"] or {}).items()]
        tables += [("Multiple Features", run["table2"])] if run.get("table2") else []
        assert tables, name
        for dataset, r in tables:
            rows = {x["method"]: x for x in recs if x["dataset"] == f"{dataset} (full protocol)"}
            assert {m: x["measured"] for m, x in rows.items()} == r["accuracy"]
            ok, total = ra._fits_by_method(r)["LMNN_H"]
            assert rows["LMNN_H"]["certified_fits"] == f"{ok}/{total}"
            assert {x["source"] for x in rows.values()} == {f"reference/{name}"}
            assert {x["command"] for x in rows.values()} == {command}
    for rec in recs:
        assert FIELDS <= set(rec) and rec["command"] and rec["source"]
        assert rec["source"].startswith("reference/")


def test_every_explanation_link_points_to_a_heading_of_its_sheet():
    summary = ra.collect("recorded", ref=REF)
    links = {r["explanation"] for r in summary["records"]} | {s["explanation"] for s in summary["sections"]}
    for link in links:
        sheet, anchor = link.split("#")
        assert anchor in _headings(REF / sheet), link
    # every row that differs by more than one sd links to its sheet
    assert all(r["explanation"].startswith(Path(r["sheet"]).name) for r in summary["records"] if r["differs"])


def test_every_uncertified_row_links_to_its_sheets_reasons():
    """A row whose fits are not all certified says why: its certified cell links to the
    heading of its own sheet that gives the reasons, and that heading exists."""
    summary = ra.collect("recorded", ref=REF)
    bad = [r for r in summary["records"] if r["certified"] is False]
    for r in bad:
        sheet, anchor = r["uncertified_why"].split("#")
        assert sheet == Path(r["sheet"]).name and anchor == ra.anchor(ra.UNCERTIFIED_HEADING)
        assert anchor in _headings(REF / sheet), r["uncertified_why"]
    assert all(r["uncertified_why"] is None for r in summary["records"] if r["certified"] is not False)
    text = ra.render_markdown(summary)
    for r in bad:
        assert f"**no** {r['certified_fits']} — [why]({r['uncertified_why']})" in text


def test_differs_rule():
    base = dict(published=None, published_std=None, measured=None, std=None, axis=None)
    assert ra._differs({**base, "published": 0.3, "measured": 0.2, "std": 0.05}) is True
    assert ra._differs({**base, "published": 0.3, "measured": 0.26, "std": 0.05}) is False
    # no sd of ours: the paper's sd decides; none at all: undecided
    assert ra._differs({**base, "published": 0.3, "measured": 0.26, "std": 0.0, "published_std": 0.01}) is True
    assert ra._differs({**base, "published": 0.3, "measured": 0.26}) is None
    # a figure without numbers: only leaving the plotted axis counts
    assert ra._differs({**base, "published": "curve", "measured": 0.04, "axis": (0.2, 0.5)}) is True
    assert ra._differs({**base, "published": "curve", "measured": 0.3, "axis": (0.2, 0.5)}) is False
    assert ra._differs({**base, "published": "curve", "measured": 0.3}) is None


def test_anchor_is_githubs():
    assert ra.anchor("Table 1 — XOR, n = 8 000, |S| = 50") == "table-1--xor-n--8-000-s--50"
    assert (
        ra.anchor("`python -m benchmarks reproduce spectral` (Kulis et al. Figure 5)")
        == "python--m-benchmarks-reproduce-spectral-kulis-et-al-figure-5"
    )


def test_missing_data_sets_are_not_in_the_data_folder(data_dir):
    files = " ".join(p.name.lower() for p in Path(data_dir).iterdir())
    for name in ("usps", "isolet", "soybean", "gyrb", "caltech", "classic3", "clarify"):
        assert name not in files
    named = " ".join(m[0].lower() for m in ra.MISSING_DATA)
    for name in ("usps", "isolet", "soybean", "gyrb", "caltech", "classic3", "clarify"):
        assert name in named


def test_bad_options_end_with_one_line(tmp_path, capsys):
    assert main(["reproduce", "all", "--sections", "logdet", "--out", str(tmp_path)]) == EXIT_USAGE
    assert "--sections goes with --quick or --full" in capsys.readouterr().err
    assert main(["reproduce", "all", "--quick", "--sections", "nope", "--out", str(tmp_path)]) == EXIT_USAGE
    assert "unknown section" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["reproduce", "all", "--quick", "--full"])


def _t1(input_j, rbf_j, rca, ours, **extra):
    return {"input": input_j, "rbf": rbf_j, "rca": rca, "ours": ours, **extra}


def test_yeung_implied_table1_rows_are_recorded_and_labelled():
    res = {
        "table1": _t1(1.5, 1.6, [1.1, 1.3], {"100": [2.0, 2.2], "200": [2.4, 2.8]}),
        "table1_implied": _t1(
            1.2460,
            1.4253,
            [1.25, 1.26],
            {"100": [1.8, 2.0]},
            xor_std=0.2304,
            sigma=1.2965,
            command="python -m benchmarks reproduce yeung --part table1 --implied",
        ),
    }
    sections = {k: ra._Section(k, *v) for k, v in ra.SECTIONS.items()}
    ra._yeung_records(sections, res, "python -m benchmarks reproduce yeung", "reference/x.json")
    recs = sections["yeung_t1"].records
    main = [r for r in recs if r["dataset"] == "XOR"]
    implied = [r for r in recs if r["dataset"] != "XOR"]
    assert [r["method"] for r in main] == ["input space", "RBF feature space", "RCA", "ours, m = 100", "ours, m = 200"]
    assert [r["method"] for r in implied] == ["input space", "RBF feature space", "RCA", "ours, m = 100"]
    for r in implied:
        assert r["dataset"] == "XOR, implied setting (blob std 0.2304, sigma 1.2965)"
        assert r["protocol_difference"].startswith("implied setting, not the protocol")
        assert r["command"] == "python -m benchmarks reproduce yeung --part table1 --implied"
        assert r["explanation"] == "yeung2007-scalable.md#" + ra.anchor(ra._YEUNG_IMPLIED)
        assert r["source"] == "reference/x.json" and r["certified"] is None
    assert ra.anchor(ra._YEUNG_IMPLIED) in _headings(REF / "yeung2007-scalable.md")
    assert [implied[0]["measured"], implied[1]["measured"]] == [1.2460, 1.4253]
    assert "calibrated" in implied[0]["note"] and "calibrated" not in implied[2]["note"]
    assert implied[3]["measured"] == pytest.approx(1.9) and implied[3]["std"] == pytest.approx(0.1)
    assert implied[3]["published"] == 2.8657 and implied[3]["differs"] is True
    assert main[3]["measured"] == pytest.approx(2.1) and main[0]["measured"] == 1.5
    assert all(
        r["command"] == "python -m benchmarks reproduce yeung" and "implied" not in r["protocol_difference"]
        for r in main
    )
    # without the key, Table 1 has the main rows only
    sections = {k: ra._Section(k, *v) for k, v in ra.SECTIONS.items()}
    ra._yeung_records(sections, {"table1": res["table1"]}, "python -m benchmarks reproduce yeung", "reference/x.json")
    assert sections["yeung_t1"].records == main


def test_recorded_summary_carries_the_stored_implied_yeung_rows():
    yeung = json.loads((REF / "yeung2007-results.json").read_text())
    assert "table1_implied" in yeung
    rows = [r for r in ra.collect("recorded", ref=REF)["records"] if r["dataset"].startswith("XOR, implied")]
    assert len(rows) == 3 + len(yeung["table1_implied"]["ours"])
    assert rows[0]["measured"] == yeung["table1_implied"]["input"]


def test_reference_dir_is_the_checkouts_from_any_folder(tmp_path, monkeypatch):
    """The recorded results are found from the module's place, not the working folder."""
    monkeypatch.chdir(tmp_path)
    assert ra.reference_dir() == Path(__file__).resolve().parents[2] / "reference"
    assert (ra.reference_dir() / ra.RECORDED_FILE).is_file()


def test_mkl_rows_count_the_fits_behind_their_own_method():
    fit = lambda method, ok: {"method": method, "converged": ok}  # noqa: E731
    folds = [
        {"lmnn_fits": [fit("NR-LMNN-MKL", True), fit("LMNN-MKL_CV inner", False), fit("LMNN-MKL_CV", True)]},
        {"lmnn_fits": [fit("NR-LMNN-MKL", True), fit("LMNN-MKL_CV inner", True), fit("LMNN-MKL_CV", True)]},
    ]
    # an inner-CV fit counts for LMNN-MKL_CV (it chose the kernel), not for the other methods
    assert ra._fits_by_method({"per_fold": folds}) == {"NR-LMNN-MKL": (2, 2), "LMNN-MKL_CV": (3, 4)}
    assert ra._fits_by_method({"per_split": folds[:1]})["LMNN-MKL_CV"] == (1, 2)
    # a run that kept no per-fit records: the data set's count is used instead
    assert ra._fits_by_method({"per_fold": [{"lmnn_fits": []}, {}]}) is None
    assert ra._fits_by_method({}) is None


def test_recorded_wang_rows_are_certified_exactly_when_their_methods_fits_are():
    rows = [
        line.split(" | ")
        for line in (ra.reference_dir() / "SUMMARY.md").read_text().splitlines()
        if line.startswith("| ") and "(full protocol) | " in line and "1-NN test accuracy" in line
    ]
    results = json.loads((ra.reference_dir() / "wang2011-mkl-full-sonar.json").read_text())["table1"]["sonar"]
    counts = ra._fits_by_method(results)
    sonar = {r[1]: r[5] for r in rows if r[0] == "| sonar (full protocol)"}
    for method, (ok, total) in counts.items():
        why = f" — [why](wang2011-mkl.md#{ra.anchor(ra.UNCERTIFIED_HEADING)})"
        assert sonar[method] == (f"yes {ok}/{total}" if ok == total else f"**no** {ok}/{total}{why}")
    assert sum(total for _, total in counts.values()) == results["fits"]  # every fit counted once
