"""Admission by quota: guaranteed nominal quota, borrowing within cohorts, lending limits.

The arithmetic is Kueue's hierarchical-cohort arithmetic, per flavor f (GPU model), over a tree
whose leaves are tenants and whose inner nodes are cohorts:

    guaranteed(x)    = max(0, subtree(x) − lending_limit(x))   if x has a lending limit, else 0
    subtree(tenant)  = nominal(tenant)
    subtree(cohort)  = nominal(cohort) + Σ_children (subtree(child) − guaranteed(child))
    usage(cohort)    = Σ_children max(0, usage(child) − guaranteed(child))
    available(root)  = subtree(root) − usage(root)
    available(x)     = max(0, guaranteed(x) − usage(x))                       (what x keeps)
                     + min(available(parent),                                 (what the pool has)
                           subtree(x) − guaranteed(x) − max(0, usage(x) − guaranteed(x))
                           + borrowing_limit(x))                              (if x has a limit)

The guaranteed part of a tenant is never lent; a cohort's pool holds only what its children may
lend, and a borrowing limit caps how far above its own contribution a node may draw.

Admission of a job of g GPUs for tenant t, trying t's flavors in order:

1. usage(t, f) + g ≤ nominal(t, f) and g ≤ available(t, f): admitted on its guarantee. When
   borrowers hold the nominal quota (g > available), the job waits (WaitingForCohortCapacity)
   while reclaim preemption takes it back (policies/preemption.py), as Kueue does: admitting it
   on free GPUs before the borrowers are gone would lend more than a lending limit allows.
2. otherwise, over the flavors in order: beyond nominal + borrowing limit → ExceedsBorrowingLimit;
   no cohort → ExceedsNominalQuota; g ≤ available(t, f) → admitted as a borrower; else
   WaitingForCohortCapacity. The first flavor's reason is reported when none admits.

Admission runs in two tiers over the fair-share order the admitter is given (who is charged
first decides who gets the quota): first every job that fits its tenant's nominal quota, then the
borrowers, against what the first tier left. Admitted jobs are charged as they are admitted, so
two jobs of one cycle never spend the same quota. The admitter decides *who*; it returns the
admitted jobs in the order they were pending and records each one's tier and fair-share rank.
The order phase (``GuaranteedFirst``, policies/fairshare.py) then puts guaranteed jobs before
borrowers, each tier in fair-share order, or a borrower would take back the GPUs just reclaimed.
An admitted job's GPU requests are pinned to the flavor it was admitted on, so placement puts it
on the GPUs its quota paid for.

Priority budget: a tenant's GPUs in raised (above the default) or non-preemptible classes are
capped by ``priority_budget_gpus``. Running jobs claim the budget in start order; a pending job
that would exceed it is admitted as the default class.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from gpufleet.engine.phases.order import Orderer, PriorityFifo
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.status import Shortfall, Status, StatusCode
from gpufleet.engine.types import Admission, CycleContext, PendingJob, RunningJob
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job
from gpufleet.model.tenancy import GPU_RESOURCE, FlavorQuota, Tenancy

Node = tuple[str, str]  # ("t", tenant) or ("c", cohort)

EXCEEDS_NOMINAL = "ExceedsNominalQuota"
EXCEEDS_BORROWING = "ExceedsBorrowingLimit"
WAITING_FOR_COHORT = "WaitingForCohortCapacity"
NO_QUOTA_FOR_FLAVOR = "NoQuotaForFlavor"
UNKNOWN_TENANT = "UnknownTenant"


def quota_key(flavor: str, resource: str) -> str:
    """The ledger's flavor key for ``resource`` of ``flavor``: GPUs are keyed by the flavor
    alone (the profiles' ledgers count GPUs only), any other resource ``flavor/resource``, so one
    ledger can carry every resource of a ClusterQueue (adapters/kubernetes/kueue_quota.py)."""
    return flavor if resource == GPU_RESOURCE else f"{flavor}/{resource}"


def binding_flavor(b: PodBinding, default: str = "") -> str:
    models = b.request.gpu_models
    return models[0] if len(models) == 1 else default


def job_gpus_by_flavor(bindings: Iterable[PodBinding], default: str = "") -> dict[str, int]:
    out: dict[str, int] = {}
    for b in bindings:
        f = binding_flavor(b, default)
        out[f] = out.get(f, 0) + b.request.gpus
    return out


def job_flavor(job: Job) -> str | None:
    """The single GPU model a job is pinned to, or None when it allows several or any."""
    models = {m for ps in job.pod_sets if ps.request.gpus > 0 for m in ps.request.gpu_models}
    pinned = [ps.request.gpu_models for ps in job.pod_sets if ps.request.gpus > 0]
    if pinned and all(len(m) == 1 for m in pinned) and len(models) == 1:
        return next(iter(models))
    return None


def with_flavor(job: Job, flavor: str) -> Job:
    """``job`` with every GPU-asking pod set pinned to ``flavor``."""
    if job_flavor(job) == flavor:
        return job
    sets = tuple(replace(ps, request=replace(ps.request, gpu_models=(flavor,)))
                 if ps.request.gpus > 0 else ps for ps in job.pod_sets)
    return replace(job, pod_sets=sets)


class QuotaLedger:
    """GPU usage per (tenant, flavor) against the quota tree; see the module docstring."""

    def __init__(self, tenancy: Tenancy) -> None:
        self.tenancy = tenancy
        self.usage: dict[tuple[str, str], int] = {}
        self._children: dict[str, list[Node]] = {}
        for c in tenancy.cohorts:
            if c.parent is not None:
                self._children.setdefault(c.parent, []).append(("c", c.name))
        for t in tenancy.tenants:
            if t.cohort is not None:
                self._children.setdefault(t.cohort, []).append(("t", t.name))
        self._static: dict[tuple[Node, str], tuple[int, int]] = {}
        #: ``available`` per (node, flavor) at the current usage; any ``add`` clears it. Admission
        #: asks it for every pending job within its nominal quota, mostly between two charges.
        self._available: dict[tuple[Node, str], int] = {}

    @classmethod
    def from_running(cls, tenancy: Tenancy, running: Sequence[RunningJob],
                     skip_evicting: bool = False) -> QuotaLedger:
        led = cls(tenancy)
        for rj in running:
            if skip_evicting and rj.evicting:
                continue
            led.charge_bindings(rj.job.tenant, rj.bindings)
        return led

    def copy(self) -> QuotaLedger:
        out = QuotaLedger.__new__(QuotaLedger)
        out.tenancy, out._children, out._static = self.tenancy, self._children, self._static
        out.usage = dict(self.usage)
        out._available = dict(self._available)
        return out

    def default_flavor(self, tenant: str) -> str:
        t = self.tenancy.tenant(tenant)
        return t.quotas[0][0] if t is not None and t.quotas else ""

    def charge_bindings(self, tenant: str, bindings: Iterable[PodBinding], sign: int = 1) -> None:
        for f, g in job_gpus_by_flavor(bindings, self.default_flavor(tenant)).items():
            self.add(tenant, f, sign * g)

    def add(self, tenant: str, flavor: str, gpus: int) -> None:
        key = (tenant, flavor)
        self.usage[key] = self.usage.get(key, 0) + gpus
        if self._available:
            self._available.clear()

    def used(self, tenant: str, flavor: str) -> int:
        return self.usage.get((tenant, flavor), 0)

    # -- the tree ---------------------------------------------------------------------------
    def _quota(self, node: Node, flavor: str) -> FlavorQuota:
        if node[0] == "t":
            t = self.tenancy.tenant(node[1])
            return t.quota(flavor) if t is not None else FlavorQuota(0, 0, 0)
        c = self.tenancy.cohort(node[1])
        return c.quota(flavor) if c is not None else FlavorQuota()

    def _parent(self, node: Node) -> Node | None:
        if node[0] == "t":
            t = self.tenancy.tenant(node[1])
            return ("c", t.cohort) if t is not None and t.cohort else None
        c = self.tenancy.cohort(node[1])
        return ("c", c.parent) if c is not None and c.parent else None

    def _subtree_and_guaranteed(self, node: Node, flavor: str) -> tuple[int, int]:
        key = (node, flavor)
        if key not in self._static:
            q = self._quota(node, flavor)
            sub = q.nominal
            if node[0] == "c":
                for ch in self._children.get(node[1], ()):
                    s, g = self._subtree_and_guaranteed(ch, flavor)
                    sub += s - g
            lend = q.lending_limit
            self._static[key] = (sub, max(0, sub - lend) if lend is not None else 0)
        return self._static[key]

    def _usage(self, node: Node, flavor: str) -> int:
        if node[0] == "t":
            return self.used(node[1], flavor)
        total = 0
        for ch in self._children.get(node[1], ()):
            _, g = self._subtree_and_guaranteed(ch, flavor)
            total += max(0, self._usage(ch, flavor) - g)
        return total

    def available(self, node: Node, flavor: str) -> int:
        """GPUs of ``flavor`` node ``x`` could still admit, counting what it may borrow."""
        known = self._available.get((node, flavor))
        if known is not None:
            return known
        self._available[(node, flavor)] = value = self._compute_available(node, flavor)
        return value

    def _compute_available(self, node: Node, flavor: str) -> int:
        sub, guar = self._subtree_and_guaranteed(node, flavor)
        use = self._usage(node, flavor)
        parent = self._parent(node)
        if parent is None:
            return sub - use
        local = max(0, guar - use)
        from_parent = self.available(parent, flavor)
        limit = self._quota(node, flavor).borrowing_limit
        if limit is not None:
            stored = sub - guar
            used_in_parent = max(0, use - guar)
            from_parent = min(from_parent, stored - used_in_parent + limit)
        return local + from_parent

    # Public views of the tree for the kueue profile's borrowing level (policies/kueue/admit.py).
    def node_usage(self, node: Node, flavor: str) -> int:
        """usage(x) of the module docstring."""
        return self._usage(node, flavor)

    def node_capacity(self, node: Node, flavor: str) -> int:
        """subtree(x): what x's own subtree holds without borrowing from x's parent."""
        return self._subtree_and_guaranteed(node, flavor)[0]

    def parent(self, node: Node) -> Node | None:
        return self._parent(node)

    def node_guaranteed(self, node: Node, flavor: str) -> int:
        """guaranteed(x): what x keeps for its own subtree (never lent to its parent)."""
        return self._subtree_and_guaranteed(node, flavor)[1]

    def node_quota(self, node: Node, flavor: str) -> FlavorQuota:
        """x's own quota entry for ``flavor`` (a tenant's nominal and limits, or a cohort's)."""
        return self._quota(node, flavor)

    def children(self, cohort: str) -> tuple[Node, ...]:
        """The cohorts and tenants whose parent is ``cohort``."""
        return tuple(self._children.get(cohort, ()))

    # -- admission --------------------------------------------------------------------------
    def candidate_flavors(self, job: Job) -> tuple[str, ...]:
        t = self.tenancy.tenant(job.tenant)
        own = tuple(f for f, _ in t.quotas) if t is not None else ()
        allowed = {m for ps in job.pod_sets if ps.request.gpus > 0 for m in ps.request.gpu_models}
        return tuple(f for f in own if not allowed or f in allowed)

    def decide(self, job: Job) -> tuple[str | None, tuple[str, ...]]:
        """(flavor, ()) when ``job`` may be admitted now, else (None, (reason code, detail))."""
        tenant = self.tenancy.tenant(job.tenant)
        g = job.total_gpus
        if tenant is None:
            return None, (UNKNOWN_TENANT, f"tenant {job.tenant!r} has no queue in the tenancy config")
        flavors = self.candidate_flavors(job)
        if g == 0:
            return (flavors[0] if flavors else ""), ()
        if not flavors:
            return None, (NO_QUOTA_FOR_FLAVOR,
                          f"tenant {job.tenant!r} has no quota for the GPU models the job allows")
        for f in flavors:
            if (self.used(job.tenant, f) + g <= tenant.quota(f).nominal
                    and g <= self.available(("t", job.tenant), f)):
                return f, ()
        first: tuple[str, ...] | None = None
        for f in flavors:
            q = tenant.quota(f)
            used = self.used(job.tenant, f)
            head = f"tenant {job.tenant!r} uses {used} of {q.nominal} nominal {f} GPUs; job needs {g}"
            if q.borrowing_limit is not None and used + g > q.nominal + q.borrowing_limit:
                why: tuple[str, ...] = (EXCEEDS_BORROWING, f"{head}; borrowing limit {q.borrowing_limit}")
            elif tenant.cohort is None:
                why = (EXCEEDS_NOMINAL, f"{head}; no cohort to borrow from")
            elif g <= self.available(("t", job.tenant), f):
                return f, ()
            else:
                avail = max(0, self.available(("t", job.tenant), f))
                if used + g <= q.nominal:
                    why = (WAITING_FOR_COHORT, f"{head}; borrowers in cohort {tenant.cohort!r} hold "
                           f"its nominal quota ({avail} available now): reclaiming it")
                else:
                    why = (WAITING_FOR_COHORT, f"{head}; cohort {tenant.cohort!r} can lend {avail} now")
            first = first or why
        assert first is not None
        return None, first

    def shortfalls(self, tenant: str, flavor: str, demand: Mapping[str, int]) -> tuple[Shortfall, ...]:
        """What ``demand`` (resource → amount) lacks in ``flavor`` of ``tenant``'s quota now: a
        Shortfall per resource r with d > available(t, key) (the module docstring's available,
        which counts what the cohort may lend within the borrowing limit), () when every one
        fits, within nominal or by borrowing. Without a cohort available = nominal − used, so
        the test is used + d ≤ nominal and the shortfall used + d − nominal (more than d when
        usage is above a nominal quota lowered since); in a cohort a negative available is 0."""
        node: Node = ("t", tenant)
        in_cohort = self._parent(node) is not None
        out = []
        for r, d in demand.items():
            avail = self.available(node, quota_key(flavor, r))
            if d > avail:
                out.append(Shortfall(r, flavor, d, max(0, avail) if in_cohort else avail))
        return tuple(out)

    def within_nominal(self, tenant: str, flavor: str, extra: int = 0) -> bool:
        t = self.tenancy.tenant(tenant)
        return t is not None and self.used(tenant, flavor) + extra <= t.quota(flavor).nominal


def raised(tenancy: Tenancy, job: Job) -> bool:
    """Does the job's class count against the tenant's priority budget?"""
    return job.priority > tenancy.default_priority or not tenancy.preemptible(job.priority)


def protected_running(tenancy: Tenancy, running: Sequence[RunningJob]) -> set[JobId]:
    """Running jobs whose raised class is honoured: within the tenant's budget, in start order."""
    used: dict[str, int] = {}
    out: set[JobId] = set()
    for rj in sorted(running, key=lambda r: (r.start_time, r.job.id)):
        job = rj.job
        if not raised(tenancy, job):
            continue
        t = tenancy.tenant(job.tenant)
        budget = t.priority_budget_gpus if t is not None else None
        if budget is None or used.get(job.tenant, 0) + job.total_gpus <= budget:
            used[job.tenant] = used.get(job.tenant, 0) + job.total_gpus
            out.add(job.id)
    return out


def effective_priority(tenancy: Tenancy, job: Job, protected: set[JobId]) -> int:
    return job.priority if job.id in protected or not raised(tenancy, job) else tenancy.default_priority


#: One pending job as the admitter saw it, in admission order: the engine's typed hand-off from
#: admit to later phases (``CycleContext.handoff.admissions``), with its tier and fair-share rank.
AdmissionRecord = Admission


@dataclass(slots=True)
class AdmissionBook:
    """What admission decided this cycle: the records in admission order. The one thing the quota
    policies hand to later phases; it lives on the engine's typed hand-off."""

    records: list[AdmissionRecord] = field(default_factory=list)

    def by_id(self) -> dict[JobId, AdmissionRecord]:
        return {r.pending.job.id: r for r in self.records}


def admission_book(ctx: CycleContext) -> AdmissionBook:
    """This cycle's admission book (empty when no quota admitter ran)."""
    return AdmissionBook(ctx.handoff.admissions)


def _keep_admission_book(ctx: CycleContext, book: AdmissionBook) -> None:
    ctx.handoff.admissions = book.records


class QuotaAdmitter:
    """Guaranteed quota plus borrowing (module docstring), in the given fair-share order.

    ``borrowing=False`` turns the cohort off: each tenant gets its nominal quota and nothing more
    (the static-partition baseline).
    """

    def __init__(self, order: Orderer | None = None, borrowing: bool = True) -> None:
        self.order = order or PriorityFifo()
        self.borrowing = borrowing
        self.name = "quota" if borrowing else "static-quota"

    def records(self, ctx: CycleContext) -> list[AdmissionRecord]:
        """This cycle's admission records, handed from admit to preempt on the cycle context
        (the policy object itself holds no state between calls)."""
        return admission_book(ctx).records

    def admit(self, pending: Sequence[PendingJob], ctx: CycleContext) -> list[PendingJob]:
        tenancy: Tenancy | None = ctx.tenancy
        if tenancy is None:
            return list(pending)
        ledger = QuotaLedger.from_running(tenancy, ctx.running)
        protected = protected_running(tenancy, ctx.running)
        budget_used: dict[str, int] = {}
        for rj in ctx.running:
            if rj.job.id in protected:
                budget_used[rj.job.tenant] = budget_used.get(rj.job.tenant, 0) + rj.job.total_gpus
        guaranteed: list[PendingJob] = []
        borrowing: list[PendingJob] = []
        records: list[AdmissionRecord] = []
        ordered = self.order.order(list(pending), ctx)
        rank = {pj.job.id: i for i, pj in enumerate(ordered)}
        # Tier 1: every job that fits its tenant's nominal quota, so that guaranteed demand is
        # charged before anyone borrows. Tier 2: the rest, borrowing what tier 1 left unused.
        tier2: list[tuple[PendingJob, Job]] = []
        for pj in ordered:
            job = pj.job
            t = tenancy.tenant(job.tenant)
            if raised(tenancy, job) and t is not None and t.priority_budget_gpus is not None:
                if budget_used.get(job.tenant, 0) + job.total_gpus > t.priority_budget_gpus:
                    job = replace(job, priority=tenancy.default_priority)
                else:
                    budget_used[job.tenant] = budget_used.get(job.tenant, 0) + job.total_gpus
            flavor = next((f for f in ledger.candidate_flavors(job)
                           if ledger.within_nominal(job.tenant, f, job.total_gpus)
                           and job.total_gpus <= ledger.available(("t", job.tenant), f)), None)
            if flavor is None or t is None:
                tier2.append((pj, job))
                continue
            pinned = with_flavor(job, flavor) if job.total_gpus else job
            ledger.add(job.tenant, flavor, job.total_gpus)
            guaranteed.append(PendingJob(pinned, pj.bound))
            records.append(AdmissionRecord(guaranteed[-1], True, flavor, tier=0, rank=rank[job.id]))
        for pj, job in tier2:
            flavor, why = ledger.decide(job)
            if flavor is not None and not self.borrowing and not ledger.within_nominal(
                    job.tenant, flavor, job.total_gpus):
                flavor, why = None, (EXCEEDS_NOMINAL, f"tenant {job.tenant!r} would exceed its "
                                     f"nominal {flavor} quota; static partitions do not borrow")
            if flavor is None:
                ctx.statuses.record(job.id, Status(StatusCode.NOT_ADMITTED, why, self.name))
                cands = ledger.candidate_flavors(job)
                records.append(AdmissionRecord(PendingJob(job, pj.bound), False,
                                               cands[0] if cands else "", why[0], rank=rank[job.id]))
                continue
            pinned = with_flavor(job, flavor) if flavor else job
            ledger.add(job.tenant, flavor, job.total_gpus)
            out = PendingJob(pinned, pj.bound)
            borrowing.append(out)
            records.append(AdmissionRecord(out, True, flavor, tier=1, rank=rank[job.id]))
        _keep_admission_book(ctx, AdmissionBook(records))
        admitted = {p.job.id: p for p in guaranteed + borrowing}
        return [admitted[pj.job.id] for pj in pending if pj.job.id in admitted]
