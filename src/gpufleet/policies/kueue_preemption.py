"""Kueue's preemption, exactly: classic (per-queue policies) and fair sharing.

From Kueue's concept doc "Preemption" (kubernetes-sigs/kueue, site/content/en/docs/concepts/
preemption.md). A workload W of ClusterQueue X that does not fit the unused quota (admission
left it pending with InsufficientUnusedQuota) may
preempt the candidates of policies/kueue_candidates.py (its own queue's, by
``withinClusterQueue``; borrowing queues' of the cohort tree, by ``reclaimWithinCohort`` and,
when W would borrow, ``borrowWithinCohort``), on the flavor Kueue's flavor assigner chose at
admission (policies/kueue_admit.assign_flavor: ``whenCanPreempt`` and ``whenCanBorrow``).

Targets (classic) are Kueue's: candidates classified by the cohort tree (hierarchical
advantage, ``borrowWithinCohort`` and its threshold), its attempts with and without
borrowing, the walk that skips candidates whose queues stopped borrowing, and the fill-back
from the second-to-last target (policies/kueue_targets.py). A workload Kueue's flavor
assigner refuses up front (policies/kueue_tree.may_preempt) preempts nothing.

**Fair sharing** (``Tenancy.fair_sharing``): for each strategy in order, while W does not fit,
take the candidate queue Y with the highest weighted share (policies/kueue_share.py, compared
level by level down the cohort tree) and the first of its candidates U that satisfies the
strategy (own-queue candidates always do), shares taken at the lowest common ancestor of X and
Y (the two children of that cohort on their paths, so cohort weights count there):
``LessThanOrEqualToFinalShare``: share(X's side with W) ≤ share(Y's side without U);
``LessThanInitialShare``: share(X's side with W) < share(Y's side). Then minimise as above.

"Fits" is Kueue's quota test plus our physical test (fit_gang on the Plan with the targets
released), so a Kueue run in the simulator never evicts for a job that then cannot start.
Victims stay released while W is bound tentatively (no GPU counted twice, as in ours).
"""

from __future__ import annotations

from collections.abc import Sequence

from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import CycleContext, PendingJob, Preemption, RunningJob
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Tenancy
from gpufleet.policies.gang import fit_gang
from gpufleet.policies.kueue_admit import INSUFFICIENT_QUOTA
from gpufleet.policies.kueue_candidates import candidate_key, candidates, gpus_on, quota_fits
from gpufleet.policies.kueue_fair import fair_targets
from gpufleet.policies.kueue_reserved import QUOTA_ONLY, charge, pod_set_parts, reserved_candidates
from gpufleet.policies.kueue_resources import ResourceLedger
from gpufleet.policies.kueue_share import share_ledger
from gpufleet.policies.kueue_targets import REASON, WITHOUT_BORROWING, attempts, classify, search
from gpufleet.policies.kueue_tree import may_preempt
from gpufleet.policies.quota import QuotaLedger, admission_book, with_flavor


