"""Backfill never delays a reservation (hypothesis).

With exact estimates and one priority level (FIFO), the first protected reservation a job gets is
a promise: whatever arrives behind it and is backfilled, the job starts no later than that time.
Also: every job a cycle leaves waiting carries a reason. And the promise is not vacuous: a head
queued behind a blocker is promised exactly the blocker's end and starts then, while candidates
behind it are backfilled into the hole (under EASY, topology-aware EASY and conservative).
"""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleInput, PendingJob
from gpufleet.policies.registry import profile
from gpufleet.sim.runner import simulate
from gpufleet.testing.builders import fleet, job

workloads = st.lists(
    st.tuples(st.sampled_from([1, 2, 4, 8]), st.integers(1, 4), st.integers(0, 20_000),
              st.integers(60, 10_000)),
    min_size=2, max_size=40,
)


def build(rows):
    return [job(f"j{i:03d}").gpus(g).gang(r).at(t).runs(d, estimate=d).build()
            for i, (g, r, t, d) in enumerate(rows)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=workloads, policy=st.sampled_from(["gang-easy", "gang-conservative", "topology-easy"]))
def test_backfill_never_delays_a_reservation(rows, policy):
    f = fleet().leaves(2, nodes=2).build()
    r = simulate(f, build(rows), profile(policy))
    for jid, promised in r.reserved_starts.items():
        assert jid in r.starts, f"{jid} reserved for {promised} never started"
        assert r.starts[jid] <= promised + 1e-6, f"{jid} promised {promised}, started {r.starts[jid]}"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=workloads)
def test_every_job_left_waiting_has_a_reason(rows):
    f = fleet().leaves(1, nodes=2).build()
    jobs = build(rows)
    res = run_cycle(CycleInput(0.0, NodeTable.from_fleet(f), [PendingJob(j) for j in jobs],
                               profile("gang-easy")))
    waiting = {j.id for j in jobs} - set(res.started)
    assert waiting == set(res.statuses)
    assert all(res.statuses[j].reasons for j in waiting)


#: Per pod: GPUs, replicas, submit time, run time, CPUs, memory GB. Nodes have 224 CPUs and
#: 2,048 GB, so 112- and 200-CPU or 1,024- and 1,800-GB pods make CPU or memory the binding
#: resource while GPUs are still free.
workloads_cpu_mem = st.lists(
    st.tuples(st.sampled_from([1, 2, 4, 8]), st.integers(1, 3), st.integers(0, 20_000),
              st.integers(60, 10_000), st.sampled_from([0, 16, 64, 112, 200]),
              st.sampled_from([0, 256, 1024, 1800])),
    min_size=2, max_size=30,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=workloads_cpu_mem, policy=st.sampled_from(["gang-easy", "gang-conservative"]))
def test_backfill_never_delays_a_reservation_when_cpu_or_memory_binds(rows, policy):
    f = fleet().leaves(2, nodes=2).build()
    jobs = [job(f"j{i:03d}").gpus(g).gang(r).cpus(c).memory(m).at(t).runs(d, estimate=d).build()
            for i, (g, r, t, d, c, m) in enumerate(rows)]
    r = simulate(f, jobs, profile(policy))
    for jid, promised in r.reserved_starts.items():
        assert jid in r.starts, f"{jid} reserved for {promised} never started"
        assert r.starts[jid] <= promised + 1e-6, f"{jid} promised {promised}, started {r.starts[jid]}"


#: Backfill candidates queued behind the head: GPUs per pod, pods, submit time, run time.
candidates = st.lists(
    st.tuples(st.sampled_from([1, 2, 4, 8]), st.integers(1, 2), st.integers(2, 4_900),
              st.integers(60, 8_000)),
    min_size=1, max_size=25,
)


def _head_behind_a_blocker(rows):
    """4 nodes × 8 GPUs. ``blocker`` takes two nodes for 5,000 s from t = 0; ``head`` (all four
    nodes) arrives at t = 1 and cannot fit: its reservation must start when the blocker ends, at
    0 + 5,000 = 5,000 s (exact estimates). The candidates arrive behind it; 16 GPUs are free for
    backfill until then, so some start and the ones that would run past 5,000 s must not."""
    jobs = [job("blocker").gpus(8).gang(2).at(0).runs(5_000, estimate=5_000).build(),
            job("head").gpus(8).gang(4).at(1).runs(1_000, estimate=1_000).build()]
    jobs += [job(f"c{i:03d}").gpus(g).gang(r).at(t).runs(d, estimate=d).build()
             for i, (g, r, t, d) in enumerate(rows)]
    return fleet().leaves(2, nodes=2).build(), jobs


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=candidates, policy=st.sampled_from(["gang-easy", "topology-easy", "gang-conservative"]))
def test_the_head_is_promised_the_blockers_end_and_starts_then_whatever_is_backfilled(rows, policy):
    """A reservation was made (at 5,000 s), held (the head starts at 5,000 s), and backfill ran
    (some candidate started before 5,000 s unless none fit the 16 free GPUs and ended by then)."""
    f, jobs = _head_behind_a_blocker(rows)
    r = simulate(f, jobs, profile(policy))
    assert r.reserved_starts.get("head") == 5_000.0, "the head got no protected reservation at 5,000 s"
    assert r.starts["head"] == 5_000.0
    assert any(r.starts[j.id] < 5_000.0 for j in jobs[2:]) or all(
        j.pod_sets[0].replicas * j.pod_sets[0].request.gpus > 16 or j.submit_time + j.run_time > 5_000
        for j in jobs[2:]), "nothing was backfilled though a candidate fit the hole before 5,000 s"
    for jid, promised in r.reserved_starts.items():
        assert r.starts[jid] <= promised + 1e-6, f"{jid} promised {promised}, started {r.starts[jid]}"
