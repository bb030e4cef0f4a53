"""A job's pods never go to a node outside its ``eligible_nodes`` (hypothesis).

The per-job node filter (``Job.eligible_nodes``: taints, selectors, DRA classes, a partition's
node list) is applied once, by the shared filter part of placement (policies/filters.py); these
properties check that it binds every placer and every phase that asks a placer: in-order
placement, per-pod placement, reservation (a reserved job is promised eligible nodes only),
backfill, topology pricing, fractional GPUs, defragmentation and tenancy preemption.
"""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleInput, PendingJob, RunningJob
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.model.tenancy import Cohort, FlavorQuota, Tenancy, TenantQueue
from gpufleet.policies.registry import profile
from gpufleet.sim.runner import simulate
from gpufleet.sim.usage import UsageTracker
from gpufleet.testing.builders import fleet

FLEET = fleet().leaves(2, nodes=3).build()  # 2 leaves × 3 nodes × 8 GPUs
NAMES = [n.id for n in FLEET.nodes]

PLACERS = ["gang-bestfit", "gang-easy", "gang-conservative", "gang-fifo", "per-pod", "topology-aware",
           "topology-easy", "topology-blind", "gang-fractional", "gang-defrag"]

#: A node subset (None: every node), as indices into NAMES.
eligibility = st.one_of(st.none(), st.frozensets(st.integers(0, len(NAMES) - 1), min_size=1))

rows = st.lists(
    st.tuples(st.sampled_from([1, 2, 4, 8]), st.integers(1, 4), st.integers(0, 20_000),
              st.integers(60, 10_000), eligibility),
    min_size=1, max_size=25,
)


def _names(idx: frozenset[int] | None) -> frozenset[str] | None:
    return None if idx is None else frozenset(NAMES[i] for i in idx)


def build(rows, tenants: tuple[str, ...] = ("t1",)) -> list[Job]:
    return [Job(f"j{i:03d}", tenants[i % len(tenants)], (PodSet("w", r, PodRequest(g)),), float(t),
                float(d), run_time_estimate=float(d), eligible_nodes=_names(e))
            for i, (g, r, t, d, e) in enumerate(rows)]


def _outside(job: Job, nodes: list[str]) -> list[str]:
    if job.eligible_nodes is None:
        return []
    return [n for n in nodes if n not in job.eligible_nodes]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=rows, policy=st.sampled_from(PLACERS))
def test_no_pod_is_ever_started_on_a_node_outside_its_jobs_eligible_set(rows, policy):
    jobs = build(rows)
    by_id = {j.id: j for j in jobs}
    r = simulate(FLEET, jobs, profile(policy))
    for _, kind, jid, detail in r.recorder.log:
        if kind == "start":
            assert not _outside(by_id[jid], detail.split(",")), (policy, jid, detail)


def two_tenants() -> Tenancy:
    """a and b, 24 nominal GPUs each of the fleet's 48 in one cohort: borrowing, reclaim and
    priority preemption all happen."""
    q = (("H100-80GB", FlavorQuota(24)),)
    return Tenancy(tenants=(TenantQueue("a", "c", q), TenantQueue("b", "c", q)), cohorts=(Cohort("c"),),
                   grace_s=30.0)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=rows, policy=st.sampled_from(["tenancy", "tenancy-easy", "tenancy-naive-victims", "kueue"]))
def test_under_quotas_and_preemption_no_pod_starts_outside_its_jobs_eligible_set(rows, policy):
    jobs = build(rows, ("a", "b"))
    by_id = {j.id: j for j in jobs}
    r = simulate(FLEET, jobs, profile(policy), tenancy=two_tenants(), usage_tracker=UsageTracker(3600))
    for _, kind, jid, detail in r.recorder.log:
        if kind == "start":
            assert not _outside(by_id[jid], detail.split(",")), (policy, jid, detail)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(running=st.lists(st.tuples(st.integers(0, len(NAMES) - 1), st.sampled_from([2, 4, 8]),
                                  st.integers(60, 5_000)), max_size=6),
       pending=rows, policy=st.sampled_from(["gang-easy", "gang-conservative", "topology-easy"]))
def test_no_job_is_reserved_or_backfilled_onto_a_node_it_may_not_use(running, pending, policy):
    """One cycle over a busy fleet: every binding, and every pod of every reservation, lies
    inside its job's eligible set."""
    table = NodeTable.from_fleet(FLEET)
    run: list[RunningJob] = []
    used = [0] * len(NAMES)
    for k, (node, g, d) in enumerate(running):
        if used[node] + g > 8:
            continue
        used[node] += g
        j = Job(f"r{k}", "t1", (PodSet("w", 1, PodRequest(g)),), 0.0, float(d), run_time_estimate=float(d))
        b = PodBinding(j.id, "w", 0, node, PodRequest(g))
        table.take(node, PodRequest(g))
        run.append(RunningJob(j, 0.0, (b,)))
    jobs = build(pending)
    by_id = {j.id: j for j in jobs}
    res = run_cycle(CycleInput(0.0, table, [PendingJob(j) for j in jobs], profile(policy), running=run))
    for b in res.bindings:
        assert not _outside(by_id[b.job], [NAMES[b.node]]), (policy, b)
    for resv in res.reservations:
        assert not _outside(by_id[resv.job], [NAMES[b.node] for b in resv.bindings]), (policy, resv)
        assert not _outside(by_id[resv.job], [NAMES[n] for n in resv.nodes]), (policy, resv)
