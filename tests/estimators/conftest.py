"""Fixtures shared by the estimator tests."""

import pytest
from sklearn.datasets import load_wine
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler


@pytest.fixture(scope="session")
def wine():
    """Wine, split 60/40 stratified (seed 0), standardized on the training part:
    (X_train, X_test, y_train, y_test) with 106 and 72 points."""
    X, y = load_wine(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.4, stratify=y, random_state=0)
    sc = StandardScaler().fit(Xtr)
    return sc.transform(Xtr), sc.transform(Xte), ytr, yte
