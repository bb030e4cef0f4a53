"""Same input, same decisions, across processes: two fresh interpreters with different hash seeds
run the same cycles and print a digest of every decision; the digests must match.

A comparison inside one process cannot fail on the faults that matter (an order leaking from
set iteration or string hashing, a clock, an unseeded generator): both calls share the process's
hash seed and its state. Separate processes with PYTHONHASHSEED 1 and 2 expose them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

#: Every bundled placer family on one input: greedy, EASY, conservative, topology, tenancy (with
#: its preemptor) and the blind placer that draws from the cycle's generator; plus one
#: topology-aware fit of a split TP job (the placement search with its tie-breaks).
PROGRAM = """
import hashlib, sys
from dataclasses import replace
import numpy as np
from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleContext, CycleInput, PendingJob
from gpufleet.model.job import PodRequest
from gpufleet.model.parallelism import LLAMA_70B, Parallelism
from gpufleet.policies.registry import profile
from gpufleet.policies.topology import TopologyAware
from gpufleet.testing.builders import fleet, job

f = fleet().leaves(2, nodes=4).build()
jobs = [job(f"j{i}").tenant("ab"[i % 2]).gpus(1 + i % 8).gang(1 + i % 3).at(i).runs(600 + 37 * i).build()
        for i in range(30)]
digest = hashlib.sha256()
for name in ("gang-bestfit", "gang-easy", "gang-conservative", "topology-aware", "topology-blind",
             "topology-easy"):
    r = run_cycle(CycleInput(now=0.0, nodes=NodeTable.from_fleet(f), profile=profile(name), seed=7,
                             pending=[PendingJob(j) for j in jobs]))
    digest.update(repr((name, r.started, r.bindings, sorted(r.statuses.items()), r.reservations,
                        r.preemptions)).encode())
t = Plan(NodeTable.from_fleet(f))
for node, gpus in {0: 4, 2: 2, 5: 6}.items():
    t.bind(PodBinding("bg", "w", node, node, PodRequest(gpus)))
tp = replace(job("tp").gpus(1).gang(24).runs(36000).build(), parallelism=Parallelism(8, dp=3),
             training=LLAMA_70B)
ctx = CycleContext(now=0.0, profile=profile("topology-aware"), rng=np.random.default_rng(0))
digest.update(repr(TopologyAware().fit(tp, t.table, ctx)).encode())
print(digest.hexdigest())
"""


def _digest(hash_seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


@pytest.mark.timeout(600)
def test_two_processes_with_different_hash_seeds_decide_byte_for_byte_alike():
    one, two = _digest("1"), _digest("2")
    assert len(one) == 64
    assert one == two
