"""Reservation depth, window, standing promises and holds; backfill's per-resource limits.

Fleet: 8-GPU nodes with 224 CPUs and 2,048 GB (the builder's defaults), one leaf, ``now`` = 0
unless a test says otherwise. Running jobs start at 0 and their estimates end them at ``ends``.
Every expected start is worked out in the test's docstring.
"""

from __future__ import annotations

import pytest

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.profile import Profile
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import StatusCode
from gpufleet.engine.types import CycleInput, PendingJob, Reservation, RunningJob
from gpufleet.model.job import Job, PodRequest
from gpufleet.policies.backfill import ReservationBackfill, ShadowReserver
from gpufleet.policies.gang import GangBestFit
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet, job


def running(name: str, node: int, gpus: int, ends: float, cpus: float = 0.0, mem: float = 0.0) -> RunningJob:
    j = job(name).gpus(gpus).cpus(cpus).memory(mem).runs(ends).build()
    return RunningJob(j, 0.0, (PodBinding(j.id, "worker", 0, node, PodRequest(gpus, cpus, mem)),))


def easy(**reserver) -> Profile:
    """gang-easy with the reserver's knobs set: the placer stops at the first blocked job, one
    reservation is protected."""
    return Profile("easy-test", placer=GangBestFit(stop_at_first_blocked=True),
                   reserver=ShadowReserver(**{"protect": 1, **reserver}), backfiller=ReservationBackfill())


def cycle(pending: list[Job], run: list[RunningJob], prof: Profile | None = None, nodes: int = 2,
          now: float = 0.0, previous: tuple[Reservation, ...] = ()):
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=nodes).build())
    for rj in run:
        for b in rj.bindings:
            table.take(b.node, b.request)
    return run_cycle(CycleInput(now=now, nodes=table, pending=[PendingJob(j) for j in pending],
                                profile=prof or profile("gang-easy"), running=run, reservations=previous))


def starts(r) -> dict[str, tuple[float, bool]]:
    return {res.job: (res.start, res.protected) for res in r.reservations}


BIG = job("big").gpus(8).gang(2).runs(50)


@pytest.mark.parametrize(("depth", "reserved"), [(1, {"big"}), (2, {"big", "next"})])
def test_only_the_first_depth_blocked_jobs_get_a_reservation(depth, reserved):
    """r0 holds node 0 until 100 s, r1 node 1 until 300 s: ``big`` (2 × 8) at 300 s, ``next``
    (2 × 8) after it at 350 s. With depth 1 only ``big`` is planned."""
    r = cycle([BIG.build(), job("next").gpus(8).gang(2).at(1).runs(50).build()],
              [running("r0", 0, 8, 100.0), running("r1", 1, 8, 300.0)], easy(depth=depth))
    assert set(starts(r)) == reserved


def test_a_job_that_can_never_fit_uses_no_reservation_slot():
    """``huge`` (3 × 8) can never fit 2 nodes: unresolvable, skipped without counting against
    depth 1, so ``big`` behind it is still reserved at 300 s."""
    r = cycle([job("huge").gpus(8).gang(3).build(), BIG.at(1).build()],
              [running("r0", 0, 8, 100.0), running("r1", 1, 8, 300.0)], easy(depth=1))
    assert starts(r) == {"big": (300.0, True)}
    assert r.statuses["huge"].code is StatusCode.UNRESOLVABLE


@pytest.mark.parametrize(("window", "reserved"), [(299.0, False), (300.0, True)])
def test_no_job_is_planned_beyond_the_window(window, reserved):
    """``big``'s earliest start is 300 s: a 300-s window still plans it, 299 s does not."""
    r = cycle([BIG.build()], [running("r0", 0, 8, 100.0), running("r1", 1, 8, 300.0)], easy(window_s=window))
    assert ("big" in starts(r)) is reserved


def test_a_job_beyond_the_window_does_not_stop_the_planning_of_the_next():
    """Window 200 s. ``big`` (2 × 8) could start only at 300 s: not planned. ``one`` (8 GPUs, 50 s)
    behind it can have node 0 at 100 s: planned, and as the first reservation, protected."""
    r = cycle([BIG.build(), job("one").gpus(8).at(1).runs(50).build()],
              [running("r0", 0, 8, 100.0), running("r1", 1, 8, 300.0)], easy(window_s=200.0))
    assert starts(r) == {"one": (100.0, True)}


