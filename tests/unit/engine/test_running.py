"""The running set kept as columns across cycles (engine/running.py) gives the release schedule
``Releases.build`` gives from the running jobs themselves, after any sequence of starts, ends,
notices and compactions: the same ranking, the same floats, the same pods in the same order."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.engine.capacity import Releases, release_schedule
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.running import RunningColumns
from gpufleet.engine.types import CycleContext, RunningJob
from gpufleet.model.job import PodRequest
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import job

NOW = 1_000.0


def _running(i: int, start: float, run: float, est: float | None, prog: float, pods: list[tuple[int, int]],
             tenant: int) -> RunningJob:
    jid = f"j{i}" if i % 3 else f"job-{i:04d}"  # ids of different lengths and prefixes
    return RunningJob(job(jid).tenant(f"t{tenant}").runs(run, est).build(), start,
                      tuple(PodBinding(jid, "w", k, node, PodRequest(g, 2.5 * g, 10.0 / 3 * g))
                            for k, (node, g) in enumerate(pods)), prog)


starts = st.builds(_running, st.integers(0, 60), st.floats(0, 2_000), st.floats(1, 5_000),
                   st.one_of(st.none(), st.floats(1, 5_000)), st.floats(0, 3_000),
                   st.lists(st.tuples(st.integers(0, 7), st.integers(1, 8)), min_size=1, max_size=4),
                   st.integers(0, 2))
ops = st.one_of(st.tuples(st.just("start"), starts),
                st.tuples(st.just("end"), st.integers(0, 1_000)),
                st.tuples(st.just("notice"),
                          st.tuples(st.integers(0, 1_000), st.one_of(st.none(), st.floats(900, 1_200)))))


def assert_same(a: Releases, b: Releases) -> None:
    assert a.jobs == b.jobs
    for name in ("ends", "rel_rank", "rel_node", "rel_gpu", "rel_cpu", "rel_mem"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        assert x.tolist() == y.tolist(), name


@settings(max_examples=200, deadline=None)
@given(st.lists(ops, max_size=60),
       st.dictionaries(st.sampled_from(["t0", "t1", "t2"]), st.floats(0.5, 3)), st.lists(starts, max_size=3))
def test_columns_kept_across_starts_ends_and_notices_give_the_schedule_built_from_the_jobs(
        seq, accuracy, extra):
    """Reference: ``Releases.build`` over the running jobs (in the order a driver's dict holds them)
    plus this cycle's placements (``extra``), with ``CycleContext``'s expected ends. Compaction is
    forced on (threshold 4 rows) so rows move while jobs run."""
    cols = RunningColumns(compact_min=4)
    running: dict[str, RunningJob] = {}
    for op, arg in seq:
        if op == "start":
            if arg.job.id in running:
                continue
            running[arg.job.id] = arg
            cols.add(arg)
        elif running:
            jid = list(running)[arg[0] % len(running) if op == "notice" else arg % len(running)]
            if op == "end":
                del running[jid]
                cols.remove(jid)
            else:  # a notice replaces the run (the driver's dict keeps the job's place)
                old = running[jid]
                new = RunningJob(old.job, old.start_time, old.bindings, old.progress_before, True, arg[1])
                running[jid] = new
                cols.remove(jid)
                cols.add(new)
    extra = [rj for rj in extra if rj.job.id not in running]
    extra = list({rj.job.id: rj for rj in extra}.values())
    ctx = CycleContext(now=NOW, profile=profile("gang-easy"), rng=np.random.default_rng(0),
                       running=list(running.values()), estimate_accuracy=accuracy)
    assert len(cols) == len(running)
    assert sorted(rj.job.id for rj in cols.running()) == sorted(running)
    everyone = [*running.values(), *extra]
    expected = Releases.build(everyone, ctx.expected_end, ctx.expected_ends(everyone))
    got = cols.releases(NOW, accuracy, ctx.expected_end, extra, ctx.expected_ends(extra) if extra else None)
    assert_same(got, expected)
    # and through the engine's entry point, with and without the driver's columns
    with_cols = CycleContext(now=NOW, profile=profile("gang-easy"), rng=np.random.default_rng(0),
                             running=list(running.values()), estimate_accuracy=accuracy, running_columns=cols)
    assert_same(release_schedule(with_cols, extra), release_schedule(ctx, extra))


def test_a_worked_schedule_ranks_by_end_then_id_and_lays_pods_out_in_rank_order():
    """Three jobs started at 0 with estimates 300, 100, 100 (ids b, c, a): ends 300, 100, 100; the
    tie at 100 goes by id, so the ranking is a, c, b. a's two pods (nodes 1, 3) come first in
    binding order, then c's (node 0), then b's (node 2): ranks 0, 0, 1, 2. After b ends, only a
    and c remain; a job past its estimate (started at −500, estimate 100) ends at now + 1."""
    cols = RunningColumns()
    for jid, est, pods in (("b", 300.0, [2]), ("c", 100.0, [0]), ("a", 100.0, [1, 3])):
        cols.add(RunningJob(job(jid).runs(est).build(), 0.0,
                            tuple(PodBinding(jid, "w", k, n, PodRequest(2, 8.0, 16.0))
                                  for k, n in enumerate(pods))))
    rel = cols.releases(0.0, {}, lambda rj: 0.0)
    assert rel.jobs == ("a", "c", "b")
    assert rel.ends.tolist() == [100.0, 100.0, 300.0]
    assert rel.rel_rank.tolist() == [0, 0, 1, 2]
    assert rel.rel_node.tolist() == [1, 3, 0, 2]
    cols.remove("b")
    cols.add(RunningJob(job("late").runs(100.0).build(), -500.0,
                        (PodBinding("late", "w", 0, 5, PodRequest(8)),)))
    rel = cols.releases(0.0, {}, lambda rj: 0.0)
    assert rel.jobs == ("late", "a", "c")
    assert rel.ends.tolist() == [1.0, 100.0, 100.0]


def test_a_job_already_in_the_columns_cannot_be_added_twice():
    rj = RunningJob(job("x").build(), 0.0, (PodBinding("x", "w", 0, 0, PodRequest(1)),))
    cols = RunningColumns.of([rj])
    with pytest.raises(KeyError):
        cols.add(rj)


# jobs that start after time 0 with little progress: at now = 0 every planned end is ahead
ahead = st.builds(_running, st.integers(0, 60), st.floats(1, 2_000), st.floats(1, 5_000),
                  st.one_of(st.none(), st.floats(1, 5_000)), st.floats(0, 0.5),
                  st.lists(st.tuples(st.integers(0, 7), st.integers(1, 8)), min_size=1, max_size=4),
                  st.integers(0, 2))
# a few cycles in a row with nothing started or ended between them
cycles = st.tuples(st.just("cycle"), st.lists(st.tuples(
    st.one_of(st.floats(0, 20), st.floats(0, 800)),  # how far ``now`` moves on (past planned ends)
    st.sampled_from([{}, {}, {"t0": 2.0}, {"t1": 1.5, "t2": 0.5}]),
    st.sampled_from([False, False, False, True])),  # whether this cycle placed a job (``extra``)
    min_size=1, max_size=4))
calls = st.one_of(st.tuples(st.just("start"), ahead), ops, cycles)


@settings(max_examples=200, deadline=None)
@given(st.lists(calls, min_size=5, max_size=80), ahead)
def test_a_schedule_reused_between_cycles_equals_one_built_afresh_at_every_cycle(seq, placed):
    """Cycles interleaved with starts, ends and notices, ``now`` moving on by random steps (so
    planned ends pass and jobs move to the now + 1 rule), the accuracy records changing and some
    cycles placing a job: at every cycle the columns' schedule (reused from the previous cycle
    when nothing it depends on changed) equals ``Releases.build`` over the running jobs at that
    ``now``, field by field. Compaction is forced on (threshold 4 rows)."""
    cols = RunningColumns(compact_min=4)
    running: dict[str, RunningJob] = {}
    now = 0.0  # jobs start in [0, 2000]: at first every planned end is ahead, then they pass
    for op, arg in seq:
        if op == "start":
            if arg.job.id not in running:
                running[arg.job.id] = arg
                cols.add(arg)
        elif op == "cycle":
            for step, accuracy, with_extra in arg:
                now += step
                extra = [placed] if with_extra and placed.job.id not in running else []
                ctx = CycleContext(now=now, profile=profile("gang-easy"), rng=np.random.default_rng(0),
                                   running=list(running.values()), estimate_accuracy=accuracy)
                everyone = [*running.values(), *extra]
                expected = Releases.build(everyone, ctx.expected_end, ctx.expected_ends(everyone))
                got = cols.releases(now, accuracy, ctx.expected_end, extra,
                                    ctx.expected_ends(extra) if extra else None)
                assert_same(got, expected)
        elif running:
            jid = list(running)[arg[0] % len(running) if op == "notice" else arg % len(running)]
            if op == "end":
                del running[jid]
                cols.remove(jid)
            else:
                old = running[jid]
                new = RunningJob(old.job, old.start_time, old.bindings, old.progress_before, True, arg[1])
                running[jid] = new
                cols.remove(jid)
                cols.add(new)


def test_a_cycle_with_only_arrivals_reuses_the_schedule_until_a_planned_end_passes():
    """One job started at 0 with estimate 100: at now = 10 and now = 50 (nothing started or ended
    in between) the schedule is the same object, ending at 100. At now = 100 its planned end is
    no longer in the future, so the schedule is rebuilt and ends at now + 1 = 101; a start in
    between also rebuilds it."""
    cols = RunningColumns()
    cols.add(RunningJob(job("a").runs(100.0).build(), 0.0, (PodBinding("a", "w", 0, 0, PodRequest(1)),)))
    first = cols.releases(10.0, {}, lambda rj: 0.0)
    assert cols.releases(50.0, {}, lambda rj: 0.0) is first
    assert first.ends.tolist() == [100.0]
    late = cols.releases(100.0, {}, lambda rj: 0.0)
    assert late is not first and late.ends.tolist() == [101.0]
    cols.add(RunningJob(job("b").runs(500.0).build(), 0.0, (PodBinding("b", "w", 0, 1, PodRequest(1)),)))
    again = cols.releases(10.0, {}, lambda rj: 0.0)
    assert again.jobs == ("a", "b") and again is not cols.releases(10.0, {"t0": 2.0}, lambda rj: 0.0)
