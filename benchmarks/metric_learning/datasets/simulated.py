import numpy as np
from benchmark_utils import standardize
from benchopt import BaseDataset


class Dataset(BaseDataset):
    """Two overlapping Gaussian classes in d dimensions (the class shifts two coordinates by
    1.5), standardized.  Seeded by the ``seed`` parameter (the same draw in every repetition:
    repetitions of this benchmark re-time the same problem)."""

    name = "Simulated"
    parameters = {"n_samples, n_features": [(60, 10)], "seed": [0]}
    test_parameters = {"n_samples, n_features": [(30, 4)], "seed": [0]}

    def get_data(self):
        rng = np.random.default_rng(self.seed)
        y = np.arange(self.n_samples) % 2
        X = rng.standard_normal((self.n_samples, self.n_features))
        X[:, :2] += 1.5 * y[:, None]
        return dict(X=standardize(X), y=y)
