"""The whitened core shared by every spectral problem (Jain et al. 2012, eq. 12–13).

The learned matrix is M = T X̂ Tᵀ with M0 = T Tᵀ (T = chol(W0) for a metric, T = G0 with
K0 = G0 G0ᵀ a range-space factor for a kernel), and the objective is a spectral function
of the whitened matrix, f(X̂) = f(M0^-½ M M0^-½) (for LogDet: D_ld(M, M0) = D_ld(X̂, I_r)).
A pair distance is d(i, j) = v̂ᵀ X̂ v̂ with v̂ = F[i] − F[j] (F = X T for the metric,
F = G0 for the kernel).  The CVXPY model is therefore well conditioned, never inverts
K0 or W0, and handles a rank-deficient K0 on its range space (Kulis et al. 2009, eq. 14).
Everything regularizer-specific (value, CVXPY form, slack, conjugate for the dual)
comes from a :mod:`~cvxkml.declare.regularizers` object.
"""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np

from .._validation import check_positive
from ..errors import InvalidInputError
from ..formulas.penalties import dual_penalty, hard_violation, penalty
from ..sideinfo import (
    ConstraintAtom,
    Hinge,
    LinearConstraints,
    LinearEqualities,
    PairConstraints,
    RelativeConstraints,
    SimilarityConstraints,
    atom_family,
    check_atom,
)
from ..solution import Solution
from ._spectral_exact import SpectralExactModel, cvx_part
from ._spectral_fast import SpectralFastSolve
from .problem import Problem
from .regularizers import LogDet, Regularizer

__all__ = ["SpectralProblem", "cvx_part"]


def _collect_atoms(constraints, owner: str = "This problem"):
    """The constraints argument of a spectral problem as [(atom, wrapper or None)] in
    ``violations()`` order: one constraint object or a list/tuple of them, each a
    :class:`~cvxkml.sideinfo.ConstraintAtom` (a built-in family or a user's own) or one
    wrapped in :class:`~cvxkml.sideinfo.Hinge` / :class:`~cvxkml.sideinfo.Squared`; several
    objects of one family are allowed.  Sorted (stably) by the families' ``order``."""
    hint = (
        f"Pass {owner} constraint atoms (cvxkml.sideinfo.ConstraintAtom: PairConstraints, "
        "RelativeConstraints, SimilarityConstraints, LinearConstraints, LinearEqualities or a "
        "subclass of your own), each hard or wrapped in Hinge / Squared, one or a list; e.g. "
        "PairConstraints.from_labels(y, baseline_metric(X))."
    )
    if constraints is None:
        raise InvalidInputError(f"constraints is None. {hint}")
    items = list(constraints) if isinstance(constraints, (list, tuple)) else [constraints]
    out = []
    for c in items:
        if isinstance(c, Hinge):
            out.append((c.constraints, c))
        elif isinstance(c, ConstraintAtom):
            out.append((check_atom(c, owner), None))
        else:
            raise InvalidInputError(f"Unsupported constraint object {type(c).__name__}. {hint}")
    if not out:
        raise InvalidInputError(f"At least one constraint set is required. {hint}")
    order = sorted(range(len(out)), key=lambda k: getattr(out[k][0], "order", 100))
    return [out[k] for k in order]


