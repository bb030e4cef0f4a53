"""The ``tenancy:`` section of a scenario file, validated with pydantic.

```yaml
tenancy:
  half_life_h: 24          # decayed-usage half-life for fair share
  usage_weight: 0.5        # history vs current allocation in the fair-share score
  grace_s: 120             # notice before a preempted job is evicted (time to checkpoint)
  priority_classes:
    - {name: low, value: -10}
    - {name: normal, value: 0}
    - {name: high, value: 100, preemptible: false}
  cohorts:
    - {name: org}
    - {name: ml, parent: org}
  tenants:
    - name: research
      cohort: ml
      weight: 2
      priority_budget_gpus: 32
      quotas: {H100-80GB: {nominal: 96, borrowing_limit: 64, lending_limit: 48}}
      # Read by the `kueue` profile only (Kueue's ClusterQueue fields; docs/kueue.md):
      resources: {H100-80GB: {cpu: {nominal: 1152}, memory_gb: {nominal: 16384}}}
      kueue:
        within_cluster_queue: LowerPriority      # Never | LowerPriority | LowerOrNewerEqualPriority
        reclaim_within_cohort: Any               # Never | LowerPriority | Any
        borrow_within_cohort: LowerPriority      # Never | LowerPriority
        max_priority_threshold: 100
        queueing_strategy: StrictFIFO            # BestEffortFIFO | StrictFIFO
        when_can_borrow: Borrow                  # Borrow | TryNextFlavor
        when_can_preempt: TryNextFlavor          # Preempt | TryNextFlavor
  fair_sharing: {preemption_strategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]}
```
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gpufleet.model.catalog import UnknownGpuModel, canonical_gpu_name
from gpufleet.model.tenancy import (
    FAIR_SHARING_STRATEGIES,
    GPU_RESOURCE,
    Cohort,
    FlavorQuota,
    KueueQueuePolicy,
    PriorityClass,
    Tenancy,
    TenantQueue,
)


class _Strict(BaseModel):
    #: allow_inf_nan=False: `.nan`/`.inf` (half_life_h, weight, grace_s) are rejected at load.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class QuotaSpec(_Strict):
    nominal: int = Field(default=0, ge=0)
    borrowing_limit: int | None = Field(default=None, ge=0)
    lending_limit: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _lend_within_nominal(self) -> QuotaSpec:
        if self.lending_limit is not None and self.lending_limit > self.nominal:
            raise ValueError(f"lending_limit ({self.lending_limit}) must not exceed nominal ({self.nominal})")
        return self

    def build(self) -> FlavorQuota:
        return FlavorQuota(self.nominal, self.borrowing_limit, self.lending_limit)


def _flavors(v: dict[str, QuotaSpec]) -> dict[str, QuotaSpec]:
    return {canonical_gpu_name(k): q for k, q in v.items()}


class ResourceQuotaSpec(_Strict):
    """Quota on cpu (cores), memory_gb or a named resource: fractional amounts allowed."""

    nominal: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    borrowing_limit: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    lending_limit: float | None = Field(default=None, ge=0, allow_inf_nan=False)

    def build(self) -> FlavorQuota:
        return FlavorQuota(self.nominal, self.borrowing_limit, self.lending_limit)  # type: ignore[arg-type]


def _resource_flavors(v: dict[str, dict[str, ResourceQuotaSpec]]) -> dict[str, dict[str, ResourceQuotaSpec]]:
    """GPU model names in canonical form; any other name is a flavor of a resource group
    without GPUs (``_groups_hold`` checks it is one)."""
    out: dict[str, dict[str, ResourceQuotaSpec]] = {}
    for k, q in v.items():
        try:
            out[canonical_gpu_name(k)] = q
        except UnknownGpuModel:
            out[k] = q
    return out


def _groups_hold(name: str, quotas: dict[str, QuotaSpec], resources: dict[str, dict[str, ResourceQuotaSpec]],
                 groups: list[list[str]]) -> None:
    """Kueue's rules for resource groups: a resource in at most one group, ``gpu`` quota only in
    the group covering ``gpu``, each flavor in one group; a flavor that is not a GPU model carries
    only resources of groups without ``gpu``."""
    seen: dict[str, int] = {}
    for i, g in enumerate(groups):
        if not g:
            raise ValueError(f"{name}: resource_groups[{i}] covers no resource")
        for r in g:
            if r in seen:
                raise ValueError(f"{name}: resource {r!r} is in resource_groups[{seen[r]}] and [{i}]")
            seen[r] = i
    if groups and quotas and GPU_RESOURCE not in seen:
        raise ValueError(f"{name}: GPU quota needs a resource group covering gpu")
    group_of = {f: {seen.get(GPU_RESOURCE)} for f in quotas} if groups else {}
    for f, rs in resources.items():
        if not _is_gpu_model(f):
            if not groups:
                raise ValueError(f"{name}: flavor {f!r} is not a GPU model in the catalog; quota on a "
                                 "flavor without GPUs needs resource_groups (a group without gpu)")
            bad = [r for r in rs if seen.get(r) is None or seen.get(r) == seen.get(GPU_RESOURCE)]
            if bad:
                raise ValueError(f"{name}: flavor {f!r} is not a GPU model, so it can only carry resources "
                                 f"of a group without gpu; {bad[0]!r} is not in one")
        if groups:
            for r in rs:
                if r not in seen:
                    raise ValueError(f"{name}: resource {r!r} of flavor {f!r} is in no resource group")
            group_of.setdefault(f, set()).update(seen[r] for r in rs)
    for f, gs in group_of.items():
        if len(gs) > 1:
            raise ValueError(f"{name}: flavor {f!r} is in more than one resource group, which Kueue forbids")


def _is_gpu_model(name: str) -> bool:
    try:
        canonical_gpu_name(name)
    except UnknownGpuModel:
        return False
    return True


def _resources(v: dict[str, dict[str, ResourceQuotaSpec]]) -> tuple[tuple[str, str, FlavorQuota], ...]:
    return tuple((f, r, q.build()) for f, qs in v.items() for r, q in qs.items())


class KueueSpec(_Strict):
    """A ClusterQueue's Kueue rules (model/tenancy.py KueueQueuePolicy), read by ``kueue``."""

    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = "Never"
    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] = "Never"
    borrow_within_cohort: Literal["Never", "LowerPriority"] = "Never"
    max_priority_threshold: int | None = None
    queueing_strategy: Literal["BestEffortFIFO", "StrictFIFO"] = "BestEffortFIFO"
    when_can_borrow: Literal["Borrow", "TryNextFlavor"] = "Borrow"
    when_can_preempt: Literal["Preempt", "TryNextFlavor"] = "TryNextFlavor"
    admission_fair_sharing: bool = False
    preference: Literal["BorrowingOverPreemption", "PreemptionOverBorrowing"] | None = None

    @model_validator(mode="after")
    def _preference_needs_try_next(self) -> KueueSpec:
        if self.preference is not None and (self.when_can_borrow, self.when_can_preempt) != (
                "TryNextFlavor", "TryNextFlavor"):
            raise ValueError("preference can only be set when both when_can_borrow and "
                             "when_can_preempt are TryNextFlavor (as Kueue requires)")
        return self

    def build(self) -> KueueQueuePolicy:
        return KueueQueuePolicy(**self.model_dump())


