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

from .._validation import check_conic_options, check_positive
from ..errors import ConvergenceWarning, InfeasibleError, InvalidInputError, SolverError
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
from ..solution import NONFINITE, NONPOSITIVE_DISTANCE, NOT_CONVERGED, FastResult, Solution, Status
from ._conic import solve_conic
from .problem import CALLBACK_STOP, Problem
from .registry import missing_methods
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


def cvx_part(result, what: str):
    """(expression, constraints) of a part's CVXPY form: a regularizer's ``cvx(X)`` or an
    atom's ``cvx_values(F, T, X)`` returns an expression, or a pair (expression, list of
    constraints) when it brings auxiliary variables (e.g. the epigraph of tr X^{3/2} through
    two LMIs); the constraints join the exact model once."""
    if isinstance(result, tuple):
        if len(result) != 2 or not isinstance(result[1], (list, tuple)):
            raise InvalidInputError(
                f"{what} must return a CVXPY expression or a pair (expression, list of constraints); "
                f"got a tuple of {len(result)}."
            )
        expr, cons = result
        cons = list(cons)
    else:
        expr, cons = result, []
    if not isinstance(expr, cp.Expression) or any(
        not isinstance(c, cp.constraints.constraint.Constraint) for c in cons
    ):
        raise InvalidInputError(
            f"{what} must return a CVXPY expression (and optionally a list of CVXPY constraints); "
            f"got {type(expr).__name__}."
        )
    return expr, cons


