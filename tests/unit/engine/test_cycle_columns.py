"""The throughput paths (issue 10 §3) give the answers of the one-job-at-a-time rules they replace:
lazy status writes, expected ends read as columns, releases ranked by one sort, shape classes
grouped in the queue's columns."""

import pickle

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.engine.capacity import Releases
from gpufleet.engine.phases.order import priority_fifo
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.queue import QueueView
from gpufleet.engine.status import Status, StatusBoard, StatusCode, merge
from gpufleet.engine.types import CycleContext, PendingJob, RunningJob
from gpufleet.model.job import PodRequest
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import job

CODES = [StatusCode.WAIT, StatusCode.UNSCHEDULABLE, StatusCode.UNRESOLVABLE]
JOBS = ["a", "b", "c", "d", "e"]

statuses = st.builds(Status, st.sampled_from(CODES), st.lists(st.sampled_from("xyz"), max_size=2).map(tuple),
                     st.sampled_from(["p", "q"]), st.one_of(st.none(), st.floats(0, 100)))
ops = st.one_of(
    st.tuples(st.just("record"), st.sampled_from(JOBS), statuses),
    st.tuples(st.just("later"), st.lists(st.sampled_from(JOBS), unique=True), statuses),
    st.tuples(st.just("default"), st.lists(st.sampled_from(JOBS), unique=True), statuses),
    st.tuples(st.just("discard"), st.sampled_from(JOBS), st.none()),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(ops, max_size=12))
def test_lazy_bulk_writes_read_back_exactly_as_eager_writes_would(seq):
    """Reference: a plain dict written one job at a time, in call order, by the merge rule. The
    board must end with the same statuses in the same iteration order."""
    board, ref = StatusBoard(), {}
    for op, who, status in seq:
        if op == "record":
            board.record(who, status)
            ref[who] = merge(ref[who], status) if who in ref else status
        elif op == "later":
            board.record_later(lambda who=who, status=status: (who, [status] * len(who)))
            for j in who:
                ref[j] = merge(ref[j], status) if j in ref else status
        elif op == "default":
            board.default(iter(who), status)
            for j in who:
                ref.setdefault(j, status)
        else:
            board.discard(who)
            ref.pop(who, None)
    assert list(board.items()) == list(ref.items())


def test_a_bulk_write_nobody_reads_is_never_built():
    """A cycle's 100,000 backfill verdicts cost nothing until someone asks for a status."""
    calls = []
    board = StatusBoard()
    board.record_later(lambda: calls.append(1) or (["a"], [Status(StatusCode.WAIT, ("w",))]))
    board.default(iter(["a", "b"]), Status(StatusCode.WAIT, ("not examined",)))
    board.discard("b")
    assert calls == []
    assert board["a"].reasons == ("w",) and "b" not in board
    assert calls == [1]


running_jobs = st.builds(
    lambda i, start, run, est, prog, evicting, evict_at: RunningJob(
        job(f"r{i}").tenant(f"t{i % 2}").runs(run, est).build(), start,
        (PodBinding(f"r{i}", "w", 0, i % 3, PodRequest(1, 4.0, 8.0)),), prog, evicting,
        evict_at if evicting else None),
    st.integers(0, 5), st.floats(-5000, 100), st.floats(1, 5000), st.one_of(st.none(), st.floats(1, 5000)),
    st.floats(0, 3000), st.booleans(), st.one_of(st.none(), st.floats(-10, 500)))


@settings(max_examples=150, deadline=None)
@given(st.lists(running_jobs, max_size=8), st.dictionaries(st.sampled_from(["t0", "t1"]), st.floats(0.5, 3)))
def test_expected_ends_as_a_column_equal_the_rule_job_by_job(running, accuracy):
    ctx = CycleContext(now=50.0, profile=profile("gang-easy"), rng=np.random.default_rng(0),
                       running=running, estimate_accuracy=accuracy)
    assert ctx.expected_ends(running).tolist() == [ctx.expected_end(rj) for rj in running]


def test_releases_rank_running_jobs_by_end_then_id_and_lay_out_their_pods_in_that_order():
    """Ends 30, 10, 10 for ids b, c, a; the tie at 10 goes by id, so the ranking is a, c, b.
    Pods: a has 2 on node 1, c one on node 0, b one on node 2, so ranks [0, 0, 1, 2]."""
    req = PodRequest(2, 8.0, 16.0)

    def rj(jid, n_pods, node, end):
        return RunningJob(job(jid).runs(end).build(), 0.0,
                          tuple(PodBinding(jid, "w", k, node, req) for k in range(n_pods)))

    running = [rj("b", 1, 2, 30.0), rj("c", 1, 0, 10.0), rj("a", 2, 1, 10.0)]
    rel = Releases.build(running, lambda r: r.job.run_time)
    assert rel.jobs == ("a", "c", "b")
    assert rel.ends.tolist() == [10.0, 10.0, 30.0]
    assert rel.rel_rank.tolist() == [0, 0, 1, 2]
    assert rel.rel_node.tolist() == [1, 1, 0, 2]
    assert rel.rel_gpu.tolist() == [2, 2, 2, 2]


def test_jobs_of_equal_shape_share_a_class_even_when_their_keys_are_separate_objects():
    """A job restored by pickle carries its own copy of the key: it must still join its class
    in the queue's columns (what placement and backfill group by)."""
    a = job("a").gpus(2).build()
    b = pickle.loads(pickle.dumps(job("b").gpus(2).build()))
    c = job("c").gpus(4).build()
    view = QueueView.of([PendingJob(a), PendingJob(b), PendingJob(c)])
    ids, classes = view.cls, view.classes
    assert len(classes) == 2
    assert ids[0] == ids[1] != ids[2]
    assert classes[ids[0]] == a.shape_key and classes[ids[2]] == c.shape_key


def test_backfill_candidates_drop_exactly_the_skipped_jobs_whether_few_or_many():
    """3 and 40 skipped ids (one absent from the queue each time): the candidates (the view
    minus the skipped ids' positions, as backfill takes them) are the queue minus those ids, in
    queue order."""
    queue = [PendingJob(job(f"j{i:03d}").build()) for i in range(100)]
    view = QueueView.of(queue)
    for skip in ({"j000", "j050", "absent"}, {f"j{i:03d}" for i in range(0, 80, 2)} | {"absent"}):
        keep = np.ones(len(view), bool)
        keep[view.positions_of(skip)] = False
        assert view.take(np.flatnonzero(keep)).ids() == [pj.job.id for pj in queue if pj.job.id not in skip]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3),
                          st.sampled_from(["a", "b", "ab", "b0", "é", "Z"])), min_size=64, max_size=150))
def test_the_columnar_queue_order_is_priority_then_submit_then_id_like_a_python_sort(rows):
    """The reference is Python's stable sort on (−priority, submit, id); duplicate ids included."""
    queue = [PendingJob(job(jid).at(float(t)).priority(p).build()) for p, t, jid in rows]
    expected = sorted(queue, key=lambda pj: (-pj.job.priority, pj.job.submit_time, pj.job.id))
    assert [id(pj) for pj in priority_fifo(queue)] == [id(pj) for pj in expected]
