"""Tenants, cohorts, quotas and priority classes: plain frozen data.

The shape follows Kueue (ClusterQueue → *tenant*, Cohort → *cohort*, ResourceFlavor → GPU model):

* A **tenant** queue belongs to at most one cohort; cohorts may have a parent cohort, so an
  organisation can be a cohort of team cohorts (org > team > tenant).
* Per **flavor** (a GPU model name, e.g. ``H100-80GB``) a tenant has a ``nominal`` quota (GPUs it
  is guaranteed), an optional ``borrowing_limit`` (GPUs it may use *above* nominal, from its
  cohort's unused capacity; None = no limit) and an optional ``lending_limit`` (GPUs of its unused
  nominal quota the cohort may lend to others; None = all of it).
* A cohort may carry its own quota per flavor too: its ``nominal`` adds capacity owned by the
  cohort itself, and its limits bound what the whole subtree borrows from / lends to its parent.
* **Priority classes** name a priority value and whether jobs of that class may be preempted.

Where we differ from Kueue, and why:

* Our profiles count GPU quota only. CPU and memory are node constraints the placer enforces;
  quota on them (``resources``, imported from Kueue) is enforced by the ``kueue`` profile.
* A job inside its tenant's nominal quota is always admitted, even while borrowers hold the
  capacity; reclaim preemption then takes it back. Kueue folds the same idea into "fits with
  preemption"; stating the guarantee as an admission rule makes the reason a user sees simpler.
* Priority applies within a tenant only; between tenants fair share decides (Kueue lets priority
  cross queues in a cohort, which is exactly what gaming tenants exploit, see policies/gaming.py).
  A tenant's GPUs in raised or non-preemptible classes are capped by ``priority_budget_gpus``.
* Borrowed capacity is always reclaimable: a job running above its tenant's nominal quota can be
  reclaimed whatever its class, so "non-preemptible" cannot be used to keep borrowed GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True, slots=True)
class FlavorQuota:
    """GPUs of one flavor: guaranteed (nominal), may borrow above it, may lend of it."""

    nominal: int = 0
    borrowing_limit: int | None = None
    lending_limit: int | None = None


NO_QUOTA = FlavorQuota(0, 0, 0)

#: The GPUs' name in ``resource_groups`` (Kueue's resource name; a named resource "gpu" is another).
GPU_RESOURCE = "nvidia.com/gpu"


@dataclass(frozen=True, slots=True)
class PriorityClass:
    name: str
    value: int
    preemptible: bool = True


WITHIN_CLUSTER_QUEUE = ("Never", "LowerPriority", "LowerOrNewerEqualPriority")
RECLAIM_WITHIN_COHORT = ("Never", "LowerPriority", "Any")
BORROW_WITHIN_COHORT = ("Never", "LowerPriority")
QUEUEING_STRATEGIES = ("BestEffortFIFO", "StrictFIFO")
FAIR_SHARING_STRATEGIES = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
FLAVOR_PREFERENCES = ("BorrowingOverPreemption", "PreemptionOverBorrowing")


@dataclass(frozen=True, slots=True)
class KueueQueuePolicy:
    """A ClusterQueue's own rules, used by the ``kueue`` profile only (policies/kueue/).

    Kueue's defaults: no preemption of any kind, BestEffortFIFO queueing."""

    within_cluster_queue: str = "Never"
    reclaim_within_cohort: str = "Never"
    borrow_within_cohort: str = "Never"
    #: borrowWithinCohort may preempt only workloads with priority ≤ this (None: any lower).
    max_priority_threshold: int | None = None
    queueing_strategy: str = "BestEffortFIFO"
    #: Flavor fungibility: on a flavor where the job fits only by borrowing, ``Borrow`` takes it,
    #: ``TryNextFlavor`` looks for a later flavor where it fits without borrowing first.
    when_can_borrow: str = "Borrow"
    #: Where it fits only by preempting: ``TryNextFlavor`` (Kueue's default) or ``Preempt``.
    when_can_preempt: str = "TryNextFlavor"
    #: Kueue's admission fair sharing (ClusterQueue ``admissionScope.admissionMode:
    #: UsageBasedAdmissionFairSharing``): the queue's workloads are ordered by their LocalQueue's
    #: decayed usage first (policies/kueue/afs.py).
    admission_fair_sharing: bool = False
    #: ``flavorFungibility.preference`` when every flavor needs borrowing or preemption: None or
    #: ``BorrowingOverPreemption`` (Kueue's default: the better preemption mode, then the lower
    #: borrowing level) or ``PreemptionOverBorrowing`` (the lower level, then the better mode).
    #: Kueue allows it only with both whenCanBorrow and whenCanPreempt TryNextFlavor.
    preference: str | None = None

    def __post_init__(self) -> None:
        checks = ((self.within_cluster_queue, WITHIN_CLUSTER_QUEUE, "withinClusterQueue"),
                  (self.reclaim_within_cohort, RECLAIM_WITHIN_COHORT, "reclaimWithinCohort"),
                  (self.borrow_within_cohort, BORROW_WITHIN_COHORT, "borrowWithinCohort"),
                  (self.queueing_strategy, QUEUEING_STRATEGIES, "queueingStrategy"),
                  (self.when_can_borrow, ("Borrow", "TryNextFlavor"), "whenCanBorrow"),
                  (self.when_can_preempt, ("Preempt", "TryNextFlavor"), "whenCanPreempt"))
        for value, allowed, name in checks:
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
        if self.preference not in (None, *FLAVOR_PREFERENCES):
            raise ValueError(f"preference must be one of {', '.join(FLAVOR_PREFERENCES)}, "
                             f"not {self.preference!r}")


