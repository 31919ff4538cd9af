"""Copy the reference/ sheets into docs/_sheets/ for inclusion, with the links between
sheets pointing at the pages that include them (run by conf.py at every build)."""

from __future__ import annotations

import re
from pathlib import Path

#: sheet -> the page that includes it
PAGES = {
    "jain2012-logdet": "papers/jain2012",
    "jain2012-spectral": "papers/jain2012",
    "jain2012-trace": "papers/jain2012",
    "kulis2009-lowrank": "papers/kulis2009",
    "sriperumbudur2008-kcr": "papers/sriperumbudur2008",
    "wang2011-mkl": "papers/wang2011",
    "yeung2007-scalable": "papers/yeung2007",
    "SUMMARY": "papers/sheets/summary",
    "variant-scale": "papers/sheets/variant-scale",
    "user-variants": "papers/sheets/user-variants",
    "dual-newton": "papers/sheets/dual-newton",
    "exact-limits": "papers/sheets/exact-limits",
    "estimators-bench": "papers/sheets/estimators-bench",
    "estimator-speed": "papers/sheets/estimator-speed",
    "lmnn-speed": "papers/sheets/lmnn-speed",
}
_LINK = re.compile(r"\]\(([\w.-]+)\.md(#[^)\s]*)?\)")


def _relink(match):
    page = PAGES.get(match.group(1))
    if page is None:
        return match.group(0)
    return f"](/{page}.md{match.group(2) or ''})"


def write(reference: Path, outdir: Path) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    for name in PAGES:
        text = (reference / f"{name}.md").read_text(encoding="utf-8")
        target = outdir / f"{name}.md"
        new = _LINK.sub(_relink, text)
        if not target.exists() or target.read_text(encoding="utf-8") != new:
            target.write_text(new, encoding="utf-8")
