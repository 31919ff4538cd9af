from benchmark_utils import standardize, stratified
from benchopt import BaseDataset

from cvxkml.datasets import load_dataset


class Dataset(BaseDataset):
    """A shared offline data set read by ``cvxkml.datasets.load_dataset`` (nothing downloads).

    ``set_name``: a table of the data folder (ionosphere, sonar, balance, ...; see its README);
    the folder is ``data_dir`` if given, else the ``CVXKML_DATA`` environment variable.  A
    class-stratified sample of ``n_samples`` points (seed 0), standardized features."""

    name = "offline"
    parameters = {"set_name": ["ionosphere", "sonar"], "n_samples": [60], "data_dir": [None]}
    test_parameters = {"set_name": ["ionosphere"], "n_samples": [20], "data_dir": [None]}

    def get_data(self):
        X, y = load_dataset(self.set_name, data_dir=self.data_dir)
        idx = stratified(y, self.n_samples, seed=0)
        return dict(X=standardize(X[idx]), y=y[idx])
