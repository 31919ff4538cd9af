"""sphinx-gallery callables, named by dotted path in conf.py (so the config stays picklable)."""

import os
from pathlib import Path

#: command-line options of the scripts that take them: small sizes, so the build takes minutes
ARGV = {
    "scale_a_variant.py": ["--quick"],
}


#: the repository root: the build is started there (``.ci/run``, the README command)
ROOT = Path(__file__).resolve().parents[1]


def data_folder():
    """The offline data folder as cvxkml.datasets finds it from the repository root
    ($CVXKML_DATA, else ../shared/data), or None. Anchored to the root, not to the current
    directory: Sphinx reads conf.py from docs/ and the gallery runs scripts from examples/."""
    env = os.environ.get("CVXKML_DATA")
    if env:
        return Path(env) if Path(env).is_dir() else None
    fallback = ROOT.parent / "shared" / "data"
    return fallback if fallback.is_dir() else None


def reset_argv(gallery_conf, script_vars):
    name = Path(script_vars["src_file"]).name
    if name == "trace_ssikdr_digits.py":
        folder = data_folder()
        if folder is None or not (folder / "mnist5000.npz").is_file():
            return ["--dataset", "sklearn-digits"]  # bundled with scikit-learn: offline
        return []
    return ARGV.get(name, [])
