"""The baselines the reproductions compare against (reference.reproduce.baselines): HMRF-KMeans
(Basu, Bilenko & Mooney 2004), the baseline of Jain et al. 2012 Table 1, and RCA (Bar-Hillel
et al. 2003), the linear baseline of Yeung et al. 2007."""

import numpy as np
import pytest

from cvxkml.errors import InvalidInputError
from reference.reproduce.baselines import HMRFKMeans
from reference.reproduce.baselines.rca import RCA, chunklets, rca_components, within_chunklet_covariance


def _blobs(seed=0, n=60, k=3, d=2, spread=0.6):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=4.0, size=(k, d))
    y = rng.integers(0, k, n)
    return centres[y] + spread * rng.normal(size=(n, d)), y


def test_without_constraints_it_is_kmeans_at_a_fixed_point():
    """No pairs and A = I: every point sits in the cluster of its nearest centroid and every
    centroid is its cluster's mean (Lloyd's fixed point)."""
    X, _ = _blobs()
    h = HMRFKMeans(3, learn_metric=False, random_state=0).fit(X, [], [], [])
    d = ((X[:, None] - h.cluster_centers_[None]) ** 2).sum(-1)
    assert np.array_equal(h.labels_, d.argmin(1))
    for c in range(3):
        np.testing.assert_allclose(h.cluster_centers_[c], X[h.labels_ == c].mean(0), atol=1e-12)


@pytest.mark.parametrize("learn_metric", [False, True])
def test_heavy_penalties_enforce_the_constraints(learn_metric):
    """With large weights the constraints decide: must-links across two well-separated blobs
    end in one cluster, cannot-links inside one blob end in different clusters."""
    X, y = _blobs(1, n=40, k=2, spread=0.3)
    a, b = np.flatnonzero(y == 0)[:3], np.flatnonzero(y == 1)[:3]
    i = np.concatenate([a, a[:2]])
    j = np.concatenate([b, a[1:3]])
    s = np.array([1.0, 1.0, 1.0, -1.0, -1.0])
    h = HMRFKMeans(2, w_must=1e3, w_cannot=1e3, learn_metric=learn_metric, random_state=0)
    lab = h.fit_predict(X, i, j, s)
    assert np.all(lab[i[s > 0]] == lab[j[s > 0]])
    assert np.all(lab[i[s < 0]] != lab[j[s < 0]])
    assert np.all(h.metric_diag_ > 0) and np.isfinite(h.objective_)


def test_constraints_help_on_overlapping_clusters():
    """Two overlapping clusters stretched along a noise axis: k-means splits along the noise,
    a few label pairs (and the learned diagonal metric) recover the classes."""
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 200)
    X = np.column_stack([y * 1.5 + 0.3 * rng.normal(size=200), 6.0 * rng.normal(size=200)])
    i = rng.integers(0, 200, 60)
    j = rng.integers(0, 200, 60)
    keep = i != j
    i, j = i[keep], j[keep]
    s = np.where(y[i] == y[j], 1.0, -1.0)

    def error(lab):
        e = np.mean(lab != y)
        return min(e, 1 - e)

    plain = HMRFKMeans(2, learn_metric=False, random_state=0).fit_predict(X, [], [], [])
    semi = HMRFKMeans(2, random_state=0).fit_predict(X, i, j, s)
    assert error(semi) < 0.2 and error(plain) > 0.4  # measured: 0.135 vs 0.455


def test_bad_inputs():
    X, _ = _blobs()
    with pytest.raises(InvalidInputError, match="same length"):
        HMRFKMeans(2).fit(X, [0, 1], [2], [1, 1])
    with pytest.raises(InvalidInputError, match=r"\[0, 60\)"):
        HMRFKMeans(2).fit(X, [0], [60], [1])
    with pytest.raises(InvalidInputError, match="must-link"):
        HMRFKMeans(2).fit(X, [0], [1], [0.5])
    with pytest.raises(InvalidInputError):
        HMRFKMeans(0).fit(X, [], [], [])
    with pytest.raises(InvalidInputError):
        HMRFKMeans(2, w_must=-1.0).fit(X, [], [], [])


# --------------------------------------------------------------------------- RCA
def test_rca_whitens_chunklets():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3)) @ np.diag([5.0, 1.0, 0.2])
    pairs = np.array([[0, 1], [1, 2], [3, 4], [5, 6], [7, 8], [9, 10], [11, 12], [13, 14]])
    ch = chunklets(60, pairs[:, 0], pairs[:, 1])
    assert ch[0] == ch[1] == ch[2] and ch[3] == ch[4] and ch[0] != ch[3] and ch[20] == -1
    rca = RCA().fit(X, pairs)
    assert rca.n_components_ == 3
    C = within_chunklet_covariance(rca.transform(X), ch)
    np.testing.assert_allclose(C, np.eye(3), atol=1e-10)
    np.testing.assert_allclose(
        rca.get_mahalanobis_matrix(), np.linalg.inv(within_chunklet_covariance(X, ch)), rtol=1e-8
    )


def test_rca_rank_deficient_reduces_dimension():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 10))
    pairs = np.array([[0, 1], [2, 3], [4, 5]])  # rank(Ĉ) = 3 < 10
    A = rca_components(X, pairs[:, 0], pairs[:, 1])
    assert A.shape == (3, 10)
    ch = chunklets(40, pairs[:, 0], pairs[:, 1])
    C = within_chunklet_covariance(X @ A.T, ch)
    assert np.all(np.isfinite(C)) and np.linalg.matrix_rank(C) >= 1
    with pytest.raises(InvalidInputError, match="identical points"):
        Xd = X.copy()
        Xd[1] = Xd[0]
        rca_components(Xd, [0], [1])
