"""ShadowReserver and ReservationBackfill on fleets small enough to compute by hand.

Fleet: two nodes of 8 GPUs, 224 CPUs, 2,048 GB (the builder's defaults), one leaf. ``now`` = 0.
Every expected number is worked out in the test's docstring.
"""

from __future__ import annotations

import pytest

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.profile import Profile
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import StatusCode
from gpufleet.engine.types import CycleInput, PendingJob, RunningJob
from gpufleet.model.job import Job, PodRequest
from gpufleet.policies.backfill import ReservationBackfill, ShadowReserver
from gpufleet.policies.gang import GangBestFit
from gpufleet.policies.per_pod import PerPodLeastAllocated
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet, job


def running(name: str, node: int, gpus: int, ends: float, cpus: float = 0.0, mem: float = 0.0) -> RunningJob:
    """A job started at t = 0 on ``node`` whose estimate ends it at ``ends``."""
    j = job(name).gpus(gpus).cpus(cpus).memory(mem).runs(ends).build()
    return RunningJob(j, 0.0, (PodBinding(j.id, "worker", 0, node, PodRequest(gpus, cpus, mem)),))


def cycle(pending: list[Job], run: list[RunningJob], prof: Profile | None = None):
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=2).build())
    for rj in run:
        for b in rj.bindings:
            table.take(b.node, b.request)
    return run_cycle(CycleInput(now=0.0, nodes=table, pending=[PendingJob(j) for j in pending],
                                profile=prof or profile("gang-easy"), running=run))


def test_the_head_job_is_reserved_at_the_first_end_that_frees_its_whole_gang():
    """r0 holds node 0 until 100 s, r1 holds node 1 until 300 s. ``big`` needs 2 × 8 GPUs = both
    nodes whole: at 100 s only node 0 is free (1 pod), at 300 s both are: reserved at 300 s on
    nodes 0 and 1."""
    r = cycle([job("big").gpus(8).gang(2).runs(50).build()],
              [running("r0", 0, 8, 100.0), running("r1", 1, 8, 300.0)])
    (res,) = r.reservations
    assert (res.job, res.start, res.nodes, res.protected) == ("big", 300.0, (0, 1), True)
    assert r.statuses["big"].estimated_start == 300.0


def test_a_second_blocked_job_gets_an_unprotected_estimate_after_the_first():
    """As above, plus ``next`` (2 × 8 GPUs, 50 s) behind ``big``: the fleet is whole again only
    when ``big`` ends, 300 + 50 = 350 s. EASY protects the head alone."""
    r = cycle([job("big").gpus(8).gang(2).runs(50).build(),
               job("next").gpus(8).gang(2).at(1).runs(50).build()],
              [running("r0", 0, 8, 100.0), running("r1", 1, 8, 300.0)])
    starts = {res.job: (res.start, res.protected) for res in r.reservations}
    assert starts == {"big": (300.0, True), "next": (350.0, False)}


def test_backfill_starts_a_job_that_ends_before_the_reservation():
    """r0: node 0, 8 GPUs until 100 s; r1: node 1, 4 GPUs until 300 s; ``big`` (2 × 8) is reserved
    at 300 s. ``short`` (4 GPUs, 250 s) ends at 250 ≤ 300 s, so the 4 free GPUs on node 1 are its."""
    r = cycle([job("big").gpus(8).gang(2).runs(50).build(), job("short").gpus(4).at(1).runs(250).build()],
              [running("r0", 0, 8, 100.0), running("r1", 1, 4, 300.0)])
    assert r.started == ("short",)
    assert [(b.job, b.node) for b in r.bindings] == [("short", 1)]


def test_backfill_refuses_a_job_that_would_still_hold_gpus_the_reservation_needs():
    """Same fleet; ``long`` (4 GPUs, 400 s) would run until 400 s > 300 s. At 300 s node 1 has
    8 free and ``big`` holds all 8: limit = 8 − 8 = 0 < 4, so it waits, and says for whom."""
    r = cycle([job("big").gpus(8).gang(2).runs(50).build(), job("long").gpus(4).at(1).runs(400).build()],
              [running("r0", 0, 8, 100.0), running("r1", 1, 4, 300.0)])
    assert r.started == ()
    st = r.statuses["long"]
    assert st.code is StatusCode.WAIT
    assert "delay the reservation for big at t=300s" in st.reasons[-1]


def test_backfill_refuses_a_job_whose_cpus_the_reservation_needs():
    """GPUs are plentiful; CPUs bind. r0: node 0, 1 GPU + 200 CPUs until 100 s; r1: node 1, 1 GPU +
    100 CPUs until 300 s. ``big`` = 2 pods × (1 GPU, 200 CPUs), one per node (224 // 200 = 1):
    at 100 s node 1 has 124 CPUs (0 pods), at 300 s both have 224: reserved at 300 s.
    ``long`` (1 GPU, 100 CPUs, 400 s) fits now on node 1 (124 free CPUs), but at 300 s each node
    keeps 224 − 200 = 24 CPUs beyond ``big``'s pods: 24 < 100, so it waits. A GPU-only check
    would have started it (7 GPUs free on each node). Its own estimate: once ``big`` ends,
    300 + 50 = 350 s."""
    r = cycle([job("big").gpus(1).cpus(200).gang(2).runs(50).build(),
               job("long").gpus(1).cpus(100).at(1).runs(400).build()],
              [running("r0", 0, 1, 100.0, cpus=200), running("r1", 1, 1, 300.0, cpus=100)])
    assert [(res.job, res.start) for res in r.reservations] == [("big", 300.0), ("long", 350.0)]
    assert r.started == ()
    assert r.statuses["long"].code is StatusCode.WAIT


