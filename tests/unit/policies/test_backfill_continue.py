"""continue_scan: the backfill scan carried on over jobs queued behind all of its candidates gives
each the verdict (or start) the scan over the whole queue gives it.

Fleet: two nodes of 8 GPUs, 224 CPUs (the builder's defaults), one leaf; ``now`` = 0. r0 holds
6 GPUs of node 0 until 100 s, r1 all of node 1 until 300 s. ``big`` (2 × 8 GPUs) is the head,
reserved at 300 s on both nodes (protected): 2 GPUs on node 0 are free now, and the limit at
300 s there is 8 − 8 = 0 (the reservation needs the whole node). Reservation depth 1 (EASY's own
rule for the head; gang-easy also estimates the next 7), so the jobs behind the head are backfill
candidates only — what a carried-on cycle's caller proves for its new jobs.
"""

from __future__ import annotations

import numpy as np

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.profile import Profile
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import StatusCode
from gpufleet.engine.types import CycleContext, CycleInput, PendingJob, RunningJob
from gpufleet.model.job import Job, PodRequest
from gpufleet.policies.backfill import UNEXAMINED, ReservationBackfill, ShadowReserver
from gpufleet.policies.backfill_continue import continue_scan
from gpufleet.policies.gang import GangBestFit
from gpufleet.testing.builders import fleet, job


def _easy() -> Profile:
    return Profile("easy-depth-1", placer=GangBestFit(stop_at_first_blocked=True),
                   reserver=ShadowReserver(protect=1, depth=1), backfiller=ReservationBackfill())


#: (name, node, GPUs, end) of the jobs running at t = 0.
RUNNING = (("r0", 0, 6, 100.0), ("r1", 1, 8, 300.0))


def _running(spec=RUNNING) -> list[RunningJob]:
    out = []
    for name, node, gpus, ends in spec:
        j = job(name).gpus(gpus).runs(ends).build()
        out.append(RunningJob(j, 0.0, (PodBinding(j.id, "worker", 0, node, PodRequest(gpus, 0.0, 0.0)),)))
    return out


def _table(spec=RUNNING) -> NodeTable:
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=2).build())
    for rj in _running(spec):
        for b in rj.bindings:
            table.take(b.node, b.request)
    return table


def _full(pending: list[Job], spec=RUNNING):
    return run_cycle(CycleInput(now=0.0, nodes=_table(spec), pending=[PendingJob(j) for j in pending],
                                profile=_easy(), running=_running(spec)))


def _carried(queue: list[Job], new: list[Job], spec=RUNNING):
    """The cycle over ``queue``, then its scan carried on over ``new`` on what it left."""
    first = _full(queue, spec)
    assert first.backfill is not None
    table = _table(spec)
    for b in first.bindings:
        table.take(b.node, b.request)
    ctx = CycleContext(now=0.0, profile=_easy(), rng=np.random.default_rng(0),
                       previous_reservations=first.reservations)
    plan = Plan(table)
    started, verdicts = continue_scan(first.backfill, new, plan, ctx)
    return started, verdicts, plan.commit(), first.backfill


BIG = job("big").gpus(8).gang(2).runs(50).build()
#: 4 GPUs for 50 s: no node has 4 free GPUs now (node 0 has 2): it fails in mode 0.
FOUR = job("four").gpus(4).at(1).runs(50).build()


def test_a_new_job_of_a_class_that_dominates_a_failure_gets_that_failure_verdict():
    """``four`` failed (4 GPUs, mode 0); ``eight`` (8 GPUs, 50 s, mode 0) asks more in every
    dimension, so the scan kills it with ``four``'s verdict without a search — as the full scan
    over [big, four, eight] does."""
    eight = job("eight").gpus(8).at(2).runs(50).build()
    started, verdicts, _, trace = _carried([BIG, FOUR], [eight])
    full = _full([BIG, FOUR, eight])
    assert started == [] and verdicts["eight"] == full.statuses["eight"]
    assert verdicts["eight"].reasons == full.statuses["four"].reasons
    assert trace.tests == 1  # only ``four`` was searched


def test_a_new_job_that_fits_before_the_reservation_starts_on_the_same_nodes():
    """``two`` (2 GPUs, 50 s) ends at 50 < 300 s (mode 0) and fits the 2 free GPUs of node 0:
    it starts there, as in the full cycle."""
    two = job("two").gpus(2).at(2).runs(50).build()
    started, verdicts, bindings, _ = _carried([BIG, FOUR], [two])
    full = _full([BIG, FOUR, two])
    assert started == ["two"] == list(full.started) and not verdicts
    assert [(b.job, b.node) for b in bindings] == [(b.job, b.node) for b in full.bindings] == [("two", 0)]