def test_a_job_behind_the_head_that_fits_now_is_backfilled_not_reserved():
    """r0 holds node 0 until 100 s, r1 4 GPUs of node 1 until 300 s. ``big`` (2 × 8) is reserved
    at 300 s. ``small`` (4 GPUs, 100 s) is blocked only because the placer stops at the head: it
    fits now and ends at 100 ≤ 300, so it gets no reservation of its own and backfill starts it.
    ``next`` (2 × 8, 50 s) behind it is still planned, after ``big``: 300 + 50 = 350 s."""
    r = cycle([BIG.build(), job("small").gpus(4).at(1).runs(100).build(),
               job("next").gpus(8).gang(2).at(2).runs(50).build()],
              [running("r0", 0, 8, 100.0), running("r1", 1, 4, 300.0)], easy(protect=2))
    assert starts(r) == {"big": (300.0, True), "next": (350.0, True)}
    assert r.started == ("small",)


def test_a_standing_promise_keeps_its_time_and_nodes_while_its_pods_still_fit():
    """Last cycle ``big`` was promised 300 s on nodes 0-1. Now r1's estimate ends it at 200 s,
    so a fresh plan would say 200 s; the promise stands at 300 s (its pods fit then). A
    promise already in the past (start 50 < now 60) is recomputed: 200 s."""
    run = [running("r0", 0, 8, 100.0), running("r1", 1, 8, 200.0)]
    pods = tuple(PodBinding("big", "worker", i, i, PodRequest(8)) for i in range(2))
    promise = Reservation("big", 300.0, (0, 1), pods, protected=True)
    kept = cycle([BIG.build()], run, now=60.0, previous=(promise,))
    assert starts(kept) == {"big": (300.0, True)}
    assert "reserved to start at t=300s (in 240s)" in kept.statuses["big"].reasons
    stale = Reservation("big", 50.0, (0, 1), pods, protected=True)
    assert starts(cycle([BIG.build()], run, now=60.0, previous=(stale,))) == {"big": (200.0, True)}
    assert starts(cycle([BIG.build()], run, easy(keep_promises=False), now=60.0,
                        previous=(promise,))) == {"big": (200.0, True)}


def test_conservative_plans_a_job_behind_every_hold_at_the_first_hold_end_that_frees_a_node():
    """r0 holds node 0 until 100 s, r1 node 1 until 300 s. ``a`` (8 GPUs, 500 s) is reserved at
    100 s on node 0 (held 100-600), ``b`` (8 GPUs, 50 s) at 300 s on node 1 (held 300-350).
    ``c`` (8 GPUs, 10 s): once both running jobs end (300 s) every node is held; the holds end
    at 350 s (node 1) and 600 s (node 0): c is planned at 350 s on node 1."""
    r = cycle([job("a").gpus(8).runs(500).build(), job("b").gpus(8).at(1).runs(50).build(),
               job("c").gpus(8).at(2).runs(10).build()],
              [running("r0", 0, 8, 100.0), running("r1", 1, 8, 300.0)], profile("gang-conservative"))
    c = next(res for res in r.reservations if res.job == "c")
    assert (c.start, c.nodes) == (350.0, (1,))


def test_each_backfilled_job_that_outlives_the_reservation_lowers_the_gpus_left_to_the_next():
    """r0 holds node 0 until 100 s. ``big`` = 2 × 6 GPUs, reserved at 100 s on both nodes, so at
    100 s node 1 keeps 8 − 6 = 2 GPUs beyond it. ``l1`` (1 GPU, 400 s) runs past 100 s: it
    takes 1 of those 2. ``l2`` (2 GPUs, 400 s) would need 2 > 1: it waits, and says for whom,
    though node 1 has 7 GPUs free now."""
    r = cycle([job("big").gpus(6).gang(2).runs(50).build(), job("l1").gpus(1).at(1).runs(400).build(),
               job("l2").gpus(2).at(2).runs(400).build()], [running("r0", 0, 8, 100.0)])
    assert starts(r)["big"] == (100.0, True)
    assert r.started == ("l1",)
    assert "delay the reservation for big at t=100s" in r.statuses["l2"].reasons[-1]


