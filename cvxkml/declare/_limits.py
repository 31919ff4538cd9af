"""Measured exact-model size limits.

``EXACT_LIMITS[name]`` is the largest ``exact_size()`` (the side of the exact model's largest
PSD block; the number of weights for the QP families) whose default ``solve_reference()``
— default solver, default eps — finished within 60 s and 4 GiB on a realistic instance of
the family, n grown by ×1.5 from 8 (8, 12, 18, 27, 41, 62, 93, 140, 210, 315, 473, 710,
1065, …), so the true limit lies below the next size of that sequence.

Where they come from: ``python -m benchmarks bench exact-limits --jobs 2 --out reference/exact-limits.md
--json reference/exact-limits.json`` (SDPLogDetMetric and LMNNProblem re-measured with
``--families SDPLogDetMetric,LMNNProblem --max-errors 8 --update``), each solve in a fresh
process with one BLAS/OpenMP thread.  The machine, the date, the instances, solvers, times,
memory and the reason each family stopped are in ``reference/exact-limits.md``.

Keys are class names; a spectral problem measured per regularizer is ``"Class[Regularizer]"``;
``"[Regularizer]+mixed"`` is the spectral kernel problem with every constraint family at once
(``python -m benchmarks bench exact-limits --families "[LogDet]+mixed,…" --update``), and ``"[Regularizer]"``
the fallback for any class with that regularizer (:meth:`Problem._limit_lookup`).
SpectralReweighting and EmbeddingWeightProblem (closed-form QPs) never reached a limit
below the cap n = 1500: their values are lower bounds.  LMNNProblem stopped on accuracy, not
cost (:data:`COST_LIMITS`).  The von Neumann families stop at 18 because the default solver
is still Clarabel at n = 27 (SCS solved that instance in 37 s in a separate check).
"""

#: {family: largest exact_size() solved by the default solve_reference() in <= 60 s and <= 4 GiB}
EXACT_LIMITS: dict = {
    "ITML": 210,
    "LogDetKernel": 140,
    "LowRankLogDet": 140,
    "VonNeumannKernel": 18,
    "SpectralKernel[Frobenius]": 140,
    "SpectralKernel[VonNeumann]": 18,
    "SpectralKernel[TraceNorm]": 140,
    "SpectralMetric[Frobenius]": 140,
    "SpectralMetric[VonNeumann]": 18,
    # every constraint family at once (hard pairs + triplets + similarity + linear, 2n each),
    # measured under load (conservative); used for problems with families besides pairs
    "[LogDet]+mixed": 41,
    "[VonNeumann]+mixed": 12,
    "[Frobenius]+mixed": 41,
    "[TraceNorm]+mixed": 41,
    # any problem class with this regularizer (a hand-composed SpectralProblem): the smallest
    # limit measured for it above (derived, not measured on its own)
    "[LogDet]": 140,
    "[VonNeumann]": 18,
    "[Frobenius]": 140,
    "[TraceNorm]": 140,
    "TraceSSIKDR": 210,
    "POLAKernel": 210,
    "POLAMetric": 315,
    "SDPLogDetKernel": 27,
    "SDPLogDetMetric": 93,
    "IPLR": 210,
    "ExtendedProblem": 140,
    "KCR": 41,
    "LMNNProblem": 8,
    "RankOneWeightStep": 41,
    "MuWeightStep": 210,
    "SpectralReweighting": 1065,
    "EmbeddingWeightProblem": 1065,
}

#: where a family stopped on accuracy rather than on cost, the largest size whose default exact
#: solve still *ended* (with an error) within 60 s and 4 GiB; the size guard of
#: ``Problem.solve_reference`` uses this instead of :data:`EXACT_LIMITS` (LMNNProblem: the
#: d = 27 model ended ``optimal_inaccurate`` in time, d = 41 passed 4 GiB)
COST_LIMITS: dict = {
    "LMNNProblem": 27,
}