@dataclass(frozen=True, slots=True)
class TenantQueue:
    name: str
    cohort: str | None = None
    #: (flavor, quota) pairs in the order flavors are tried for this tenant.
    quotas: tuple[tuple[str, FlavorQuota], ...] = ()
    #: Fair-share weight: a tenant with weight 2 is entitled to twice the share of one with 1.
    weight: float = 1.0
    #: GPUs this tenant may run at once in classes above the default or marked non-preemptible;
    #: beyond it, jobs are treated as the default class. None = no budget.
    priority_budget_gpus: int | None = None
    #: What Kueue would do with this queue (the ``kueue`` profile reads it; ours ignores it).
    kueue: KueueQueuePolicy = KueueQueuePolicy()
    #: Quota on resources other than GPUs, (flavor, resource, quota): ``cpu`` (cores),
    #: ``memory_gb`` or any named resource. The ``kueue`` profile enforces cpu and memory.
    resources: tuple[tuple[str, str, FlavorQuota], ...] = ()
    #: Kueue's resource groups: the resources each covers (``nvidia.com/gpu``, ``cpu``,
    #: ``memory_gb``, a named one); a workload takes one flavor per group. Empty: one group over
    #: everything, the GPU flavors carrying every resource. A group without GPUs has its own
    #: flavors (names in ``resources`` that need not be GPU models), assigned apart from them.
    resource_groups: tuple[tuple[str, ...], ...] = ()

    def quota(self, flavor: str) -> FlavorQuota:
        for f, q in self.quotas:
            if f == flavor:
                return q
        return NO_QUOTA

    @property
    def nominal_gpus(self) -> int:
        return sum(q.nominal for _, q in self.quotas)


@dataclass(frozen=True, slots=True)
class Cohort:
    name: str
    parent: str | None = None
    quotas: tuple[tuple[str, FlavorQuota], ...] = ()
    #: Non-GPU quota owned by the cohort, (flavor, resource, quota), as on TenantQueue.
    resources: tuple[tuple[str, str, FlavorQuota], ...] = ()
    #: Fair-sharing weight of the cohort inside its parent (Kueue's Cohort .spec.fairSharing).
    weight: float = 1.0
    #: Resource groups, as on TenantQueue.
    resource_groups: tuple[tuple[str, ...], ...] = ()

    def quota(self, flavor: str) -> FlavorQuota:
        for f, q in self.quotas:
            if f == flavor:
                return q
        return FlavorQuota(0, None, None)


