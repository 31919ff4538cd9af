"""sphinx-gallery callables, named by dotted path in conf.py (so the config stays picklable)."""
from pathlib import Path

#: command-line options of the scripts that take them: small sizes, so the build takes minutes
ARGV = {
    "scale_a_variant.py": ["--quick"],
}


def reset_argv(gallery_conf, script_vars):
    return ARGV.get(Path(script_vars["src_file"]).name, [])
