"""Packing policies of the FGD experiment (Weng et al., ATC 2023) and our own.

`POLICIES` maps the command-line name to a policy; every policy chooses a node among the feasible
rows of a `ClusterState` and the GPUs to use on it. `fgdbal` and `fgdres` are ours (not the
paper's); `fgdres` is the better one (see its module docstring and bench/README.md).
"""

from __future__ import annotations

from gpufleet.policies.fgd.baselines import (
    BestFitPolicy,
    DotProdPolicy,
    GpuClusteringPolicy,
    GpuPackingPolicy,
    PackingPolicy,
    RandomPolicy,
)
from gpufleet.policies.fgd.fgd import FgdPolicy
from gpufleet.policies.fgd.ours import FgdBalancePolicy
from gpufleet.policies.fgd.reserve import FgdReservePolicy

POLICIES: dict[str, PackingPolicy] = {
    p.name: p
    for p in (RandomPolicy(), DotProdPolicy(), GpuClusteringPolicy(), GpuPackingPolicy(), BestFitPolicy(),
              FgdPolicy(), FgdBalancePolicy(), FgdReservePolicy())
}

OURS = "fgdres"
"""Our best policy: the default of `bench/fragbench.py` besides FGD."""

__all__ = ["OURS", "POLICIES", "PackingPolicy"]
