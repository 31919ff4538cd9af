"""The ``python -m benchmarks bench`` commands, one module each (``bench itml`` is :mod:`.itml`):
what it measures as plain rows (dicts, never printed) and the ``command`` that prints them as tables.
"""