class KueuePreemptor:
    """Kueue's preemption (module docstring)."""

    name = "kueue-preemption"
    period_s = 0.0

    def preempt(self, blocked: Sequence[PendingJob], plan: Plan, ctx: CycleContext) -> list[Preemption]:
        tenancy: Tenancy | None = ctx.tenancy
        if tenancy is None:
            return []
        records = [r for r in admission_book(ctx).records
                   if not r.admitted and r.reason == INSUFFICIENT_QUOTA]
        if not records:
            return []
        mark0 = plan.checkpoint()
        ledger = QuotaLedger.from_running(tenancy, ctx.running, skip_evicting=True)
        # Who is borrowing, and so a candidate, is judged on the cycle's starting state, as Kueue
        # computes targets at nomination: a queue is not made a borrower by what it was admitted
        # this very cycle (that would evict its running work to make room for its new work).
        base = ledger.copy()
        # Workloads admitted in earlier cycles hold quota whether or not their pods run (Kueue's
        # QuotaReserved): part of who borrows, and candidates when their pods have not started.
        carried = ctx.admission.reserved
        waiting = {pj.job.id for pj in blocked} if carried else set()
        quota_only = reserved_candidates(admission_book(ctx).records, carried, waiting)
        res = ResourceLedger.from_running(tenancy, ctx.running, skip_evicting=True,
                                          assigned=ctx.handoff.group_flavors or ctx.admission.group_flavors)
        ledger = share_ledger(ledger, res)  # fair shares over cpu and memory too (kueue_share.py)
        # Every workload admitted this cycle holds its quota, placed or not (Kueue's quota
        # reservation): charging only the placed ones would show quota that admission already
        # gave away, and each pending workload would then try the nodes for nothing. A workload
        # whose pod sets landed on different flavors holds quota on each.
        for r in admission_book(ctx).records:
            held = r.pending.job
            if not r.admitted or not held.total_gpus:
                continue
            by_flavor = pod_set_parts(held) or {r.flavor: held}
            charge(ledger, res, held, by_flavor)
            if held.id in carried:
                for f, part in by_flavor.items():
                    base.add(held.tenant, f, part.total_gpus)
        for rj in ctx.running:
            if rj.evicting:
                for b in rj.bindings:
                    plan.release_binding(b)
        live = {rj.job.id: rj for rj in ctx.running if not rj.evicting}
        releasing = len(live) < len(ctx.running)
        live.update((rj.job.id, rj) for rj in quota_only)
        quota_only_ids = {rj.job.id for rj in quota_only}
        out: list[Preemption] = []
        # (queue, shape, priority) that found neither room nor targets: a later workload of the
        # same kind finds no more (the cycle only binds and charges more), so skip it.
        hopeless: set[tuple] = set()
        # (queue, flavor) → (priority, GPUs) of workloads that could not fit the quota even with
        # every candidate gone. A later workload of that queue with no higher priority and at
        # least as many GPUs has no more candidates (policies/kueue_candidates.py: the sets only
        # shrink as priority falls) and needs more quota: skipped until a preemption frees some.
        no_quota: dict[tuple[str, str], list[tuple[int, int]]] = {}
        gpus: dict[JobId, dict[str, int]] = {}
        no_room: set[tuple] = set()
        # What the cycle starts from, the releasing capacity free and nothing claimed yet.
        start_ledger = ledger.copy() if releasing else ledger
        start_table = plan.table.copy() if releasing else plan.table
        # Queue → its workload with preemptions pending this cycle (issued now, or victims still
        # terminating). Kueue nominates one head per ClusterQueue per cycle, and a head pending
        # preemption stays its queue's head until admitted (sticky, KEP-7157): one issuer per
        # queue, the first in the queue's order.
        issuers: dict[str, JobId] = {}
        for rec in records:
            job = rec.pending.job
            same = (job.tenant, job.shape_key, job.priority)
            if same in hopeless or job.tenant in issuers:
                continue
            t = tenancy.tenant(job.tenant)
            flavors = ledger.candidate_flavors(job)
            if t is None or not flavors or job.total_gpus == 0:
                continue
            # The flavor Kueue's flavor assigner chose at admission (whenCanPreempt, whenCanBorrow
            # and the modes of every flavor, policies/kueue_admit.assign_flavor) is the one where
            # targets are searched.
            flavors = (rec.flavor,) if rec.flavor in flavors else flavors[:1]
            # Pod sets assigned different flavors (admission hands them pinned): targets for the
            # usage of all of them at once, as Kueue computes one set for the whole assignment.
            parts = pod_set_parts(job)
            for flavor in flavors:
                if not all(may_preempt(ledger, tenancy, job.tenant, f, part.total_gpus)
                           for f, part in (parts or {flavor: job}).items()):
                    continue  # Kueue's NoFit: refused up front, no targets searched
                if parts is None and self._quota_hopeless(job, flavor, tenancy, ledger, live, gpus, no_quota):
                    continue
                pinned = job if parts is not None else with_flavor(job, flavor)
                search = _Search(pinned, flavor, plan, ctx, ledger, live, res, base, parts, gpus)
                # Room without new victims comes only from workloads under eviction notice (quota
                # that holds kept from admission stays held for the cycle, as in Kueue).
                room = None
                if releasing and (job.shape_key, flavor) not in no_room:
                    room = search.fits_without_victims()
                    if room is None and search.quota_ok:
                        # The nodes have no room for this shape; later workloads of the same
                        # shape find none either until a preemption releases more.
                        no_room.add((job.shape_key, flavor))
                if room is None and releasing and self._waits_for_release(
                        pinned, parts or {flavor: pinned}, tenancy, ctx, start_ledger, start_table):
                    # Kueue does not preempt again for a workload whose earlier victims are still
                    # terminating: it fits once what is being released is gone (whoever claims it
                    # this cycle), so it waits instead of evicting more. Without this, heads
                    # evicted one more victim every cycle while others took the capacity released.
                    ctx.statuses.record(job.id, Status(StatusCode.NOT_ADMITTED, (
                        rec.reason, "waiting for quota that evicted workloads are releasing"), self.name))
                    issuers[job.tenant] = job.id
                    break
                if room is not None:
                    # Quota and GPUs that workloads under eviction notice are releasing: claim
                    # them (so no later workload counts them) and preempt nobody new.
                    for b in room:
                        plan.bind(b)
                    charge(ledger, res, job, parts or {flavor: job})
                    ctx.statuses.record(job.id, Status(StatusCode.NOT_ADMITTED, (
                        rec.reason, "waiting for quota that evicted workloads are releasing"), self.name))
                    issuers[job.tenant] = job.id
                    break
                found = search.targets()
                if found is None:
                    continue
                victims, bindings, why = found
                for b in bindings:
                    plan.bind(b)
                no_room.clear()
                no_quota.clear()  # victims leave: quota that was out of reach may not be any more
                for rj in victims:
                    live.pop(rj.job.id)
                    ledger.charge_bindings(rj.job.tenant, rj.bindings, -1)
                    base.charge_bindings(rj.job.tenant, rj.bindings, -1)
                    res.charge(rj.job.tenant, rj.bindings, -1)
                    if rj.job.id in quota_only_ids:  # a reservation without pods: released at once
                        out.append(Preemption(rj.job.id, job.id, why[rj.job.id], 0.0, reserved=True))
                        if ctx.handoff.quota_reserved is not None:
                            ctx.handoff.quota_reserved.pop(rj.job.id, None)
                        ctx.statuses.record(rj.job.id, Status(StatusCode.NOT_ADMITTED, (
                            "Preempted", f"quota reservation released for {job.id} ({why[rj.job.id]})"),
                            self.name))
                        continue
                    out.append(Preemption(rj.job.id, job.id, why[rj.job.id], tenancy.grace_s))
                charge(ledger, res, job, parts or {flavor: job})
                ctx.statuses.record(job.id, Status(StatusCode.WAIT, (
                    f"preempting {', '.join(v.job.id for v in victims)} on {', '.join(parts or (flavor,))}; "
                    "admitted once "
                    "they are evicted",), self.name, ctx.now + tenancy.grace_s))
                issuers[job.tenant] = job.id
                break
            else:
                hopeless.add(same)
        plan.rollback(mark0)
        sticky = ctx.handoff.sticky
        if sticky is not None:
            for name, jid in issuers.items():
                queue = tenancy.tenant(name)
                if queue is not None and queue.kueue.queueing_strategy == "BestEffortFIFO":
                    sticky[name] = jid  # replaces a sticky head that no longer issues
        return out


    @staticmethod
    def _waits_for_release(job: Job, parts: dict[str, Job], tenancy: Tenancy, ctx: CycleContext,
                           start_ledger: QuotaLedger, start_table) -> bool:
        """Would ``job`` (its pod sets on the flavors of ``parts``) fit the quota and the nodes
        with the capacity under eviction notice released, before anyone this cycle claimed any
        of it?"""
        if not all(quota_fits(start_ledger, tenancy, part, f, borrow=True) for f, part in parts.items()):
            return False
        return not isinstance(fit_gang(job, start_table, ctx, "kueue"), Status)

    @staticmethod
    def _quota_hopeless(job: Job, flavor: str, tenancy: Tenancy, ledger: QuotaLedger,
                        live: dict[JobId, RunningJob], gpus: dict[JobId, dict[str, int]],
                        no_quota: dict[tuple[str, str], list[tuple[int, int]]]) -> bool:
        """Quota alone rules ``job`` out on ``flavor``: neither as things stand nor with every
        candidate gone does it fit (checked before any search on the nodes, which is what the
        congested week spent its time on)."""
        g = job.total_gpus
        seen = no_quota.get((job.tenant, flavor), ())
        if any(job.priority <= p and g >= g0 for p, g0 in seen):
            return True
        if quota_fits(ledger, tenancy, job, flavor, borrow=True):
            return False
        if tenancy.fair_sharing:
            own, others = candidates(job, flavor, tenancy, ledger, live.values(), gpus)
            trial = ledger.copy()
            for rj in [*own, *others]:
                trial.charge_bindings(rj.job.tenant, rj.bindings, -1)
            if quota_fits(trial, tenancy, job, flavor, borrow=True):
                return False
        else:
            # Each of Kueue's attempts can at best remove every candidate valid for it (the
            # walk only skips more); removing usage never makes W fit less.
            request = {flavor: g}
            c = classify(job, request, tenancy, ledger, ledger, live.values(), gpus)
            for borrow in attempts(job, request, tenancy, ledger, c):
                trial = ledger.copy()
                for x in c.ordered():
                    if not (borrow and x.variant == WITHOUT_BORROWING):
                        trial.charge_bindings(x.rj.job.tenant, x.rj.bindings, -1)
                if quota_fits(trial, tenancy, job, flavor, borrow):
                    return False
        no_quota.setdefault((job.tenant, flavor), []).append((job.priority, g))
        return True


