"""Published baselines the experiments compare against (not the papers' own methods).

* :class:`~cvxkml.baselines.rca.RCA` — relevant component analysis (Bar-Hillel et al.
  2003/2005), the linear baseline of Yeung et al. (2007);
* :func:`~cvxkml.baselines.separability.separability` — the class-separability criterion J
  that Yeung et al. (2007, Table 1) report;
* :class:`~cvxkml.baselines.hmrf.HMRFKMeans` — semi-supervised k-means with pairwise
  constraints (Basu, Bilenko & Mooney 2004), the baseline of Jain et al. (2012, Table 1).
"""

from .hmrf import HMRFKMeans
from .rca import RCA
from .separability import separability, separability_from_kernel

__all__ = ["HMRFKMeans", "RCA", "separability", "separability_from_kernel"]
