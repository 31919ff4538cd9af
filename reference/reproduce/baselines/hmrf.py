"""HMRF-KMeans: semi-supervised k-means with pairwise constraints (Basu, Bilenko & Mooney,
KDD 2004) — the baseline of Jain et al. (2012), Table 1.

The model is a hidden Markov random field over the cluster labels l_i.  With a diagonal
distortion ‖x − μ‖²_A = Σ_m a_m (x_m − μ_m)² (A learned, "parameterized Euclidean"), the
objective minimised over labels, centroids and A is

    J = Σ_i [‖x_i − μ_{l_i}‖²_A − log det A]
        + Σ_{(i,j) ∈ M, l_i ≠ l_j} w ‖x_i − x_j‖²_A
        + Σ_{(i,j) ∈ C, l_i = l_j} w̄ (D_max − ‖x_i − x_j‖²_A),

M the must-link (similar) and C the cannot-link (dissimilar) pairs, D_max the largest
squared A-distance between two points of the data (here: along the data's bounding box, so
that every cannot-link penalty is non-negative).  The algorithm (Basu et al. 2004, §4):

1. initialise from the neighbourhoods of the must-link transitive closure: the largest
   λ ≤ k neighbourhood centroids, then farthest-first among the remaining points;
2. E-step: iterated conditional modes (ICM) — each point in random order takes the
   label of least penalised distortion given the others' labels;
3. M-step: centroids are the cluster means; A is re-estimated in closed form per
   coordinate (∂J/∂a_m = 0), with a floor that keeps it positive;
4. repeat until the labels stop changing or ``max_iter``.

Only what Jain et al. compare against is implemented: diagonal A, w = w̄ = 1 by default.
"""

from __future__ import annotations

import numpy as np

from cvxkml._validation import check_data, check_int, check_number
from cvxkml.errors import InvalidInputError

__all__ = ["HMRFKMeans"]


