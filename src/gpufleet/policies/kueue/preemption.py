"""Kueue's preemption, exactly: classic (per-queue policies) and fair sharing.

From Kueue's concept doc "Preemption" (kubernetes-sigs/kueue, site/content/en/docs/concepts/
preemption.md). A workload W of ClusterQueue X that does not fit the unused quota (admission
left it pending with InsufficientUnusedQuota) may
preempt the candidates of policies/kueue/candidates.py (its own queue's, by
``withinClusterQueue``; borrowing queues' of the cohort tree, by ``reclaimWithinCohort`` and,
when W would borrow, ``borrowWithinCohort``), on the flavor Kueue's flavor assigner chose at
admission (policies/kueue/flavors.assign_flavor: ``whenCanPreempt`` and ``whenCanBorrow``).

Targets (classic) are Kueue's: candidates classified by the cohort tree (hierarchical
advantage, ``borrowWithinCohort`` and its threshold), its attempts with and without
borrowing, the walk that skips candidates whose queues stopped borrowing, and the fill-back
from the second-to-last target (policies/kueue/targets.py). A workload Kueue's flavor
assigner refuses up front (policies/kueue/tree.may_preempt) preempts nothing.

**Fair sharing** (``Tenancy.fair_sharing``): for each strategy in order, while W does not fit,
take the candidate queue Y with the highest weighted share (policies/kueue/share.py, compared
level by level down the cohort tree) and the first of its candidates U that satisfies the
strategy (own-queue candidates always do), shares taken at the lowest common ancestor of X and
Y (the two children of that cohort on their paths, so cohort weights count there):
``LessThanOrEqualToFinalShare``: share(X's side with W) ≤ share(Y's side without U);
``LessThanInitialShare``: share(X's side with W) < share(Y's side). Then minimise as above.

"Fits" is Kueue's quota test plus our physical test (the profile's own placer's ``fit`` on the
Plan with the targets released: topology and fractional rules judge the freed room), so a
Kueue run in the simulator never evicts for a job that then cannot start. Victims stay
released while W is bound tentatively (no GPU counted twice, as in ours).

The steps, per refused workload in admission order (``PreemptionCycle``): skip it when its
queue already has an issuer or its kind is known hopeless; per flavor, Kueue's up-front NoFit
and the quota bound; claim room that workloads under eviction notice are releasing (or wait
for it); else search targets (policies/kueue/search.py) and issue the preemptions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gpufleet.engine.plan import Plan
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import Admission, CycleContext, PendingJob, Preemption
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Tenancy
from gpufleet.policies.kueue.candidates import candidates, quota_fits
from gpufleet.policies.kueue.cycle import INSUFFICIENT_QUOTA
from gpufleet.policies.kueue.reserved import charge, pod_set_parts, reserved_candidates
from gpufleet.policies.kueue.resources import ResourceLedger
from gpufleet.policies.kueue.search import TargetSearch
from gpufleet.policies.kueue.share import share_ledger
from gpufleet.policies.kueue.targets import WITHOUT_BORROWING, attempts, classify, without
from gpufleet.policies.kueue.tree import may_preempt
from gpufleet.policies.quota import QuotaLedger, admission_book, with_flavor

RELEASING = "waiting for quota that evicted workloads are releasing"


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
        cycle = PreemptionCycle(self.name, tenancy, blocked, plan, ctx)
        for rec in records:
            cycle.process(rec)
        plan.rollback(mark0)
        sticky = ctx.handoff.sticky
        if sticky is not None:
            for name, jid in cycle.issuers.items():
                queue = tenancy.tenant(name)
                if queue is not None and queue.kueue.queueing_strategy == "BestEffortFIFO":
                    sticky[name] = jid  # replaces a sticky head that no longer issues
        return cycle.out


@dataclass
class PreemptionCycle:
    """The preemptor's state over one cycle (module docstring), set up by ``__post_init__``:
    quota as admission left it (``ledger``), the cycle's starting usage that says who borrows
    (``base``), the live candidates (running workloads and reservations without pods), the
    capacity under eviction notice released on the plan, and the memos that skip hopeless
    searches."""

    name: str
    tenancy: Tenancy
    blocked: Sequence[PendingJob]
    plan: Plan
    ctx: CycleContext
    out: list[Preemption] = field(default_factory=list)
    #: Queue → its workload with preemptions pending this cycle (issued now, or victims still
    #: terminating). Kueue nominates one head per ClusterQueue per cycle, and a head pending
    #: preemption stays its queue's head until admitted (sticky, KEP-7157): one issuer per
    #: queue, the first in the queue's order.
    issuers: dict[str, JobId] = field(default_factory=dict)
    #: (queue, shape, priority) that found neither room nor targets: a later workload of the
    #: same kind finds no more (the cycle only binds and charges more), so it is skipped.
    hopeless: set[tuple] = field(default_factory=set)
    #: (queue, flavor) → (priority, GPUs) of workloads that could not fit the quota even with
    #: every candidate gone. A later workload of that queue with no higher priority and at least
    #: as many GPUs has no more candidates (policies/kueue/candidates.py: the sets only shrink as
    #: priority falls) and needs more quota: skipped until a preemption frees some.
    no_quota: dict[tuple[str, str], list[tuple[int, int]]] = field(default_factory=dict)
    #: (shape, flavor) with no room on the nodes without new victims, until a preemption.
    no_room: set[tuple] = field(default_factory=set)
    gpus: dict[JobId, dict[str, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        ctx, tenancy, book = self.ctx, self.tenancy, admission_book(self.ctx)
        ledger = QuotaLedger.from_running(tenancy, ctx.running, skip_evicting=True)
        # Who is borrowing, and so a candidate, is judged on the cycle's starting state, as Kueue
        # computes targets at nomination: a queue is not made a borrower by what it was admitted
        # this very cycle (that would evict its running work to make room for its new work).
        self.base = ledger.copy()
        # Workloads admitted in earlier cycles hold quota whether or not their pods run (Kueue's
        # QuotaReserved): part of who borrows, and candidates when their pods have not started.
        carried = ctx.admission.reserved
        waiting = {pj.job.id for pj in self.blocked} if carried else set()
        quota_only = reserved_candidates(book.records, carried, waiting)
        assigned = ctx.handoff.group_flavors or ctx.admission.group_flavors
        self.res = ResourceLedger.from_running(tenancy, ctx.running, skip_evicting=True, assigned=assigned)
        self.ledger = share_ledger(ledger, self.res)  # fair shares over cpu and memory too (kueue/share.py)
        # Every workload admitted this cycle holds its quota, placed or not (Kueue's quota
        # reservation): charging only the placed ones would show quota that admission already
        # gave away, and each pending workload would then try the nodes for nothing. A workload
        # whose pod sets landed on different flavors holds quota on each.
        for r in book.records:
            held = r.pending.job
            if not r.admitted or not held.total_gpus:
                continue
            by_flavor = pod_set_parts(held) or {r.flavor: held}
            charge(self.ledger, self.res, held, by_flavor)
            if held.id in carried:
                for f, part in by_flavor.items():
                    self.base.add(held.tenant, f, part.total_gpus)
        for rj in ctx.running:
            if rj.evicting:
                for b in rj.bindings:
                    self.plan.release_binding(b)
        self.live = {rj.job.id: rj for rj in ctx.running if not rj.evicting}
        self.releasing = len(self.live) < len(ctx.running)
        self.live.update((rj.job.id, rj) for rj in quota_only)
        self.quota_only_ids = {rj.job.id for rj in quota_only}
        # What the cycle starts from, the releasing capacity free and nothing claimed yet.
        self.start_ledger = self.ledger.copy() if self.releasing else self.ledger
        self.start_table = self.plan.table.copy() if self.releasing else self.plan.table

    # -- one refused workload -------------------------------------------------------------
    def process(self, rec: Admission) -> None:
        """Kueue's preemption step for one workload: try its flavors until one settles it."""
        job = rec.pending.job
        same = (job.tenant, job.shape_key, job.priority)
        if same in self.hopeless or job.tenant in self.issuers:
            return
        t = self.tenancy.tenant(job.tenant)
        flavors = self.ledger.candidate_flavors(job)
        if t is None or not flavors or job.total_gpus == 0:
            return
        # The flavor Kueue's flavor assigner chose at admission (whenCanPreempt, whenCanBorrow and
        # the modes of every flavor, policies/kueue/flavors.assign_flavor) is the one where
        # targets are searched.
        flavors = (rec.flavor,) if rec.flavor in flavors else flavors[:1]
        for flavor in flavors:
            if self._on_flavor(rec, flavor):
                return
        self.hopeless.add(same)

    def _on_flavor(self, rec: Admission, flavor: str) -> bool:
        """One flavor for ``rec``'s workload W: True when it settles W (it waits for capacity
        being released, claims it, or issues preemptions), False to try the next."""
        job = rec.pending.job
        # Pod sets assigned different flavors (admission hands them pinned): targets for the
        # usage of all of them at once, as Kueue computes one set for the whole assignment.
        parts = pod_set_parts(job)
        if not all(may_preempt(self.ledger, self.tenancy, job.tenant, f, part.total_gpus)
                   for f, part in (parts or {flavor: job}).items()):
            return False  # Kueue's NoFit: refused up front, no targets searched
        if parts is None and self._quota_hopeless(job, flavor):
            return False
        pinned = job if parts is not None else with_flavor(job, flavor)
        by_flavor = parts or {flavor: pinned}
        search = TargetSearch(pinned, flavor, self.plan, self.ctx, self.ledger, self.live, self.res,
                              self.base, parts, self.gpus)
        # Room without new victims comes only from workloads under eviction notice (quota that
        # holds kept from admission stays held for the cycle, as in Kueue).
        room = None
        if self.releasing and (job.shape_key, flavor) not in self.no_room:
            room = search.fits_without_victims()
            if room is None and search.quota_ok:
                # The nodes have no room for this shape; later workloads of the same shape find
                # none either until a preemption releases more.
                self.no_room.add((job.shape_key, flavor))
        if room is None and self.releasing and self._waits_for_release(pinned, by_flavor):
            # Kueue does not preempt again for a workload whose earlier victims are still
            # terminating: it fits once what is being released is gone (whoever claims it this
            # cycle), so it waits instead of evicting more. Without this, heads evicted one more
            # victim every cycle while others took the capacity released.
            self._wait(rec)
            return True
        if room is not None:
            # Quota and GPUs that workloads under eviction notice are releasing: claim them (so
            # no later workload counts them) and preempt nobody new.
            for b in room:
                self.plan.bind(b)
            charge(self.ledger, self.res, job, parts or {flavor: job})
            self._wait(rec)
            return True
        found = search.targets()
        if found is None:
            return False
        self._issue(job, found, parts or {flavor: job})
        return True

    def _wait(self, rec: Admission) -> None:
        job = rec.pending.job
        self.ctx.statuses.record(job.id, Status(StatusCode.NOT_ADMITTED, (rec.reason, RELEASING), self.name))
        self.issuers[job.tenant] = job.id

    def _issue(self, job: Job, found: tuple, parts: dict[str, Job]) -> None:
        """Bind W on the room its targets free, charge W and uncharge them, and issue the
        preemptions (a reservation without pods is released at once, losing no work)."""
        victims, bindings, why = found
        ctx, tenancy = self.ctx, self.tenancy
        for b in bindings:
            self.plan.bind(b)
        self.no_room.clear()
        self.no_quota.clear()  # victims leave: quota that was out of reach may not be any more
        for rj in victims:
            self.live.pop(rj.job.id)
            self.ledger.charge_bindings(rj.job.tenant, rj.bindings, -1)
            self.base.charge_bindings(rj.job.tenant, rj.bindings, -1)
            self.res.charge(rj.job.tenant, rj.bindings, -1)
            if rj.job.id in self.quota_only_ids:
                self.out.append(Preemption(rj.job.id, job.id, why[rj.job.id], 0.0, reserved=True))
                if ctx.handoff.quota_reserved is not None:
                    ctx.handoff.quota_reserved.pop(rj.job.id, None)
                ctx.statuses.record(rj.job.id, Status(StatusCode.NOT_ADMITTED, (
                    "Preempted", f"quota reservation released for {job.id} ({why[rj.job.id]})"), self.name))
                continue
            self.out.append(Preemption(rj.job.id, job.id, why[rj.job.id], tenancy.grace_s))
        charge(self.ledger, self.res, job, parts)
        ctx.statuses.record(job.id, Status(StatusCode.WAIT, (
            f"preempting {', '.join(v.job.id for v in victims)} on {', '.join(parts)}; "
            "admitted once they are evicted",), self.name, ctx.now + tenancy.grace_s))
        self.issuers[job.tenant] = job.id

    def _waits_for_release(self, job: Job, parts: dict[str, Job]) -> bool:
        """Would ``job`` (its pod sets on the flavors of ``parts``) fit the quota and the nodes
        with the capacity under eviction notice released, before anyone this cycle claimed any
        of it?"""
        if not all(quota_fits(self.start_ledger, self.tenancy, part, f, borrow=True)
                   for f, part in parts.items()):
            return False
        return not isinstance(self.ctx.profile.placer.fit(job, self.start_table, self.ctx), Status)

    def _quota_hopeless(self, job: Job, flavor: str) -> bool:
        """Quota alone rules ``job`` out on ``flavor``: neither as things stand nor with every
        candidate gone does it fit (checked before any search on the nodes, which is what the
        congested week spent its time on)."""
        tenancy, ledger, g = self.tenancy, self.ledger, job.total_gpus
        seen = self.no_quota.get((job.tenant, flavor), ())
        if any(job.priority <= p and g >= g0 for p, g0 in seen):
            return True
        if quota_fits(ledger, tenancy, job, flavor, borrow=True):
            return False
        if tenancy.fair_sharing:
            own, others = candidates(job, flavor, tenancy, ledger, self.live.values(), self.gpus)
            if quota_fits(without(ledger, [*own, *others]), tenancy, job, flavor, borrow=True):
                return False
        else:
            # Each of Kueue's attempts can at best remove every candidate valid for it (the
            # walk only skips more); removing usage never makes W fit less.
            request = {flavor: g}
            c = classify(job, request, tenancy, ledger, ledger, self.live.values(), self.gpus)
            for borrow in attempts(job, request, tenancy, ledger, c):
                gone = [x.rj for x in c.ordered() if not (borrow and x.variant == WITHOUT_BORROWING)]
                if quota_fits(without(ledger, gone), tenancy, job, flavor, borrow):
                    return False
        self.no_quota.setdefault((job.tenant, flavor), []).append((job.priority, g))
        return True