class SpectralProblem(SpectralFastSolve, SpectralExactModel, Problem):
    """Common machinery of the whitened spectral problems (ITML, LogDetKernel,
    SpectralMetric, SpectralKernel, LowRankLogDet, …).

    Subclasses set ``M0`` (N × N), ``T`` (N × r), ``F`` (points × r) and implement
    :meth:`pair_values` (squared learned distances of index pairs under a matrix M) and
    :meth:`pair_inner` (learned inner products).  The fast solver is the first registered
    one that accepts the problem (:mod:`cvxkml.declare.registry`, :meth:`fast_solver`).
    """

    #: the suffix of ``Solution.solver`` naming the problem (e.g. "bregman-kernel-logdet")
    solver_tag = "logdet"
    _constraint_atoms: list = []  # the atoms in violations() order
    _wrappers: list = []  # per atom: its Hinge / Squared wrapper, or None (hard)
    regularizer: Regularizer = LogDet()
    M0: np.ndarray
    T: np.ndarray
    F: np.ndarray

    def __init__(
        self, space, constraints, regularizer: Regularizer | None = None, gamma=None, *, zero_pairs: str = "raise"
    ):
        """A spectral problem composed of its parts: ``space`` × ``regularizer`` ×
        ``constraints`` (Jain et al. 2012, eq. 12–13).

        Parameters
        ----------
        space : :class:`~cvxkml.declare.spaces.Space`
            What the learned matrix is: :class:`~cvxkml.declare.spaces.MetricSpace` (W on
            features), :class:`~cvxkml.declare.spaces.KernelSpace` (K on the range of K0),
            :class:`~cvxkml.declare.spaces.FactoredSpace` (X̂ with K = G0 X̂ G0ᵀ) or
            :class:`~cvxkml.declare.spaces.SpanSpace` (W on wide data, in the data's span).
        constraints : constraint atom(s) (:mod:`cvxkml.sideinfo`), hard or wrapped in
            :class:`~cvxkml.sideinfo.Hinge` / :class:`~cvxkml.sideinfo.Squared`.
        regularizer : :class:`~cvxkml.declare.regularizers.Regularizer` or None
            The divergence to the baseline that the problem minimizes; None: LogDet.
        gamma : float or None
            The regularizer's own pair slack weight (LogDet, von Neumann), or None.
        zero_pairs : {"raise", "skip"}
            Pairs at zero baseline distance: an error, or dropped with a warning.

        The named problems (:class:`~cvxkml.declare.ITML`, :class:`~cvxkml.declare.LogDetKernel`,
        :class:`~cvxkml.declare.LowRankLogDet`, :class:`~cvxkml.declare.SpectralMetric`, …)
        are this composition with their space and regularizer filled in.
        """
        from .spaces import Space

        if not isinstance(space, Space):
            raise InvalidInputError(
                "space must be a cvxkml.declare.spaces.Space (MetricSpace(X), KernelSpace(K0), "
                f"FactoredSpace(G0), SpanSpace(X)); got {type(space).__name__}."
            )
        if regularizer is not None:
            if not isinstance(regularizer, Regularizer):
                raise InvalidInputError(
                    "regularizer must be a cvxkml.declare.regularizers.Regularizer (LogDet(), "
                    f"VonNeumann(), Frobenius(), TraceNorm(tau), …); got {type(regularizer).__name__}."
                )
            self.regularizer = regularizer
        self._set_space(space)
        self._init_constraints(constraints, space.n_points, space.dim, gamma, zero_pairs)

    #: attributes a space lends its problem (the names the problems had before spaces)
    _SPACE_ATTRIBUTES = ("X", "G0", "factorization", "rank")

    def _set_space(self, space) -> None:
        """Adopt ``space``: M0, T, F and the space's own named attributes."""
        self.space = space
        self.M0, self.T, self.F = space.M0, space.T, space.F
        for name in self._SPACE_ATTRIBUTES:
            if hasattr(space, name):
                setattr(self, name, getattr(space, name))
        if hasattr(space, "range"):
            self._range = space.range

    def _init_constraints(self, constraints, n_points: int, dim: int, gamma, zero_pairs: str = "raise"):
        """Split and validate constraints.  Pairs at zero baseline distance (LogDet keeps the
        range space, so their distance can never change) raise, or with
        ``zero_pairs="skip"`` are dropped with a warning and listed in ``skipped_pairs``
        (indices into the given PairConstraints)."""
        items = _collect_atoms(constraints, type(self).__name__)
        self._constraint_atoms = [a for a, _ in items]
        self._wrappers = [w for _, w in items]
        for c in self._constraint_atoms:
            c.validate_space(n_points, dim)
        # the pair family's own treatment (bound-scaled model rows, the regularizer's slack
        # gamma, pairs at zero baseline distance) applies to the first PairConstraints atom
        self.pairs = next((a for a in self._constraint_atoms if atom_family(a) is PairConstraints), None)
        self.gamma = check_positive(gamma, "gamma", allow_none=True)
        if self.gamma is not None and self.pairs is None:
            raise InvalidInputError("gamma (slack) applies to pair constraints; none were given.")
        if self.gamma is not None and self._wrapper(self.pairs) is not None:
            wrapper = type(self._wrapper(self.pairs)).__name__
            raise InvalidInputError(
                f"The pair constraints carry two slacks: gamma (the regularizer's slack) and {wrapper}. "
                f"Use one: gamma=None with {wrapper}(pairs, C), or the bare PairConstraints with gamma."
            )
        if self.gamma is not None and not self.regularizer.has_slack:
            raise InvalidInputError(
                f"{self.regularizer.name} has no slack formulation; use hard constraints (gamma=None)."
            )
        self._Tpinv = self.space.T_pinv()
        self.skipped_pairs = np.zeros(0, dtype=np.int64)
        if self.pairs is not None:
            p0 = self.pair_values(self.M0, self.pairs.i, self.pairs.j)
            # zero relative to the other pairs, or at the round-off level of the coordinates
            # (scale-free: data at 1e-8 or 1e8 is judged alike)
            row_scale = float(np.max(np.einsum("ij,ij->i", self.F, self.F), initial=0.0))
            tiny = p0 <= max(1e-12 * float(np.max(np.abs(p0))), (64 * np.finfo(float).eps) ** 2 * row_scale)
            if np.any(tiny) and zero_pairs == "skip":
                self.skipped_pairs = np.flatnonzero(tiny)
                n_dis = int(np.sum(self.pairs.y[tiny] < 0))
                warnings.warn(
                    f"Skipped {tiny.sum()} pair(s) identical in the factor space (zero distance that "
                    f"can never change){f'; {n_dis} of them dissimilar, hence unsatisfiable' if n_dis else ''}. "
                    "Indices in problem.skipped_pairs and Solution.info['skipped_pairs'].",
                    UserWarning,
                    stacklevel=3,
                )
                keep = ~tiny
                k = self._atom_index(self.pairs)
                w = self._wrappers[k]
                if not np.any(keep):
                    del self._constraint_atoms[k], self._wrappers[k]
                    self.pairs = None
                    if not self._constraint_atoms:
                        raise InvalidInputError(
                            "Every pair is identical in the factor space; nothing to learn. Remove "
                            "pairs of duplicate points, or give other constraints."
                        )
                else:
                    P = self.pairs
                    self.pairs = PairConstraints(P.i[keep], P.j[keep], P.y[keep], P.bound[keep])
                    self._constraint_atoms[k] = self.pairs
                    self._wrappers[k] = None if w is None else type(w)(self.pairs, w.C[keep])
            elif np.any(tiny):
                c = int(np.flatnonzero(tiny)[0])
                raise InvalidInputError(
                    f"Pair {c} ({self.pairs.i[c]}, {self.pairs.j[c]}) has zero distance under the "
                    "baseline; LogDet keeps the range space, so its distance can never change and "
                    "the projection is undefined. Remove such pairs (PairConstraints.from_labels "
                    "drops them)."
                )
            if self.pairs is None and self.gamma is not None:
                self.gamma = None

    # ------------------------------------------------------------------ numpy side
    @property
    def n_constraints(self) -> int:
        return sum(len(c) for c in self._constraint_atoms)

    @property
    def constraints(self) -> list:
        """The constraint atoms in :meth:`violations` order, each with its soft wrapper
        (:class:`~cvxkml.sideinfo.Hinge` / :class:`~cvxkml.sideinfo.Squared`) or bare (hard):
        what the problem was built from, sorted by the families' ``order``."""
        return [a if w is None else w for a, w in zip(self._constraint_atoms, self._wrappers)]

    def _families(self) -> list:
        """The constraint atoms (unwrapped) in :meth:`violations` order."""
        return list(self._constraint_atoms)

    _atoms = _families

    def _atom_index(self, atom) -> int:
        return next(k for k, a in enumerate(self._constraint_atoms) if a is atom)

    def _wrapper(self, atom):
        """The :class:`~cvxkml.sideinfo.Hinge` / :class:`~cvxkml.sideinfo.Squared` wrapping
        ``atom`` in this problem, or None (hard)."""
        return self._wrappers[self._atom_index(atom)]

    def _only(self, family):
        """The one atom of ``family`` (:func:`~cvxkml.sideinfo.atom_family`), or None when the
        problem has none or several (the named views below; several go through the atoms)."""
        found = [a for a in self._constraint_atoms if atom_family(a) is family]
        return found[0] if len(found) == 1 else None

    @property
    def relative(self):
        """The problem's one :class:`~cvxkml.sideinfo.RelativeConstraints`, or None."""
        return self._only(RelativeConstraints)

    @property
    def similarity(self):
        """The problem's one :class:`~cvxkml.sideinfo.SimilarityConstraints`, or None."""
        return self._only(SimilarityConstraints)

    @property
    def linear(self):
        """The problem's one :class:`~cvxkml.sideinfo.LinearConstraints`, or None."""
        return self._only(LinearConstraints)

    @property
    def equalities(self):
        """The problem's one :class:`~cvxkml.sideinfo.LinearEqualities`, or None."""
        return self._only(LinearEqualities)

    @property
    def _hinge(self) -> dict:
        """{atom position: penalty weights C} of the soft atoms (empty: every constraint hard)."""
        return {k: w.C for k, w in enumerate(self._wrappers) if w is not None}

    @property
    def pairs_only(self) -> bool:
        return self.pairs is not None and len(self._constraint_atoms) == 1

    def pair_values(self, M, i, j) -> np.ndarray:
        """Squared learned distances of index pairs under a matrix M of this problem's space
        (:meth:`Space.pair_values <cvxkml.declare.spaces.Space.pair_values>`)."""
        return self.space.pair_values(M, i, j)

    def pair_inner(self, M, j, l) -> np.ndarray:
        """Learned inner products of index pairs (K_jl for a kernel space)."""
        return self.space.pair_inner(M, j, l)

    def learned_metric(self, solution):
        """The learned Mahalanobis metric of a metric problem's solution, as a function of
        new points: :class:`~cvxkml.learned.LearnedMetric` (W, d × d) in the feature space,
        :class:`~cvxkml.learned.FactoredMetric` (W = αI + U diag(λ) Uᵀ, never d × d) in the
        span space (:class:`~cvxkml.declare.spaces.SpanSpace`)."""
        from ..learned import LearnedMetric

        M = solution.matrix if isinstance(solution, Solution) else np.asarray(solution, dtype=float)
        name = self.space.name
        if name == "span":
            return self.space.metric(M, float(self.regularizer.alpha))
        if name == "metric":
            return LearnedMetric(M)
        raise InvalidInputError(
            f"{type(self).__name__} learns in the {name} space, not a Mahalanobis metric on "
            "features: use learned_kernel(solution, base, X_train) for new points."
        )

    def best_slack(self, M) -> np.ndarray | None:
        """The optimal slack ξ for a fixed M: ξ0 where the bound holds, else the distance."""
        if self.gamma is None or self.pairs is None:
            return None
        p = self.pair_values(M, self.pairs.i, self.pairs.j)
        ok = self.pairs.y * (p - self.pairs.bound) <= 0
        return np.where(ok, self.pairs.bound, p)

    def whiten(self, M) -> np.ndarray | None:
        """X̂ with M = T X̂ Tᵀ, or None when M is not in the range of T (M0)."""
        M = np.asarray(M, dtype=float)
        Xh = self._Tpinv @ M @ self._Tpinv.T
        Xh = 0.5 * (Xh + Xh.T)
        if self.T.shape[0] != self.T.shape[1]:
            resid = np.linalg.norm(M - self.T @ Xh @ self.T.T)
            if resid > 1e-7 * max(1.0, float(np.linalg.norm(M))):
                return None
        return Xh

    @property
    def upper(self) -> np.ndarray:
        """(m,) the multipliers' upper bounds in :meth:`violations` order (+inf: hard or
        squared; C_c: :class:`~cvxkml.sideinfo.Hinge`)."""
        return self.dual_box()[1]

    def dual_box(self):
        """(lower, upper, quad) per constraint in :meth:`violations` order: the multipliers'
        box and the squared-penalty weights of the Lagrange dual
        (:mod:`cvxkml.formulas.penalties`): hard inequality [0, ∞); hard equality (−∞, ∞);
        soft ones from their :class:`~cvxkml.sideinfo.Hinge` / :class:`~cvxkml.sideinfo.Squared`."""
        parts = []
        for f, wrapper in zip(self._constraint_atoms, self._wrappers):
            if wrapper is None:
                m = len(f)
                parts.append((np.full(m, -np.inf) if f.equality else np.zeros(m), np.full(m, np.inf), np.zeros(m)))
            else:
                parts.append(wrapper.dual_box())
        if not parts:
            return np.zeros(0), np.zeros(0), np.zeros(0)
        return tuple(np.concatenate([q[k] for q in parts]) for k in range(3))

    @property
    def soft(self) -> np.ndarray:
        """(m,) bool: which constraints carry a penalty (:class:`~cvxkml.sideinfo.Hinge`,
        :class:`~cvxkml.sideinfo.Squared`) instead of being hard."""
        return (
            np.concatenate([np.full(len(f), w is not None) for f, w in zip(self._constraint_atoms, self._wrappers)])
            if self._constraint_atoms
            else np.zeros(0, dtype=bool)
        )

    def hinge_value(self, M) -> float:
        """Σ_c φ_c(g_c(M) − t_c) over the soft constraints (:mod:`cvxkml.formulas.penalties`:
        C·max(0, ρ), C·|ρ| for equalities, (C/2)·max(0, ρ)² squared); 0 without any."""
        if not self._hinge:
            return 0.0
        lower, upper, quad = self.dual_box()
        soft = self.soft
        return float(np.sum(penalty(self.residuals(M)[soft], lower[soft], upper[soft], quad[soft])))

    def objective(self, M, xi=None) -> float:
        """f(X̂) for M = T X̂ Tᵀ (for LogDet: D_ld(M, M0)); + γ·D(diag ξ, diag ξ0) with slack,
        ξ = the best slack for M unless given; + Σ C_c·max(0, g_c(M) − t_c) for
        :class:`~cvxkml.sideinfo.Hinge` constraints.  +inf when M leaves the range of M0 or
        the domain of f."""
        Xh = self.whiten(M)
        if Xh is None:
            return np.inf
        val = self.regularizer.value(Xh)
        if self.gamma is not None:
            xi = self.best_slack(M) if xi is None else np.asarray(xi, dtype=float)
            val += self.gamma * self.regularizer.slack_value(xi, self.pairs.bound)
        if self._hinge:
            val += self.hinge_value(M)
        return float(val + self.space.offset(self.regularizer))

    def violations(self, M, xi=None) -> np.ndarray:
        """Per-constraint violations in :meth:`violations` order: max(0, g − t) for an
        inequality, |g − t| for an equality.  Pair targets are the bounds, or ξ when given
        (slack problems).  A soft constraint (Hinge, Squared) is never violated (its slack is
        priced in the objective): 0."""
        res = self.residuals(M, xi)
        lower, upper, quad = self.dual_box()
        v = hard_violation(res, lower, upper, quad)
        if self._hinge:
            v[self.soft] = 0.0
        return v

    def residuals(self, M, xi=None) -> np.ndarray:
        """Signed residuals g_c(M) − t_c (<= 0, or = 0 for an equality: satisfied) in
        :meth:`violations` order; each atom's own ``values`` and ``targets``."""
        M = np.asarray(M, dtype=float)
        out = []
        for f in self._atoms():
            if f is self.pairs and xi is not None:
                out.append(f.y * (self.pair_values(M, f.i, f.j) - np.asarray(xi, dtype=float)))
            else:
                out.append(f.values(self, M) - f.targets())
        return np.concatenate(out) if out else np.zeros(0)

    def _max_relative_violation(self, viol) -> float:
        """max violation / the atom's scale (max(1, |target|)) over all constraints."""
        atoms = self._atoms()
        t = np.concatenate([f.scales() for f in atoms]) if atoms else np.zeros(0)
        return float(np.max(viol / t, initial=0.0))

    # ------------------------------------------------------------------ the certificate of an answer
    # (Problem's answer hooks; cvxkml.testing recomputes an answer through them)
    def answer_primal(self, sol) -> tuple:
        """(M, ξ) with the solver's slack ξ when the problem has slack and the answer carries
        one, else (M,): the point the violations are judged at."""
        if self.gamma is not None and sol.slack is not None:
            return (sol.matrix, sol.slack)
        return (sol.matrix,)

    def check_answer(self, sol, *, symmetric_tol: float, psd_tol: float) -> None:
        """The N × N matrix (finite, symmetric, PSD), the slack ξ (one entry per pair) when
        the problem has slack and the answer carries one, and one multiplier per constraint."""
        from .._answer import check_primal_matrix, check_primal_vector

        check_primal_matrix(sol.matrix, self.M0.shape[0], symmetric_tol=symmetric_tol, psd_tol=psd_tol)
        if self.gamma is not None and sol.slack is not None:
            check_primal_vector(sol.slack, len(self.pairs), what="slack ξ")
        if sol.dual is not None:
            check_primal_vector(sol.dual, self.n_constraints, what="dual (one multiplier per constraint)")

    def objective_scale(self) -> float:
        """The unit a certificate of this problem is judged in: 1.  The objective is a function
        of the whitened X̂ = M0^-½ M M0^-½ — a divergence from the prior in the regularizer's
        own units (for LogDet, D_ld(X̂, I)), the same at any scale of the data — so a gap of
        1e-6 means the same on every instance; the fast spectral solvers stop relative to
        max(1, |f|) on the same grounds."""
        return 1.0

    def answer_objective(self, sol) -> float:
        """The objective at M and its best slack (a Solution's contract: the objective at M's
        best slack, the violations against the solver's ξ, :meth:`answer_primal`)."""
        return float(self.objective(sol.matrix))

    def _whitened_family_terms(self):
        """Per atom (sum, adjoint, t): every constraint reads tr(X̂ Â_c) <= t_c (or = t_c) in
        the whitened space; ``sum(λ)`` = Σ_c λ_c Â_c (r × r) and ``adjoint(G)`` = [tr(G Â_c)]_c,
        from the atom's own rank-one terms (:meth:`~cvxkml.sideinfo.ConstraintAtom.terms`)."""
        out = []
        for f in self._atoms():
            U, w, counts = f.terms(self.F, self.T)
            owner = np.repeat(np.arange(len(f)), counts)
            out.append(
                (
                    lambda l, U=U, w=w, owner=owner: U.T @ ((w * l[owner])[:, None] * U),
                    lambda G, U=U, w=w, owner=owner, m=len(f): np.bincount(  # noqa: B008 (binds this atom's size)
                        owner, weights=w * np.einsum("ij,ij->i", U @ G, U), minlength=m
                    ),
                    f.targets(),
                )
            )
        return out

    def dual_value(self, lam) -> float:
        """Lagrange dual g(λ), a lower bound on the optimum for any λ in the dual box
        (:meth:`dual_box`: λ >= 0 for inequalities, free for equalities, <= C under Hinge).

        With every constraint written tr(X̂ Â_c) <= t_c (or = t_c) in the whitened space::

            g(λ) = −f*_+(−Σ_c λ_c Â_c) − Σ_c λ_c t_c − Σ_c ½ q_c λ_c²,

        f*_+ the conjugate of the regularizer over X̂ ⪰ 0 (for LogDet:
        log det(I + Σ λ_c Â_c) − Σ λ_c t_c), q_c = 1/C_c for :class:`~cvxkml.sideinfo.Squared`
        penalties (:mod:`cvxkml.formulas.penalties`); with slack the pair terms −δλb become the
        regularizer's slack conjugate.  −inf outside the dual domain.  ``lam`` follows the
        order of :meth:`violations`.
        """
        lam = np.asarray(lam, dtype=float)
        if lam.size != self.n_constraints:
            raise InvalidInputError(f"lam must have one entry per constraint ({self.n_constraints}).")
        pen = dual_penalty(lam, *self.dual_box())
        if not np.isfinite(pen):
            return -np.inf
        A = np.zeros((self.T.shape[1],) * 2)
        lin = 0.0
        start = 0
        for fam, (term, _, t) in zip(self._constraint_atoms, self._whitened_family_terms()):
            l = lam[start : start + len(fam)]
            start += len(fam)
            A += term(l)
            if fam is self.pairs and self.gamma is not None:
                lin += self.regularizer.slack_conj(fam.y * l, fam.bound, self.gamma)
            else:
                lin -= float(l @ t)
        val = -self.regularizer.conj(-A) + lin - pen + self.space.offset(self.regularizer)
        return float(val) if np.isfinite(val) else -np.inf

    def matrix_from_whitened(self, Xh) -> np.ndarray:
        M = self.T @ Xh @ self.T.T
        return 0.5 * (M + M.T)

    def extend(self, term=None, constraints=None):
        """This problem plus a convex objective term and/or constraints on the learned matrix
        M, written in CVXPY: an :class:`~cvxkml.declare.extend.ExtendedProblem` whose
        ``objective`` includes the term and whose ``solve_reference()`` is certified by the
        conic solver's dual objective.  ``term``: M -> scalar expression;
        ``constraints``: M -> list of constraints."""
        from .extend import ExtendedProblem

        if self.space.name == "span":
            raise InvalidInputError(
                f"This {type(self).__name__} learns in the data's span (k × k, wide data), where a term "
                "or constraint on the whole d × d W is not the same function of the learned matrix: "
                "build it with space='features' to extend it."
            )
        return ExtendedProblem(self, term=term, constraints=constraints)

    def matrix_expression(self, problem: cp.Problem):
        """The learned matrix M = T X̂ Tᵀ as a CVXPY expression of ``problem``'s ``X``."""
        return self.T @ problem.var_dict["X"] @ self.T.T

    def user_parts(self) -> list[str]:
        """The user-declared parts of the exact model: a regularizer outside cvxkml (or one that
        redefines a built-in's CVXPY form) and constraint families outside cvxkml."""
        from .registry import _changed, _library_class

        reg = type(self.regularizer)
        parts = []
        if _library_class(reg) is Regularizer or _changed(reg, ("cvx", "slack_cvx")):
            parts.append(f"regularizer {reg.__name__}")
        for fam in dict.fromkeys(atom_family(a) for a in self._constraint_atoms):
            if fam.__module__.split(".")[0] != "cvxkml":
                parts.append(f"constraint family {fam.__name__}")
        return parts

    def exact_size(self) -> int:
        """The side r of the whitened PSD variable X̂."""
        return int(self.T.shape[1])

    #: whether the learned matrix is a kernel matrix on the training points (kernel problems)
    kernel_space = False
    #: α of the extension to new points; None: the regularizer's (Theorem 4)
    extension_alpha = None

    # the exact model's solve, in this class's own namespace so that Problem's size guard
    # (__init_subclass__) wraps it like every family's
    solve_reference = SpectralExactModel.solve_reference

    def learned_kernel(self, solution, base, X_train):
        """The learned kernel on new points (Jain et al. eq. 18 with Theorem 4):

            κ(z1, z2) = α κ0(z1, z2) + k1ᵀ S k2,    S = K0⁺ (K* − α K0) K0⁺,

        α the minimizer of the regularizer's f_s over x >= 0 (LogDet and the von Neumann
        f_vN 1, Frobenius and trace 0; :meth:`Regularizer.check_theorem4` refuses a
        regularizer without one), K0⁺ the pseudo-inverse on range(K0).

        Parameters
        ----------
        solution : Solution or array-like (n, n)
            A solution of this problem (its ``matrix`` K*).
        base : callable (Z1, Z2) -> κ0 matrix
            The base kernel K0 was computed with (e.g. :class:`cvxkml.kernels.Kernel`).
        X_train : array-like (n, d)
            The n training points of K0.

        Returns
        -------
        cvxkml.learned.LearnedKernel
        """
        from .._validation import check_data
        from ..learned import LearnedKernel

        if not self.kernel_space:
            raise InvalidInputError(
                f"{type(self).__name__} learns a Mahalanobis matrix W, not a kernel on the training "
                "points: use cvxkml.learned.LearnedMetric(solution.matrix) for new points."
            )
        K = solution.matrix if isinstance(solution, Solution) else np.asarray(solution, dtype=float)
        n = self.M0.shape[0]
        X_train = check_data(X_train, "X_train")
        if K.shape != (n, n) or X_train.shape[0] != n:
            raise InvalidInputError(
                f"The solution must be {n} × {n} and X_train must hold the {n} training points of "
                f"K0; got {K.shape} and {X_train.shape[0]} points."
            )
        if not callable(base):
            raise InvalidInputError(
                "base must be the base kernel K0 was computed with, a callable "
                "(Z1, Z2) -> matrix such as cvxkml.kernels.Kernel('gaussian')."
            )
        if self.extension_alpha is None:
            try:
                self.regularizer.check_theorem4()
            except InvalidInputError as exc:
                raise InvalidInputError(
                    f"{type(self).__name__} has no extension of its learned kernel to new points: "
                    f"Theorem 4 (eq. 18) needs a spectral regularizer whose f_s has a finite "
                    f"minimizer α >= 0, and {self.regularizer.name} has none ({exc}). Use the "
                    "learned matrix on the training points (solution.matrix)."
                ) from exc
            alpha = float(self.regularizer.alpha)
        else:
            alpha = float(self.extension_alpha)
        return LearnedKernel.from_solution(base, X_train, self.M0, K, alpha=alpha)
