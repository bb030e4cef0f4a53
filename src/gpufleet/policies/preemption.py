"""Preemption for tenancy: reclaim lent capacity, priority within a tenant, checkpoint-aware victims.

Who may be a victim of beneficiary J (tenant t, flavor f, g GPUs, effective priority p):

* **Reclaim.** When J fits t's nominal quota (usage + g ≤ nominal), any running job of another
  tenant u that is borrowing f (usage_u > nominal_u), for as long as u stays above nominal as
  victims are removed. Borrowed capacity is reclaimable whatever the job's class.
* **Priority.** A running job of t itself with lower effective priority whose class is
  preemptible (a class is honoured only within the tenant's priority budget).

Jobs already under an eviction notice are never victims twice: their capacity is released on the
snapshot first and claimed, in order, by the beneficiaries it fits, without new notices.

Search, per beneficiary in admission order, on the Plan (nothing leaves the engine):

1. sort candidates by the victim rule;
2. release candidates one whole gang at a time (Plan.release of every binding) until J passes
   quota and fits (fit_gang); if it never does, roll back and preempt nothing for J;
3. reprieve: try putting back each chosen victim, most expensive first; keep it running when J
   still fits without it;
4. bind J tentatively so later beneficiaries cannot count the same GPUs, emit the notices.
At the end the Plan is rolled back to where preemption found it: J starts in a later cycle, once
its victims are gone.

Victim rules (sort keys, smallest first):

* ``checkpoint-aware``: work lost = GPUs × (progress since the last checkpoint that survives the
  notice + restart time), then lower priority, then most recently started, then id. A job that
  can write a checkpoint within the grace period loses only its restart time.
* ``naive``: lower priority, then most recently started, then id (the Kubernetes rule).
"""

from __future__ import annotations

from collections.abc import Callable

from gpufleet.engine.checkpoints import eviction_cost
from gpufleet.engine.plan import Plan
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import CycleContext, PendingJob, Preemption, RunningJob
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Tenancy
from gpufleet.policies.gang import fit_gang
from gpufleet.policies.quota import (
    EXCEEDS_BORROWING,
    EXCEEDS_NOMINAL,
    WAITING_FOR_COHORT,
    QuotaAdmitter,
    QuotaLedger,
    effective_priority,
    job_gpus_by_flavor,
    protected_running,
)


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


