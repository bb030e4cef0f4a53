"""Backfill never delays a reservation (hypothesis).

With exact estimates and one priority level (FIFO), the first protected reservation a job gets is
a promise: whatever arrives behind it and is backfilled, the job starts no later than that time.
Also: every job a cycle leaves waiting carries a reason.
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
