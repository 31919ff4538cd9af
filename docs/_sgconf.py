"""sphinx-gallery callables, named by dotted path in conf.py (so the config stays picklable)."""
import os
from pathlib import Path

#: command-line options of the scripts that take them: small sizes, so the build takes minutes
ARGV = {
    "scale_a_variant.py": ["--quick"],
}


def data_folder():
    """The offline data folder as cvxkml.datasets finds it from where the build was started
    ($CVXKML_DATA, else ../shared/data), or None."""
    env = os.environ.get("CVXKML_DATA")
    if env:
        return Path(env) if Path(env).is_dir() else None
    fallback = Path.cwd().parent / "shared" / "data"
    return fallback if fallback.is_dir() else None


def reset_argv(gallery_conf, script_vars):
    name = Path(script_vars["src_file"]).name
    if name == "trace_ssikdr_digits.py":
        folder = data_folder()
        if folder is None or not (folder / "mnist5000.npz").is_file():
            return ["--dataset", "sklearn-digits"]     # bundled with scikit-learn: offline
        return []
    return ARGV.get(name, [])
