"""No path of one machine in the product: code, command help, docs and sheets name the data
folder the way the README does (``CVXKML_DATA=<data folder>``, ``--data-dir``) or a path
relative to the checkout, never an absolute path of the machine they were written on."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: absolute paths of the machines this project was developed on, and of any home or scratch
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:(?:work|root|home|Users|scratch)\b|tmp/base)")
SUFFIXES = {".py", ".md", ".rst", ".txt", ".toml", ".cfg", ".json", ".yml", ".yaml", ".sh"}
#: history is not the product: the changelog quotes what earlier sessions ran
EXCLUDED = {"CHANGELOG.md", "tests/test_no_machine_paths.py"}


def _tracked_text_files():
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for name in out.splitlines():
        p = ROOT / name
        if name in EXCLUDED or p.suffix not in SUFFIXES or not p.is_file():
            continue
        yield name, p


def test_no_absolute_machine_path_in_code_help_docs_or_sheets():
    hits = []
    for name, p in _tracked_text_files():
        for k, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
            if MACHINE_PATH.search(line):
                hits.append(f"{name}:{k}: {line.strip()[:100]}")
    assert not hits, "machine paths (use CVXKML_DATA=<data folder> or a path relative to the checkout):\n" + "\n".join(
        hits[:20]
    )


def test_the_pattern_catches_what_it_should():
    for bad in ("CVXKML_DATA=/work/shared/data", "see /root/x", "PYTHONPATH=/tmp/base38 python", "/home/a/b"):
        assert MACHINE_PATH.search(bad), bad
    for ok in ("CVXKML_DATA=<data folder>", "../shared/peers/make-venvs.sh", "a/work/b", "https://x.org/work/y"):
        assert not MACHINE_PATH.search(ok), ok
