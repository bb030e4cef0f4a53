"""The place step's class-mask walk (policies/gang.py) decides and explains exactly as the plain
rule it replaces: try each job in order; skip a job whose shape equals or dominates one that
already failed this cycle (capacity only shrinks while a cycle places), with that failure as its
status; with ``stop_at_first_blocked``, the first job that is blocked for a reason other than
UNRESOLVABLE ends the pass. The reference below is that rule, one job at a time."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.engine.plan import Plan
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import CycleContext, PendingJob
from gpufleet.model.shape_key import ShapeKey
from gpufleet.policies.gang import GangBestFit
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet, job


def reference(placer: GangBestFit, ordered: list[PendingJob], plan: Plan, ctx: CycleContext,
              stop: bool) -> tuple[list[str], list[str], dict[str, Status]]:
    started, blocked, statuses = [], [], {}
    failed: list[tuple[ShapeKey, Status]] = []
    for i, pj in enumerate(ordered):
        key = pj.job.shape_key
        status = next((s for shape, s in failed if shape == key or key.dominates(shape)), None)
        if status is None:
            fitted = placer.fit(pj.job, plan.table, ctx)
            if not isinstance(fitted, Status):
                for b in fitted:
                    plan.bind(b)
                started.append(pj.job.id)
                continue
            status = fitted
            if status.code is not StatusCode.WAIT:
                failed.append((key, status))
        statuses[pj.job.id] = status
        blocked.append(pj.job.id)
        if stop and status.code is not StatusCode.UNRESOLVABLE:
            blocked += [p.job.id for p in ordered[i + 1:]]
            break
    return started, blocked, statuses


shapes = st.tuples(st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 1, 2, 3, 5]),
                   st.sampled_from([0.0, 100.0, 200.0]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(shapes, min_size=1, max_size=30), st.booleans(), st.integers(0, 16))
def test_the_walk_decides_and_explains_as_the_one_job_at_a_time_rule(rows, stop, busy):
    """Random queues of gangs (up to 5 × 8 GPUs, some unresolvable on 2 leaves × 2 nodes × 8 GPUs;
    200-CPU pods make CPU the short resource) on a fleet with ``busy`` GPUs already taken: the
    same started jobs, the same blocked jobs in the same order, the same status for each, in the
    same order."""
    f = fleet().leaves(2, nodes=2).build()
    ordered = [PendingJob(job(f"j{i:02d}").gpus(g).gang(r).cpus(c).at(i).build())
               for i, (g, r, c) in enumerate(rows)]
    outs = []
    for walk in ("engine", "reference"):
        table = NodeTable.from_fleet(f)
        for n in range(busy // 8):
            table.gpu_free[n] = 0
        if busy % 8:
            table.gpu_free[busy // 8] = 8 - busy % 8
        plan = Plan(table)
        placer = GangBestFit(stop_at_first_blocked=stop)
        ctx = CycleContext(0.0, profile("gang-bestfit"), np.random.default_rng(0))
        if walk == "engine":
            out = placer.place(ordered, plan, ctx)
            outs.append((out.started, [p.job.id for p in out.blocked], list(ctx.statuses.items()),
                         plan.commit()))
        else:
            started, blocked, statuses = reference(placer, ordered, plan, ctx, stop)
            outs.append((started, blocked, list(statuses.items()), plan.commit()))
    assert outs[0] == outs[1]