class _Search:
    """One workload's target search on the Plan; see the module docstring."""

    def __init__(self, job: Job, flavor: str, plan: Plan, ctx: CycleContext, ledger: QuotaLedger,
                 live: dict[JobId, RunningJob], res: ResourceLedger,
                 base: QuotaLedger | None = None, parts: dict[str, Job] | None = None,
                 gpus: dict[JobId, dict[str, int]] | None = None) -> None:
        self.job, self.flavor, self.plan, self.ctx, self.ledger = job, flavor, plan, ctx, ledger
        #: flavor → the pod sets of W on it (one entry, W itself, unless its pod sets were
        #: assigned different flavors: policies/kueue_admit.assign_pod_sets_modes).
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
        self.g = job.total_gpus
        self.mark = plan.checkpoint()
        self.within_nominal = all(ledger.used(self.cq, f) + p.total_gpus <= q.quota(f).nominal
                                  for f, p in self.parts.items())
        self.live = live
        #: GPUs per flavor of each live workload, filled on first use (shared across searches).
        self.gpus = gpus
        self.own: list[RunningJob] = []
        self.others: list[RunningJob] = []
        #: Whether the last ``_fits`` passed the quota (and so failed, if it did, on the nodes).
        self.quota_ok = False

    def _gpus(self, rj: RunningJob) -> int:
        return gpus_on(self.ledger, rj, self.flavor)

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

    def _fits(self, victims: list[RunningJob], borrow: bool) -> tuple[PodBinding, ...] | None:
        self.plan.rollback(self.mark)
        self.quota_ok = False
        trial = self.ledger.copy()
        for rj in victims:
            trial.charge_bindings(rj.job.tenant, rj.bindings, -1)
        for f, part in self.parts.items():
            q, g = self.queue.quota(f), part.total_gpus
            used = trial.used(self.cq, f)
            if not borrow and used + g > q.nominal:
                return None
            if q.borrowing_limit is not None and used + g > q.nominal + q.borrowing_limit:
                return None
            if self.queue.cohort is not None and g > trial.available(("t", self.cq), f):
                return None
            if self.queue.cohort is None and used + g > q.nominal:
                return None
        if self.queue.resources:
            rtrial = self.res.copy()
            for rj in victims:
                rtrial.charge(rj.job.tenant, rj.bindings, -1)
            if any(rtrial.refusal(part, f, borrow) is not None for f, part in self.parts.items()):
                return None
        self.quota_ok = True
        for rj in victims:
            for b in rj.bindings:
                if b.node != QUOTA_ONLY:
                    self.plan.release_binding(b)
        fitted = fit_gang(self.job, self.plan.table, self.ctx, "kueue")
        return None if isinstance(fitted, Status) else fitted

    def _borrowing(self, tenant: str, gone: list[RunningJob]) -> bool:
        """Is ``tenant`` above nominal, once ``gone`` leave, on a flavor W's pod sets use?"""
        mine = [v for v in gone if v.job.tenant == tenant]
        return any(not self.base.within_nominal(tenant, f, -sum(gpus_on(self.ledger, v, f) for v in mine))
                   for f in self.parts)

    def fits_without_victims(self) -> tuple[PodBinding, ...] | None:
        """W's bindings when it fits once the workloads already under notice are gone."""
        fitted = self._fits([], True)
        if fitted is None:
            self.plan.rollback(self.mark)
        return fitted

    def targets(self) -> tuple[list[RunningJob], tuple[PodBinding, ...], dict[JobId, str]] | None:
        """(victims, W's bindings on the room they free, reason per victim), leaving the Plan
        with the victims released; or None with the Plan as found."""
        chosen: list[RunningJob] | None = None
        borrow = True
        if self.tenancy.fair_sharing:
            # Kueue's fair-sharing targets: the queue ordering and strategies of
            # policies/kueue_fair.py; "fits" is the quota and the nodes.
            self.own, self.others = self._candidates(self.live)
            request = {f: p.total_gpus for f, p in self.parts.items()}
            picked = fair_targets(self.job, request, self.tenancy, self.ledger, [*self.others, *self.own],
                                  lambda victims: self._fits(victims, True) is not None) if (
                self.own or self.others) else None
            chosen = [t.rj for t in picked] if picked else None
            why = {t.rj.job.id: t.reason for t in picked or ()}
        else:
            # Kueue's classical targets: candidates by the cohort tree, its attempts and walk
            # (policies/kueue_targets.py); "fits" is the quota and the nodes (``_fits``).
            request = {f: p.total_gpus for f, p in self.parts.items()}
            cands = classify(self.job, request, self.tenancy, self.ledger, self.base, self.live.values(),
                             self.gpus)
            found = search(self.job, request, self.tenancy, self.ledger, self.base, cands,
                           lambda victims, b: self._fits(victims, b) is not None)
            if found is not None:
                chosen, borrow = [c.rj for c in found[0]], found[1]
            why = {c.rj.job.id: REASON[c.variant] for c in (found[0] if found else ())}
        if not chosen:
            self.plan.rollback(self.mark)
            return None
        fitted = self._fits(chosen, borrow)
        assert fitted is not None
        return chosen, fitted, why
