"""Carried-on EASY cycles (engine/incremental.py rule 4, policies/backfill_carry.py) in the
simulator: a gang-easy cycle continued from the last one decides what the full cycle decides, and
the event log stays byte for byte the same."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpufleet.sim.step as step
from gpufleet.engine.incremental import CARRIED
from gpufleet.engine.reuse import CycleReuse
from gpufleet.model.fleet import NodeGroup, build_fleet
from gpufleet.policies.registry import profile
from gpufleet.sim.runner import simulate
from gpufleet.sim.workload import WorkloadSpec, generate
from gpufleet.testing.builders import fleet, job


def _congested(seed: int = 11, load: float = 1.6):
    """16 × 8 GPUs in two leaves; a generated day over capacity (1–32 GPU gangs, four tenants,
    estimates that overstate run times), plus high-priority jobs (they sort ahead of waiting ones)
    and CPU-bound pods (stranded GPUs)."""
    f = fleet().leaves(2, nodes=8).build()
    jobs = generate(WorkloadSpec(days=1.0, offered_load=load, max_gpus=32), f.total_gpus, seed)
    jobs += [job(f"hi{i}").gpus(2).priority(5).at(3000.0 * i + 5).runs(5000).build() for i in range(8)]
    jobs += [job(f"cpu{i}").gpus(1).cpus(100).at(2500.0 * i + 7).runs(4000).build() for i in range(8)]
    return f, jobs


def _without_carry_on(monkeypatch) -> None:
    declared = CycleReuse.of
    monkeypatch.setattr(CycleReuse, "of", classmethod(lambda cls, p: replace(declared(p), carry_scan=False)))


def _carried_instants(monkeypatch) -> list[float]:
    """The times of the cycles carried on from now on (filled as the simulation runs)."""
    times: list[float] = []
    real = step.run_incremental

    def spy(memo, delta, inp, **kw):
        result, memo = real(memo, delta, inp, **kw)
        if result.stats.reused == CARRIED:
            times.append(inp.now)
        return result, memo

    monkeypatch.setattr(step, "run_incremental", spy)
    return times


def test_carried_on_cycles_write_the_same_event_log_as_full_cycles(monkeypatch):
    """Every line: submits, starts, finishes, wait statuses, reservations and backfills, in the
    same order with the same text, and the same fleet timeline; with every carried-on cycle also
    checked against the full cycle at its instant (``verify_carried_cycles``)."""
    f, jobs = _congested()
    carried = simulate(f, jobs, profile("gang-easy"), seed=3, verify_carried_cycles=True)
    _without_carry_on(monkeypatch)
    full = simulate(f, jobs, profile("gang-easy"), seed=3)
    assert carried.carried_cycles > 50
    assert carried.recorder.log == full.recorder.log
    assert (carried.recorder.t, carried.recorder.allocated) == (full.recorder.t, full.recorder.allocated)
    kinds = {e[1] for e in carried.recorder.log}
    assert {"wait", "reserve", "backfill"} <= kinds
    assert carried.cycles + carried.carried_cycles == full.cycles


def test_the_trusting_profile_is_carried_on_too(monkeypatch):
    """gang-easy-trusting plans with raw estimates (no accuracy record): same proof, same log."""
    f, jobs = _congested()
    carried = simulate(f, jobs, profile("gang-easy-trusting"), verify_carried_cycles=True)
    _without_carry_on(monkeypatch)
    full = simulate(f, jobs, profile("gang-easy-trusting"))
    assert carried.carried_cycles > 0
    assert carried.recorder.log == full.recorder.log


def test_fractional_cpu_requests_turn_carrying_on_off():
    """0.5 CPU per pod: sums taken in another order could round differently, so once such a job
    was queued (here the first) no cycle is carried on."""
    f, jobs = _congested()
    assert simulate(f, jobs, profile("gang-easy")).carried_cycles > 0
    jobs.append(job("half").gpus(1).cpus(0.5).at(0.0).runs(100).build())
    assert simulate(f, jobs, profile("gang-easy")).carried_cycles == 0


def test_a_high_priority_arrival_is_not_carried_on(monkeypatch):
    """A job that sorts ahead of waiting jobs changes the place and reserve steps: its arrival
    cycle runs in full. Queue: one long 16-GPU job fills the fleet, three 8-GPU jobs wait (one
    reserved), then a priority-5 job arrives: it must run in a full cycle."""
    f = fleet().leaves(1, nodes=2).build()
    jobs = [job("big").gpus(8).gang(2).runs(10_000).build()]
    jobs += [job(f"w{i}").gpus(8).at(10.0 + i).runs(1000).build() for i in range(9)]
    jobs += [job("vip").gpus(1).priority(5).at(100.0).runs(50).build()]
    seen = _carried_instants(monkeypatch)
    simulate(f, jobs, profile("gang-easy"), verify_carried_cycles=True)
    assert 100.0 not in seen
    assert seen  # the 8-GPU arrivals queued behind the others were carried on


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), load=st.floats(0.8, 2.5), nodes=st.integers(2, 6),
       overrun=st.booleans())
def test_any_congested_workload_carries_on_exactly(seed, load, nodes, overrun):
    """Random fleets and workloads over and under capacity, with estimates that understate run
    times (jobs overrun, so releases move with now) or overstate them: every carried-on cycle is
    checked against the full cycle at its instant, and the whole log equals the full-cycle run."""
    f = fleet().leaves(2, nodes=nodes).build()
    jobs = generate(WorkloadSpec(days=0.5, offered_load=load, max_gpus=16), f.total_gpus, seed)
    if overrun:
        jobs = [replace(j, run_time_estimate=j.run_time * 0.7) for j in jobs]
    carried = simulate(f, jobs, profile("gang-easy"), seed=seed, verify_carried_cycles=True)
    declared = CycleReuse.of
    CycleReuse.of = classmethod(lambda cls, p: replace(declared(p), carry_scan=False))
    try:
        full = simulate(f, jobs, profile("gang-easy"), seed=seed)
    finally:
        CycleReuse.of = declared
    assert carried.recorder.log == full.recorder.log


def test_a_start_that_changes_the_heads_reason_runs_the_full_cycle(monkeypatch):
    """The head's reason names how many of its pods fit by GPUs alone; a backfilled arrival that
    takes those GPUs changes the reason's shape, which the full cycle logs. Nodes A, B (H100) and
    C (A100), 8 GPUs and 224 CPUs each. A: an 8-GPU job until t=10,000; B: a 1-GPU, 200-CPU job
    until 20,000 (7 GPUs and 24 CPUs left); C: an 8-GPU A100 job until 10,000. The head asks
    2 × (1 GPU, 100 CPUs): 0 pods fit now, 2 by GPUs alone (on B); it is reserved on A at 10,000,
    seven 8-GPU A100 jobs on C after it (8 reservations, EASY's depth). x1 (7 GPUs, 10 CPUs, 50 s)
    arrives at t=100 and is backfilled onto B: now 0 pods fit by GPUs alone either. At t=120 x2
    arrives: that cycle must log the head's new reason, as the full cycle does."""
    f = fleet().leaves(1, nodes=2).leaves(1, nodes=1, gpu="A100-80GB").build()
    h100, a100 = "H100-80GB", "A100-80GB"
    jobs = [job("blocker").gpus(8).cpus(24).models(h100).runs(10_000).build(),
            job("cpuhog").gpus(1).cpus(200).models(h100).runs(20_000).build(),
            job("cblock").gpus(8).cpus(24).models(a100).runs(10_000).build(),
            job("head").gpus(1).gang(2).cpus(100).models(h100).at(1.0).runs(1000).build()]
    jobs += [job(f"w{i}").gpus(8).cpus(24).models(a100).at(2.0 + i).runs(1000).build() for i in range(7)]
    jobs += [job("x1").gpus(7).cpus(10).models(h100).at(100.0).runs(50).build(),
             job("x2").gpus(1).cpus(1).models(h100).at(120.0).runs(10).build()]
    carried = simulate(f, jobs, profile("gang-easy"), verify_carried_cycles=True)
    _without_carry_on(monkeypatch)
    full = simulate(f, jobs, profile("gang-easy"))
    assert carried.recorder.log == full.recorder.log
    head_lines = [(t, d) for t, kind, j, d in full.recorder.log if kind == "wait" and j == "head"]
    assert head_lines[0][0] == 1.0 and "by GPUs alone" in head_lines[0][1]
    assert head_lines[1][0] == 120.0 and "by GPUs alone" not in head_lines[1][1]
    assert carried.carried_cycles > 0


def test_an_arrival_after_a_job_overran_its_estimate_runs_the_full_cycle(monkeypatch):
    """A job past its estimate is planned to end at now + 1 s, a release that moves with every
    instant: no cycle is carried on while one runs. Node A (A100): a 1-GPU job estimated at 100 s
    runs 1,000 s. Node B (H100): an 8-GPU job until t=5,000; nine 8-GPU H100 jobs wait (8
    reservations on B). An H100 arrival at t=50 may be carried on; one at t=500, while the A100
    job is past its estimate, may not (even though no reservation depends on it)."""
    f = fleet().leaves(1, nodes=1, gpu="A100-80GB").leaves(1, nodes=1).build()
    h100 = "H100-80GB"
    jobs = [job("long").gpus(1).models("A100-80GB").runs(1000, estimate=100).build(),
            job("big").gpus(8).models(h100).runs(5000).build()]
    jobs += [job(f"w{i}").gpus(8).models(h100).at(1.0 + i).runs(100).build() for i in range(9)]
    jobs += [job("early").gpus(8).models(h100).at(50.0).runs(10).build(),
             job("late").gpus(8).models(h100).at(500.0).runs(10).build()]
    carried_at = _carried_instants(monkeypatch)
    simulate(f, jobs, profile("gang-easy"), verify_carried_cycles=True)
    assert 50.0 in carried_at and 500.0 not in carried_at


@pytest.mark.parametrize(("nodes", "days", "load", "seed"), [(24, 5.0, 1.5, 9), (48, 4.0, 1.2, 5)])
def test_generated_congested_runs_carry_on_exactly(nodes, days, load, seed, monkeypatch):
    """Leaves of 16 × 8 H100 under days of generated load over capacity (the bench workload's
    sizes, CPU and memory asks, estimates): every carried-on cycle — arrivals, finishes that free
    capacity nobody waiting can use, both at once — is checked against the full cycle at its
    instant, and the log equals the full-cycle run's. These runs reach the cases the proof names:
    a job past its protected start finishing (its limit given back), a reserved job backfilled in
    C0, a failed search whose numbers moved with freed capacity (its verdict renewed)."""
    f = build_fleet([NodeGroup(nodes=nodes, gpu="H100-80GB", leaf_size=16)])
    jobs = generate(WorkloadSpec(days=days, offered_load=load), f.total_gpus, seed)
    carried = simulate(f, jobs, profile("gang-easy"), seed=seed, verify_carried_cycles=True)
    _without_carry_on(monkeypatch)
    full = simulate(f, jobs, profile("gang-easy"), seed=seed)
    assert carried.carried_cycles > 100
    assert carried.recorder.log == full.recorder.log


def test_a_job_past_its_estimate_at_the_last_cycle_stops_carrying_on(monkeypatch):
    """Review's counterexample. Two nodes of 8 GPUs; gang-easy-trusting (raw estimates). B
    (4 GPUs, estimate 50 s) runs 100.2 s from t=0.1: at the cycle at t=100 (W8 arrives) it is past
    its estimate, planned to release at now + 1 = 101 s, after the protected start (100.6 s, when
    A ends by its estimate), so that cycle's limit there does not count B's GPUs. B ends at 100.3
    and N (4 GPUs, 1,000 s) arrives then: the full cycle sees B's GPUs free and within the limit
    and starts N at once; a carried-on one must not reason from the t=100 limits. N starts at
    100.3 as with full cycles only."""
    f = fleet().leaves(1, nodes=2).build()
    jobs = [job("A").gpus(8).runs(500, estimate=100.6).build(),
            job("B").gpus(4).at(0.1).runs(100.2, estimate=50).build(),
            job("D").gpus(4).at(0.2).runs(1000, estimate=1000).build()]
    jobs += [job(f"W{i}").gpus(8).at(float(i)).runs(100, estimate=100).build() for i in range(1, 8)]
    jobs += [job("W8").gpus(8).at(100.0).runs(100, estimate=100).build(),
             job("N").gpus(4).at(100.3).runs(1000, estimate=1000).build()]
    carried = simulate(f, jobs, profile("gang-easy-trusting"), seed=1, verify_carried_cycles=True)
    _without_carry_on(monkeypatch)
    full = simulate(f, jobs, profile("gang-easy-trusting"), seed=1)
    assert full.starts["N"] == carried.starts["N"] == 100.3
    assert carried.recorder.log == full.recorder.log
