"""Skipping provably idle cycles: same history, fewer cycles."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpufleet.engine.reuse import CycleReuse
from gpufleet.policies.registry import profile
from gpufleet.sim.runner import simulate
from gpufleet.sim.workload import WorkloadSpec, generate
from gpufleet.testing.builders import fleet, job

DECISIONS = ("wait", "reserve", "backfill")


def _history(r):
    return [e for e in r.recorder.log if e[1] not in DECISIONS]


def test_arrivals_that_cannot_fit_a_full_fleet_run_no_cycle():
    """One node of 8 GPUs busy for 100 s; three 8-GPU jobs arrive at 10, 20, 30 s: the index proves
    none fits, so no cycle runs until the finish at 100 s (cycles at 0 and 100, 110 … as jobs end)."""
    f = fleet().leaves(1, nodes=1).build()
    jobs = [job("a").gpus(8).runs(100).build()] + [job(f"b{i}").gpus(8).at(10.0 * (i + 1)).runs(100).build()
                                                    for i in range(3)]
    r = simulate(f, jobs, profile("gang-bestfit"))
    assert r.starts == {"a": 0.0, "b0": 100.0, "b1": 200.0, "b2": 300.0}
    assert r.cycles == 4  # 0, 100, 200, 300 — not 10, 20, 30


@pytest.mark.parametrize("policy", ["gang-bestfit", "smallest-first", "gang-easy", "per-pod"])
def test_skipping_idle_cycles_changes_no_start_finish_or_eviction(policy, monkeypatch):
    """A congested stream on 8 nodes (gangs of 1–8 nodes every 60 s, 30 min each, and a generated
    day on top): with and without the skip, the same event history; only skip-safe profiles (plain
    greedy gang placement) run fewer cycles."""
    f = fleet().leaves(2, nodes=4).build()
    jobs = [job(f"g{i}").gpus(8).gang(1 + (i * 3) % 8).at(60.0 * i).runs(1800).build() for i in range(60)]
    jobs += generate(WorkloadSpec(days=0.5, offered_load=0.5, max_gpus=32), f.total_gpus, 5)
    with_skip = simulate(f, jobs, profile(policy), seed=3)
    declared = CycleReuse.of
    monkeypatch.setattr(CycleReuse, "of",
                        classmethod(lambda cls, p: replace(declared(p), unfit_arrivals=False)))
    without = simulate(f, jobs, profile(policy), seed=3)
    assert _history(with_skip) == _history(without)
    if policy in ("gang-bestfit", "smallest-first"):
        assert with_skip.cycles < without.cycles
    else:
        assert with_skip.cycles == without.cycles
