"""The algorithms of the non-spectral families, provided to their declared problems by name
(:func:`cvxkml.declare.registry.kernel`): LMNN's certified PDHG and its pair distances
(Wang et al. 2011), the kernel classification rule's PDHG (Sriperumbudur et al. 2008), and
the MKL_P weight step's interior-point method (Wang et al. eq. 15–16)."""

from __future__ import annotations

from ..declare.registry import register_kernel
from ..solvers.kcr import kcr_pdhg
from ..solvers.lmnn import lmnn_active_set, lmnn_pdhg, pair_distances
from ..solvers.mkl import weight_step_ipm

KERNELS = {
    "lmnn.pdhg": lmnn_pdhg,
    "lmnn.active_set": lmnn_active_set,
    "lmnn.pair_distances": pair_distances,
    "kcr.pdhg": kcr_pdhg,
    "mkl.weight_step_ipm": weight_step_ipm,
}

for _name, _fn in KERNELS.items():
    register_kernel(_name, _fn)
