"""Docstrings are written to be read in a terminal (``help()``), in numpydoc: ``|x|`` is an
absolute value, ``components_`` an attribute name. reStructuredText reads the first as a
substitution and the second as a hyperlink reference; this hook escapes both (outside
inline literals, roles, math and doctest/literal blocks) so the text renders as written."""

from __future__ import annotations

import re

# `...` / ``...`` / :role:`...` segments are left alone
_CODE = re.compile(r"(:[\w:+-]+:`[^`]*`|``.+?``|`[^`]*`_{0,2})")
_BAR = re.compile(r"(?<!\\)\|")
_TRAILING_US = re.compile(r"(?<=\w)_(?=$|[\s.,;:)\]}'\"])")


def _escape(text: str) -> str:
    parts = _CODE.split(text)
    for k in range(0, len(parts), 2):  # the even parts are outside code segments
        p = _BAR.sub(r"\\|", parts[k])
        parts[k] = _TRAILING_US.sub(r"\\_", p)
    return "".join(parts)


def escape_plaintext(app, what, name, obj, options, lines):
    """``autodoc-process-docstring`` hook (runs after numpydoc's)."""
    literal_indent = None  # indent of the line that opened a literal block
    for k, line in enumerate(lines):
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if literal_indent is not None:
            if stripped and indent <= literal_indent:
                literal_indent = None
            else:
                continue
        if stripped.startswith((">>>", "... ")) or stripped == "...":
            continue  # doctest lines are shown verbatim
        if stripped.startswith(".. "):  # a directive: its own content is not prose
            if stripped.startswith((".. math::", ".. code", ".. highlight")):
                literal_indent = indent
            continue
        if stripped.endswith("::"):
            lines[k] = _escape(line[:-2]) + "::"
            literal_indent = indent
            continue
        lines[k] = _escape(line)