def test_a_new_job_that_would_run_past_the_reservation_gets_the_delay_verdict():
    """``long`` (2 GPUs, 1,000 s) ends after 300 s (mode 1): node 0's limit at 300 s is 0, so it
    fits now but not under the limit: "fits now, but … would delay the reservation for big"."""
    long = job("long").gpus(2).at(2).runs(1000).build()
    started, verdicts, _, trace = _carried([BIG, FOUR], [long])
    full = _full([BIG, FOUR, long])
    assert started == [] and verdicts["long"] == full.statuses["long"]
    assert verdicts["long"].code is StatusCode.WAIT and "would delay" in verdicts["long"].reasons[0]
    assert trace.failures[-1].job.id == "long" and trace.failures[-1].planned == 1000.0


def test_a_failure_of_a_new_job_kills_the_next_new_jobs_that_dominate_it():
    """Two new jobs: ``long`` fails (mode 1) and joins the trace; ``longer`` (3 GPUs, 1,000 s,
    mode 1) dominates it and gets its verdict without a search, as in the full scan."""
    long = job("long").gpus(2).at(2).runs(1000).build()
    longer = job("longer").gpus(3).at(3).runs(1000).build()
    started, verdicts, _, trace = _carried([BIG, FOUR], [long, longer])
    full = _full([BIG, FOUR, long, longer])
    assert verdicts == {"long": full.statuses["long"], "longer": full.statuses["longer"]}
    assert trace.tests == 2  # four, long


def test_past_the_search_cap_a_new_job_is_not_examined():
    """With the trace's cap spent, a job no failure kills is not searched: the scan's 'not
    examined' verdict (the full scan stops before its turn)."""
    two = job("two").gpus(2).at(2).runs(50).build()
    first = _full([BIG, FOUR])
    trace = first.backfill
    trace.max_tests = trace.tests
    ctx = CycleContext(now=0.0, profile=_easy(), rng=np.random.default_rng(0))
    started, verdicts = continue_scan(trace, [two], Plan(_table()), ctx)
    assert started == [] and verdicts == {"two": UNEXAMINED}


def test_a_new_job_that_starts_past_the_reservation_lowers_its_limit_for_the_next():
    """r0 holds 2 GPUs of node 0 until 1,000 s, r1 all of node 1 until 300 s. ``head`` (2 × 4
    GPUs) fits once at t = 0 (node 0: 6 free), twice at 300 s: best fit puts a pod on node 0 (6
    free, fewest) and one on node 1, so node 0's limit at 300 s is 6 − 4 = 2. ``a`` (2 GPUs,
    1,000 s: past 300 s) fits under it and starts on node 0, leaving the limit 0; ``b`` (1 GPU,
    1,000 s) then fits now (4 free) but not under the limit: the delay verdict, as in the full
    scan over [head, a, b]."""
    spec = (("r0", 0, 2, 1000.0), ("r1", 1, 8, 300.0))
    head = job("head").gpus(4).gang(2).runs(50).build()
    a = job("a").gpus(2).at(1).runs(1000).build()
    b = job("b").gpus(1).at(2).runs(1000).build()
    started, verdicts, bindings, _ = _carried([head], [a, b], spec)
    full = _full([head, a, b], spec)
    assert started == ["a"] == list(full.started)
    assert [(x.job, x.node) for x in bindings] == [("a", 0)]
    assert verdicts == {"b": full.statuses["b"]} and "would delay" in verdicts["b"].reasons[0]


def test_a_new_job_that_dominates_a_class_the_place_step_found_unresolvable_gets_its_verdict():
    """``three`` (3 × 8 GPUs, priority 1: first in the queue) fits not even the empty two-node
    fleet: the place step says so and
    walks on to ``big``. ``four`` (4 × 8 GPUs) asks more: the scan settles it with ``three``'s
    verdict before any search, as the full scan does (its own search would name 4 pods)."""
    three = job("three").gpus(8).gang(3).priority(1).runs(50).build()
    four = job("four8").gpus(8).gang(4).at(2).runs(50).build()
    started, verdicts, _, _ = _carried([three, BIG], [four])
    full = _full([three, BIG, four])
    assert started == [] and verdicts["four8"] == full.statuses["four8"]
    assert verdicts["four8"].code is StatusCode.UNRESOLVABLE and "3 pods" in verdicts["four8"].reasons[0]
