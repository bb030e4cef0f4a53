"""The driver's columnar pending queue (engine/queue.py): the same order, decisions and statuses as
the plain list it replaces, across cycles in which jobs arrive and leave."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.engine import queue as queue_mod
from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.queue import PendingQueue, QueueView
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleInput, PendingJob, RunningJob
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet, job


def pj(i: int, prio: int = 0, t: float = 0.0, gpus: int = 1, replicas: int = 1, cpus: float = 0.0,
       run: float = 3600.0) -> PendingJob:
    return PendingJob(job(f"j{i:04d}").priority(prio).at(t).gpus(gpus).gang(replicas).cpus(cpus)
                      .runs(run, estimate=run * 1.5).build())


def python_order(jobs):
    return sorted(jobs, key=lambda p: (-p.job.priority, p.job.submit_time, p.job.id))


# Each step adds some jobs, removes some live ones (by their rank among the live ids), then reads.
steps = st.lists(st.tuples(
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 5)), max_size=12),
    st.lists(st.integers(0, 10_000), max_size=6)), min_size=1, max_size=8)


@settings(max_examples=80, deadline=None)
@given(steps)
def test_the_kept_order_equals_a_fresh_python_sort_after_any_arrivals_and_departures(seq):
    """Reference: Python's sort of the live jobs on (−priority, submit, id), read after every
    step; also the queue lists its jobs in the order they were added, like the driver's list."""
    q, live, n = PendingQueue(), {}, 0
    for adds, removes in seq:
        for prio, t in adds:
            p = pj(n, prio, float(t))
            q.add(p)
            live[p.job.id] = p
            n += 1
        for r in removes:
            if live:
                jid = sorted(live)[r % len(live)]
                assert q.remove(jid) is live.pop(jid)
        assert [x.job.id for x in q.priority_order()] == [x.job.id for x in python_order(live.values())]
        assert list(q) == list(live.values()) and len(q) == len(live)


def test_compaction_keeps_the_order_and_old_views(monkeypatch):
    """With the compaction floor at 8 rows, removing 15 of 20 jobs compacts the store; the order
    stays Python's sort, and a view taken before still lists the jobs it saw."""
    monkeypatch.setattr(queue_mod, "_COMPACT_MIN", 8)
    jobs = [pj(i, prio=i % 3, t=float(20 - i)) for i in range(20)]
    q = PendingQueue(jobs)
    before = q.priority_order()
    seen = [x.job.id for x in before]
    for p in jobs[:15]:
        q.remove(p.job.id)
    q.add(pj(99, prio=5))
    assert [x.job.id for x in q.priority_order()] == [x.job.id for x in python_order([*jobs[15:], pj(99, 5)])]
    assert [x.job.id for x in before] == seen
    assert q._store is not before._store  # the store was rebuilt, the old one left alone


def test_a_view_slices_takes_and_reads_columns_aligned_with_its_jobs():
    """Estimates are 1.5 × the run time (the builder's estimate); planned runs stretch them by
    the tenant's accuracy record, never shrink them (0.5 reads as 1)."""
    q = PendingQueue([pj(0, run=100.0), pj(1, run=200.0), pj(2, gpus=8, run=300.0)])
    v = q.view()
    assert isinstance(v[1:], QueueView) and [x.job.id for x in v[1:]] == ["j0001", "j0002"]
    assert v.take(np.array([2, 0])).ids() == ["j0002", "j0000"]
    assert v.est.tolist() == [150.0, 300.0, 450.0]
    assert v.planned({"t1": 2.0}).tolist() == [300.0, 600.0, 900.0]
    assert v.planned({"t1": 0.5}).tolist() == [150.0, 300.0, 450.0]
    assert v.classes[v.cls[0]] == v.classes[v.cls[1]] != v.classes[v.cls[2]]
    assert v.positions_of(["j0002", "absent", "j0000"]).tolist() == [0, 2]


def test_readding_a_queued_job_replaces_it_and_removing_an_absent_one_is_a_key_error():
    q = PendingQueue([pj(0), pj(1)])
    again = pj(0)
    q.add(again)
    assert len(q) == 2 and again in q and q.get("j0000") is again
    with pytest.raises(KeyError):
        q.remove("nope")


# ---- the cycle decides the same on a queue as on a list -----------------------------------------

shapes = st.tuples(st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 1, 2, 3, 9]),
                   st.sampled_from([0.0, 16.0, 200.0]), st.integers(0, 1), st.integers(0, 3),
                   st.integers(60, 8000))
POLICIES = ["gang-easy", "gang-conservative", "gang-bestfit", "topology-aware", "topology-easy",
            "gang-fifo", "smallest-first"]


