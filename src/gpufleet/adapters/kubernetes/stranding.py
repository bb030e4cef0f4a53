"""Integer counts vs claims on one workload: how many GPUs each leaves unusable.

A count (``nvidia.com/gpu: g`` plus a node selector) can only say *which nodes*; a claim says
*which devices*. For a workload whose pods need ``g`` GPUs that satisfy a device condition
(model, memory, clique — a CEL selector), on each node with ``t`` free GPUs of which ``q``
qualify:

- **claims** use ``g·⌊q/g⌋`` of them: unusable = ``q mod g``;
- **counts** can use a node only if every free GPU qualifies (``q = t``; otherwise the pod may
  be handed a GPU that does not qualify, so the node must be excluded by its selector):
  unusable = ``q mod g`` on such nodes and all ``q`` on mixed nodes.

Summed over nodes, the difference is the GPUs that claims recover. Worked in docs/kubernetes.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.adapters.kubernetes.allocator import selected
from gpufleet.adapters.kubernetes.dra import Device, Request


@dataclass(frozen=True, slots=True)
class CountsVsClaims:
    qualifying: int
    unusable_counts: int
    unusable_claims: int
    mixed_nodes: int
    pods_counts: int
    pods_claims: int


def counts_vs_claims(devices: dict[str, list[Device]], request: Request, classes: dict[str, tuple[str, ...]],
                     used: set[tuple[str, str, str]], gpu_class: str = "gpu.nvidia.com") -> CountsVsClaims:
    g = max(1, request.count)
    qual = uc = ucl = mixed = pc = pcl = 0
    plain = Request("all", gpu_class, ())
    for node in sorted(devices):
        free = [d for d in devices[node] if d.key not in used and selected(d, plain, classes)]
        q = sum(1 for d in free if selected(d, request, classes))
        t = len(free)
        qual += q
        pcl += q // g
        ucl += q % g
        if q == t:
            pc += q // g
            uc += q % g
        else:
            mixed += 1 if q else 0
            uc += q
    return CountsVsClaims(qual, uc, ucl, mixed, pc, pcl)