def test_each_backfilled_job_that_outlives_the_reservation_lowers_the_cpus_left_to_the_next():
    """The GPU case with CPUs: r0 holds node 0 (8 GPUs) until 100 s; ``big`` = 2 × (1 GPU, 200
    CPUs) at 100 s leaves node 1 224 − 200 = 24 CPUs. ``l1`` (1 GPU, 16 CPUs, 400 s) takes 16:
    8 left; ``l2`` (1 GPU, 12 CPUs, 400 s) needs 12 > 8 and waits."""
    r = cycle([job("big").gpus(1).cpus(200).gang(2).runs(50).build(),
               job("l1").gpus(1).cpus(16).at(1).runs(400).build(),
               job("l2").gpus(1).cpus(12).at(2).runs(400).build()], [running("r0", 0, 8, 100.0)])
    assert starts(r)["big"] == (100.0, True)
    assert r.started == ("l1",)
    assert r.statuses["l2"].code is StatusCode.WAIT


def test_each_backfilled_job_that_outlives_the_reservation_lowers_the_memory_left_to_the_next():
    """With memory: ``big`` = 2 × (1 GPU, 1,800 GB) at 100 s leaves node 1 2,048 − 1,800 = 248 GB.
    ``l1`` (1 GPU, 200 GB, 400 s) takes 200: 48 left; ``l2`` (1 GPU, 100 GB) needs 100 > 48."""
    r = cycle([job("big").gpus(1).memory(1800).gang(2).runs(50).build(),
               job("l1").gpus(1).memory(200).at(1).runs(400).build(),
               job("l2").gpus(1).memory(100).at(2).runs(400).build()], [running("r0", 0, 8, 100.0)])
    assert starts(r)["big"] == (100.0, True)
    assert r.started == ("l1",)
    assert r.statuses["l2"].code is StatusCode.WAIT


def test_a_job_that_ends_before_the_reservation_sees_the_whole_free_capacity():
    """As in the GPU case, but ``s1`` and ``s2`` (2 and 4 GPUs) end at 90 s ≤ 100 s: neither is
    bounded by the 2 GPUs ``big`` leaves at 100 s, both start on node 1 (2 + 4 ≤ 8)."""
    r = cycle([job("big").gpus(6).gang(2).runs(50).build(), job("s1").gpus(2).at(1).runs(90).build(),
               job("s2").gpus(4).at(2).runs(90).build()], [running("r0", 0, 8, 100.0)])
    assert sorted(r.started) == ["s1", "s2"]


def test_a_job_too_big_for_the_free_nodes_is_told_it_waits_not_that_it_delays_the_reservation():
    """``long`` (8 GPUs, 400 s) does not fit node 1 now at all (4 GPUs free): its reason is the
    placer's, not "fits now, but … would delay"."""
    r = cycle([BIG.build(), job("long").gpus(8).at(1).runs(400).build()],
              [running("r0", 0, 8, 100.0), running("r1", 1, 4, 300.0)])
    assert r.started == ()
    assert not any("fits now" in why for why in r.statuses["long"].reasons)


def test_a_failed_shape_stops_the_search_for_larger_shapes_behind_it():
    """Backfill candidates ``w1`` (8 GPUs) fails on node 1's 4 free GPUs; ``w2`` (8 GPUs, same
    shape) and ``w3`` (2 × 8) are settled by that failure without a search of their own: one fit
    search, two skipped by class, told w1's verdict; ``s`` (2 GPUs, 50 s) behind them starts."""
    r = cycle([BIG.build(), job("w1").gpus(8).at(1).runs(50).build(),
               job("w2").gpus(8).at(2).runs(50).build(), job("w3").gpus(8).gang(2).at(3).runs(50).build(),
               job("s").gpus(2).at(4).runs(50).build()],
              [running("r0", 0, 8, 100.0), running("r1", 1, 4, 300.0)])
    assert r.started == ("s",)
    assert r.stats.skipped_by_class == 2
    assert r.statuses["w2"].reasons[-1] == "pod set 'worker' needs 1×8 GPUs; 0 pod(s) of that shape fit now"


