"""Quota invariants of the ``kueue`` profile with quota reserved across cycles (hypothesis).

Kueue counts a workload's quota from admission (``QuotaReserved``) until it finishes or is
evicted, whether its pods run or wait for nodes. So the limits must hold for running plus
reserved workloads, at the start of every cycle:

- no queue holds more than nominal + borrowing limit;
- borrowers together hold no more than the lenders may lend (lending limits);
- a reservation belongs to a job still waiting, and a job is never both reserved and running;
- every job that its queue could ever hold still runs to its end (a reservation never strands
  a job); one asking more than nominal + borrowing limit, or than the cohort can lend it, never
  fits (Kueue's NoFit) and waits forever.

Random workloads of 1-, 4- and 8-GPU pods (so the fleet fragments and admitted jobs wait for
nodes), three queues of nominal 16 in one cohort, on 48 GPUs or on 32 (quota above the fleet,
as Kueue allows: admitted workloads often wait for nodes, holding their quota).
"""

from unittest.mock import patch

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.engine.cycle import run_cycle
from gpufleet.model.tenancy import Cohort, FlavorQuota, KueueQueuePolicy, Tenancy, TenantQueue
from gpufleet.policies.registry import profile
from gpufleet.sim.runner import simulate
from gpufleet.sim.usage import UsageTracker
from gpufleet.testing.builders import fleet, job

F = "H100-80GB"

jobs_st = st.lists(st.tuples(st.sampled_from("abc"), st.integers(1, 3), st.sampled_from([1, 4, 8]),
                             st.integers(0, 7200), st.integers(600, 7200), st.integers(0, 2)),
                   min_size=1, max_size=20)


def tenancy(borrow: int | None, lend: int | None) -> Tenancy:
    pol = KueueQueuePolicy(within_cluster_queue="LowerPriority", reclaim_within_cohort="Any")
    return Tenancy(tenants=(TenantQueue("a", "c", ((F, FlavorQuota(16, borrow, None)),), kueue=pol),
                            TenantQueue("b", "c", ((F, FlavorQuota(16, None, lend)),), kueue=pol),
                            TenantQueue("c", "c", ((F, FlavorQuota(16, None, lend)),), kueue=pol)),
                   cohorts=(Cohort("c"),), grace_s=30.0)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=jobs_st, borrow=st.sampled_from([0, 8, None]), lend=st.sampled_from([0, 8, None]),
       nodes=st.sampled_from([4, 6]))
def test_running_plus_reserved_quota_stays_within_every_limit(rows, borrow, lend, nodes):
    ten = tenancy(borrow, lend)
    jobs = [job(f"j{i}").tenant(t).gpus(g).gang(r).at(s).runs(d).priority(p).checkpoints(900, restart_s=30)
            .build() for i, (t, r, g, s, d, p) in enumerate(rows)]
    seen = []

    def watch(inp):
        # The driver's queue changes after the cycle: keep what this cycle saw.
        seen.append(({pj.job.id: pj.job for pj in inp.pending}, list(inp.running),
                     dict(inp.admission.reserved)))
        return run_cycle(inp)

    with patch("gpufleet.engine.incremental.run_cycle", watch):
        r = simulate(fleet().leaves(1, nodes=nodes).build(), jobs, profile("kueue"), tenancy=ten,
                     usage_tracker=UsageTracker(3600))
    a_cap = 16 + (borrow if borrow is not None else 32)
    # What the cohort can lend: all of a's 16 (no lending limit), ``lend`` of b's and c's each.
    pool = 16 + 2 * (lend if lend is not None else 16)
    for pending, run, reserved in seen:
        assert set(reserved) <= set(pending)
        assert not set(reserved) & {rj.job.id for rj in run}
        held = {t: 0 for t in "abc"}
        for rj in run:
            held[rj.job.tenant] += rj.job.total_gpus
        for jid in reserved:
            held[pending[jid].tenant] += pending[jid].total_gpus
        assert held["a"] <= a_cap
        assert sum(max(0, g - 16) for g in held.values()) <= pool
    lendable = {t: 16 if t == "a" or lend is None else lend for t in "abc"}
    reach = {t: 16 + sum(lendable[o] for o in "abc" if o != t) for t in "abc"}
    reach["a"] = min(reach["a"], a_cap)
    assert set(r.finishes) == {j.id for j in jobs if j.total_gpus <= reach[j.tenant]}
