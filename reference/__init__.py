"""The reference sheets (``*.md``), their recorded results (``*.json``, figures) and, in
:mod:`reference.reproduce`, the scripts that reproduce them (from a source checkout; not
installed with cvxkml)."""
