"""The naive baseline for bench/cycle.py: every pending job against every node, in Python.

No equivalence classes, no vectorised node table, no index: for each job in priority order, for
each of its pods, scan the nodes in order and bind the first that fits. This is what a scheduler
does without the engine's structure, and the yardstick the engine's speed-up is measured against.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import PendingJob


def naive_cycle(table: NodeTable, pending: Sequence[PendingJob]) -> int:
    """Place what fits, first fit; returns the number of jobs started."""
    gpu = table.gpu_free.tolist()
    cpu = table.cpu_free.tolist()
    mem = table.mem_free.tolist()
    ok = table.schedulable.tolist()
    started = 0
    for pj in sorted(pending, key=lambda p: (-p.job.priority, p.job.submit_time, p.job.id)):
        taken: list[tuple[int, int, float, float]] = []
        fits = True
        for ps in pj.job.pod_sets:
            r = ps.request
            for _ in range(ps.replicas):
                for n in range(len(gpu)):
                    if ok[n] and gpu[n] >= r.gpus and cpu[n] >= r.cpus and mem[n] >= r.memory_gb:
                        gpu[n] -= r.gpus
                        cpu[n] -= r.cpus
                        mem[n] -= r.memory_gb
                        taken.append((n, r.gpus, r.cpus, r.memory_gb))
                        break
                else:
                    fits = False
                    break
            if not fits:
                break
        if fits:
            started += 1
        else:
            for n, g, c, m in taken:
                gpu[n] += g
                cpu[n] += c
                mem[n] += m
    return started