@dataclass(frozen=True, slots=True)
class Tenancy:
    tenants: tuple[TenantQueue, ...]
    cohorts: tuple[Cohort, ...] = ()
    priority_classes: tuple[PriorityClass, ...] = ()
    #: Half-life of the decayed usage fair share remembers, seconds.
    half_life_s: float = 7 * 86400.0
    #: Weight of decayed history against current allocation in the fair-share score, in [0, 1].
    usage_weight: float = 0.5
    #: Notice a preempted job gets before eviction, seconds (time to write a checkpoint).
    grace_s: float = 0.0
    #: Priority value of the default class (jobs above it count against priority budgets).
    default_priority: int = 0
    #: Kueue's fair sharing (the ``kueue`` profile): admission by lowest weighted share, and
    #: preemption across queues by these strategies, in order.
    fair_sharing: bool = False
    fair_sharing_strategies: tuple[str, ...] = FAIR_SHARING_STRATEGIES
    #: Kueue's ``admissionFairSharing.usageSamplingInterval``, seconds: the entry penalty of an
    #: admitted workload is its usage over one interval (policies/kueue/afs.py). Its half-life is
    #: ``half_life_s``.
    afs_sampling_s: float = 300.0
    #: LocalQueue fair-sharing weights (Kueue's LocalQueue ``spec.fairSharing.weight``), by the
    #: name jobs carry in their ``kueue.x-k8s.io/queue-name`` label; 1 when not listed.
    local_queue_weights: tuple[tuple[str, float], ...] = ()
    _by_name: dict[str, TenantQueue] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._by_name.update({t.name: t for t in self.tenants})

    def tenant(self, name: str) -> TenantQueue | None:
        return self._by_name.get(name)

    def cohort(self, name: str) -> Cohort | None:
        return next((c for c in self.cohorts if c.name == name), None)

    @property
    def flavors(self) -> tuple[str, ...]:
        """Every flavor named by any quota, in first-mention order."""
        seen: dict[str, None] = {}
        for t in self.tenants:
            for f, _ in t.quotas:
                seen.setdefault(f, None)
        return tuple(seen)

    def with_quota(self, tenant: str, flavor: str, q: FlavorQuota) -> Tenancy:
        """This tenancy with ``tenant``'s quota for ``flavor`` set to ``q`` (a flavor the tenant had
        no quota for is added last, so the order flavors are tried in stays as it was). KeyError
        when there is no such tenant. ``_by_name`` is rebuilt, never shared with ``self``."""
        if self.tenant(tenant) is None:
            raise KeyError(tenant)
        tenants = []
        for t in self.tenants:
            if t.name == tenant:
                quotas = tuple((f, q if f == flavor else old) for f, old in t.quotas)
                if not any(f == flavor for f, _ in t.quotas):
                    quotas += ((flavor, q),)
                t = replace(t, quotas=quotas)
            tenants.append(t)
        return replace(self, tenants=tuple(tenants), _by_name={})

    def priority_class(self, value: int) -> PriorityClass | None:
        return next((p for p in self.priority_classes if p.value == value), None)

    def preemptible(self, priority: int) -> bool:
        pc = self.priority_class(priority)
        return pc.preemptible if pc is not None else True

    def entitlement_pct(self, tenant: str) -> float:
        """A tenant's nominal GPUs as a percentage of all tenants' nominal GPUs."""
        total = sum(t.nominal_gpus for t in self.tenants)
        t = self.tenant(tenant)
        return 100.0 * t.nominal_gpus / total if t is not None and total else 0.0