def test_backfill_refuses_a_job_whose_memory_the_reservation_needs():
    """The CPU case with memory: nodes have 2,048 GB. r0: node 0, 1 GPU + 1,500 GB until 100 s;
    r1: node 1, 1 GPU + 1,000 GB until 300 s. ``big`` = 2 pods × (1 GPU, 1,500 GB): at 100 s node
    1 has 1,048 GB (0 pods), at 300 s both have 2,048: reserved at 300 s. ``long`` (1 GPU, 1,000 GB,
    400 s) fits now on node 1 (1,048 free), but at 300 s each node keeps 2,048 − 1,500 = 548 GB:
    548 < 1,000, so it waits (estimated at 300 + 50 = 350 s, when ``big`` ends). ``short`` (same,
    200 s) ends first and starts."""
    run = [running("r0", 0, 1, 100.0, mem=1500), running("r1", 1, 1, 300.0, mem=1000)]
    big = job("big").gpus(1).memory(1500).gang(2).runs(50).build()
    r = cycle([big, job("long").gpus(1).memory(1000).at(1).runs(400).build()], run)
    assert [(res.job, res.start) for res in r.reservations] == [("big", 300.0), ("long", 350.0)]
    assert r.started == () and r.statuses["long"].code is StatusCode.WAIT
    r = cycle([big, job("short").gpus(1).memory(1000).at(1).runs(200).build()], run)
    assert r.started == ("short",)


@pytest.mark.parametrize(("max_tests", "started"), [(1, 1), (2, 2), (5, 4)])
def test_backfill_runs_at_most_max_tests_fit_searches(max_tests, started):
    """r0 holds node 0 until 100 s; ``big`` (2 × 8) is reserved at 100 s. Four 1-GPU jobs of
    distinct CPU asks (distinct shapes: no class shortcut) each end by 50 s < 100 s and fit in
    node 1's 8 free GPUs. With ``max_tests`` = m only min(m, 4) are searched and started; the
    rest are told the scan limit was reached."""
    prof = Profile("easy-bounded", placer=GangBestFit(stop_at_first_blocked=True),
                   reserver=ShadowReserver(protect=1), backfiller=ReservationBackfill(max_tests=max_tests))
    smalls = [job(f"s{i}").gpus(1).cpus(i + 1).at(1 + i).runs(50).build() for i in range(4)]
    r = cycle([job("big").gpus(8).gang(2).runs(50).build(), *smalls], [running("r0", 0, 8, 100.0)], prof)
    assert r.started == tuple(f"s{i}" for i in range(started))
    for s in smalls[started:]:
        assert "scan limit" in r.statuses[s.id].reasons[-1]


def test_conservative_backfill_protects_every_reservation_in_its_depth():
    """r0 holds node 0 until 100 s, r1 node 1 until 300 s. ``a`` (8 GPUs, 500 s) is reserved at
    100 s on node 0; ``b`` (8 GPUs, 50 s) at 300 s on node 1. Both protected under
    gang-conservative; ``c`` (8 GPUs) would need a node before both reservations end: no start."""
    r = cycle([job("a").gpus(8).runs(500).build(), job("b").gpus(8).at(1).runs(50).build(),
               job("c").gpus(8).at(2).runs(10).build()],
              [running("r0", 0, 8, 100.0), running("r1", 1, 8, 300.0)], profile("gang-conservative"))
    by_job = {res.job: res for res in r.reservations}
    assert (by_job["a"].start, by_job["a"].nodes, by_job["a"].protected) == (100.0, (0,), True)
    assert (by_job["b"].start, by_job["b"].nodes, by_job["b"].protected) == (300.0, (1,), True)
    assert r.started == ()


class CountingBestFit(GangBestFit):
    """Gang best fit that records every job it is asked to search (``fit``) or test (``feasible``)."""

    def __init__(self) -> None:
        super().__init__(stop_at_first_blocked=True)
        self.searched: list[str] = []

    def fit(self, job, table, ctx):
        self.searched.append(job.id)
        return super().fit(job, table, ctx)

    def feasible(self, job, table, ctx):
        self.searched.append(job.id)
        return super().feasible(job, table, ctx)


