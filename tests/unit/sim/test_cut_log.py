"""The cycle cut (engine/cut.py) in the simulator: the engine sees the head of each shape class, the
event log - decisions included - stays byte for byte the one the full cycles write."""

from __future__ import annotations

from dataclasses import replace

import pytest

import gpufleet.engine.incremental as incremental
from gpufleet.engine.reuse import CycleReuse
from gpufleet.policies.registry import profile
from gpufleet.sim.runner import simulate
from gpufleet.sim.workload import WorkloadSpec, generate
from gpufleet.testing.builders import fleet, job


def _congested():
    """16 × 8 GPUs; a generated day at 3× offered load (1–32 GPU gangs, four tenants), plus jobs
    the generator never makes: high priority, CPU-bound pods, two pod sets, a MIG slice (a class
    gang-bestfit refuses: never cut) and a gang larger than the fleet (unresolvable)."""
    f = fleet().leaves(2, nodes=8).build()
    jobs = generate(WorkloadSpec(days=1.0, offered_load=3.0, max_gpus=32), f.total_gpus, 11)
    extra = [job(f"hi{i}").gpus(2).priority(5).at(3000.0 * i).runs(5000).build() for i in range(8)]
    extra += [job(f"cpu{i}").gpus(1).cpus(100).at(2500.0 * i + 7).runs(4000).build() for i in range(8)]
    extra += [job(f"mig{i}").mig("1g.10gb").at(4000.0 * i + 11).runs(3000).build() for i in range(4)]
    extra += [job("huge").gpus(8).gang(40).at(100.0).runs(100).build()]
    return f, jobs + extra


@pytest.mark.parametrize("policy", ["gang-bestfit", "gang-fifo"])
def test_cut_cycles_write_the_same_event_log_as_full_cycles(policy, monkeypatch):
    """Every line of the log: submits, starts, finishes and every wait status the decision log
    writes, in the same order with the same text; and the same fleet timeline. Strict FIFO also
    skips the cycles whose only news is jobs queued behind the one the last cycle stopped at."""
    f, jobs = _congested()
    cut = simulate(f, jobs, profile(policy), seed=2)
    declared = CycleReuse.of
    monkeypatch.setattr(CycleReuse, "of", classmethod(lambda cls, p: replace(declared(p), cut=None,
                                                                              behind_stop=False)))
    full = simulate(f, jobs, profile(policy), seed=2)
    assert cut.recorder.log == full.recorder.log
    assert (cut.recorder.t, cut.recorder.allocated, cut.recorder.stranded) == \
        (full.recorder.t, full.recorder.allocated, full.recorder.stranded)
    assert sum(e[1] == "wait" for e in cut.recorder.log) > 100  # decisions were logged
    if policy == "gang-fifo":
        assert cut.cycles < full.cycles


@pytest.mark.parametrize("policy", ["gang-bestfit", "gang-fifo"])
def test_a_cut_cycle_hands_the_engine_at_most_free_gpus_plus_one_job_per_class(policy, monkeypatch):
    """One 8-GPU node busy for an hour, 300 one-GPU jobs queued behind it: at the finish F = 8 GPUs
    are free, so greedy gives the engine ⌊8/1⌋ + 1 = 9 jobs of that class and fifo F + 2 = 10, not
    300; 8 start; the same 8 as with the whole queue."""
    f = fleet().leaves(1, nodes=1).build()
    jobs = [job("blocker").gpus(8).runs(3600).build()]
    jobs += [job(f"w{i:03d}").gpus(1).at(1.0 + i).runs(7200).build() for i in range(300)]
    seen: list[int] = []
    real = incremental.run_cycle

    def counting(inp):
        seen.append(len(inp.pending))
        return real(inp)

    monkeypatch.setattr(incremental, "run_cycle", counting)
    r = simulate(f, jobs, profile(policy))
    assert max(seen) == (9 if policy == "gang-bestfit" else 10)
    assert sorted(j for j, t in r.starts.items() if t == 3600.0) == [f"w{i:03d}" for i in range(8)]