class SpectralProblem(Problem):
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
        r = self.T.shape[1]
        self._Tpinv = (
            np.linalg.pinv(self.T) if self.T.shape[0] != r or not np.allclose(self.T, np.eye(r)) else np.eye(r)
        )
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

    # ------------------------------------------------------------------ CVXPY side
    def to_cvxpy(self) -> cp.Problem:
        """The exact model as a ``cvxpy.Problem``.

        Variables (``problem.var_dict``): ``"X"``, the r × r whitened matrix X̂ with
        M = T X̂ Tᵀ (see :meth:`matrix_expression`), and for slack problems
        ``"xi_ratio"`` = ξ / ξ0 (the slack relative to the bounds; this scaling keeps
        the conic solvers accurate when slacks span orders of magnitude).  Pair
        constraints are written divided by their bounds, δ(p/b − 1) <= 0 (hard) or
        δ(p/b − ξ/ξ0) <= 0 (slack).  Constraints are vectorized: one expression per
        constraint family.
        """
        return self._exact_model()[0]

    def _exact_model(self):
        """(the exact model, how its multipliers are read): :meth:`to_cvxpy`'s problem and,
        per atom in :meth:`violations` order, a constraint, a (+, −) pair of them (a hinge
        equality: λ = λ₊ − λ₋) or a callable of the solved problem (a squared penalty's
        λ = C·ρ₊, its KKT value), returned together — built once per call, never kept on the
        problem."""
        r = self.T.shape[1]
        X = cp.Variable((r, r), symmetric=True, name="X")
        objective, aux = cvx_part(self.regularizer.cvx(X), f"{type(self.regularizer).__name__}.cvx")
        # LogDet and von Neumann imply X ⪰ 0 through their cones; the others need it stated
        cons = ([] if self.regularizer.implies_psd else [X >> 0]) + aux
        readers = []  # how each atom's multipliers are read, in violations() order
        pair_con = None
        if self.pairs is not None:
            # Scaled by the bounds: rows v̂/√b give p/b, and the slack is the ratio s = ξ/ξ0,
            # so every constraint and slack variable is O(1) (duals are mapped back below).
            P = self.pairs
            Vh = (self.F[P.i] - self.F[P.j]) / np.sqrt(P.bound)[:, None]
            p = cp.sum(cp.multiply(Vh @ X, Vh), axis=1)
            pw = self._wrapper(P)
            if pw is not None and pw.loss == "squared":
                # (C/2)·ρ₊², ρ = y(p − b) = b·y(p/b − 1); λ = C·ρ₊ (its KKT value; the pair
                # multipliers are read times b, as the scaled rows' duals are)
                rho_s = cp.multiply(P.y, p - 1.0)
                Cb = pw.C * P.bound**2
                objective = objective + 0.5 * Cb @ cp.square(cp.pos(rho_s))
                readers.append(lambda r=rho_s, Cb=Cb: Cb * np.maximum(np.asarray(r.value, dtype=float), 0.0))
            elif pw is not None:  # y(p − b) <= ξ, written over b: ξ/b
                s = cp.Variable(len(P), nonneg=True, name="hinge_pairs")
                objective = objective + (pw.C * P.bound) @ s
                pair_con = cp.multiply(P.y, p - 1.0) <= s
            elif self.gamma is None:
                pair_con = cp.multiply(P.y, p - 1.0) <= 0
            else:
                s = cp.Variable(len(P), name="xi_ratio")
                objective = objective + self.gamma * self.regularizer.slack_cvx(s, P.bound)
                pair_con = cp.multiply(P.y, p - s) <= 0
            if pair_con is not None:
                cons.append(pair_con)
                readers.append(pair_con)
        names = [type(f).__name__.lower() for f in self._constraint_atoms]
        for k, (f, w) in enumerate(zip(self._constraint_atoms, self._wrappers)):
            if f is not self.pairs:
                values, aux = cvx_part(f.cvx_values(self.F, self.T, X), f"{type(f).__name__}.cvx_values")
                cons += aux
                name = names[k] if names.count(names[k]) == 1 else f"{names[k]}_{k}"
                objective = self._soft_constraint(f, w, name, values - f.targets(), objective, cons, readers)
        offset = self.space.offset(self.regularizer)
        return cp.Problem(cp.Minimize(objective + offset if offset else objective), cons), readers

    def _soft_constraint(self, family, wrapper, name, residual, objective, cons, readers):
        """The atom's residual ρ = g − t in the model: hard ``ρ <= 0`` (``ρ == 0`` for an
        equality); :class:`~cvxkml.sideinfo.Hinge` ``ρ <= ξ`` (and ``−ρ <= ξ`` for an
        equality), ξ >= 0, C·ξ in the objective (variable ``"hinge_<name>"``);
        :class:`~cvxkml.sideinfo.Squared` (C/2)·ρ₊² ((C/2)·ρ² for an equality) in the
        objective.  Appends to ``readers`` how its multipliers are read (a
        constraint, a (+, −) pair of them, or a callable of the solved problem: the squared
        penalty's λ = C·ρ₊ is its KKT value); returns the objective."""
        C = None if wrapper is None else wrapper.C
        eq = family.equality
        if C is None:
            cons.append(residual == 0 if eq else residual <= 0)
            readers.append(cons[-1])
        elif wrapper.loss == "squared":
            objective = objective + 0.5 * C @ cp.square(residual if eq else cp.pos(residual))
            readers.append(
                lambda r=residual, C=C, eq=eq: (
                    C * (np.asarray(r.value, dtype=float) if eq else np.maximum(np.asarray(r.value, dtype=float), 0.0))
                )
            )
        else:
            xi = cp.Variable(len(family), nonneg=True, name=f"hinge_{name}")
            cons.append(residual <= xi)
            objective = objective + C @ xi
            if eq:
                cons.append(-residual <= xi)
                readers.append((cons[-2], cons[-1]))
            else:
                readers.append(cons[-1])
        return objective

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

    def solve_reference(
        self, solver: str | None = None, eps: float | None = None, accept_inaccurate: bool = False, **opts
    ) -> Solution:
        """Solve the exact model with a conic solver at high accuracy.

        Default solver: Clarabel (interior point, gap and feasibility tolerances
        ``eps`` = 1e-8) when the matrix variable is at most 40 × 40, SCS
        (``eps_abs = eps_rel = eps`` = 1e-9, up to 200 000 iterations) above, where
        Clarabel's memory becomes prohibitive.  Raises :class:`InfeasibleError`
        for infeasible hard constraints and :class:`SolverError` for any other
        non-optimal status (``accept_inaccurate=True`` accepts ``optimal_inaccurate``).
        ``time_limit=<seconds>`` stops the solve there with a :class:`SolverError`; other
        keyword options go to the conic solver.
        """
        solver, eps = check_conic_options(solver, eps)
        solver = solver or self.default_solver()
        prob, readers = self._exact_model()
        hint = (
            "Use slack: pass gamma=<positive number> (e.g. 1.0)."
            if self.regularizer.has_slack
            else f"The {self.regularizer.name} problem has no slack formulation: relax or "
            "remove conflicting constraints."
        )
        elapsed, status, iters = solve_conic(prob, solver, eps, True, what="exact model", infeasible_hint=hint, **opts)
        Xh = prob.var_dict["X"].value
        Xh = 0.5 * (Xh + Xh.T)
        M = self.matrix_from_whitened(Xh)

        def read(c):
            if callable(c):
                return np.asarray(c(), dtype=float).ravel()
            if isinstance(c, tuple):  # a hinge equality: λ = λ₊ − λ₋
                return read(c[0]) - read(c[1])
            return np.asarray(c.dual_value, dtype=float).ravel()

        duals = [read(c) for c in readers]
        if self.pairs is not None:
            duals[0] = duals[0] / self.pairs.bound  # pair rows were divided by the bounds
        lower, upper, _ = self.dual_box()  # the dual box (round-off outside it)
        lam = np.clip(np.concatenate(duals), lower, upper)
        xi = None
        if self.gamma is not None:
            xi = np.asarray(prob.var_dict["xi_ratio"].value, dtype=float) * self.pairs.bound
        certified = not missing_methods(self.regularizer, ("conj_s",))
        # a regularizer declared with f_s and cvx only has no conjugate: the answer is the
        # conic solver's, without a Lagrange certificate of cvxkml's (said in info)
        dual_value = self.dual_value(lam) if certified else None
        objective = self.objective(M)
        projected = False
        if not np.isfinite(objective):
            # a conic solver's X̂ is PSD only up to its tolerance (eigenvalues of −1e-8 at a
            # singular optimum): its projection onto the PSD cone is a primal point too, judged
            # by the same certificate below
            w, V = np.linalg.eigh(Xh)
            if w[0] < 0:
                Xp = (V * np.maximum(w, 0.0)) @ V.T
                Mp = self.matrix_from_whitened(Xp)
                fp = self.objective(Mp)
                if np.isfinite(fp):
                    Xh, M, objective, projected = Xp, Mp, fp, True
        if not np.isfinite(objective):
            cause = self._domain_diagnosis(M)
            hard = [f for f, w in zip(self._constraint_atoms, self._wrappers) if w is None]
            if self.gamma is not None:
                hard = [f for f in hard if f is not self.pairs]
            if hard:
                # the solver runs toward the domain's edge: the hard constraints admit no matrix
                # inside it (for LogDet: no positive definite matrix on the range of K0)
                raise InfeasibleError(
                    f"The exact model ({solver}) ended '{status}' at a matrix outside the domain of the "
                    f"{self.regularizer.name} objective ({cause}; solver objective "
                    f"{float(prob.solution.opt_val):.3g}), singular on the range of K0: no matrix in the "
                    "domain satisfies the hard constraints. "
                    + (
                        "gamma adds slack to the pair constraints only: relax or remove the hard ones."
                        if self.gamma is not None
                        else hint
                    )
                )
            raise SolverError(
                f"The exact model ({solver}) ended '{status}' at a matrix outside the domain of the "
                f"{self.regularizer.name} objective ({cause}), even after projecting it onto the PSD cone; "
                "every constraint is soft, so this is the solver's accuracy: try the other solver or a smaller eps."
            )
        sol = Solution.from_conic(
            status,
            solver,
            elapsed,
            iters,
            matrix=M,
            objective=objective,
            dual=lam,
            slack=xi,
            violations=self.violations(M, xi),
            dual_value=dual_value,
            info={"solver_objective": float(prob.solution.opt_val)},
        )
        if projected:
            sol.info["projected_psd"] = "the conic solver's X̂ had negative eigenvalues; its PSD projection is returned"
        if not certified:
            sol.info["certificate"] = (
                f"none: {self.regularizer.name} declares no conj_s, so the Lagrange dual cannot be "
                "evaluated; converged is the conic solver's own 'optimal' status"
            )
        sol.info["max_relative_violation"] = self._max_relative_violation(sol.violations)
        sol = self._accept_reference(sol, status, accept_inaccurate)
        sol.converged = sol.converged or bool(sol.info.get("accepted_by_certificate"))
        return sol

    # ------------------------------------------------------------------ fast side
    def constraint_families(self) -> list:
        """The constraint classes of this problem (unwrapped from Hinge), what a registered
        solver's ``families`` must cover (:mod:`cvxkml.declare.registry`)."""
        return [atom_family(c) for c in self._constraint_atoms]

    def fast_solver(self, method: str = "auto"):
        """The :class:`~cvxkml.declare.registry.SolverSpec` ``solve(method=…)`` would use, or a
        typed error saying why none takes this problem and what to do."""
        from .registry import SolverSpec, select

        reg = self.regularizer
        own = getattr(reg, "fast_solver", None)
        if method != "dual" and callable(own):
            # a fast_solver method on a user's regularizer class comes first
            handles = getattr(reg, "fast_handles", None)
            if handles is None or handles(self):
                return SolverSpec(f"{type(reg).__name__}.fast_solver", own, user=True)
        spec, refused = select(self, method)
        if spec is not None:
            return spec
        # the refusals of the solvers written for this problem and regularizer say most
        near = {k: v for k, v in refused.items() if not v.startswith(("written for", "solves ", "registered for"))}
        reasons = "; ".join(f"{name}: {why}" for name, why in (near or refused).items()) or "none is registered"
        what = {
            "native": "No native fast solver takes",
            "dual": "The generic dual solver does not take",
            "auto": "No fast solver takes",
        }[method]
        hint = (
            "use method='dual' (or 'auto'), or solve_reference() (the exact model)"
            if method == "native"
            else "with gamma implement the regularizer's slack_value, slack_conj, slack_conj_grad and "
            "slack_conj_hess too (or use Hinge(pairs, C) instead of gamma), "
            if self.gamma is not None
            else ""
        )
        if method != "native":
            hint += (
                "implement the regularizer's conj_s, conj_grad_s, conj_hess_s (see "
                "cvxkml.declare.Regularizer; cvxkml.testing.check_regularizer checks them), "
                "register one (cvxkml.declare.register_fast_solver), or use solve_reference() "
                "(the exact model)"
            )
        raise InvalidInputError(
            f"{what} {type(self).__name__} with the {reg.name} regularizer and these constraints ({reasons}); {hint}."
        )

    def solve(
        self,
        tol: float = 1e-9,
        max_iter: int = 20_000,
        gap_tol: float | None = None,
        viol_tol: float | None = None,
        *,
        method: str = "auto",
        warm_start=None,
        callback=None,
        max_sweeps: int | None = None,
    ) -> Solution:
        """The fast solver: cyclic Bregman projections (Jain et al. Algorithm 1; Kulis et
        al. Algorithm 2 for the low-rank problem), the regularizer's own fast solver, or the
        generic certified dual solver (any regularizer, every constraint family, hinge
        slack: :mod:`cvxkml.solvers.dual_newton`).

        Parameters
        ----------
        tol : float
            The paper's stopping rule: the relative dual change of a sweep,
            Σ|λ − λ_old| / (Σ|λ| + Σ|λ_old|), below ``tol``.
        max_iter : int
            Total sweeps (Bregman, native solvers) or Newton iterations (dual solver) over all
            attempts (see below).  ``max_sweeps`` is its deprecated former name.
        gap_tol, viol_tol : float or None
            The certificate: a solve is ``converged`` only when the Lagrange-dual gap
            f(M) − g(λ) lies in [−gap_tol, gap_tol]·max(1, |f(M)|) (a negative gap beyond
            that means an infeasible point) and the largest relative constraint violation
            is at most ``viol_tol``.  None: max(tol, 1e-6).
        method : {"auto", "native", "dual"}
            "native": the problem's own algorithm (raises when it does not handle these
            constraints); "dual": the generic dual solver (projected Newton on the box-
            constrained Lagrange dual, stopping on its certificate; ``max_iter`` caps its
            Newton iterations; ``tol`` is its relative gap); "auto" (default): native when it
            handles the constraints (no :class:`~cvxkml.sideinfo.Hinge`, families in
            the families of a registered solver for the regularizer), else dual; with the
            regularizer's own slack (``gamma``) native first, then dual from the native
            multipliers when the native run ends uncertified (Notes).
        warm_start : array-like of shape (m,) or None
            Multipliers λ (in :meth:`violations` order) to start the dual solver from, e.g.
            ``previous_solution.dual`` of a neighbouring problem (dual method only).
        callback : callable or None
            Called with a dict at each certificate check — every Newton iteration of the dual
            solver (``iteration``, ``objective``, ``gap``, ``violation``, ``dual``), every
            attempt of the native solver (``iteration`` = sweeps so far, ``objective``,
            ``gap``, ``violation``, ``dual_change``); a truthy return stops the solve
            (``status="stopped by callback"``, ``converged=False`` unless certified).
        max_sweeps : int or None
            Deprecated former name of ``max_iter``.

        Notes
        -----
        A small dual change does not imply a small violation: with large multipliers the
        cyclic projections creep (one low-rank draw met tol = 1e-12 with a violation of
        6.8e-6 times a multiplier of 2e4, a gap of −0.136).  When the dual-change rule is
        met but the certificate is not, the solve is repeated with tol divided by 100
        (down to 1e-16) within the same ``max_iter`` budget; if the certificate is still
        not met it warns (:class:`ConvergenceWarning`) and returns ``converged=False``.
        The solver is the first registered one that accepts the problem
        (:mod:`cvxkml.declare.registry`; :meth:`fast_solver` says which, or why none does);
        the others (and hinge slack) go to the dual solver with ``method="auto"``.

        The regularizer's own slack (``gamma``, e.g. ITML's) with ``method="auto"``: the
        paper's algorithm runs first (Bregman projections, with at most ``max_iter`` minus
        min(500, ``max_iter`` // 10) sweeps); when it ends without the certificate (the
        sweep cap, or the dual-change rule met at tol 1e-16 without it: the creep above),
        the generic dual solver continues from its multipliers (the Bregman λ >= 0 of
        δ(p − ξ) <= 0 are the dual solver's multipliers of the same constraints) with the
        Newton iterations left in ``max_iter``.  ``info["stages"]`` then describes both
        stages (solver, iterations, why it stopped, relative gap and violation, time, which
        one is returned: the second when it certifies or its certificate is smaller),
        ``n_iter`` is their sum and ``solver`` reads e.g. ``"bregman+dual-newton-logdet"``.
        Either way ``converged`` is the problem's own certificate, recomputed from the
        returned matrix and multipliers.  ``method="native"`` runs the paper's algorithm
        alone.
        """
        from .._validation import as_float_array, check_choice
        from .registry import SolveRequest, call

        method = check_choice(method, "method", ("auto", "native", "dual"))
        spec = self.fast_solver(method)
        use_dual = spec.generic
        lam0 = None
        if warm_start is not None:
            if not (use_dual or spec.warm_start):
                raise InvalidInputError(
                    f"warm_start applies to the dual solver (and to solvers that resume from multipliers; "
                    f"{spec.name} does not); pass method='dual'."
                )
            lam0 = as_float_array(warm_start, "warm_start").ravel()
            if lam0.size != self.n_constraints or np.any(lam0 < 0):
                raise InvalidInputError(
                    f"warm_start must hold {self.n_constraints} non-negative multipliers (one per "
                    "constraint, in violations() order), e.g. a previous Solution.dual."
                )
        callback = self._check_callback(callback)
        tol = check_positive(tol, "tol")
        gap_tol = max(tol, 1e-6) if gap_tol is None else check_positive(gap_tol, "gap_tol")
        viol_tol = max(tol, 1e-6) if viol_tol is None else check_positive(viol_tol, "viol_tol")
        limit = self._iteration_limit(max_iter, max_sweeps)  # int64 in the kernels
        # "auto" on the regularizer's own slack (gamma): Bregman first, then the certified dual
        # solver from its multipliers when it ends uncertified; it keeps a share of the budget
        handoff = self._slack_handoff(method, spec)
        native_limit = limit - min(self._HANDOFF_RESERVE, limit // 10) if handoff is not None else limit
        # the request travels with the call: a native solver that checks the certificate itself
        # reads the rule from it, and one that can resume keeps its last iterate in it for the
        # next attempt; nothing of this solve is stored on the problem
        request = SolveRequest(gap_tol, viol_tol, warm_start=lam0, callback=callback if use_dual else None)
        attempt_tol, sweeps, elapsed, attempts, stopped = tol, 0, 0.0, 0, False
        while True:
            res = call(spec, self, attempt_tol, (limit if use_dual else native_limit) - sweeps, request)
            attempts += 1
            self._check_fast_result(res, spec)
            sweeps += res.sweeps
            elapsed += res.time
            self._raise_breakdown(res)
            sol = self._fast_solution(res, sweeps, elapsed, default_name="bregman" if not spec.user else spec.name)
            sol.info.update(spec=spec.name, space=self.space.name)
            if not np.isfinite(sol.objective):
                raise SolverError(
                    f"The fast solver ({sol.solver}) stopped after {sweeps} iteration(s) at a matrix "
                    f"outside the domain of the {self.regularizer.name} objective: "
                    f"{self._domain_diagnosis(sol.matrix)}. Rescale the problem (a barrier weight or "
                    "bounds far from 1), raise max_iter, or use solve_reference()."
                )
            scale = max(1.0, abs(sol.objective))
            gap = sol.gap
            rel_viol = sol.info["max_relative_violation"]
            within = gap is not None and -gap_tol * scale <= gap <= gap_tol * scale and rel_viol <= viol_tol
            # Bregman: the paper's dual-change rule, then the certificate; the dual solver's
            # rule is the certificate itself (a stall at round-off below gap_tol counts)
            met = sol.converged or (use_dual and within)
            certified = met and within
            if use_dual:
                sol.converged = met
                sol.status = "converged" if met else sol.status
                stopped = bool(res.extra.get("stopped")) and not met
            elif callback is not None:  # every attempt's check, the certified one too
                asked = callback(
                    {
                        "iteration": sweeps,
                        "objective": sol.objective,
                        "gap": None if gap is None else gap / scale,
                        "violation": rel_viol,
                        "dual_change": res.dual_change,
                        "certified": certified,
                    }
                )
                stopped = bool(asked) and not certified
            if certified or not met or use_dual or stopped or attempt_tol <= 1e-16 or sweeps >= native_limit:
                break
            attempt_tol = max(attempt_tol * 1e-2, 1e-16)
        sol.info.update(attempts=attempts, final_tol=attempt_tol, gap_tol=gap_tol, viol_tol=viol_tol)
        if handoff is not None and not certified and not stopped and limit > sweeps:
            first = sol
            sol, met, certified, stopped, gap, scale, rel_viol, res = self._dual_handoff(
                handoff, spec, first, res, met, tol, gap_tol, viol_tol, limit - sweeps, sweeps, elapsed, callback
            )
            if sol is not first:
                use_dual, sweeps, attempts = True, sol.n_iter, 1
        self._close_fast_solve(
            sol,
            res,
            stopped=stopped,
            certified=certified,
            met=met,
            use_dual=use_dual,
            attempts=attempts,
            sweeps=sweeps,
            gap=gap,
            scale=scale,
            rel_viol=rel_viol,
            tol=tol,
            attempt_tol=attempt_tol,
            gap_tol=gap_tol,
            viol_tol=viol_tol,
        )
        return sol

    def _close_fast_solve(
        self,
        sol,
        res,
        *,
        stopped,
        certified,
        met,
        use_dual,
        attempts,
        sweeps,
        gap,
        scale,
        rel_viol,
        tol,
        attempt_tol,
        gap_tol,
        viol_tol,
    ) -> None:
        """The last phase of :meth:`solve`: a Farkas certificate of infeasibility raises; an
        uncertified answer gets ``converged=False``, its status, and one ConvergenceWarning
        saying why (stopped by the callback, neither stage of the gamma handoff certified,
        the iteration limit, or the dual-change rule met without the certificate)."""
        if not certified:
            self._raise_if_farkas(sol)
        if stopped:
            sol.converged = False
            sol.status = CALLBACK_STOP
            gap_txt = "n/a" if gap is None else f"{gap / scale:.3g}"
            self._warn_unconverged(
                sol,
                f"The callback stopped the solve after {sweeps} iteration(s), "
                f"uncertified: relative gap {gap_txt}, max relative violation "
                f"{rel_viol:.3g}.",
                stacklevel=4,
            )
        elif not certified and "stages" in sol.info:
            first, second = sol.info["stages"]
            sol.converged = False
            sol.status = "not certified" if met else sol.status
            warnings.warn(
                f"Neither stage certified: Bregman projections ({first['iterations']} sweeps, relative gap "
                f"{first['relative_gap']:.3g}, max relative violation {first['max_relative_violation']:.3g}), then "
                f"the dual solver from their multipliers ({second['iterations']} Newton iterations, relative gap "
                f"{second['relative_gap']:.3g}, max relative violation {second['max_relative_violation']:.3g}); "
                f"the {second['returned'] and 'second' or 'first'} is returned. Raise max_iter or tol.",
                ConvergenceWarning,
                stacklevel=4,
            )
        elif not met and attempts == 1:
            what = (
                "The dual solver did not certify in {} Newton iterations: relative gap/violation"
                if use_dual
                else "Bregman projections did not converge in {} sweeps: relative dual change"
                if sol.solver.startswith("bregman")
                else f"The fast solver {sol.solver} did not converge in {{}} iterations: its reported change"
            ).format(sweeps)
            warnings.warn(
                f"{what} "
                f"{res.dual_change:.3g} > tol {attempt_tol:.3g}, max violation {sol.max_violation:.3g}. "
                "Raise max_iter or tol"
                + (
                    ""
                    if self.gamma is not None or self._hinge
                    else ", or use slack (gamma, or Hinge) if the constraints conflict"
                )
                + ".",
                ConvergenceWarning,
                stacklevel=4,
            )
        elif not certified:
            sol.converged = False
            sol.status = "not certified"
            gap_txt = "n/a" if gap is None else f"{gap / scale:.3g}"
            warnings.warn(
                f"The dual change met tol {tol:.3g} but the certificate did not (after {attempts} "
                f"attempt(s) down to tol {attempt_tol:.3g}, {sweeps} sweeps): relative gap {gap_txt} "
                f"(allowed ±{gap_tol:.3g}), max relative "
                f"violation {rel_viol:.3g} (allowed {viol_tol:.3g}). "
                + (
                    "The hard constraints may be infeasible (use slack, gamma=…), or "
                    if self.gamma is None and any(w is None for w in self._wrappers)
                    else ""
                )
                + "raise max_iter, or loosen gap_tol / viol_tol.",
                ConvergenceWarning,
                stacklevel=4,
            )

    #: Newton iterations of ``max_iter`` (at most a tenth) that "auto" keeps for the dual
    #: solver after Bregman on a gamma problem
    _HANDOFF_RESERVE = 500

    def _slack_handoff(self, method, spec):
        """The generic dual solver's spec when "auto" runs a native solver on the regularizer's
        own slack (gamma) and the dual solver takes the problem too; else None."""
        if method != "auto" or spec.generic or spec.user or self.gamma is None:
            return None
        from .registry import select

        dual, _ = select(self, "dual")
        return dual

    def _dual_handoff(self, dual, spec, first, res, met, tol, gap_tol, viol_tol, budget, sweeps, elapsed, callback):
        """Stage 2 of "auto" on a gamma problem: the native run ``first`` (``res``) ended
        uncertified; the dual solver continues from its multipliers (the Bregman λ >= 0 of
        δ_c(p_c − ξ_c) <= 0 are the dual solver's multipliers of the same constraints:
        M⁻¹ = M0⁻¹ + Σ δ_cλ_c z_cz_cᵀ and 1/ξ_c = 1/ξ0_c − δ_cλ_c/γ are its primal map) with the
        ``budget`` left.  Returns (solution, met, certified, stopped, gap, scale, violation,
        result) of the stage kept: the second when it certifies or its certificate is smaller."""

        def measure(sol):
            scale = max(1.0, abs(sol.objective)) if np.isfinite(sol.objective) else 1.0
            gap = sol.gap
            viol = sol.info["max_relative_violation"]
            within = gap is not None and -gap_tol * scale <= gap <= gap_tol * scale and viol <= viol_tol
            size = np.inf if gap is None or not np.isfinite(gap) else abs(gap) / scale / gap_tol
            return within, gap, scale, viol, max(size, viol / viol_tol)

        def record(sol, gap, scale, viol, iterations, how, seconds):
            return {
                "solver": sol.solver,
                "iterations": int(iterations),
                "stop": how,
                "certified": bool(sol.converged),
                "objective": float(sol.objective),
                "relative_gap": np.nan if gap is None else float(gap / scale),
                "max_relative_violation": float(viol),
                "time": float(seconds),
            }

        _, gap1, scale1, viol1, size1 = measure(first)
        lower, upper, _ = self.dual_box()
        lam0 = np.clip(np.asarray(first.dual, dtype=float), lower, upper)
        # the callback's iteration counts on from the first stage's sweeps
        relay = None if callback is None else (lambda rec: callback({**rec, "iteration": sweeps + rec["iteration"]}))
        from .registry import SolveRequest, call

        res2 = call(dual, self, tol, budget, SolveRequest(gap_tol, viol_tol, warm_start=lam0, callback=relay))
        self._check_fast_result(res2, dual)
        self._raise_breakdown(res2)
        sol = self._fast_solution(res2, sweeps + res2.sweeps, elapsed + res2.time)
        within, gap2, scale2, viol2, size2 = measure(sol)
        sol.converged = within
        sol.status = "converged" if within else sol.status
        stop1 = "max_iter" if not met else "dual change met, certificate not"
        stages = [
            record(first, gap1, scale1, viol1, sweeps, stop1, elapsed),
            record(sol, gap2, scale2, viol2, res2.sweeps, "certificate" if within else "max_iter", res2.time),
        ]
        stages[0]["certified"] = False
        keep = within or size2 <= size1
        stages[0]["returned"], stages[1]["returned"] = not keep, keep
        stages[1]["warm_start"] = "the first stage's multipliers"
        stopped = bool(res2.extra.get("stopped")) and not within
        if not keep:
            first.info["stages"] = stages
            return first, met, False, stopped, gap1, scale1, viol1, res
        sol.solver = f"{first.solver.removesuffix('-' + self.solver_tag)}+{sol.solver}"
        sol.info.update(
            spec=f"{spec.name}+{dual.name}",
            space=self.space.name,
            stages=stages,
            attempts=first.info.get("attempts", 1),
            final_tol=tol,
            gap_tol=gap_tol,
            viol_tol=viol_tol,
        )
        return sol, within, within, stopped, gap2, scale2, viol2, res2

    def _domain_diagnosis(self, M) -> str:
        """Why f is not finite at M, in words: M outside the range of M0, or the eigenvalue of
        X̂ at which the regularizer's f_s is not finite (after
        :func:`~cvxkml.declare.regularizers.domain_eigenvalues`)."""
        from .regularizers import domain_eigenvalues

        Xh = self.whiten(M)
        if Xh is None:
            return "the matrix leaves the range of M0 (the whitened matrix X̂ does not represent it)"
        lam = domain_eigenvalues(np.linalg.eigvalsh(Xh))
        with np.errstate(all="ignore"):
            fs = np.asarray(self.regularizer.f_s(lam), dtype=float)
        bad = np.flatnonzero(~np.isfinite(fs))
        if bad.size:
            k = bad[np.argmin(lam[bad])]
            return (
                f"{type(self.regularizer).__name__}.f_s is {fs[k]} at the eigenvalue {lam[k]:.3g} of the "
                f"whitened matrix X̂ (range [{lam.min():.3g}, {lam.max():.3g}])"
            )
        return f"the objective is {self.objective(M)} with every f_s(λ) finite (a slack or penalty term)"

    def _check_fast_result(self, res, spec) -> None:
        """The fast-solver protocol (:mod:`cvxkml.solvers.result`), checked before anything is
        built from a result: a FastResult, an N × N matrix, one multiplier per constraint, a
        known status, a non-negative iteration count; then the answer itself
        (:mod:`cvxkml._answer`): multipliers finite, the matrix finite and symmetric and, from
        a user's solver, positive semidefinite — a solver cannot hand back W + skew, NaN or an
        indefinite matrix and be certified on its quadratic forms."""
        from .._answer import PSD_TOL, check_primal_matrix, check_primal_vector

        N = self.M0.shape[0]
        problems = []
        if not isinstance(res, FastResult):
            problems.append(f"returned {type(res).__name__}, not cvxkml.solvers.FastResult")
        else:
            if np.shape(res.matrix) != (N, N):
                problems.append(f"matrix of shape {np.shape(res.matrix)}, not {(N, N)}")
            if np.shape(res.lam) != (self.n_constraints,):
                problems.append(
                    f"lam of shape {np.shape(res.lam)}, not ({self.n_constraints},) (one "
                    "multiplier per constraint, in violations() order)"
                )
            if res.code not in set(int(s) for s in Status):
                problems.append(f"code {res.code!r} is not a cvxkml.solvers.Status")
            if not isinstance(res.sweeps, (int, np.integer)) or res.sweeps < 0:
                problems.append(f"sweeps {res.sweeps!r} is not a non-negative integer")
        if problems:
            raise InvalidInputError(
                f"The fast solver of {type(self).__name__} ({self.regularizer.name}) broke the "
                f"fast-solver protocol: {'; '.join(problems)}. See cvxkml.solvers.result."
            )
        if res.code in (NONPOSITIVE_DISTANCE, NONFINITE):
            return  # a breakdown: _raise_breakdown says what
        check_primal_vector(res.lam, self.n_constraints, what=f"multipliers of {spec.name}")
        check_primal_matrix(res.matrix, N, psd=spec.user, psd_tol=PSD_TOL, what=f"matrix of {spec.name}")

    def farkas_direction(self, lam):
        """Test the multipliers' direction d = λ/Σλ as a Farkas certificate of infeasibility
        of the hard constraints tr(Â_c X̂) <= t_c, X̂ ⪰ 0: returns (min eigenvalue of
        Σ d_c Â_c relative to Σ d_c‖Â_c‖₂, Σ d_c t_c relative to Σ d_c|t_c|, a lower bound
        on tr(X̂) over the feasible set).  A non-negative first value and a negative second
        one mean that no X̂ ⪰ 0 satisfies the constraints (Σ d_c tr(Â_c X̂) >= 0 > Σ d_c t_c;
        the bound is then inf).  A slightly negative first value e still bounds every
        feasible X̂: e·Σd_c‖Â_c‖·tr(X̂) <= Σ d_c tr(Â_c X̂) <= Σ d_c t_c < 0 gives
        tr(X̂) >= |Σ d_c t_c| / (|e|·Σ d_c‖Â_c‖) — constraints that only a matrix of that size
        satisfies.  With slack (γ) the pair terms are soft and the test does not apply
        (returns None)."""
        lam = np.asarray(lam, dtype=float)
        if (
            self.gamma is not None
            or lam.size != self.n_constraints
            or not np.all(np.isfinite(lam))
            or any(f.equality and w is None for f, w in zip(self._constraint_atoms, self._wrappers))
        ):
            return None  # (hard equalities: multipliers of either sign)
        if self._hinge:  # the ray runs in the hard constraints' multipliers
            lam = np.where(self.soft, 0.0, lam)
        if lam.sum() <= 0:
            return None
        d = lam / lam.sum()
        A = np.zeros((self.T.shape[1],) * 2)
        lin = lin_abs = norm = 0.0
        start = 0
        for fam, (term, _, t) in zip(self._constraint_atoms, self._whitened_family_terms()):
            dc = d[start : start + len(fam)]
            for k in np.flatnonzero(dc):  # Σ d_c‖Â_c‖ from each constraint's own term
                e = np.zeros(len(fam))
                e[k] = 1.0
                norm += dc[k] * float(np.max(np.abs(np.linalg.eigvalsh(term(e)))))
            start += len(fam)
            A += term(dc)
            lin += float(dc @ t)
            lin_abs += float(dc @ np.abs(t))
        if norm <= 0 or lin_abs <= 0:
            return None
        eig = float(np.linalg.eigvalsh(0.5 * (A + A.T))[0]) / norm
        bound = np.inf if eig >= 0 or lin >= 0 else float(-lin / (-eig * norm))
        return eig, lin / lin_abs, bound

    def _raise_if_farkas(self, sol) -> None:
        """InfeasibleError when an uncertified hard-constraint solve's multipliers point along
        a Farkas ray (min eigenvalue >= −1e-6, linear term <= −1e-3, both relative).  A fast
        solver that stopped on a diverging dual hands the ray it found in
        ``sol.info["farkas_ray"]`` (:class:`cvxkml.solvers.bregman.FarkasWatch`: the growth of
        the multipliers over its last sweeps, on the constraints that carry it); it is tested
        first, by the same rule, and the message names those constraints.  When the min
        eigenvalue is slightly negative the message gives the trace every feasible matrix
        would need (:meth:`farkas_direction`): such constraints are feasible only at a scale
        that no solver, exact or fast, resolves (fuzz seed 11101: two nearly parallel pair
        differences, a feasible W of norm ~1e7)."""
        ray = sol.info.get("farkas_ray")
        for d, from_ray in ((ray, True), (sol.dual, False)):
            test = None if d is None else self.farkas_direction(d)
            if test is None:
                continue
            eig, lin, bound = test
            sol.info["farkas"] = test
            if not (eig >= -1e-6 and lin <= -1e-3):
                continue
            n = self.T.shape[1]
            what = (
                "no positive semidefinite matrix satisfies them"
                if np.isinf(bound) or eig >= -1e-12
                else f"any matrix that satisfies them has tr(X̂) >= {bound:.3g} in the whitened "
                f"coordinates (the prior has tr = {n}), i.e. they are infeasible up to round-off"
            )
            named = ""
            if from_ray:
                d = np.asarray(d, dtype=float)
                idx = np.flatnonzero(d > 0)
                idx = idx[np.argsort(-d[idx], kind="stable")]
                P, n_p = self.pairs, (0 if self.pairs is None else len(self.pairs))
                parts = [
                    (
                        f"{k} (pair ({P.i[k]}, {P.j[k]}): d {'<=' if P.y[k] > 0 else '>='} {P.bound[k]:.3g})"
                        if k < n_p
                        else str(k)
                    )
                    for k in idx[:8]
                ]
                named = (
                    f" The constraints carrying it (index in violations() order, heaviest "
                    f"first): {', '.join(parts)}{', …' if idx.size > 8 else ''}."
                )
            raise InfeasibleError(
                f"The hard constraints are infeasible: after {sol.n_iter} sweeps the multipliers grow "
                f"along d {'(their growth over the last sweeps)' if from_ray else '= λ/Σλ'} with "
                f"Σd_cÂ_c ⪰ 0 (relative min eigenvalue {eig:.2g}) and Σd_c t_c < 0 "
                f"(relative {lin:.2g}), a Farkas certificate: {what}.{named} Use slack "
                "(gamma=<positive number>) or remove the conflicting constraints; solve_reference() "
                "confirms."
            )

    def _raise_breakdown(self, res) -> None:
        """Typed errors for a fast run that broke down (a zero distance, non-finite iterates)."""
        if res.code not in (NONPOSITIVE_DISTANCE, NONFINITE):
            return
        what = (
            "a constrained distance reached zero"
            if res.code == NONPOSITIVE_DISTANCE
            else "the iterates became non-finite"
        )
        head = f"Bregman projections broke down after {res.sweeps} sweep(s): {what}"
        # gamma puts slack on the pair constraints only (they come first); relative
        # and similarity constraints stay hard
        n_soft = len(self.pairs) if self.gamma is not None and self.pairs is not None else 0
        if self.gamma is None:
            raise InfeasibleError(
                f"{head} (constraint {res.bad_index}). The hard constraints are most likely "
                "infeasible; use LogDet slack by passing gamma=<positive number>."
            )
        if res.bad_index >= n_soft:
            raise InfeasibleError(
                f"{head} (constraint {res.bad_index}, a hard relative or similarity constraint: "
                "gamma adds slack to the pair constraints only). No positive definite matrix "
                "in the range of K0 satisfies the hard constraints; relax or remove them."
            )
        raise SolverError(
            f"{head} with slack weight gamma = {self.gamma:.3g}. Use a gamma nearer 1 (the slack "
            "terms scale like 1/gamma), rescale the data and bounds to order 1, or check with "
            "solve_reference()."
        )

    def _fast_solution(self, res, sweeps, elapsed, default_name: str = "bregman") -> Solution:
        """The :class:`Solution` of a fast run (``converged`` = the run met its own rule).

        With the regularizer's own slack (``gamma``) the primal point is (M, ``best_slack(M)``):
        the objective is priced at that slack, so its violations are measured there too (the
        point the certificate speaks of, feasible on the pairs by construction), not at the
        solver's own slack iterate, which may lag behind M."""
        converged = res.code != NOT_CONVERGED
        M = res.matrix
        xi = self.best_slack(M) if self.gamma is not None else None
        viol = self.violations(M, xi)
        extra = dict(res.extra)
        return Solution(
            matrix=M,
            objective=self.objective(M),
            dual=res.lam,
            slack=xi,
            violations=viol,
            n_iter=sweeps,
            converged=converged,
            time=elapsed,
            status="converged" if converged else "max_iter reached",
            solver=f"{extra.pop('solver', default_name)}-{self.solver_tag}",
            dual_value=self.dual_value(res.lam),
            info={
                "dual_change": res.dual_change,
                "max_relative_violation": self._max_relative_violation(viol),
                "skipped_pairs": self.skipped_pairs,
                **extra,
            },
        )
