"""Invariants of every simulation, whatever the workload (hypothesis).

- no node ever has more GPUs, CPU or memory bound than it has;
- gang policies never start a partial gang, and never bind a pod of a job they do not start;
- GPU-seconds are conserved: Σ over finished jobs of GPUs × run time = ∫ busy GPUs dt;
- the same seed gives the same event log.
"""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleInput, PendingJob
from gpufleet.policies.registry import profile
from gpufleet.sim.metrics import time_weighted_mean
from gpufleet.sim.runner import simulate
from gpufleet.sim.workload import WorkloadSpec, generate
from gpufleet.testing.builders import fleet, job

jobs_strategy = st.lists(
    st.tuples(st.sampled_from([1, 2, 4, 8]), st.integers(1, 4), st.integers(0, 5000),
              st.integers(60, 20000), st.integers(0, 64)),
    min_size=1, max_size=25,
)


def build_jobs(rows):
    return [job(f"j{i}").gpus(g).gang(r).at(t).runs(d).cpus(c).build()
            for i, (g, r, t, d, c) in enumerate(rows)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=jobs_strategy, policy=st.sampled_from(["gang-bestfit", "per-pod"]))
def test_no_node_is_ever_over_committed(rows, policy):
    f = fleet().leaves(2, nodes=2).build()
    table = NodeTable.from_fleet(f)
    r = run_cycle(CycleInput(0.0, table, [PendingJob(j) for j in build_jobs(rows)], profile(policy)))
    used = np.zeros(len(table))
    cpu = np.zeros(len(table))
    for b in r.bindings:
        used[b.node] += b.request.gpus
        cpu[b.node] += b.request.cpus
    assert (used <= table.gpu_total).all()
    assert (cpu <= table.cpu_total + 1e-9).all()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=jobs_strategy)
def test_gangs_are_all_or_nothing(rows):
    f = fleet().leaves(2, nodes=2).build()
    jobs = build_jobs(rows)
    r = run_cycle(CycleInput(0.0, NodeTable.from_fleet(f), [PendingJob(j) for j in jobs],
                             profile("gang-bestfit")))
    per_job: dict[str, int] = {}
    for b in r.bindings:
        per_job[b.job] = per_job.get(b.job, 0) + 1
    by_id = {j.id: j for j in jobs}
    assert set(per_job) == set(r.started)
    assert all(per_job[j] == by_id[j].total_pods for j in r.started)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=jobs_strategy)
def test_gpu_seconds_are_conserved(rows):
    f = fleet().leaves(2, nodes=2).build()
    jobs = build_jobs(rows)
    r = simulate(f, jobs, profile("gang-bestfit"))
    by_id = {j.id: j for j in jobs}
    work = sum(by_id[j].total_gpus * by_id[j].run_time for j in r.finishes)
    end = max(r.finishes.values(), default=0.0)
    integral = time_weighted_mean(r.recorder.t, r.recorder.busy, 0.0, end) * end
    assert integral == np.float64(work) or abs(integral - work) < 1e-6 * max(work, 1)
    assert all(r.finishes[j] - r.starts[j] == by_id[j].run_time for j in r.finishes)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), policy=st.sampled_from(["gang-bestfit", "per-pod"]))
def test_the_same_seed_gives_the_same_event_log(seed, policy):
    f = fleet().leaves(2, nodes=4).build()
    spec = WorkloadSpec(days=0.5, max_gpus=32)
    logs = [simulate(f, generate(spec, f.total_gpus, seed), profile(policy), seed=seed).recorder.log
            for _ in range(2)]
    assert logs[0] == logs[1] and len(logs[0]) > 0