class TenantSpec(_Strict):
    name: str = Field(min_length=1)
    cohort: str | None = None
    weight: float = Field(default=1.0, ge=0)
    priority_budget_gpus: int | None = Field(default=None, ge=0)
    #: GPU quota per model. Empty: the queue admits no GPU jobs (a Kueue ClusterQueue that covers
    #: only cpu and memory imports so).
    quotas: dict[str, QuotaSpec] = {}
    resources: dict[str, dict[str, ResourceQuotaSpec]] = {}
    #: Kueue's resource groups, each the resources it covers (gpu, cpu, memory_gb, named ones);
    #: empty: one group over everything.
    resource_groups: list[list[str]] = []
    kueue: KueueSpec = KueueSpec()

    _canon = field_validator("quotas")(_flavors)
    _canon_r = field_validator("resources")(_resource_flavors)

    @model_validator(mode="after")
    def _groups(self) -> TenantSpec:
        _groups_hold(f"tenant {self.name!r}", self.quotas, self.resources, self.resource_groups)
        return self


class CohortSpec(_Strict):
    name: str = Field(min_length=1)
    parent: str | None = None
    weight: float = Field(default=1.0, ge=0)
    quotas: dict[str, QuotaSpec] = {}
    resources: dict[str, dict[str, ResourceQuotaSpec]] = {}
    resource_groups: list[list[str]] = []

    _canon = field_validator("quotas")(_flavors)
    _canon_r = field_validator("resources")(_resource_flavors)

    @model_validator(mode="after")
    def _groups(self) -> CohortSpec:
        _groups_hold(f"cohort {self.name!r}", self.quotas, self.resources, self.resource_groups)
        return self