def _closure_neighbourhoods(n, ml_i, ml_j):
    """Connected components of the must-link graph: a label per point (singletons included)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    g = coo_matrix((np.ones(ml_i.size), (ml_i, ml_j)), shape=(n, n))
    return connected_components(g, directed=False)[1]


class HMRFKMeans:
    """Semi-supervised k-means with must-link / cannot-link pairs (Basu et al. 2004).

    Parameters
    ----------
    n_clusters : int
        k.
    w_must, w_cannot : float
        Penalty weights w and w̄ of violated must-link and cannot-link pairs.
    learn_metric : bool
        Re-estimate the diagonal distortion A in the M-step (Basu et al.'s parameterized
        Euclidean); False keeps A = I (PCKMeans-like).
    max_iter : int
        Maximum EM rounds.
    random_state : int, Generator or None
        Seeds the ICM visiting order and the farthest-first initialisation.

    Attributes
    ----------
    labels_ : (n,) cluster labels of the points passed to :meth:`fit`.
    cluster_centers_ : (k, d) centroids.  metric_diag_ : (d,) the learned diagonal of A.
    n_iter_ : EM rounds run.  objective_ : J at the end.
    """

    def __init__(
        self,
        n_clusters: int,
        w_must: float = 1.0,
        w_cannot: float = 1.0,
        learn_metric: bool = True,
        max_iter: int = 100,
        random_state=None,
    ):
        self.n_clusters = n_clusters
        self.w_must = w_must
        self.w_cannot = w_cannot
        self.learn_metric = learn_metric
        self.max_iter = max_iter
        self.random_state = random_state

    # ------------------------------------------------------------------ helpers
    def _objective(self, X, labels, C, a, ml, cl, dmax):
        d_pts = np.einsum("ij,ij,j->i", X - C[labels], X - C[labels], a)
        J = float(d_pts.sum()) - X.shape[0] * float(np.sum(np.log(a)))
        (mi, mj), (ci, cj) = ml, cl
        viol_m = labels[mi] != labels[mj]
        viol_c = labels[ci] == labels[cj]
        if viol_m.any():
            D = X[mi[viol_m]] - X[mj[viol_m]]
            J += self.w_must * float(np.einsum("ij,ij,j->", D, D, a))
        if viol_c.any():
            D = X[ci[viol_c]] - X[cj[viol_c]]
            J += self.w_cannot * float(np.sum(dmax(a) - np.einsum("ij,ij,j->i", D, D, a)))
        return J

    def _init_centroids(self, X, ml_i, ml_j, k, rng):
        comp = _closure_neighbourhoods(X.shape[0], ml_i, ml_j)
        sizes = np.bincount(comp)
        # neighbourhoods with a constraint first (size > 1), largest first
        order = np.argsort(-sizes, kind="stable")
        hoods = [c for c in order if sizes[c] > 1][:k]
        centers = [X[comp == c].mean(axis=0) for c in hoods]
        if not centers:
            centers = [X[rng.integers(X.shape[0])]]
        while len(centers) < k:  # farthest-first traversal
            Cc = np.asarray(centers)
            d = ((X[:, None, :] - Cc[None]) ** 2).sum(-1).min(axis=1)
            centers.append(X[int(np.argmax(d))])
        return np.asarray(centers, dtype=float)

    # ------------------------------------------------------------------ fit
    def fit(self, X, pairs_i, pairs_j, pairs_y):
        """Cluster X under the pairs (i, j, y): y = +1 must-link, −1 cannot-link.

        Returns self; raises InvalidInputError on bad input."""
        X = check_data(X, "X")
        n, d = X.shape
        k = check_int(self.n_clusters, "n_clusters", minimum=1, maximum=n)
        max_iter = check_int(self.max_iter, "max_iter", minimum=1)
        w_m = check_number(self.w_must, "w_must", low=0.0, what="a finite number >= 0")
        w_c = check_number(self.w_cannot, "w_cannot", low=0.0, what="a finite number >= 0")
        pi = np.asarray(pairs_i, dtype=np.int64).ravel()
        pj = np.asarray(pairs_j, dtype=np.int64).ravel()
        py = np.asarray(pairs_y, dtype=float).ravel()
        if not (pi.size == pj.size == py.size):
            raise InvalidInputError("pairs_i, pairs_j and pairs_y must have the same length.")
        if pi.size and (min(pi.min(), pj.min()) < 0 or max(pi.max(), pj.max()) >= n):
            raise InvalidInputError(f"Pair indices must lie in [0, {n}); fix the pairs.")
        if not np.all(np.isin(py, (-1.0, 1.0))):
            raise InvalidInputError("pairs_y must be +1 (must-link) or -1 (cannot-link).")
        rng = np.random.default_rng(self.random_state)
        ml = (pi[py > 0], pj[py > 0])
        cl = (pi[py < 0], pj[py < 0])
        span = X.max(axis=0) - X.min(axis=0)

        def dmax(a):  # squared A-diameter of the bounding box
            return float(np.sum(a * span**2))

        C = self._init_centroids(X, ml[0], ml[1], k, rng)
        a = np.ones(d)
        labels = np.argmin(((X[:, None, :] - C[None]) ** 2 * a).sum(-1), axis=1)
        # neighbour lists for ICM
        nb_must = [[] for _ in range(n)]
        nb_cannot = [[] for _ in range(n)]
        for i, j in zip(*ml):
            nb_must[i].append(j)
            nb_must[j].append(i)
        for i, j in zip(*cl):
            nb_cannot[i].append(j)
            nb_cannot[j].append(i)
        it = 0
        for it in range(1, max_iter + 1):
            changed = 0
            dist = ((X[:, None, :] - C[None]) ** 2 * a).sum(-1)  # n × k
            for i in rng.permutation(n):  # ICM, one pass
                cost = dist[i].copy()
                for j in nb_must[i]:
                    dij = float(np.sum(a * (X[i] - X[j]) ** 2))
                    cost += w_m * dij * (np.arange(k) != labels[j])
                for j in nb_cannot[i]:
                    dij = float(np.sum(a * (X[i] - X[j]) ** 2))
                    cost += w_c * (dmax(a) - dij) * (np.arange(k) == labels[j])
                new = int(np.argmin(cost))
                if new != labels[i]:
                    labels[i] = new
                    changed += 1
            for c in range(k):  # M-step: centroids
                members = labels == c
                if members.any():
                    C[c] = X[members].mean(axis=0)
                else:  # empty: farthest point
                    C[c] = X[int(np.argmax(dist.min(axis=1)))]
            if self.learn_metric:  # M-step: diagonal A
                s = ((X - C[labels]) ** 2).sum(axis=0)
                vm = labels[ml[0]] != labels[ml[1]]
                if vm.any():
                    s = s + w_m * ((X[ml[0][vm]] - X[ml[1][vm]]) ** 2).sum(axis=0)
                vc = labels[cl[0]] == labels[cl[1]]
                if vc.any():
                    s = s + w_c * (vc.sum() * span**2 - ((X[cl[0][vc]] - X[cl[1][vc]]) ** 2).sum(axis=0))
                a = n / np.maximum(s, 1e-12 * max(float(s.max()), 1e-300))
            if changed == 0 and it > 1:
                break
        self.labels_ = labels
        self.cluster_centers_ = C
        self.metric_diag_ = a
        self.n_iter_ = it
        self.objective_ = self._objective(X, labels, C, a, ml, cl, dmax)
        return self

    def fit_predict(self, X, pairs_i, pairs_j, pairs_y):
        """:meth:`fit`, then ``labels_``."""
        return self.fit(X, pairs_i, pairs_j, pairs_y).labels_
