"""LogDet metric and kernel learning (Jain et al. 2012, eq. 2, 3, 4, 7) on the whitened
spectral core (:class:`~cvxkml.declare.base.SpectralProblem` with the LogDet regularizer)."""

from __future__ import annotations

from .._deprecated import moved_attribute
from .._validation import check_data
from ..errors import InvalidInputError
from .base import SpectralProblem
from .spaces import KernelSpace

__all__ = ["ITML", "LogDetKernel"]


def _linear_family(constraints) -> bool:
    """Whether ``constraints`` hold linear constraints on the matrix (hard or wrapped)."""
    from ..sideinfo import Hinge, LinearConstraints

    items = constraints if isinstance(constraints, (list, tuple)) else [constraints]
    return any(isinstance(c.constraints if isinstance(c, Hinge) else c, LinearConstraints) for c in items)


def metric_space(X, W0, space, regularizer, constraints):
    """The space of a metric problem: ``space`` = "features" (W, d × d), "span" (the data's
    row space, :class:`~cvxkml.declare.spaces.SpanSpace`) or "auto" (span when d > n, the
    regularizer has Theorem 4's minimizer α, and no linear constraints act on W), or a
    :class:`~cvxkml.declare.spaces.Space` instance."""
    from .._validation import check_choice
    from .spaces import MetricSpace, Space, SpanSpace

    if isinstance(space, Space):
        return space
    check_choice(space, "space", ("auto", "features", "span"))
    if space == "auto":
        X = check_data(X, "X")
        n, d = X.shape
        if d <= n or _linear_family(constraints):
            return MetricSpace(X, W0)
        try:
            regularizer.check_theorem4()
        except InvalidInputError:
            return MetricSpace(X, W0)
        return SpanSpace(X, W0)
    if space == "span":
        if _linear_family(constraints):
            raise InvalidInputError(
                "Linear constraints act on the whole d × d W; the span space learns only its part on "
                "the data's row space. Use space='features' with linear constraints."
            )
        try:
            regularizer.check_theorem4()
        except InvalidInputError as exc:
            raise InvalidInputError(
                f"space='span' needs Theorem 4 (the optimal W is αI off the data's span): {exc}"
            ) from None
        return SpanSpace(X, W0)
    return MetricSpace(X, W0)


class ITML(SpectralProblem):
    """LogDet (information-theoretic) metric learning, Jain et al. eq. 2 / 4 (7 with slack):

        min_W  D_ld(W, W0) [+ γ D_ld(diag ξ, diag ξ0)]
        s.t.   (x_i − x_j)ᵀ W (x_i − x_j) <= u (similar) / >= l (dissimilar)  [or ξ_ij]

    Parameters
    ----------
    X : (n, d) data.  constraints : PairConstraints (fast + exact), RelativeConstraints
    and/or LinearConstraints on W (exact model only).  W0 : PD prior (default I).
    gamma : None for hard constraints, else the LogDet slack weight γ > 0.
    space : {"auto", "features", "span"} or a :class:`~cvxkml.declare.spaces.Space`
        "features": the learned matrix is W (d × d), O(d²) per projection.  "span": wide
        data, solved on the k × k matrix of the data's row space (k = rank X <= n; Jain et
        al. Theorems 1 and 4, :class:`~cvxkml.declare.spaces.SpanSpace`): the same optimum,
        dual and certificate, O(k²) per projection, and W = αW0 + U(X̂ − αI)Uᵀ is never
        formed; ``Solution.matrix`` is then X̂ (k × k) and :meth:`learned_metric` gives W as
        a factored :class:`~cvxkml.learned.FactoredMetric`.  "auto" (default): "span" when
        d > n and no linear constraints act on W, else "features".
    """

    solver_tag = "metric"

    def __init__(self, X, constraints, W0=None, gamma=None, space="auto"):
        super().__init__(metric_space(X, W0, space, self.regularizer, constraints), constraints, gamma=gamma)


class LogDetKernel(SpectralProblem):
    """LogDet kernel learning, Jain et al. eq. 3 (7 with slack):

        min_K  D_ld(K, K0) [+ γ D_ld(diag ξ, diag ξ0)]
        s.t.   K_ii + K_jj − 2K_ij <= u (similar) / >= l (dissimilar)  [or ξ_ij]

    K0 must be PSD.  A rank-deficient K0 is handled on its range space (the learned K
    keeps range(K0), Kulis et al. 2009): the exact model works with the r × r matrix
    X̂ (K = G0 X̂ G0ᵀ, K0 = G0 G0ᵀ), and no solver inverts K0.  The fast solver is Jain
    et al. Algorithm 1 on K (O(n²) per projection) for a full-rank K0 with pair
    constraints; for a rank-r K0, or with relative / similarity constraints, it is the
    factored Algorithm 2 of Kulis et al. on G0 (O(r²) per projection;
    ``Solution.info["path"]`` says which ran).
    """

    solver_tag = "kernel"
    kernel_space = True

    def __init__(self, K0, constraints, gamma=None, rank_rtol: float = 1e-10):
        super().__init__(KernelSpace(K0, rank_rtol), constraints, gamma=gamma)


__getattr__ = moved_attribute(__name__)  # LogDetProblem: SpectralProblem
