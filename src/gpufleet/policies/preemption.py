"""Preemption for tenancy: reclaim lent capacity, priority within a tenant, checkpoint-aware victims.

Who may be a victim of beneficiary J (tenant t, flavor f, g GPUs, effective priority p):

* **Own work.** A running job of t itself with lower effective priority whose class is
  preemptible (a class is honoured only within the tenant's priority budget).
* **Reclaim.** A running job of another tenant u that is borrowing f (usage_u > nominal_u), for
  as long as u stays above nominal as victims are removed, and only while J is within t's
  guarantee once the chosen own victims are gone: usage_t − own + g ≤ nominal_t. Borrowed
  capacity is reclaimable whatever the job's class.

The cheapest combination that gives J its guarantee, in this order:

1. the least of t's own lower-priority work that brings J within t's nominal quota,
   k = max(0, usage_t + g − nominal_t) GPUs of it (nothing when J already fits its guarantee);
2. then reclaim from borrowers, cheapest first, stopping at each borrower once it is back
   within its nominal quota (evicting t's own work while another tenant keeps borrowed GPUs
   would be undone by a reclaim in the next cycle anyway: two evictions where one suffices);
3. then more of t's own lower-priority work.

Jobs already under an eviction notice are never victims twice: their capacity is released on the
snapshot first and claimed, in order, by the beneficiaries it fits, without new notices.

Search, per beneficiary in admission order, on the Plan (nothing leaves the engine):

1. order candidates as above (within each group, by the victim rule);
2. release candidates one whole gang at a time (Plan.release of every binding) until J passes
   quota and fits (the profile's own placer's ``fit``: topology, fractional and one-task-per-node
   rules judge the freed room as they will when J is placed); if it never does, undo and preempt
   nothing for J;
3. reprieve: try putting back each chosen victim, most expensive first; keep it running when J
   still fits (and a reclaim stays justified) without it;
4. leave the chosen victims released and bind J on the room they free, so a later beneficiary
   sees exactly what is left: no GPU is ever counted twice and no node's free count goes
   negative.
At the end the Plan is rolled back to where preemption found it: J starts in a later cycle, once
its victims are gone. A job the preemptor does not act on keeps the status earlier phases gave
it (a backfill-held job keeps its reason and its estimated start).

Victim rules (sort keys, smallest first):

* ``checkpoint-aware``: work lost = GPUs × (progress since the last checkpoint that survives the
  notice + restart time), then lower priority, then most recently started, then id. A job that
  can write a checkpoint within the grace period loses only its restart time.
* ``naive``: lower priority, then most recently started, then id (the Kubernetes rule).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from gpufleet.engine.capacity import Releases
from gpufleet.engine.checkpoints import eviction_cost
from gpufleet.engine.fit import node_need
from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import CycleContext, PendingJob, Preemption, RunningJob
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Tenancy
from gpufleet.policies.filters import for_job
from gpufleet.policies.quota import (
    EXCEEDS_BORROWING,
    EXCEEDS_NOMINAL,
    WAITING_FOR_COHORT,
    AdmissionRecord,
    QuotaAdmitter,
    QuotaLedger,
    effective_priority,
    job_gpus_by_flavor,
    protected_running,
    with_flavor,
)
from gpufleet.policies.victims import VictimSearch


def work_lost_gpu_s(rj: RunningJob, now: float, grace_s: float) -> float:
    """GPU-seconds an eviction noticed at ``now`` with ``grace_s`` would throw away: exactly what
    the simulator charges (engine/checkpoints.py, one copy of the arithmetic)."""
    return eviction_cost(rj, now, grace_s).lost_gpu_s


VictimKey = Callable[[RunningJob, int, float, float], tuple]


def checkpoint_aware(rj: RunningJob, priority: int, now: float, grace_s: float) -> tuple:
    return (round(work_lost_gpu_s(rj, now, grace_s), 6), priority, -rj.start_time, rj.job.id)


def naive(rj: RunningJob, priority: int, now: float, grace_s: float) -> tuple:
    return (priority, -rj.start_time, rj.job.id)


VICTIM_RULES: dict[str, VictimKey] = {"checkpoint-aware": checkpoint_aware, "naive": naive}

_QUOTA_REFUSALS = (EXCEEDS_NOMINAL, EXCEEDS_BORROWING, WAITING_FOR_COHORT)
OWN, RECLAIM = "priority", "reclaim"


@dataclass(frozen=True, slots=True)
class Choice:
    """Victims chosen for one beneficiary, with the bindings it gets on the room they free."""

    victims: tuple[JobId, ...]
    bindings: tuple[PodBinding, ...]
    reason: str


class TenancyPreemptor:
    """Reclaim and within-tenant priority preemption (module docstring)."""

    period_s = 0.0

    def __init__(self, admitter: QuotaAdmitter, rule: str = "checkpoint-aware") -> None:
        self.admitter = admitter
        self.rule = rule
        self.key = VICTIM_RULES[rule]
        self.name = f"preempt-{rule}"

    def preempt(self, blocked: Sequence[PendingJob], plan: Plan, ctx: CycleContext) -> list[Preemption]:
        tenancy: Tenancy | None = ctx.tenancy
        if tenancy is None:
            return []
        blocked_ids = {p.job.id for p in blocked
                       if (st := ctx.statuses.get(p.job.id)) is None
                       or st.code is not StatusCode.UNRESOLVABLE}
        records = self.admitter.records(ctx)
        beneficiaries = [r for r in records
                         if (r.admitted and r.pending.job.id in blocked_ids)
                         or (not r.admitted and r.reason in _QUOTA_REFUSALS)]
        if not beneficiaries:
            return []
        mark0 = plan.checkpoint()
        # Quota as it stands after this cycle's starts, with jobs under notice already gone.
        ledger = QuotaLedger.from_running(tenancy, ctx.running, skip_evicting=True)
        tenant_of = {r.pending.job.id: r.pending.job.tenant for r in records}
        for b in plan.commit():
            ledger.charge_bindings(tenant_of.get(b.job, ""), (b,))
        # Jobs under notice, on the capacity timeline (engine/capacity.py): what they release,
        # per node, is the only room a job may claim as "already being evicted" (free GPUs
        # beyond it are simply free, held by another phase), and when they go is when it starts.
        evicting = [rj for rj in ctx.running if rj.evicting]
        notices = Releases.build(evicting, ctx.expected_end)
        evicting_room = notices.released_gpus(len(plan.table.gpu_free)).copy()
        for rj in evicting:
            for b in rj.bindings:
                plan.release_binding(b)
        protected = protected_running(tenancy, ctx.running)
        live = {rj.job.id: rj for rj in ctx.running if not rj.evicting}
        out: list[Preemption] = []
        hopeless: set[tuple] = set()  # (tenant, shape, admitted, priority) that found no victims
        for rec in beneficiaries:
            job = rec.pending.job
            same = (job.tenant, job.shape_key, rec.admitted, job.priority)
            if same in hopeless:
                continue
            fitted = ctx.profile.placer.fit(job, plan.table, ctx)
            once_evicted = None if rec.admitted else ledger.decide(job)[0]
            if once_evicted is not None and not isinstance(fitted, Status):
                # Refused only for quota that jobs under notice still hold: it starts once they
                # are gone; evicting more would be an unneeded eviction.
                _claims(fitted, plan, evicting_room)
                ctx.statuses.record(job.id, Status(StatusCode.WAIT, (
                    "waiting for capacity already being evicted",), self.name,
                    float(notices.ends[-1]) if len(notices) else None))
                for b in fitted:
                    plan.bind(b)
                ledger.add(job.tenant, once_evicted, job.total_gpus)
                continue
            if rec.admitted and not isinstance(fitted, Status):
                # It fits as things stand: hold the room so later beneficiaries do not count it
                # twice; relabel it only when the room is capacity under eviction notice.
                if _claims(fitted, plan, evicting_room):
                    ctx.statuses.record(job.id, Status(StatusCode.WAIT, (
                        "waiting for capacity already being evicted",), self.name,
                        notices.last_end_on([b.node for b in fitted])))
                for b in fitted:
                    plan.bind(b)
                continue
            choice, flavor = None, rec.flavor
            for flavor in self._flavors_to_try(rec, ledger):
                tried = job if rec.admitted or not job.total_gpus else with_flavor(job, flavor)
                choice = self._victims(tried, flavor, rec.admitted, plan, ctx, ledger, live, protected)
                if choice is not None:
                    break
            if choice is None:
                hopeless.add(same)
                continue
            hopeless.clear()
            for b in choice.bindings:
                plan.bind(b)
            for v in choice.victims:
                rj = live.pop(v)
                ledger.charge_bindings(rj.job.tenant, rj.bindings, -1)
                out.append(Preemption(v, job.id, choice.reason, tenancy.grace_s))
            ledger.add(job.tenant, flavor, job.total_gpus)
            ctx.statuses.record(job.id, Status(StatusCode.WAIT, (
                f"preempting {', '.join(choice.victims)} ({choice.reason}); starts once they are "
                "evicted",), self.name, ctx.now + tenancy.grace_s))
        plan.rollback(mark0)
        return out

    @staticmethod
    def _flavors_to_try(rec: AdmissionRecord, ledger: QuotaLedger) -> list[str]:
        """An admitted job is pinned to its flavor. A refused one may use any of its queue's
        flavors it allows: those where the job is within the tenant's nominal quota first (a
        guarantee a borrower holds is reclaimed before the tenant's own work is evicted
        elsewhere), then the rest, each group in the queue's order."""
        job = rec.pending.job
        flavors = ledger.candidate_flavors(job) if not rec.admitted and job.total_gpus else ()
        if not flavors:
            return [rec.flavor]
        within = [f for f in flavors if ledger.within_nominal(job.tenant, f, job.total_gpus)]
        return within + [f for f in flavors if f not in within]

    def _candidates(self, job: Job, flavor: str, ctx: CycleContext, ledger: QuotaLedger,
                    live: dict[JobId, RunningJob], protected: set[JobId]
                    ) -> tuple[list[RunningJob], list[RunningJob]]:
        """(own lower-priority jobs, other tenants' jobs on ``flavor``), each by the victim rule."""
        tenancy = ctx.tenancy
        assert tenancy is not None  # preempt() returns before any search without tenancy
        own: list[tuple[tuple, RunningJob]] = []
        others: list[tuple[tuple, RunningJob]] = []
        for rj in live.values():
            uses = job_gpus_by_flavor(rj.bindings, ledger.default_flavor(rj.job.tenant))
            if flavor and flavor not in uses:
                continue
            eff = effective_priority(tenancy, rj.job, protected)
            key = self.key(rj, eff, ctx.now, tenancy.grace_s)
            if rj.job.tenant == job.tenant:
                if eff < job.priority and (tenancy.preemptible(rj.job.priority)
                                           or rj.job.id not in protected):
                    own.append((key, rj))
            elif not ledger.within_nominal(rj.job.tenant, flavor):
                others.append((key, rj))
        own.sort(key=lambda x: x[0])
        others.sort(key=lambda x: x[0])
        return [rj for _, rj in own], [rj for _, rj in others]

    def _victims(self, job: Job, flavor: str, admitted: bool, plan: Plan, ctx: CycleContext,
                 ledger: QuotaLedger, live: dict[JobId, RunningJob], protected: set[JobId]
                 ) -> Choice | None:
        """The cheapest victim set for ``job`` (module docstring); on success the Plan is left
        with those victims released (the caller binds the job there), else as it was found."""
        own, others = self._candidates(job, flavor, ctx, ledger, live, protected)
        if not own and not others:
            return None
        g = job.total_gpus
        queue = ctx.tenancy.tenant(job.tenant) if ctx.tenancy is not None else None
        nominal = queue.quota(flavor).nominal if flavor and queue is not None else 0
        kinds: dict[JobId, str] = {}

        def allowed(victims: Sequence[RunningJob]) -> bool:
            """Removing ``victims`` is allowed for J (quota: reclaim rules, admission)."""
            trial = ledger.copy()
            for rj in victims:
                trial.charge_bindings(rj.job.tenant, rj.bindings, -1)
            if any(kinds[v.job.id] == RECLAIM for v in victims):
                if not trial.within_nominal(job.tenant, flavor, g):
                    return False
                if not _reclaim_justified(list(victims), kinds, flavor, ledger):
                    return False
            return admitted or trial.decide(job)[0] is not None

        def fits() -> tuple[PodBinding, ...] | None:
            fitted = ctx.profile.placer.fit(job, plan.table, ctx)
            return None if isinstance(fitted, Status) else fitted

        search = VictimSearch(plan, fits, allowed)
        # Own work that must go before J is within its guarantee; then reclaim; then the rest.
        must_free = max(0, ledger.used(job.tenant, flavor) + g - nominal) if flavor else g
        first, freed = [], 0
        for rj in own:
            if freed >= must_free:
                break
            first.append(rj)
            freed += rj.job.total_gpus
        reclaimable = others if freed >= must_free else []
        rest = [rj for rj in own if rj not in first]
        for rj in first + rest:
            kinds[rj.job.id] = OWN
        for rj in reclaimable:
            kinds[rj.job.id] = RECLAIM

        usable = for_job(plan.table, job, ctx).schedulable  # J's own node filter
        mask = plan.table.model_mask((flavor,)) if flavor else None
        if mask is not None:
            usable = usable & mask

        def admit(chosen: list[RunningJob], rj: RunningJob) -> bool:
            # A victim with no pod on a node J may use frees J nothing; a borrower back within
            # its quota has nothing left to reclaim.
            if job.eligible_nodes is not None and not any(usable[b.node] for b in rj.bindings):
                return False
            return kinds[rj.job.id] != RECLAIM or _reclaim_justified([*chosen, rj], kinds, flavor, ledger)

        # Cheap bound: J cannot fit before free + released GPUs reach g.
        free = plan.table.gpu_free[usable]
        room = int(free.sum())
        found = search.grow([[rj] for rj in first + reclaimable + rest], admit,
                            ready=lambda chosen: room + sum(v.job.total_gpus for v in chosen) >= g)
        if found is None:
            return None
        # Reprieve, most expensive first: keep a victim running when J fits without it.
        chosen = search.reprieve(found[0], list(reversed(found[0])))
        fitted = search.settle(chosen)  # leave the Plan with exactly the chosen victims released
        assert fitted is not None
        reclaim = any(kinds[v.job.id] == RECLAIM for v in chosen)
        detail = (f"reclaim: {job.tenant} is within its nominal {flavor} quota" if reclaim
                  else f"priority {job.priority} within tenant {job.tenant}")
        return Choice(tuple(v.job.id for v in chosen), fitted, detail)


