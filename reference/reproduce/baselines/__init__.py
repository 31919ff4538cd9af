"""The published baselines the reproductions compare against (not the papers' own methods,
and not part of the installed library):

* :class:`~reference.reproduce.baselines.rca.RCA` — relevant component analysis (Bar-Hillel
  et al. 2003/2005), the linear baseline of Yeung et al. (2007), used by
  :mod:`reference.reproduce.yeung`;
* :class:`~reference.reproduce.baselines.hmrf.HMRFKMeans` — semi-supervised k-means with
  pairwise constraints (Basu, Bilenko & Mooney 2004), the baseline of Jain et al. (2012,
  Table 1), used by :mod:`reference.reproduce.logdet`.

The class-separability J that Yeung et al. report is a measure a user applies to a learned
metric or kernel, so it stays in the package (:mod:`cvxkml.baselines.separability`).
"""

from .hmrf import HMRFKMeans
from .rca import RCA

__all__ = ["HMRFKMeans", "RCA"]
