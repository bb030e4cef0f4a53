"""Cost of one standing-promise check in the reserve step: the whole fleet's window table
(``bindings_fit`` on ``with_free(window_free(...))``, as reserve did it) against the check on the
promise's own nodes (``bindings_fit_throughout``). Same answers (asserted here on every promise).

    python bench/promise_check.py        # µs per check, each way, and their ratio

Synthetic but shaped like the large gang-easy simulation's congested window: 2,000 × 8-GPU nodes,
1,660 running jobs of 1–3 pods at random ends, 7 reservations (holds) of 4 whole nodes, 50
promises of 4 whole nodes at random times; each check on a fresh timeline (as each cycle has).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from gpufleet.engine.capacity import CapacityTimeline, Hold, Releases
from gpufleet.engine.fit import bindings_fit
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import RunningJob
from gpufleet.model.fleet import NodeGroup, build_fleet
from gpufleet.model.job import PodRequest
from gpufleet.policies.backfill import bindings_fit_throughout, window_free
from gpufleet.testing.builders import job

N, RUNNING, HOLDS, PROMISES, REPS, RUN_S = 2000, 1660, 7, 50, 20, 3000.0


def _whole_nodes(rng: np.random.Generator, jid: str) -> tuple[PodBinding, ...]:
    return tuple(PodBinding(jid, "w", k, int(n), PodRequest(8, 28.0, 256.0))
                 for k, n in enumerate(rng.choice(N, 4, replace=False)))


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    rng = np.random.default_rng(0)
    table = NodeTable.from_fleet(build_fleet([NodeGroup(nodes=N, gpu="H100-80GB", leaf_size=32)]))
    running, ends = [], {}
    for i in range(RUNNING):
        jid = f"r{i}"
        nodes = rng.choice(N, int(rng.integers(1, 4)), replace=False)
        running.append(RunningJob(job(jid).build(), 0.0, tuple(
            PodBinding(jid, "w", k, int(n), PodRequest(int(rng.integers(1, 8)), 12.0, 100.0))
            for k, n in enumerate(nodes))))
        ends[jid] = float(rng.uniform(1, 10_000))
    rel = Releases.build(running, lambda rj: ends[rj.job.id])
    holds = []
    for _ in range(HOLDS):
        s = float(rng.uniform(0, 8_000))
        holds.append(Hold.of(_whole_nodes(rng, "h"), N, s, s + RUN_S))
    promises = [(float(rng.uniform(0, 8_000)), _whole_nodes(rng, "p")) for _ in range(PROMISES)]

    def whole() -> list[bool]:
        out = []
        for s, b in promises:
            avail = CapacityTimeline(table, rel)
            out.append(bindings_fit(table.with_free(*window_free(avail, holds, s, s + RUN_S)), b))
        return out

    def own_nodes() -> list[bool]:
        return [bindings_fit_throughout(CapacityTimeline(table, rel), holds, s, s + RUN_S, b)
                for s, b in promises]

    assert whole() == own_nodes()
    cost = {}
    for f in (whole, own_nodes, whole, own_nodes):
        c = time.process_time()
        for _ in range(REPS):
            f()
        cost.setdefault(f.__name__, []).append((time.process_time() - c) / (REPS * PROMISES) * 1e6)
    w, o = min(cost["whole"]), min(cost["own_nodes"])
    print(f"whole-fleet window: {w:.1f} µs/check; own nodes: {o:.1f} µs/check; ratio {w / o:.2f}")


if __name__ == "__main__":
    main()