@pytest.mark.parametrize("hopeless", [3, 17])
def test_backfill_searches_none_of_the_reserved_or_unresolvable_jobs_however_many(hopeless):
    """r0 holds node 0 until 100 s. ``big`` (2 × 8) is reserved at 100 s; ``hopeless`` jobs of
    3 × 8 GPUs can never fit 2 nodes; ``s`` (2 GPUs, 50 s) is last. Backfill searches ``s`` only
    (one fit search) and starts it, whether the skipped jobs are few (looked up one by one) or
    many (more than 16: one walk). The place phase searched ``big`` and the first hopeless job
    (the others share its shape class): 2 + 1 = 3 searches in all."""
    pending = [BIG.build(), *(job(f"h{i:02d}").gpus(8).gang(3).at(1 + i).build() for i in range(hopeless)),
               job("s").gpus(2).at(100).runs(50).build()]
    r = cycle(pending, [running("r0", 0, 8, 100.0)])
    assert r.started == ("s",)
    assert r.stats.considered == 3
    assert r.stats.skipped_by_class == hopeless - 1  # settled by the first hopeless job's class


def conservative_with_promise(promise: Reservation):
    """r0 holds node 0 until 100 s, r1 node 1 until 300 s; ``a`` (8 GPUs, 500 s) is ahead of
    ``b`` (8 GPUs, 50 s) in the queue; last cycle ``promise`` was made to b."""
    return cycle([job("a").gpus(8).runs(500).build(), job("b").gpus(8).at(1).runs(50).build()],
                 [running("r0", 0, 8, 100.0), running("r1", 1, 8, 300.0)], profile("gang-conservative"),
                 now=10.0, previous=(promise,))


def test_conservative_backfill_plans_an_earlier_job_around_a_later_jobs_standing_promise():
    """b was promised node 0 from 100 s (held 100-150). Fresh, a would take node 0 at 100 s for
    500 s; planned against b's standing promise it cannot (100-600 overlaps 100-150). The plan
    tries the times running jobs end: at 100 s node 1 is still busy, at 300 s both nodes are
    free (b is gone by 150 s) and best fit takes node 0: a at 300 s, b keeps 100 s on node 0."""
    promise = Reservation("b", 100.0, (0,), (PodBinding("b", "worker", 0, 0, PodRequest(8)),), protected=True)
    got = {res.job: (res.start, res.nodes) for res in conservative_with_promise(promise).reservations}
    assert got == {"a": (300.0, (0,)), "b": (100.0, (0,))}


@pytest.mark.parametrize(("start", "protected"), [(100.0, False), (5.0, True)],
                         ids=["an unprotected estimate", "a promise already past"])
def test_only_protected_future_promises_stand_against_earlier_jobs(start, protected):
    """The same, but b's old reservation was only an estimate, or lies before now (10 s): a is
    planned first, at 100 s on node 0, and b after it, at 300 s on node 1."""
    pods = (PodBinding("b", "worker", 0, 0, PodRequest(8)),)
    promise = Reservation("b", start, (0,), pods, protected=protected)
    got = {res.job: (res.start, res.nodes) for res in conservative_with_promise(promise).reservations}
    assert got == {"a": (100.0, (0,)), "b": (300.0, (1,))}


def with_reserver(reserver: ShadowReserver) -> Profile:
    return Profile("hand-built", placer=GangBestFit(stop_at_first_blocked=True), reserver=reserver,
                   backfiller=ReservationBackfill())


def test_a_default_reserver_plans_eight_jobs_and_protects_the_first():
    """r0 holds node 0 until 100 s, r1 node 1 until 300 s; nine 2 × 8 jobs of 50 s queue up. The
    fleet is whole at 300 s, then every 50 s: 300, 350, …, 650 for the first eight; the ninth is
    beyond the default depth of 8. Only the first is protected (EASY)."""
    jobs = [job(f"j{i}").gpus(8).gang(2).runs(50).at(i).build() for i in range(9)]
    r = cycle(jobs, [running("r0", 0, 8, 100.0), running("r1", 1, 8, 300.0)], with_reserver(ShadowReserver()))
    assert [(res.job, res.start, res.protected) for res in r.reservations] == \
        [("j0", 300.0, True)] + [(f"j{i}", 300.0 + 50 * i, False) for i in range(1, 8)]


