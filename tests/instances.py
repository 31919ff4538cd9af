"""Random instances for the property tests: the public generators of :mod:`cvxkml.testing`
under the names the test files use."""
from cvxkml.testing import (factor_instance, forest_pairs as _forest_pairs, kernel_instance,  # noqa: F401
                            metric_instance, random_pairs as _random_pairs)