def _reclaim_justified(victims: list[RunningJob], kinds: dict[JobId, str], flavor: str,
                       ledger: QuotaLedger) -> bool:
    """Every reclaimed tenant can give up its victims one by one while still above its nominal
    quota at each step: taking the largest last, usage − (Σ victims − max victim) > nominal."""
    by_tenant: dict[str, list[int]] = {}
    for v in victims:
        if kinds[v.job.id] == RECLAIM:
            gpus = job_gpus_by_flavor(v.bindings, ledger.default_flavor(v.job.tenant)).get(flavor, 0)
            by_tenant.setdefault(v.job.tenant, []).append(gpus)
    for tenant, sizes in by_tenant.items():
        if ledger.within_nominal(tenant, flavor, -(sum(sizes) - max(sizes))):
            return False
    return True


def _claims(fitted: tuple[PodBinding, ...], plan: Plan, evicting_room: np.ndarray) -> bool:
    """Does this fit use GPUs that jobs under notice will free? Claims them (decrements
    ``evicting_room``) when it does. A node's free GPUs beyond its evicting room are free now."""
    used = False
    for node, (gpus, _, _) in node_need(fitted).items():
        free_now = int(plan.table.gpu_free[node]) - int(evicting_room[node])
        from_evicting = min(int(evicting_room[node]), max(0, int(gpus) - free_now))
        if from_evicting > 0:
            evicting_room[node] -= from_evicting
            used = True
    return used