def test_a_default_reserver_plans_the_queue_in_order_and_lets_no_old_promise_stand_in_the_way():
    """r0 holds node 0 until 100 s, r1 node 1 until 300 s; ``a`` (8 GPUs, 500 s) is ahead of
    ``b`` (8 GPUs, 50 s), and last cycle b was promised node 0 at 100 s. Without compression the
    queue is planned in order: a gets node 0 at 100 s; b's old promise collides with it and b is
    planned anew at 300 s on node 1."""
    promise = Reservation("b", 100.0, (0,), (PodBinding("b", "worker", 0, 0, PodRequest(8)),), protected=True)
    r = cycle([job("a").gpus(8).runs(500).build(), job("b").gpus(8).at(1).runs(50).build()],
              [running("r0", 0, 8, 100.0), running("r1", 1, 8, 300.0)], with_reserver(ShadowReserver()),
              now=10.0, previous=(promise,))
    got = {res.job: (res.start, res.nodes) for res in r.reservations}
    assert got == {"a": (100.0, (0,)), "b": (300.0, (1,))}


@pytest.mark.parametrize(("resolution", "second"), [(None, 150.5), (1.0, 150.0)],
                         ids=["exact by default", "on a 1-second grid"])
def test_a_one_second_resolution_rounds_the_holds_down_to_the_whole_second(resolution, second):
    """r0 and r1 hold both nodes until 100.5 s. ``big`` (2 × 8, 50 s) is reserved at 100.5 s and
    holds the fleet until 150.5 s, exactly; on a 1-s grid its hold is [⌊100.5⌋, ⌊150.5⌋) =
    [100, 150). ``next`` (2 × 8) is planned when that hold ends: 150.5 s, or 150 s on the grid."""
    run = [running("r0", 0, 8, 100.5), running("r1", 1, 8, 100.5)]
    reserver = ShadowReserver() if resolution is None else ShadowReserver(resolution_s=resolution)
    r = cycle([BIG.build(), job("next").gpus(8).gang(2).runs(50).at(1).build()], run, with_reserver(reserver))
    assert starts(r) == {"big": (100.5, True), "next": (second, False)}


def test_the_resolution_grid_starts_at_epoch_zero_unless_told_otherwise():
    """bf_resolution 60 s from epoch 0: ``big`` (2 × 8, 50 s), reserved at 90 s, holds the fleet
    over [⌊90 / 60⌋ × 60, ⌊140 / 60⌋ × 60) = [60, 120): ``next`` is planned at 120 s."""
    run = [running("r0", 0, 8, 90.0), running("r1", 1, 8, 90.0)]
    r = cycle([BIG.build(), job("next").gpus(8).gang(2).runs(50).at(1).build()], run,
              with_reserver(ShadowReserver(resolution_s=60.0)))
    assert starts(r) == {"big": (90.0, True), "next": (120.0, False)}


def test_a_job_held_back_is_told_the_reservations_reported_start_not_its_rounded_hold():
    """bf_resolution 60 s: r0 holds node 0 until 90 s; ``big`` (2 × 8) is reserved at 90 s (its
    hold starts at 60 s). ``long`` (1 GPU, 400 s, so until 0 + 400 s) fits node 1 now but would
    delay big: its reason names t=90s, the start big was given, and the backfill policy, ``easy``."""
    r = cycle([BIG.build(), job("long").gpus(1).runs(400).at(1).build()], [running("r0", 0, 8, 90.0)],
              with_reserver(ShadowReserver(resolution_s=60.0)))
    st = r.statuses["long"]
    assert st.reasons[-1] == ("fits now, but running until ~t=400s it would delay the reservation for big "
                              "at t=90s")
    assert st.policy == "easy"


def test_a_topology_aware_reservation_asks_the_placers_own_fit():
    """topology-easy's placer has no cheap feasibility test: the reservation search asks its
    ``fit``. r0 holds node 0 until 100 s, r1 node 1 until 300 s: ``big`` (2 × 8) at 300 s."""
    r = cycle([BIG.build()], [running("r0", 0, 8, 100.0), running("r1", 1, 8, 300.0)],
              profile("topology-easy"))
    assert starts(r) == {"big": (300.0, True)}


def test_conservative_backfill_starts_a_job_that_fits_now_instead_of_planning_it():
    """gang-conservative defers every job to the plan. r0 holds node 0 until 100 s; node 1 is
    free: ``one`` (8 GPUs, 50 s) fits now without touching any promise, so it starts now and gets
    no reservation."""
    r = cycle([job("one").gpus(8).runs(50).build()], [running("r0", 0, 8, 100.0)],
              profile("gang-conservative"))
    assert r.started == ("one",) and r.reservations == ()


@pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 6])
def test_the_earliest_start_is_the_end_that_frees_the_gangs_last_node(width):
    """Six nodes, node i busy until 100 × (i + 1) s. A gang of ``width`` whole nodes can start
    when the ``width``-th node frees: 100 × width s (the search over running-job ends)."""
    run = [running(f"r{i}", i, 8, 100.0 * (i + 1)) for i in range(6)]
    r = cycle([job("g").gpus(8).gang(width).runs(50).build()], run, nodes=6)
    assert starts(r) == {"g": (100.0 * width, True)}


@pytest.mark.parametrize("planned", [3, 18])
def test_backfill_searches_none_of_the_protected_jobs_however_many(planned):
    """r0 holds node 0 until 100 s. ``planned`` gangs of 2 × 8 (50 s) queue up, every one planned
    and protected (protect = depth = 20): 100, 150, 200 s, … Behind them ``s`` (2 GPUs, 50 s)
    fits node 1 now and ends by 100 s. Backfill skips the protected jobs, found one by one when
    few or in one walk when more than 16, and searches ``s`` alone: the place phase searched
    the first gang (its class settles the rest), so 1 + 1 = 2 searches."""
    prof = with_reserver(ShadowReserver(protect=20, depth=20))
    pending = [job(f"g{i:02d}").gpus(8).gang(2).runs(50).at(i).build() for i in range(planned)]
    r = cycle([*pending, job("s").gpus(2).at(100).runs(50).build()], [running("r0", 0, 8, 100.0)], prof)
    assert len(r.reservations) == planned and all(res.protected for res in r.reservations)
    assert r.started == ("s",) and r.stats.considered == 2


def test_a_job_backfill_had_no_time_for_is_told_so_by_backfill():
    """max_tests = 1: r0 holds node 0 until 100 s, ``big`` (2 × 8) is reserved at 100 s; ``s0``
    and ``s1`` (1 GPU, 50 s, distinct CPU asks) both fit node 1, but only s0 is searched."""
    prof = Profile("easy-1", placer=GangBestFit(stop_at_first_blocked=True),
                   reserver=ShadowReserver(protect=1), backfiller=ReservationBackfill(max_tests=1))
    smalls = [job(f"s{i}").gpus(1).cpus(i + 1).at(1 + i).runs(50).build() for i in range(2)]
    r = cycle([BIG.build(), *smalls], [running("r0", 0, 8, 100.0)], prof)
    assert r.started == ("s0",)
    st = r.statuses["s1"]
    assert (st.code, st.reasons[-1], st.policy) == (
        StatusCode.WAIT,
        "not examined this cycle: the backfill scan limit was reached before this job's turn", "backfill")


def test_a_backfilled_job_takes_exactly_its_own_gpus_from_the_room_left_at_the_reservation():
    """r0 holds node 0 until 100 s; ``big`` = 2 × 5 GPUs at 100 s leaves node 1 8 − 5 = 3 GPUs.
    l1 (1 GPU, 400 s) leaves 3 − 1 = 2; l2 (2 GPUs) leaves 0; l3 (1 GPU) finds none and waits."""
    r = cycle([job("big").gpus(5).gang(2).runs(50).build(), job("l1").gpus(1).at(1).runs(400).build(),
               job("l2").gpus(2).at(2).runs(400).build(), job("l3").gpus(1).cpus(1).at(3).runs(400).build()],
              [running("r0", 0, 8, 100.0)])
    assert r.started == ("l1", "l2")
    assert "delay the reservation for big at t=100s" in r.statuses["l3"].reasons[-1]


def test_backfill_without_a_reservation_plan_starts_whatever_fits():
    """No reserver: nothing is promised, so backfill fills node 1 behind the blocked ``big``."""
    prof = Profile("no-plan", placer=GangBestFit(stop_at_first_blocked=True),
                   backfiller=ReservationBackfill())
    r = cycle([BIG.build(), job("small").gpus(4).at(1).runs(500).build()], [running("r0", 0, 8, 100.0)], prof)
    assert r.started == ("small",) and r.reservations == ()