class TenancyPreemptor:
    """Reclaim and within-tenant priority preemption (module docstring)."""

    def __init__(self, admitter: QuotaAdmitter, rule: str = "checkpoint-aware") -> None:
        self.admitter = admitter
        self.rule = rule
        self.key = VICTIM_RULES[rule]
        self.name = f"preempt-{rule}"

    def preempt(self, blocked: list[PendingJob], plan: Plan, ctx: CycleContext) -> list[Preemption]:
        tenancy: Tenancy | None = ctx.tenancy
        if tenancy is None:
            return []
        blocked_ids = {p.job.id for p in blocked
                       if (st := ctx.statuses.get(p.job.id)) is None
                       or st.code is not StatusCode.UNRESOLVABLE}
        beneficiaries = [r for r in self.admitter.records(ctx)
                         if (r.admitted and r.pending.job.id in blocked_ids)
                         or (not r.admitted and r.reason in _QUOTA_REFUSALS)]
        if not beneficiaries:
            return []
        mark0 = plan.checkpoint()
        # Quota as it stands after this cycle's starts, with jobs under notice already gone.
        ledger = QuotaLedger.from_running(tenancy, ctx.running, skip_evicting=True)
        tenant_of = {r.pending.job.id: r.pending.job.tenant for r in self.admitter.records(ctx)}
        for b in plan.commit():
            ledger.charge_bindings(tenant_of.get(b.job, ""), (b,))
        for rj in ctx.running:
            if rj.evicting:
                for b in rj.bindings:
                    plan.release_binding(b)
        protected = protected_running(tenancy, ctx.running)
        live = {rj.job.id: rj for rj in ctx.running if not rj.evicting}
        out: list[Preemption] = []
        hopeless: set[tuple] = set()  # (tenant, shape, admitted) that found no victims this cycle
        for rec in beneficiaries:
            job = rec.pending.job
            same = (job.tenant, job.shape_key, rec.admitted, job.priority)
            if same in hopeless:
                continue
            fitted = fit_gang(job, plan.table, ctx, self.name)
            if rec.admitted and not isinstance(fitted, Status):
                # Capacity already under eviction notice is enough: claim it, notice nobody.
                for b in fitted:
                    plan.bind(b)
                ctx.statuses.record(job.id, Status(StatusCode.WAIT, (
                    "waiting for capacity already being evicted",), self.name))
                continue
            chosen = self._victims(job, rec.flavor, rec.admitted, plan, ctx, ledger, live, protected)
            if chosen is None:
                hopeless.add(same)
                continue
            hopeless.clear()
            victims, bindings, reason = chosen
            for b in bindings:
                plan.bind(b)
            for v in victims:
                rj = live.pop(v)
                ledger.charge_bindings(rj.job.tenant, rj.bindings, -1)
                out.append(Preemption(v, job.id, reason, tenancy.grace_s))
            ledger.add(job.tenant, rec.flavor, job.total_gpus)
            ctx.statuses.record(job.id, Status(StatusCode.WAIT, (
                f"preempting {', '.join(victims)} ({reason}); starts once they are evicted",), self.name))
        plan.rollback(mark0)
        return out

    def _candidates(self, job: Job, flavor: str, admitted: bool, ctx: CycleContext,
                    ledger: QuotaLedger, live: dict[JobId, RunningJob],
                    protected: set[JobId]) -> list[tuple[tuple, RunningJob, str]]:
        tenancy = ctx.tenancy
        assert tenancy is not None  # preempt() returns before any search without tenancy
        reclaim = admitted and ledger.within_nominal(job.tenant, flavor, job.total_gpus)
        prio = job.priority
        out = []
        for rj in live.values():
            uses = job_gpus_by_flavor(rj.bindings, ledger.default_flavor(rj.job.tenant))
            if flavor and flavor not in uses:
                continue
            eff = effective_priority(tenancy, rj.job, protected)
            if rj.job.tenant == job.tenant:
                if eff < prio and (tenancy.preemptible(rj.job.priority) or rj.job.id not in protected):
                    out.append((self.key(rj, eff, ctx.now, tenancy.grace_s), rj, "priority"))
            elif reclaim and not ledger.within_nominal(rj.job.tenant, flavor):
                out.append((self.key(rj, eff, ctx.now, tenancy.grace_s), rj, "reclaim"))
        out.sort(key=lambda x: x[0])
        return out

    def _victims(self, job: Job, flavor: str, admitted: bool, plan: Plan, ctx: CycleContext,
                 ledger: QuotaLedger, live: dict[JobId, RunningJob], protected: set[JobId]
                 ) -> tuple[list[JobId], tuple, str] | None:
        cands = self._candidates(job, flavor, admitted, ctx, ledger, live, protected)
        if not cands:
            return None
        mark = plan.checkpoint()

        def attempt(victims: list[RunningJob]) -> tuple | None:
            plan.rollback(mark)
            trial = ledger.copy()
            for rj in victims:
                trial.charge_bindings(rj.job.tenant, rj.bindings, -1)
                for b in rj.bindings:
                    plan.release_binding(b)
            if not admitted and trial.decide(job)[0] is None:
                return None
            fitted = fit_gang(job, plan.table, ctx, self.name)
            return None if isinstance(fitted, Status) else fitted

        kinds: dict[JobId, str] = {}
        chosen: list[RunningJob] = []
        fitted = None
        # Cheap bound first: J cannot fit before free + released GPUs of its flavor reach its size.
        mask = plan.table.model_mask((flavor,)) if flavor else None
        free = plan.table.gpu_free[plan.table.schedulable if mask is None else plan.table.schedulable & mask]
        room = int(free.sum())
        for _, rj, kind in cands:
            if kind == "reclaim":
                trial = ledger.copy()
                for v in chosen:
                    trial.charge_bindings(v.job.tenant, v.bindings, -1)
                if trial.within_nominal(rj.job.tenant, flavor):
                    continue  # that borrower is back within its quota: nothing left to reclaim
            kinds[rj.job.id] = kind
            chosen.append(rj)
            room += rj.job.total_gpus
            if room < job.total_gpus:
                continue
            fitted = attempt(chosen)
            if fitted is not None:
                break
        if fitted is None:
            plan.rollback(mark)
            return None
        # Reprieve, most expensive first: keep a victim running when J fits without it.
        for rj in reversed(list(chosen)):
            rest = [v for v in chosen if v is not rj]
            again = attempt(rest) if rest else None
            if again is not None:
                chosen, fitted = rest, again
        plan.rollback(mark)
        reason = ("reclaim" if any(kinds[v.job.id] == "reclaim" for v in chosen) else "priority")
        detail = (f"reclaim: {job.tenant} is within its nominal {flavor} quota"
                  if reason == "reclaim" else f"priority {job.priority} within tenant {job.tenant}")
        return [v.job.id for v in chosen], fitted, detail

