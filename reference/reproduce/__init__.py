"""The ``python -m benchmarks reproduce`` commands, one module per paper, beside its sheet in
``reference/``:

============  ==========================================  ===============================
module        sheet                                       command
============  ==========================================  ===============================
``logdet``    ``jain2012-logdet.md``                      ``reproduce logdet``
``spectral``  ``jain2012-spectral.md``                    ``reproduce spectral``
``trace``     ``jain2012-trace.md``                       ``reproduce trace``
``lowrank``   ``kulis2009-lowrank.md``                    ``reproduce lowrank``
``yeung``     ``yeung2007-scalable.md``                   ``reproduce yeung``
``kcr``       ``sriperumbudur2008-kcr.md``                ``reproduce kcr``
``mkl``       ``wang2011-mkl.md``                         ``reproduce mkl``
``all``       ``SUMMARY.md`` (every seed table)           ``reproduce all``
============  ==========================================  ===============================

They use cvxkml as a user does and share the helpers of :mod:`benchmarks` (reports, parallel
runs, timing) and a few instance builders of :mod:`benchmarks.bench`; nothing in cvxkml or
:mod:`benchmarks.bench` imports them (the command table ``benchmarks._table`` lists them).  The
published baselines they compare against (RCA, HMRF-KMeans) are :mod:`reference.reproduce.baselines`,
not installed with cvxkml.
"""
