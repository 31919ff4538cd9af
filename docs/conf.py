"""Sphinx configuration of the cvxkml documentation (built offline: no inventory fetched)."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # the source tree, as the tests see it
sys.path.insert(0, str(HERE))  # _apigen, _plaintext, _sgconf

os.environ.setdefault("OMP_NUM_THREADS", "1")  # the gallery's small problems: one BLAS thread
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
# the gallery runs each script from examples/, where cvxkml's "../shared/data" fallback would
# not find the data folder next to the repository: name it once, here
import _sgconf  # noqa: E402

if "CVXKML_DATA" not in os.environ and _sgconf.data_folder() is not None:
    os.environ["CVXKML_DATA"] = str(_sgconf.data_folder())

import cvxkml  # noqa: E402

project = "cvxkml"
author = "the cvxkml developers"
copyright = "cvxkml developers, BSD-3-Clause"
release = version = cvxkml.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = [
    "_build",
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "auto_examples/*.zip",
    "auto_examples/*.md5",
    "auto_examples/*.json",
    "_sheets",
]

# --- API reference --------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": False}
autodoc_typehints = "none"  # numpydoc's Parameters say the types
autodoc_member_order = "bysource"
numpydoc_show_class_members = False  # methods are listed by the class template
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# --- math: MathJax 3 with AMS tags, so \tag{12} prints the papers' equation numbers -----
mathjax3_config = {"tex": {"tags": "none"}}

# --- Markdown (the reference/ sheets are included as they are) --------------------------
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 6
myst_all_links_external = False

# --- the executed gallery ----------------------------------------------------------------


sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "backreferences_dir": "api/backreferences",  # "Examples using this estimator" on its page
    "doc_module": ("cvxkml",),
    "filename_pattern": r".*\.py$",  # every script is executed
    "ignore_pattern": r"(__init__|_util)\.py$",
    "reset_argv": "_sgconf.reset_argv",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "show_memory": False,
    "image_scrapers": ("matplotlib",),
    "capture_repr": (),
    "plot_gallery": "True",
}

warnings.filterwarnings("ignore", category=UserWarning, message="Matplotlib is currently using agg")

# --- HTML --------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"cvxkml {release}"
html_static_path = []
html_theme_options = {
    "navbar_end": ["navbar-icon-links"],
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "navigation_with_keys": False,
}
html_sidebars = {"index": []}
html_show_sourcelink = False


# --- build-time hooks ------------------------------------------------------------------
import _apigen  # noqa: E402
import _plaintext  # noqa: E402
import _sheets  # noqa: E402

_apigen.write(HERE / "api")
_sheets.write(ROOT / "reference", HERE / "_sheets")


def _check_api_coverage(app, env):
    """Warn (an error under -W) when a public class or function got no generated page."""
    from sphinx.util import logging

    log = logging.getLogger("cvxkml.docs")
    for full in sorted(set(_apigen.homes().values())):
        if f"api/generated/{full}" not in env.found_docs:
            log.warning("public name %s has no API page", full)


def setup(app):
    app.connect("autodoc-process-docstring", _plaintext.escape_plaintext, priority=600)
    app.connect("env-updated", _check_api_coverage)
