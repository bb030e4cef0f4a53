"""Defragmentation: move running jobs so that a blocked gang fits, at the least cost to them.

Allocated is not usable: with mixed sizes, free GPUs end up scattered one or two per node and an
8-GPU pod fits nowhere. Defrag picks running jobs to *move* (evict with a grace period, requeue,
resume from checkpoint) so that the head blocked gang fits, and does so only when it then fits.

Cost of moving running job v at ``now`` (GPU-seconds; the arithmetic of engine/checkpoints.py, via
``preemption.work_lost_gpu_s`` on one GPU):
    cost(v) = GPU-equivalents(v) × (work since the last checkpoint that survives the notice
              + restart time)
A job that can write a checkpoint within the grace period loses only its restart. Stateless
inference is modelled as a job that checkpoints for free (``cost_s`` = 0) with ``restart_s`` =
its live-migration time: moving it costs only that. Fractional jobs count by GPU-equivalents
(milli / 1000, MIG compute slices / 7), so a 1g instance is cheap to move and an 8-GPU trainer is not.

Who may move: running jobs not already under notice, of priority ≤ the gang's and smaller (in
GPU-equivalents) than it. Which gang: the first blocked job that is UNSCHEDULABLE (not
unresolvable, not refused by quota) and has waited at least ``patience_s`` (defrag is for gangs
that would otherwise wait long, not for those about to start). One move at a time: while any
eviction notice is running, defrag waits.

Disruption budget: at most ``gpus_per_hour`` GPU-equivalents evicted in any trailing hour (the
driver passes recent evictions in ``CycleInput.disruptions``) and ``gpus_per_cycle`` per cycle.
A plan over budget evicts nothing. Periodic: the simulator runs a cycle every ``period_s`` while
jobs wait and others run, so defrag looks again even when nothing arrives or ends.

Search (``rule="cost"``, ours), on the Plan — release, fit, roll back; nothing leaves the engine:
1. Units are nodes. For each node n holding movable jobs, release every movable job with a pod
   on n and measure the gain = extra pods of the gang's (largest) pod set the fleet then holds;
   roll back. Unit price = Σ cost of those jobs / gain.
2. Take units cheapest first, releasing their jobs, until the gang fits (the placer's own ``fit``
   answers, so its rules — leaf packing, the tenant rule — bind the plan too).
3. Reprieve, most expensive first: keep a job running when the gang still fits without it.
4. Moves, not evictions: with the gang bound, every moved job must fit again elsewhere (a
   consolidation), else the plan is dropped — defrag that only displaces work is preemption.
5. Budget check; emit the notices; roll the Plan back. The gang starts in a later cycle, when
   the notices run out.

Baseline (``rule="smallest"``, naive): release the smallest jobs first (GPU-equivalents, then
latest start, then id) until the gang fits; no reprieve, no move check; same budget. Why ours is
cheaper: it prices work lost, not size, and it clears whole nodes, where the smallest-first rule
scatters evictions across nodes that still do not free a whole 8-GPU node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import CycleContext, PendingJob, Preemption, RunningJob
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.policies.filters import for_job
from gpufleet.policies.preemption import work_lost_gpu_s
from gpufleet.policies.victims import VictimSearch, release

HOUR_S = 3600.0
_ONE_GPU = (PodSet("one-gpu", 1, PodRequest(1)),)


def move_cost_gpu_s(rj: RunningJob, now: float, grace_s: float) -> float:
    """GPU-equivalent-seconds lost by moving ``rj`` now (module docstring)."""
    per_gpu = work_lost_gpu_s(replace(rj, job=replace(rj.job, pod_sets=_ONE_GPU)), now, grace_s)
    return rj.job.total_gpu_equivalents * per_gpu


def disruption_left(ctx: CycleContext, gpus_per_hour: float, gpus_per_cycle: float) -> float:
    """GPU-equivalents the budget still allows this cycle."""
    recent = sum(g for t, g in ctx.disruptions if t > ctx.now - HOUR_S)
    return max(0.0, min(gpus_per_cycle, gpus_per_hour - recent))


class DefragPreemptor:
    """Moves running jobs so the head blocked gang fits (module docstring)."""

    def __init__(self, rule: str = "cost", *, gpus_per_hour: float = 32.0, gpus_per_cycle: float = 16.0,
                 patience_s: float = 1800.0, grace_s: float = 60.0, require_moves: bool | None = None,
                 period_s: float = 300.0) -> None:
        if rule not in ("cost", "smallest"):
            raise ValueError(f"unknown defrag rule {rule!r}; expected 'cost' or 'smallest'")
        self.rule = rule
        self.gpus_per_hour = gpus_per_hour
        self.gpus_per_cycle = gpus_per_cycle
        self.patience_s = patience_s
        self.grace_s = grace_s
        self.require_moves = rule == "cost" if require_moves is None else require_moves
        self.name = "defrag" if rule == "cost" else "defrag-naive"
        #: The simulator runs a cycle at least this often while jobs wait, so defrag is periodic.
        self.period_s = period_s

    # --- the Preemptor protocol ----------------------------------------------------------

    def preempt(self, blocked: Sequence[PendingJob], plan: Plan, ctx: CycleContext) -> list[Preemption]:
        if any(rj.evicting for rj in ctx.running):
            return []
        head = self._head(blocked, ctx)
        if head is None:
            return []
        budget = disruption_left(ctx, self.gpus_per_hour, self.gpus_per_cycle)
        cands = self._movable(head, plan, ctx)
        if not cands or budget <= 0:
            return []
        mark0 = plan.checkpoint()
        try:
            chosen = (self._cheapest(head, cands, plan, ctx) if self.rule == "cost"
                      else self._smallest(head, cands, plan, ctx))
        finally:
            plan.rollback(mark0)
        if chosen is None:
            self._note(head, ctx, "defrag: no set of movable jobs frees room for it")
            return []
        size = sum(v.job.total_gpu_equivalents for v in chosen)
        if size > budget + 1e-9:
            self._note(head, ctx, f"defrag: moving {len(chosen)} job(s) ({size:g} GPUs) would exceed "
                                  f"the disruption budget ({budget:g} GPUs left)")
            return []
        cost = sum(move_cost_gpu_s(v, ctx.now, self.grace_s) for v in chosen)
        names = ", ".join(v.job.id for v in chosen)
        reason = f"{self.name} for {head.id}: frees room for its gang; move cost {cost / 3600:.2f} GPU-h"
        ctx.statuses.record(head.id, Status(StatusCode.WAIT, (
            f"{self.name}: moving {names} ({size:g} GPUs, {cost / 3600:.2f} GPU-h of lost work and "
            f"restarts); starts once they are evicted",), self.name))
        return [Preemption(v.job.id, head.id, reason, self.grace_s) for v in chosen]

    # --- who and for whom ----------------------------------------------------------------

    def _head(self, blocked: Sequence[PendingJob], ctx: CycleContext) -> Job | None:
        for pj in blocked:
            st = ctx.statuses.get(pj.job.id)
            if st is None or st.code is not StatusCode.UNSCHEDULABLE:
                continue
            if ctx.now - pj.job.submit_time >= self.patience_s:
                return pj.job
        return None

    def _movable(self, head: Job, plan: Plan, ctx: CycleContext) -> list[RunningJob]:
        """Jobs that may move for ``head``: see the module doc; and, when the head has a node
        filter (``Job.eligible_nodes``), only jobs with a pod on a node it may use (moving any
        other frees it nothing)."""
        size = head.total_gpu_equivalents
        allowed = head.eligible_nodes
        return [rj for rj in ctx.running if not rj.evicting and rj.job.priority <= head.priority
                and rj.job.total_gpu_equivalents < size and rj.job.id != head.id
                and (allowed is None or any(plan.table.names[b.node] in allowed for b in rj.bindings))]

    def _note(self, head: Job, ctx: CycleContext, why: str) -> None:
        if head.id in ctx.statuses:
            ctx.statuses.note(head.id, why, self.name)

    # --- search --------------------------------------------------------------------------

    def _fits(self, head: Job, plan: Plan, ctx: CycleContext) -> tuple[PodBinding, ...] | None:
        fitted = ctx.profile.placer.fit(head, plan.table, ctx)
        return None if isinstance(fitted, Status) else fitted

    def _search(self, head: Job, plan: Plan, ctx: CycleContext
                ) -> VictimSearch[tuple[PodBinding, ...]]:
        """The shared victim search (policies/victims.py), with the placer's own ``fit``."""
        return VictimSearch(plan, lambda: self._fits(head, plan, ctx))

    def _smallest(self, head: Job, cands: list[RunningJob], plan: Plan, ctx: CycleContext
                  ) -> list[RunningJob] | None:
        order = sorted(cands, key=lambda v: (v.job.total_gpu_equivalents, -v.start_time, v.job.id))
        found = self._search(head, plan, ctx).grow([[v] for v in order])
        return None if found is None else found[0]  # as found: no reprieve

    def _cheapest(self, head: Job, cands: list[RunningJob], plan: Plan, ctx: CycleContext
                  ) -> list[RunningJob] | None:
        cost = {v.job.id: move_cost_gpu_s(v, ctx.now, self.grace_s) for v in cands}
        units = self._node_units(head, cands, cost, plan, ctx)
        search = self._search(head, plan, ctx)
        found = search.grow([vs for _, _, vs in units])
        if found is None:
            return None
        chosen = search.reprieve(found[0], sorted(found[0], key=lambda v: (-cost[v.job.id], v.job.id)))
        search.leave_released(chosen)
        if self.require_moves and not self._moves_fit(head, chosen, cost, plan, ctx):
            return None
        return chosen

    def _node_units(self, head: Job, cands: list[RunningJob], cost: dict[JobId, float], plan: Plan,
                    ctx: CycleContext) -> list[tuple[float, int, list[RunningJob]]]:
        """(price, node, movable jobs with a pod there) for nodes whose clearing adds gang room,
        cheapest price (cost per extra gang pod) first."""
        req = max((ps.request for ps in head.pod_sets), key=lambda r: r.gpu_equivalent)
        on_node: dict[int, list[RunningJob]] = {}
        for v in cands:
            for n in sorted({b.node for b in v.bindings}):
                on_node.setdefault(n, []).append(v)
        base = np.asarray(for_job(plan.table, head, ctx).slots(req, tenant=head.tenant))
        units = []
        for n in sorted(on_node):
            mark = plan.checkpoint()
            release(plan, on_node[n])
            # The head's node filter: clearing a node it may not use adds it no room.
            gain = int(np.clip(for_job(plan.table, head, ctx).slots(req, tenant=head.tenant) - base,
                               0, None).sum())
            plan.rollback(mark)
            if gain > 0:
                price = sum(cost[v.job.id] for v in on_node[n]) / gain
                units.append((price, n, on_node[n]))
        units.sort(key=lambda u: (u[0], u[1]))
        return units

    def _moves_fit(self, head: Job, chosen: list[RunningJob], cost: dict[JobId, float], plan: Plan,
                   ctx: CycleContext) -> bool:
        """With the gang bound, does every moved job fit again (cheapest first)?"""
        fitted = self._fits(head, plan, ctx)
        if fitted is None:
            return False
        for b in fitted:
            plan.bind(b)
        for v in sorted(chosen, key=lambda v: (cost[v.job.id], v.job.id)):
            again = self._fits(v.job, plan, ctx)
            if again is None:
                return False
            for b in again:
                plan.bind(b)
        return True
