"""What Kueue's victim choice minimises, checked by brute force (hypothesis).

Kueue's classical preemption (concept doc "Preemption", and the KEP-83 algorithm) walks the
candidates in its order — borrowing queues' workloads, lower priority first, then the most
recently started — taking each into the target list until the preemptor fits, skipping a
candidate whose queue is no longer borrowing; then, from the last target back to the first, it
drops a target whenever the preemptor still fits without it.

With room monotone in what is freed, that reverse pass is an exact minimisation: among the
subsets of the walked targets that make room, Kueue's victims are the one whose indicator read
from the last target to the first is lexicographically smallest — equivalently, the subset of
least cost when the i-th walked target costs 2^i. The later a candidate comes in Kueue's order
(higher priority, started longer ago), the more it is worth sparing, and sparing it outweighs
sparing every candidate before it. So "no proper subset would have made room" holds, and more:
no cheaper set in Kueue's own order would have.

The state: tenants a (nominal 8) and b (nominal 16) share cohort c on 3 nodes × 8 GPUs; b runs
a random mix of 2-, 4- and 8-GPU jobs with random priorities and start times, so it borrows
whatever it holds above 16; a asks g ≤ 8 GPUs as pods of 2 (within nominal: reclaimWithinCohort Any makes
every borrowing workload a candidate). A subset "makes room" when the cohort then has g
unused (24 − b's usage + freed ≥ g) and a's gang fits on the freed nodes.
"""

from dataclasses import replace
from itertools import combinations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status
from gpufleet.engine.types import CycleContext, CycleInput, PendingJob, RunningJob
from gpufleet.model.tenancy import Cohort, FlavorQuota, KueueQueuePolicy, Tenancy, TenantQueue
from gpufleet.policies.gang import fit_gang
from gpufleet.policies.quota import with_flavor
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet, job

F = "H100-80GB"
NODES = 3
NOW = 10_000.0


def running(rows):
    free = [8] * NODES
    out = []
    for i, (gpus, prio, start) in enumerate(rows):
        node = next((n for n in range(NODES) if free[n] >= gpus), None)
        if node is None:
            continue
        free[node] -= gpus
        j = with_flavor(replace(job("x").tenant("b").gpus(gpus).priority(prio).runs(90_000).build(),
                                id=f"b{i}"), F)
        ps = j.pod_sets[0]
        out.append(RunningJob(j, float(start), (PodBinding(j.id, ps.name, 0, node, ps.request),)))
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.sampled_from([2, 4, 6, 8]), st.integers(0, 2), st.integers(0, 9_000)),
                     min_size=3, max_size=9),
       g=st.sampled_from([2, 4, 6, 8]))
def test_kueue_victims_are_the_cheapest_set_in_its_own_candidate_order(rows, g):
    run = running(rows)
    b_used = sum(rj.job.total_gpus for rj in run)
    any_ = KueueQueuePolicy(reclaim_within_cohort="Any")
    ten = Tenancy(tenants=(TenantQueue("a", "c", ((F, FlavorQuota(8)),), kueue=any_),
                           TenantQueue("b", "c", ((F, FlavorQuota(16)),))), cohorts=(Cohort("c"),))
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=NODES).build())
    for rj in run:
        for b in rj.bindings:
            table.take(b.node, b.request)
    a = with_flavor(job("a1").tenant("a").gpus(2).gang(g // 2).build(), F)
    r = run_cycle(CycleInput(NOW, table, [PendingJob(a)], profile("kueue"), running=run, tenancy=ten))
    victims = {p.job for p in r.preemptions}
    ctx = CycleContext(now=NOW, profile=profile("kueue"), rng=np.random.default_rng(0))

    def makes_room(subset) -> bool:
        freed = sum(rj.job.total_gpus for rj in subset)
        if 24 - b_used + freed < g:
            return False
        t = table.copy()
        for rj in subset:
            for b in rj.bindings:
                t.give(b.node, b.request)
        return not isinstance(fit_gang(a, t, ctx, "check"), Status)

    if makes_room([]):
        assert not victims  # room already: nobody is preempted
        return
    # Kueue's walk, from its documented order.
    order = sorted(run, key=lambda rj: (rj.job.priority, -rj.start_time, rj.job.id))
    walked, freed = [], 0
    for rj in order:
        if b_used - freed <= 16:
            break  # b no longer borrows: none of its workloads is a candidate any more
        walked.append(rj)
        freed += rj.job.total_gpus
        if makes_room(walked):
            break
    if not makes_room(walked):
        assert not victims  # no set of candidates makes room: Kueue preempts nobody
        return
    cost = {rj.job.id: 2 ** i for i, rj in enumerate(walked)}
    best = min((s for k in range(1, len(walked) + 1) for s in combinations(walked, k) if makes_room(s)),
               key=lambda s: sum(cost[rj.job.id] for rj in s))
    assert victims == {rj.job.id for rj in best}
    assert all(p.reason == "InCohortReclamation" for p in r.preemptions)
