"""The what-if fork answers what the full forward simulation answers.

The world: 2 leaves of 4 nodes of 8 H100s (64 GPUs) and 40 jobs queued at t=0, 4–32 GPUs each,
10–60 min (seeded draws), under gang-easy; nothing has run yet. The probe (2 × 8 GPUs, 10 min)
queues behind them all (its id sorts last). The same jobs and the probe as a trace for
``sim.runner.simulate`` give the reference start: the fork, with or without its early stop, must
give the same instant. 40 jobs of ~16 GPUs × ~35 min on 64 GPUs keep the fleet busy for hours,
so the probe starts well inside the horizon, many cycles in (checked: after t=3600).
"""

from __future__ import annotations

import random

import pytest

from gpufleet.live.loop import LiveLoop
from gpufleet.live.virtual import VirtualSource
from gpufleet.live.whatif import Change, fork
from gpufleet.model.job import Job
from gpufleet.policies.registry import profile
from gpufleet.sim.runner import simulate
from gpufleet.testing.builders import fleet, job

FLEET = fleet().leaves(2, nodes=4, gpus=8).build()


def queue() -> list[Job]:
    rng = random.Random(11)
    out = []
    for i in range(40):
        gpus = rng.choice((4, 8, 16, 32))
        b = job(f"j{i:02d}").gpus(min(gpus, 8)).gang(max(1, gpus // 8)).runs(rng.choice((600, 1200, 3600)))
        out.append(b.at(0).build())
    return out


def probe(replicas: int = 2, run: float = 600) -> Job:
    return job("zz-probe").gpus(8).gang(replicas).runs(run).at(0).build()


def snapshot(policy: str):
    src = VirtualSource(FLEET, profile(policy, FLEET.fabric))
    for j in queue():
        src.submit(j, 0.0)
    return LiveLoop(src, clock=lambda: 0.0).snapshot(), src.profile


@pytest.mark.parametrize("replicas", [1, 2, 4], ids=["an 8-GPU probe", "a 16-GPU probe", "a 32-GPU probe"])
def test_the_probe_starts_when_the_full_simulation_starts_it(replicas):
    snap, prof = snapshot("gang-easy")
    p = probe(replicas)
    full = simulate(FLEET, [*queue(), p], prof, decision_log=False)
    stopped = fork(snap, prof, Change(), p, horizon_s=30 * 86400)
    assert full.starts[p.id] > 3600  # the probe waits through many cycles
    assert stopped.probe_start == full.starts[p.id]


@pytest.mark.parametrize("seed", [0, 3], ids=["stated run times", "jittered run times"])
def test_the_early_stop_gives_the_start_of_the_run_without_it(seed):
    """Seed 3 draws every run shorter (× U(0.5, 1)): the start moves, the stop must not."""
    snap, prof = snapshot("gang-easy")
    p = probe(2)
    stopped = fork(snap, prof, Change(), p, seed=seed, horizon_s=30 * 86400)
    whole = fork(snap, prof, Change(), p, seed=seed, horizon_s=30 * 86400, early_stop=False)
    assert stopped.probe_start is not None
    assert stopped.probe_start == whole.probe_start
    assert stopped.events < whole.events  # it did stop early


def test_a_probe_that_cannot_start_within_the_horizon_has_no_start():
    """The probe starts after t=3600 (the first test); a 3600 s horizon ends before it."""
    snap, prof = snapshot("gang-easy")
    assert fork(snap, prof, Change(), probe(2), horizon_s=3600).probe_start is None


def test_a_run_that_spends_its_cpu_budget_stops_and_says_how_far_it_got():
    """A budget too small for one instant stops the run before the probe starts (it starts
    after t = 3,600, the first test): no start, not complete, and the source time reached is
    short of the horizon. Without a budget the same run is complete and reached the probe's
    start (the early stop)."""
    snap, prof = snapshot("gang-easy")
    p = probe(2)
    cut = fork(snap, prof, Change(), p, horizon_s=30 * 86400, budget_s=1e-9)
    assert (cut.probe_start, cut.complete) == (None, False)
    assert snap.now <= cut.simulated_to < snap.now + 3600
    whole = fork(snap, prof, Change(), p, horizon_s=30 * 86400, budget_s=600)
    assert whole.complete and whole.probe_start is not None and whole.simulated_to == whole.probe_start
    assert fork(snap, prof, Change(), p, horizon_s=3600).simulated_to == snap.now + 3600
