"""Preemption never evicts more than it needs, and quota holds at every cohort level (hypothesis).

- Minimal victim sets, checked by brute force on small states: tenant a holds nothing and asks
  for one pod of g GPUs within its nominal quota while b borrows; for every set of victims the
  preemptor picks, a's pod fits once they are all gone and under no proper subset. The oracle is
  arithmetic, not a placer: one pod of g whole GPUs fits exactly when some node has g free.
- In a two-level cohort tree (org > {team1 > a, team2 > {b, c}}), no tenant ever holds more
  than nominal + borrowing limit, and no team borrows more from org than org can lend.
"""

from dataclasses import replace
from itertools import combinations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleInput, PendingJob, RunningJob
from gpufleet.model.tenancy import Cohort, FlavorQuota, Tenancy, TenantQueue
from gpufleet.policies.quota import with_flavor
from gpufleet.policies.registry import profile
from gpufleet.sim.runner import simulate
from gpufleet.sim.usage import UsageTracker
from gpufleet.testing.builders import fleet, job

F = "H100-80GB"
NODES = 3


def place(rows):
    """b's jobs first-fit on 3 × 8 GPUs; rows that do not fit are dropped."""
    free = [8] * NODES
    run = []
    for i, (gpus, start) in enumerate(rows):
        node = next((n for n in range(NODES) if free[n] >= gpus), None)
        if node is None:
            continue
        free[node] -= gpus
        j = with_flavor(replace(job("x").tenant("b").gpus(gpus).runs(90_000).build(), id=f"b{i}"), F)
        ps = j.pod_sets[0]
        run.append(RunningJob(j, float(start), (PodBinding(j.id, ps.name, 0, node, ps.request),)))
    return run


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.sampled_from([2, 4, 8]), st.integers(0, 9_000)), min_size=3, max_size=9),
       g=st.sampled_from([2, 4, 8]), policy=st.sampled_from(["tenancy", "tenancy-naive-victims", "kueue"]))
def test_no_proper_subset_of_the_victims_would_have_made_room(rows, g, policy):
    run = place(rows)
    q_a, q_b = 8, 24 - 8
    ten = Tenancy(tenants=(TenantQueue("a", "c", ((F, FlavorQuota(q_a)),)),
                           TenantQueue("b", "c", ((F, FlavorQuota(q_b)),))), cohorts=(Cohort("c"),))
    if policy == "kueue":
        ten = replace(ten, tenants=tuple(replace(t, kueue=replace(t.kueue, reclaim_within_cohort="Any"))
                                         for t in ten.tenants))
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=NODES).build())
    for rj in run:
        for b in rj.bindings:
            table.take(b.node, b.request)
    a = job("a1").tenant("a").gpus(g).build()
    r = run_cycle(CycleInput(10_000.0, table, [PendingJob(a)], profile(policy), running=run, tenancy=ten))
    victims = [p.job for p in r.preemptions]
    if not victims:
        return
    by_id = {rj.job.id: rj for rj in run}

    def fits_without(subset) -> bool:
        free = table.gpu_free.copy()
        for v in subset:
            for b in by_id[v].bindings:
                free[b.node] += b.request.gpus
        return int(free.max()) >= g

    assert fits_without(victims), victims
    for k in range(len(victims)):
        for subset in combinations(victims, k):
            assert not fits_without(subset), (victims, subset)


def tree(borrow_b):
    return Tenancy(
        tenants=(TenantQueue("a", "team1", ((F, FlavorQuota(16)),)),
                 TenantQueue("b", "team2", ((F, FlavorQuota(16, borrow_b, None)),)),
                 TenantQueue("c", "team2", ((F, FlavorQuota(16, None, 8)),))),
        cohorts=(Cohort("org"), Cohort("team1", "org", ((F, FlavorQuota(0, None, 8)),)),
                 Cohort("team2", "org")), grace_s=30.0)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.sampled_from("abc"), st.integers(1, 2), st.sampled_from([1, 8]),
                               st.integers(0, 7200), st.integers(600, 7200)), min_size=1, max_size=20),
       borrow_b=st.sampled_from([0, 8, None]), policy=st.sampled_from(["tenancy", "kueue"]))
def test_quota_and_lending_limits_hold_at_every_level_of_a_cohort_tree(rows, borrow_b, policy):
    """48 GPUs, nominal 16 each. b may borrow ``borrow_b`` above its 16; c lends at most 8 of its
    16; team1 (a alone) lends at most 8 to org. So at every moment: b ≤ 16 + borrow_b; a + b + c
    ≤ 48; team2's borrowing from org (b + c − 32 when positive) ≤ what team1 may lend, 8; a's
    borrowing (a − 16) ≤ what team2 may lend: c's 8 plus b's unused nominal."""
    jobs = [job(f"j{i}").tenant(t).gpus(gp).gang(n if gp == 8 else 1).at(s).runs(d).build()
            for i, (t, n, gp, s, d) in enumerate(rows)]
    r = simulate(fleet().leaves(1, nodes=6).build(), jobs, profile(policy), tenancy=tree(borrow_b),
                 usage_tracker=UsageTracker(3600))
    held = {"a": 0, "b": 0, "c": 0}
    size = {j.id: (j.tenant, j.total_gpus) for j in jobs}
    for _, kind, jid, _ in r.recorder.log:
        t, gp = size[jid]
        if kind == "start":
            held[t] += gp
        elif kind in ("finish", "preempt"):
            held[t] -= gp
        if borrow_b is not None:
            assert held["b"] <= 16 + borrow_b
        assert max(0, held["b"] + held["c"] - 32) <= 8
        assert max(0, held["a"] - 16) <= 8 + max(0, 16 - held["b"])