class FairSharingSpec(_Strict):
    """Kueue's fair sharing for the ``kueue`` profile (present = enabled)."""

    preemption_strategies: list[Literal["LessThanOrEqualToFinalShare", "LessThanInitialShare"]] = Field(
        default=["LessThanOrEqualToFinalShare", "LessThanInitialShare"], min_length=1)


class AdmissionFairSharingSpec(_Strict):
    """Kueue's admission fair sharing for the ``kueue`` profile (its half-life is half_life_h)."""

    sampling_interval_s: float = Field(default=300.0, gt=0)
    #: LocalQueue name (a job's ``kueue.x-k8s.io/queue-name`` label) → weight.
    local_queue_weights: dict[str, float] = {}


class PriorityClassSpec(_Strict):
    name: str = Field(min_length=1)
    value: int
    preemptible: bool = True


class TenancySpec(_Strict):
    half_life_h: float = Field(default=168.0, gt=0)
    usage_weight: float = Field(default=0.5, ge=0, le=1)
    grace_s: float = Field(default=0.0, ge=0)
    priority_classes: list[PriorityClassSpec] = []
    cohorts: list[CohortSpec] = []
    tenants: list[TenantSpec] = Field(min_length=1)
    fair_sharing: FairSharingSpec | None = None
    admission_fair_sharing: AdmissionFairSharingSpec | None = None

    def problem(self) -> tuple[str, str] | None:
        """(field, what is expected) for the first broken cross-reference, or None.

        Checked after validation by the scenario loader, which knows the file name (a pydantic
        model validator would echo the whole section back in the error line)."""
        # A tenant and a cohort may share a name, as a ClusterQueue and a Cohort may in Kueue
        # (different kinds); two tenants, or two cohorts, may not.
        for kind, names in (("tenant", [t.name for t in self.tenants]),
                            ("cohort", [c.name for c in self.cohorts])):
            dup = sorted({n for n in names if names.count(n) > 1})
            if dup:
                return "tenancy", f"{kind} names must be unique; {dup[0]!r} appears twice"
        cohorts = {c.name: c for c in self.cohorts}
        for i, t in enumerate(self.tenants):
            if t.cohort is not None and t.cohort not in cohorts:
                return (f"tenancy.tenants[{i}].cohort",
                        f"tenant {t.name!r} names cohort {t.cohort!r}, which is not declared")
        for i, c in enumerate(self.cohorts):
            if c.parent is not None and c.parent not in cohorts:
                return (f"tenancy.cohorts[{i}].parent",
                        f"cohort {c.name!r} names parent {c.parent!r}, which is not declared")
            seen, cur = {c.name}, c.parent
            while cur is not None:
                if cur in seen:
                    return (f"tenancy.cohorts[{i}].parent",
                            f"cohort {c.name!r} is its own ancestor (a cycle of parents)")
                seen.add(cur)
                cur = cohorts[cur].parent
        values = [p.value for p in self.priority_classes]
        if len(set(values)) != len(values):
            return "tenancy.priority_classes", "priority classes must have distinct values"
        return None

    def class_value(self, name: str) -> int | None:
        return next((p.value for p in self.priority_classes if p.name == name), None)

    def build(self) -> Tenancy:
        default = self.class_value("normal")
        if default is None:
            default = self.class_value("default") or 0
        return Tenancy(
            tenants=tuple(TenantQueue(t.name, t.cohort, tuple((f, q.build()) for f, q in t.quotas.items()),
                                      t.weight, t.priority_budget_gpus, t.kueue.build(),
                                      _resources(t.resources), tuple(tuple(g) for g in t.resource_groups))
                          for t in self.tenants),
            cohorts=tuple(Cohort(c.name, c.parent, tuple((f, q.build()) for f, q in c.quotas.items()),
                                 _resources(c.resources), c.weight,
                                 tuple(tuple(g) for g in c.resource_groups))
                          for c in self.cohorts),
            priority_classes=tuple(PriorityClass(p.name, p.value, p.preemptible)
                                   for p in self.priority_classes),
            half_life_s=self.half_life_h * 3600.0, usage_weight=self.usage_weight,
            grace_s=self.grace_s, default_priority=default,
            fair_sharing=self.fair_sharing is not None,
            fair_sharing_strategies=tuple(self.fair_sharing.preemption_strategies)
            if self.fair_sharing is not None else FAIR_SHARING_STRATEGIES,
            afs_sampling_s=self.admission_fair_sharing.sampling_interval_s
            if self.admission_fair_sharing is not None else 300.0,
            local_queue_weights=tuple(self.admission_fair_sharing.local_queue_weights.items())
            if self.admission_fair_sharing is not None else (),
        )