def _drain(f, rows, policy, as_queue, cycles=6):
    """A few cycles: run, bind what started, end the first-ending running job, repeat. Returns
    every cycle's decisions and its statuses in iteration order."""
    table = NodeTable.from_fleet(f)
    pending = [pj(i, prio, float(t), g, r, c, run) for i, (g, r, c, prio, t, run) in enumerate(rows)]
    q = PendingQueue(pending)
    listed = {p.job.id: p for p in pending}
    running: list[RunningJob] = []
    prof, now, seen, prev = profile(policy), 10.0, [], ()
    for _ in range(cycles):
        res = run_cycle(CycleInput(now, table, q if as_queue else list(listed.values()), prof,
                                   running=running, reservations=prev))
        prev = res.reservations
        seen.append((res.started, res.bindings, res.reservations, res.stats, list(res.statuses.items())))
        by_job: dict[str, list[PodBinding]] = {}
        for b in res.bindings:
            by_job.setdefault(b.job, []).append(b)
            table.take(b.node, b.request)
        for jid in res.started:
            running.append(RunningJob(listed.pop(jid).job, now, tuple(by_job[jid])))
            q.remove(jid)
        running.sort(key=lambda rj: (rj.start_time + rj.job.run_time, rj.job.id))
        if running:
            done = running.pop(0)
            for b in done.bindings:
                table.give(b.node, b.request)
            now = max(now + 1.0, done.start_time + done.job.run_time)
    return seen


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(shapes, min_size=1, max_size=40), st.sampled_from(POLICIES))
def test_a_cycle_over_the_queue_decides_and_explains_exactly_as_over_the_list(rows, policy):
    """Reference: the same cycles with the pending jobs handed over as a list. Gangs of up to 9 ×
    8 GPUs on 2 leaves × 2 nodes make some jobs unresolvable, 200-CPU pods make CPU the short
    resource, so the class skips, reservations and backfill all have work; the store is compacted
    whenever half its rows have left."""
    f = fleet().leaves(2, nodes=2).build()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(queue_mod, "_COMPACT_MIN", 4)  # compact as soon as half the rows have left
        assert _drain(f, rows, policy, True) == _drain(f, rows, policy, False)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 39), max_size=20), st.lists(st.integers(0, 29), max_size=30, unique=True))
def test_positions_of_lists_where_the_asked_ids_sit_in_the_view_ascending(asked, order):
    """A view of up to 30 of 40 queued jobs, in any order; asked: up to 20 ids (absent and
    repeated ones too, few and many: a few are compared directly, many through ``np.isin``)."""
    q = PendingQueue([pj(i) for i in range(40)])
    v = q.view().take(np.array(order, np.int64))
    ids = [f"j{i:04d}" for i in asked]
    expected = [k for k, p in enumerate(v) if p.job.id in set(ids)]
    assert v.positions_of(ids).tolist() == expected


@pytest.mark.parametrize("again", [False, True], ids=["new ids: one bulk step",
                                                     "an id already queued: one by one"])
def test_extending_the_queue_equals_adding_its_jobs_one_by_one(again):
    """Five jobs already queued (one removed), then 40 more of 3 tenants and 4 shapes at once;
    with ``again`` the batch repeats j0003, which replaces the queued one as ``add`` does."""
    first = [pj(i, t=float(i)) for i in range(5)]
    batch = [PendingJob(job(f"j{i:04d}").tenant(("a", "b", "c")[i % 3]).priority(i % 2).at(float(i % 7))
                        .gpus((1, 2, 4, 8)[i % 4]).build()) for i in range(10, 50)]
    if again:
        batch.insert(7, pj(3, prio=5))
    one, bulk = PendingQueue(first), PendingQueue(first)
    one.remove("j0001")
    bulk.remove("j0001")
    for p in batch:
        one.add(p)
    bulk.extend(batch)
    for v in (lambda q: q.view(), lambda q: q.priority_order()):
        a, b = v(one), v(bulk)
        assert a.ids() == b.ids()
        assert (a.cls == b.cls).all() and (a.est == b.est).all()
        assert [a.classes[c] for c in a.cls] == [b.classes[c] for c in b.cls]
    assert len(bulk) == len(one) == 4 + 40


def test_the_bulk_step_keeps_integrality_partial_gangs_and_shape_classes_as_add_does():
    """A queue whose shape classes were already asked for, then a batch of 3 new jobs at once: one
    asks half a CPU (the queue is no longer integral) and one has a pod bound while it waits (a
    partial gang). ``extend`` must say both, and its classes must list every job of the batch,
    exactly as three ``add`` calls do (the cut and the EASY carry read all three)."""
    fresh = [pj(i, t=float(i)) for i in range(3)]
    half = PendingJob(job("j0100").cpus(0.5).build())
    request = job("j0101").gpus(1).build().pod_sets[0].request
    bound = PendingJob(job("j0101").gpus(2).build(), bound=(PodBinding("j0101", "main", 0, 0, request),))
    batch = [half, bound, pj(102, t=5.0)]
    one, bulk = PendingQueue(fresh), PendingQueue(fresh)
    one.shapes, bulk.shapes  # noqa: B018 - built before the batch, then kept up to date
    for p in batch:
        one.add(p)
    bulk.extend(batch)
    assert one.integral is bulk.integral is False
    assert one.partial and bulk.partial
    assert bulk.shapes.joined_since(3) == one.shapes.joined_since(3) == ["j0100", "j0101", "j0102"]
    assert bulk.shapes.classes == one.shapes.classes