def test_a_class_the_place_step_found_unresolvable_is_not_searched_again_by_reserve_or_backfill():
    """Two nodes × 8 GPUs = 16; r0 holds node 0 until 100 s. In queue order: ``u1`` asks 3 × 8 =
    24 GPUs > 16, so place searches it once and finds it UNRESOLVABLE; ``big`` (2 × 8, 50 s) does
    not fit now (8 free), which ends the in-order pass (EASY), and is reserved at 100 s. Behind
    it: ``small`` (1 GPU, 50 s, ends before 100 s: backfilled), ``u2`` (3 × 8, u1's class, 500 s:
    it would run past 100 s, so backfill sees it under the reservation's limit, mode 1) and
    ``u3`` (4 × 8 = 32, a class that asks more than u1's in every dimension) can never fit:
    reserve and backfill settle both by u1's verdict without one search (fit or feasible) of
    their own, and reserve goes on past them: ``next`` (2 × 8, 50 s) is reserved when ``big``
    ends, 100 + 50 = 150 s. Searches: u1 once (place), never u2 or u3."""
    placer = CountingBestFit()
    prof = Profile("easy-counting", placer=placer, reserver=ShadowReserver(protect=1),
                   backfiller=ReservationBackfill())
    u1 = job("u1").gpus(8).gang(3).runs(50).build()
    r = cycle([u1, job("big").gpus(8).gang(2).at(1).runs(50).build(),
               job("small").gpus(1).at(2).runs(50).build(),
               job("u2").gpus(8).gang(3).at(3).runs(500).build(),
               job("u3").gpus(8).gang(4).at(4).runs(50).build(),
               job("next").gpus(8).gang(2).at(5).runs(50).build()],
              [running("r0", 0, 8, 100.0)], prof)
    assert r.started == ("small",)
    assert [(res.job, res.start) for res in r.reservations] == [("big", 100.0), ("next", 150.0)]
    assert placer.searched.count("u1") == 1
    assert "u2" not in placer.searched and "u3" not in placer.searched
    u1_status = r.statuses["u1"]
    assert u1_status.code is StatusCode.UNRESOLVABLE
    for name in ("u2", "u3"):
        assert r.statuses[name].code is StatusCode.UNRESOLVABLE
        assert r.statuses[name].reasons == u1_status.reasons


class _PerPodFifo(PerPodLeastAllocated):
    """Per-pod placement declared FIFO, so that a profile may reserve behind it (engine/profile.py
    refuses a reservation behind a greedy placer). Below, per-pod's greedy pass binds what a FIFO
    pass would: nothing (``frac`` is never placed, ``big``'s one pod finds no room)."""

    stop_at_first_blocked = True


def test_reserve_and_backfill_skip_a_job_an_earlier_phase_judged_unresolvable():
    """Per-pod placement (no class hand-off) with reservation (depth 1) and backfill. Two nodes ×
    8 GPUs, r0 on node 0 until 100 s, r1 on node 1 until 200 s. ``frac`` (a soft GPU share) is
    UNRESOLVABLE for per-pod placement, which places whole GPUs only; ``big`` (8 GPUs) finds no
    room. Reserve skips ``frac`` by its status, so its one try goes to ``big``: reserved at 100 s
    on node 0. Backfill has no candidate left (big reserved, frac judged): the only search of the
    cycle is place's one for big's pod (considered = 1)."""
    prof = Profile("per-pod-easy", placer=_PerPodFifo(), gang=False,
                   reserver=ShadowReserver(protect=1, depth=1), backfiller=ReservationBackfill())
    r = cycle([job("frac").share(500).build(), job("big").gpus(8).at(1).runs(50).build()],
              [running("r0", 0, 8, 100.0), running("r1", 1, 8, 200.0)], prof)
    assert r.statuses["frac"].code is StatusCode.UNRESOLVABLE
    assert [(res.job, res.start, res.nodes) for res in r.reservations] == [("big", 100.0, (0,))]
    assert r.stats.considered == 1


def test_the_backfill_window_counts_from_now_not_from_time_zero():
    """At now = 1,000 s: r0 holds node 0 until 1,100 s, r1 node 1 until 5,000 s. ``big`` (8 GPUs)
    can start at 1,100 s, 1,100 − 1,000 = 100 s from now, inside a 500 s window (Slurm's
    bf_window): it is reserved. ``later`` (2 × 8 GPUs) needs both nodes, at 5,000 s: 4,000 s
    from now, beyond the window: no reservation."""
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=2).build())
    run = [running("r0", 0, 8, 1100.0), running("r1", 1, 8, 5000.0)]
    for rj in run:
        for b in rj.bindings:
            table.take(b.node, b.request)
    prof = Profile("easy-window", placer=GangBestFit(stop_at_first_blocked=True),
                   reserver=ShadowReserver(protect=1, window_s=500.0), backfiller=ReservationBackfill())
    pending = [PendingJob(job("big").gpus(8).at(1).runs(50).build()),
               PendingJob(job("later").gpus(8).gang(2).at(2).runs(50).build())]
    r = run_cycle(CycleInput(now=1000.0, nodes=table, pending=pending, profile=prof, running=run))
    assert [(res.job, res.start) for res in r.reservations] == [("big", 1100.0)]
