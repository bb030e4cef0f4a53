"""Kueue's target search for one workload on the Plan: candidates, Kueue's classical or
fair-sharing targets, and "fits" as Kueue's quota test plus the profile's placer, all through the
one victim search (policies/victims.py). policies/kueue/preemption.py runs it per workload.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.status import Status
from gpufleet.engine.types import CycleContext, RunningJob
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Tenancy
from gpufleet.policies.kueue.candidates import candidate_key, candidates
from gpufleet.policies.kueue.fair import fair_targets
from gpufleet.policies.kueue.resources import ResourceLedger
from gpufleet.policies.kueue.targets import REASON, classify, search
from gpufleet.policies.quota import QuotaLedger
from gpufleet.policies.victims import VictimSearch


class TargetSearch:
    """One workload's target search on the Plan (module docstring; policies/kueue/preemption.py)."""

    def __init__(self, job: Job, flavor: str, plan: Plan, ctx: CycleContext, ledger: QuotaLedger,
                 live: dict[JobId, RunningJob], res: ResourceLedger,
                 base: QuotaLedger | None = None, parts: dict[str, Job] | None = None,
                 gpus: dict[JobId, dict[str, int]] | None = None) -> None:
        self.job, self.flavor, self.plan, self.ctx, self.ledger = job, flavor, plan, ctx, ledger
        #: flavor → the pod sets of W on it (one entry, W itself, unless its pod sets were
        #: assigned different flavors: policies/kueue/flavors.assign_pod_sets_modes).
        self.parts = parts if parts is not None else {flavor: job}
        self.res = res
        #: The cycle's starting usage (without this cycle's admissions): who borrows.
        self.base = base if base is not None else ledger
        assert ctx.tenancy is not None  # the preemptor returns before any search without tenancy
        self.tenancy: Tenancy = ctx.tenancy
        self.cq = job.tenant
        q = self.tenancy.tenant(self.cq)
        assert q is not None
        self.queue = q
        self.live = live
        #: GPUs per flavor of each live workload, filled on first use (shared across searches).
        self.gpus = gpus
        #: Whether the last attempt passed the quota (and so failed, if it did, on the nodes).
        self.quota_ok = False
        #: The victim search (policies/victims.py) per borrowing option: Kueue's quota test,
        #: then the profile's placer on the Plan with the targets released.
        self.searches = {borrow: VictimSearch(plan, self._fits, partial(self._allowed, borrow=borrow))
                         for borrow in (True, False)}

    def _candidates(self, live: dict[JobId, RunningJob]) -> tuple[list[RunningJob], list[RunningJob]]:
        if len(self.parts) == 1:
            return candidates(self.job, self.flavor, self.tenancy, self.base, live.values())
        own: dict[JobId, RunningJob] = {}
        others: dict[JobId, RunningJob] = {}
        for f, part in self.parts.items():  # candidates on any flavor W's pod sets use
            o, x = candidates(part, f, self.tenancy, self.base, live.values())
            own.update((rj.job.id, rj) for rj in o)
            others.update((rj.job.id, rj) for rj in x)
        return sorted(own.values(), key=candidate_key), sorted(others.values(), key=candidate_key)

    def _allowed(self, victims: Sequence[RunningJob], borrow: bool) -> bool:
        """Kueue's quota test for W once ``victims`` are gone, with or without borrowing
        (GPUs per flavor against nominal, borrowing limit and the cohort; then cpu and memory)."""
        self.quota_ok = False
        trial = self.ledger.copy()
        for rj in victims:
            trial.charge_bindings(rj.job.tenant, rj.bindings, -1)
        for f, part in self.parts.items():
            q, g = self.queue.quota(f), part.total_gpus
            used = trial.used(self.cq, f)
            if not borrow and used + g > q.nominal:
                return False
            if q.borrowing_limit is not None and used + g > q.nominal + q.borrowing_limit:
                return False
            if self.queue.cohort is not None and g > trial.available(("t", self.cq), f):
                return False
            if self.queue.cohort is None and used + g > q.nominal:
                return False
        if self.queue.resources:
            rtrial = self.res.copy()
            for rj in victims:
                rtrial.charge(rj.job.tenant, rj.bindings, -1)
            if any(rtrial.refusal(part, f, borrow) is not None for f, part in self.parts.items()):
                return False
        self.quota_ok = True
        return True

    def _fits(self) -> tuple[PodBinding, ...] | None:
        fitted = self.ctx.profile.placer.fit(self.job, self.plan.table, self.ctx)
        return None if isinstance(fitted, Status) else fitted

    def fits_without_victims(self) -> tuple[PodBinding, ...] | None:
        """W's bindings when it fits once the workloads already under notice are gone."""
        search = self.searches[True]
        fitted = search.attempt([])
        if fitted is None:
            search.undo()
        return fitted

    def targets(self) -> tuple[list[RunningJob], tuple[PodBinding, ...], dict[JobId, str]] | None:
        """(victims, W's bindings on the room they free, reason per victim), leaving the Plan
        with the victims released; or None with the Plan as found."""
        chosen: list[RunningJob] | None = None
        borrow = True
        request = {f: p.total_gpus for f, p in self.parts.items()}
        if self.tenancy.fair_sharing:
            # Kueue's fair-sharing targets: the queue ordering and strategies of
            # policies/kueue/fair.py; "fits" is the quota and the nodes.
            own, others = self._candidates(self.live)
            picked = fair_targets(self.job, request, self.tenancy, self.ledger, [*others, *own],
                                  self.searches[True]) if (own or others) else None
            chosen = [t.rj for t in picked] if picked else None
            why = {t.rj.job.id: t.reason for t in picked or ()}
        else:
            # Kueue's classical targets: candidates by the cohort tree, its attempts and walk
            # (policies/kueue/targets.py); "fits" is the quota and the nodes (``searches``).
            cands = classify(self.job, request, self.tenancy, self.ledger, self.base, self.live.values(),
                             self.gpus)
            found = search(self.job, request, self.tenancy, self.ledger, self.base, cands,
                           self.searches.__getitem__)
            if found is not None:
                chosen, borrow = [c.rj for c in found[0]], found[1]
            why = {c.rj.job.id: REASON[c.variant] for c in (found[0] if found else ())}
        if not chosen:
            self.searches[True].undo()
            return None
        fitted = self.searches[borrow].settle(chosen)
        assert fitted is not None
        return chosen, fitted, why
