"""A gpufleet tenancy config → Kueue manifests (v1beta2 by default, or v1beta1).

* one ResourceFlavor per GPU model, named after it in lower case, with the value GPU Feature
  Discovery writes in ``nvidia.com/gpu.product`` on such nodes (adapters/kubernetes/gpu_labels.py
  ``GFD_PRODUCTS``, which says which values are sourced; a note names the others);
* one ClusterQueue per tenant: its resource groups as the tenancy has them (``resource_groups``),
  else a single group covering ``nvidia.com/gpu`` and every other resource the tenant has quota
  for (Kueue requires every flavor of a group to list the group's resources in the same order,
  so a missing one is written with nominalQuota 0 and, in a cohort, borrowingLimit 0: never
  looser than our "no quota, refused"), the
  cohort, the preemption policy, queueing strategy, flavor fungibility and fair-sharing weight;
* one Cohort per cohort (parent, own quota, weight); the LocalQueues import recorded, else one
  per tenant in a namespace named after it; one WorkloadPriorityClass per priority class.

* Kueue's Configuration (config.kueue.x-k8s.io, last) when the tenancy turns on fair sharing or
  admission fair sharing: ``fairSharing`` with its preemption strategies, ``admissionFairSharing``
  with the half-life and sampling interval (``configuration``).

What Kueue has no field for (``priority_budget_gpus``, preemptible classes, the decayed-usage
half-life without admission fair sharing) is returned as notes.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from gpufleet.adapters.kubernetes.gpu_labels import gfd_product
from gpufleet.adapters.kueue.quantity import format_quantity
from gpufleet.model.catalog import UnknownGpuModel, canonical_gpu_name
from gpufleet.model.tenancy import GPU_RESOURCE
from gpufleet.model.tenancy_config import QuotaSpec, ResourceQuotaSpec, TenancySpec

API = "kueue.x-k8s.io"
CONFIG_API = "config.kueue.x-k8s.io"
GPU = "nvidia.com/gpu"


def flavor_name(model: str) -> str:
    """A GPU model's flavor is named after it in lower case; a flavor of a group without GPUs
    keeps its own name."""
    return model.lower() if _gpu_model(model) else model


def _gpu_model(name: str) -> bool:
    try:
        canonical_gpu_name(name)
    except UnknownGpuModel:
        return False
    return True


def _quantity(resource: str, value: float) -> int | str:
    """``value`` of ``resource`` as an exact quantity: memory (GB in our config) as bytes in
    the shortest exact form ("100Gi" comes back as "100Gi"), cpu and weights to the milli."""
    if resource == "memory_gb":
        return format_quantity(round(Fraction(value) * 10**9))
    milli = Fraction(round(Fraction(value) * 1000), 1000)
    return int(milli) if milli.denominator == 1 else f"{int(milli * 1000)}m"


def _res(name: str, q: QuotaSpec | ResourceQuotaSpec | None, resource: str, closed: bool
         ) -> dict[str, Any]:
    """One resource of one flavor. ``q`` None: the owner has no quota for it, which in our
    model refuses it outright; with a cohort (``closed``) that is nominal 0 *and* borrowing
    limit 0, or Kueue would let the owner borrow it without limit."""
    out: dict[str, Any] = {"name": "memory" if resource == "memory_gb" else name,
                           "nominalQuota": _quantity(resource, q.nominal if q else 0)}
    if q is None:
        if closed:
            out["borrowingLimit"] = 0
        return out
    if q.borrowing_limit is not None:
        out["borrowingLimit"] = _quantity(resource, q.borrowing_limit)
    if q.lending_limit is not None:
        out["lendingLimit"] = _quantity(resource, q.lending_limit)
    return out


def _groups(quotas: dict[str, QuotaSpec], resources: dict[str, dict[str, ResourceQuotaSpec]],
            closed: bool = False, groups: list[list[str]] | None = None) -> list[dict[str, Any]]:
    """The resource groups: as the tenancy has them, or one over everything."""
    if groups:
        return [g for g in (_group(quotas, resources, closed, cov) for cov in groups) if g["flavors"]]
    models = list(dict.fromkeys([*quotas, *resources]))
    if not models:
        return []
    others = list(dict.fromkeys(r for m in models for r in resources.get(m, {})))
    return [_group(quotas, resources, closed, [GPU_RESOURCE, *others], models)]


def _group(quotas: dict[str, QuotaSpec], resources: dict[str, dict[str, ResourceQuotaSpec]], closed: bool,
           covered: list[str], flavors: list[str] | None = None) -> dict[str, Any]:
    """One group: every flavor carrying one of ``covered`` lists all of them, in that order."""
    if flavors is None:
        flavors = list(dict.fromkeys([*(quotas if GPU_RESOURCE in covered else ()),
                                      *(f for f, rs in resources.items() if any(r in rs for r in covered))]))
    out = []
    for m in flavors:
        rs = [_res(GPU, quotas.get(m), GPU, closed) if r == GPU_RESOURCE else
              _res(r, resources.get(m, {}).get(r), r, closed) for r in covered]
        out.append({"name": flavor_name(m), "resources": rs})
    names = [GPU if r == GPU_RESOURCE else "memory" if r == "memory_gb" else r for r in covered]
    return {"coveredResources": names, "flavors": out}


def configuration(spec: TenancySpec, version: str) -> dict[str, Any] | None:
    """Kueue's Configuration for what the tenancy sets cluster-wide, or None: ``fairSharing``
    (v1beta1 spells "on" as ``enable: true``; v1beta2 dropped the field, the block's presence
    turns it on: Kueue's apis/config/v1beta1/configuration_conversion.go) with the preemption
    strategies in order, and ``admissionFairSharing`` (half-life, sampling interval)."""
    body: dict[str, Any] = {}
    if spec.fair_sharing is not None:
        fs: dict[str, Any] = {"enable": True} if version == "v1beta1" else {}
        fs["preemptionStrategies"] = list(spec.fair_sharing.preemption_strategies)
        body["fairSharing"] = fs
    if spec.admission_fair_sharing is not None:
        body["admissionFairSharing"] = {
            "usageHalfLifeTime": _duration(spec.half_life_h * 3600.0),
            "usageSamplingInterval": _duration(spec.admission_fair_sharing.sampling_interval_s)}
    if not body:
        return None
    return {"apiVersion": f"{CONFIG_API}/{version}", "kind": "Configuration", **body}


def _duration(seconds: float) -> str:
    """A Go duration that parses back to ``seconds`` exactly when it is a whole number of
    milliseconds (168h, 5m, 1h30m, 1.5s)."""
    ms = round(seconds * 1000)
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s, milli = divmod(rest, 1000)
    parts = [f"{h}h" if h else "", f"{m}m" if m else "",
             (f"{s}.{milli:03d}".rstrip("0") + "s") if milli else (f"{s}s" if s else "")]
    return "".join(parts) or "0s"


def _fungibility(value: str, version: str) -> str:
    """v1beta2 renamed "stop at this flavor" (v1beta1's Borrow / Preempt) to MayStopSearch."""
    return "MayStopSearch" if version == "v1beta2" and value in ("Borrow", "Preempt") else value


def export_manifests(spec: TenancySpec, version: str = "v1beta2", local_queues: dict[str, str] | None = None
                     ) -> tuple[list[dict[str, Any]], list[str]]:
    """(manifests, notes about what Kueue cannot express). ``local_queues`` (namespace/name →
    ClusterQueue, as import wrote them) replaces the one-LocalQueue-per-tenant default."""
    api = f"{API}/{version}"
    notes: list[str] = []
    models = list(dict.fromkeys([m for t in spec.tenants for m in (*t.quotas, *t.resources)]
                                + [m for c in spec.cohorts for m in (*c.quotas, *c.resources)]))
    out: list[dict[str, Any]] = []
    for m in models:
        if not _gpu_model(m):  # a flavor of a group without GPUs: it selects no GPU nodes
            out.append({"apiVersion": api, "kind": "ResourceFlavor", "metadata": {"name": m}, "spec": {}})
            continue
        product, sourced = gfd_product(m)
        out.append({"apiVersion": api, "kind": "ResourceFlavor", "metadata": {"name": flavor_name(m)},
                    "spec": {"nodeLabels": {"nvidia.com/gpu.product": product}}})
        if not sourced:
            notes.append(f"ResourceFlavor {flavor_name(m)!r}: nodeLabels nvidia.com/gpu.product={product} "
                         "is not a value GPU Feature Discovery is known to write; check it against "
                         "your nodes' labels")
    for c in spec.cohorts:
        cs: dict[str, Any] = {}
        if c.parent:
            cs["parentName" if version == "v1beta2" else "parent"] = c.parent
        groups = _groups(c.quotas, c.resources, groups=c.resource_groups)
        if groups:
            cs["resourceGroups"] = groups
        if c.weight != 1.0:
            cs["fairSharing"] = {"weight": _quantity("weight", c.weight)}
        out.append({"apiVersion": api, "kind": "Cohort", "metadata": {"name": c.name}, "spec": cs})
    for t in spec.tenants:
        s: dict[str, Any] = {"namespaceSelector": {}}
        if t.cohort:
            s["cohortName" if version == "v1beta2" else "cohort"] = t.cohort
        s["resourceGroups"] = _groups(t.quotas, t.resources, closed=t.cohort is not None,
                                      groups=t.resource_groups)
        k = t.kueue
        pre: dict[str, Any] = {"withinClusterQueue": k.within_cluster_queue,
                               "reclaimWithinCohort": k.reclaim_within_cohort}
        if k.borrow_within_cohort != "Never":
            bwc: dict[str, Any] = {"policy": k.borrow_within_cohort}
            if k.max_priority_threshold is not None:
                bwc["maxPriorityThreshold"] = k.max_priority_threshold
            pre["borrowWithinCohort"] = bwc
        s["preemption"] = pre
        s["queueingStrategy"] = k.queueing_strategy
        s["flavorFungibility"] = {"whenCanBorrow": _fungibility(k.when_can_borrow, version),
                                  "whenCanPreempt": _fungibility(k.when_can_preempt, version)}
        if k.preference is not None:
            s["flavorFungibility"]["preference"] = k.preference
        if t.weight != 1.0:
            s["fairSharing"] = {"weight": _quantity("weight", t.weight)}
        if k.admission_fair_sharing:
            s["admissionScope"] = {"admissionMode": "UsageBasedAdmissionFairSharing"}
        if t.priority_budget_gpus is not None:
            notes.append(f"tenant {t.name!r}: priority_budget_gpus has no Kueue field; not exported")
        out.append({"apiVersion": api, "kind": "ClusterQueue", "metadata": {"name": t.name}, "spec": s})
        mine = [k for k, v in (local_queues or {}).items() if v == t.name] if local_queues else [
            f"{t.name}/{t.name}"]
        for key in mine:
            ns, _, name = key.rpartition("/")
            lq: dict[str, Any] = {"clusterQueue": t.name}
            afs = spec.admission_fair_sharing
            if afs is not None and key in afs.local_queue_weights:
                lq["fairSharing"] = {"weight": _quantity("weight", afs.local_queue_weights[key])}
            out.append({"apiVersion": api, "kind": "LocalQueue",
                        "metadata": {"name": name, "namespace": ns or "default"}, "spec": lq})
    for p in spec.priority_classes:
        out.append({"apiVersion": api, "kind": "WorkloadPriorityClass", "metadata": {"name": p.name},
                    "value": p.value})
        if not p.preemptible:
            notes.append(f"priority class {p.name!r}: 'preemptible: false' has no Kueue field; not exported")
    config = configuration(spec, version)
    if config is not None:
        out.append(config)
        notes.append("the last object, Kueue's Configuration (config.kueue.x-k8s.io), is not applied "
                     "with kubectl: merge its fields into the manager's config (ConfigMap "
                     "kueue-manager-config, key controller_manager_config.yaml) and restart Kueue")
    return out, notes
