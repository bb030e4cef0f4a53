"""Fragmentation of free GPUs: for a pod of ``s`` GPUs (one node), the share of the free GPUs it
cannot use, ``1 − Σ_n s·⌊f_n / s⌋ / Σ_n f_n`` over schedulable nodes with ``f_n`` free GPUs.

Example: free GPUs 8, 3, 1 (12 in all): a 4-GPU pod can use 8 + 0 + 0 = 8 of them, so 1/3 is
fragmented for it; a 2-GPU pod uses 8 + 2 + 0 = 10, 1/6 fragmented; a 1-GPU pod uses all.
"""

from __future__ import annotations

SIZES = (1, 2, 4, 8)


def fragmentation(free_gpus: list[int], sizes: tuple[int, ...] = SIZES) -> dict[int, float]:
    total = sum(f for f in free_gpus if f > 0)
    if total == 0:
        return dict.fromkeys(sizes, 0.0)
    return {s: 1.0 - sum(s * (f // s) for f in free_gpus if f > 0) / total for s in sizes}
