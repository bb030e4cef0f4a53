"""Kueue objects → a gpufleet tenancy config (the ``tenancy:`` section of a scenario).

The mapping (model/tenancy.py names Kueue's counterparts):

* ResourceFlavor → a GPU model: from ``--gpu-model FLAVOR=MODEL``, else a node label whose value
  names a model in our catalog (``nvidia.com/gpu.product``, ``cloud.google.com/gke-accelerator``,
  …), else the flavor's own name. A flavor with no GPU model can carry no GPU quota.
* ClusterQueue → a tenant: ``nvidia.com/gpu`` (or ``amd.com/gpu``) quota per flavor → ``quotas``;
  ``cpu``, ``memory`` (bytes → GB, 10⁹) and named resources → ``resources``; ``cohort`` (v1beta1)
  or ``cohortName`` (v1beta2); ``preemption``, ``queueingStrategy``, ``flavorFungibility``
  (v1beta2's ``MayStopSearch`` is v1beta1's ``Borrow`` / ``Preempt``) → ``kueue``;
  ``fairSharing.weight`` → ``weight``.
* Cohort → a cohort (``parent`` / ``parentName``, its own quota, its weight). A cohort a queue
  names without a Cohort object is created, as Kueue creates it.
* LocalQueue → ``kueue_local_queues``: namespace/name → ClusterQueue (how a trace's jobs find
  their tenant).
* WorkloadPriorityClass → a priority class (``value``).
* Kueue's Configuration (config.kueue.x-k8s.io) ``fairSharing`` → ``fair_sharing``.

Every field not carried over is reported as a note ("not imported: …"), never dropped silently.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from pydantic import ValidationError

from gpufleet.adapters.kubernetes.gpu_labels import catalog_model
from gpufleet.adapters.kueue.quantity import parse_exact, parse_gpus, parse_quantity
from gpufleet.adapters.kueue.read import Manifest
from gpufleet.model.catalog import UnknownGpuModel, canonical_gpu_name
from gpufleet.model.errors import InputError, from_validation_error
from gpufleet.model.tenancy import GPU_RESOURCE
from gpufleet.model.tenancy_config import TenancySpec

GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")
MODEL_LABELS = ("nvidia.com/gpu.product", "cloud.google.com/gke-accelerator",
                "karpenter.k8s.aws/instance-gpu-name", "gpu.nvidia.com/class")
ENUMS = {
    "withinClusterQueue": ("Never", "LowerPriority", "LowerOrNewerEqualPriority"),
    "reclaimWithinCohort": ("Never", "LowerPriority", "Any"),
    "borrowWithinCohort.policy": ("Never", "LowerPriority"),
    "queueingStrategy": ("BestEffortFIFO", "StrictFIFO"),
    "whenCanBorrow": ("Borrow", "MayStopSearch", "TryNextFlavor"),
    "whenCanPreempt": ("Preempt", "MayStopSearch", "TryNextFlavor"),
    "preemptionStrategies": ("LessThanOrEqualToFinalShare", "LessThanInitialShare"),
    "preference": ("BorrowingOverPreemption", "PreemptionOverBorrowing"),
    # v1beta2 spells it UsageBasedAdmissionFairSharing; Kueue's v1beta1 examples, UsageBasedFairSharing.
    "admissionMode": ("UsageBasedAdmissionFairSharing", "UsageBasedFairSharing", "NoAdmissionFairSharing"),
}


def parse_duration(m: Manifest, path: str, value: Any) -> float:
    """A Go duration ("168h", "5m", "1h30m", "10s", "0s") in seconds."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3}
    text = str(value).strip()
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", text)
    if not text or "".join(n + u for n, u in parts) != text:
        raise m.error(path, "a duration such as 168h, 5m or 1h30m")
    return sum(float(n) * units[u] for n, u in parts)


def _enum(m: Manifest, path: str, value: Any, key: str) -> Any:
    allowed = ENUMS[key]
    if value not in allowed:
        raise m.error(path, f"one of {', '.join(allowed)}, not {value!r}")
    return value


def _ours(resource: str) -> str:
    """Kueue's resource name as the tenancy config spells it."""
    return GPU_RESOURCE if resource in GPU_RESOURCES else "memory_gb" if resource == "memory" else resource


def _model(name: str) -> str | None:
    try:
        return canonical_gpu_name(name)
    except UnknownGpuModel:
        return None


class Translation:
    """Collects the config and the notes while walking the objects."""

    def __init__(self, objects: list[Manifest], gpu_models: dict[str, str]) -> None:
        self.objects = objects
        self.notes: list[str] = []
        self.flavors: dict[str, str | None] = {}
        for m in objects:
            if m.kind == "ResourceFlavor":
                self.flavors[m.name] = self._flavor_model(m, gpu_models)
        for name, model in gpu_models.items():
            self.flavors.setdefault(name, _model(model))

    def note(self, m: Manifest, path: str, why: str = "not modelled by gpufleet") -> None:
        self.notes.append(f"{m.source}: {m.where}: not imported: {path} ({why})")

    def leftovers(self, m: Manifest, node: Any, known: set[str], path: str) -> None:
        if isinstance(node, dict):
            for k in node:
                if k not in known:
                    self.note(m, f"{path}.{k}" if path else k)

    # -- ResourceFlavor ---------------------------------------------------------------------
    def _flavor_model(self, m: Manifest, overrides: dict[str, str]) -> str | None:
        spec = m.body.get("spec") or {}
        if m.name in overrides:
            model = _model(overrides[m.name])
            if model is None:
                raise InputError("--gpu-model", m.name,
                                 f"a GPU model in the catalog, not {overrides[m.name]!r}")
            return model
        labels = spec.get("nodeLabels") or {}
        if not isinstance(labels, dict):
            raise m.error("spec.nodeLabels", "a mapping of label to value")
        for key in (*MODEL_LABELS, *labels):
            if key in labels and isinstance(labels[key], str) and (model := _model(
                    catalog_model(labels[key]) if key == "nvidia.com/gpu.product" else labels[key])):
                return model
        return _model(m.name)

    def resource_flavor(self, m: Manifest) -> None:
        spec = m.body.get("spec") or {}
        self.leftovers(m, spec, {"nodeLabels"}, "spec")
        if spec.get("nodeLabels") and self.flavors.get(m.name) is None:
            self.note(m, "spec.nodeLabels", "a flavor without a GPU model selects no nodes in gpufleet")
        self.leftovers(m, m.body, {"apiVersion", "kind", "metadata", "spec", "status"}, "")

    # -- quota --------------------------------------------------------------------------------
    def _groups(self, m: Manifest, out: dict[str, Any]) -> None:
        groups = resource_groups(m, self)
        covered = [[_ours(n) for n in g.covered] for g in groups]
        # Kueue assigns a flavor per group: two or more, or one without GPUs, are kept as they are
        # (a group without GPUs has flavors of its own, by their Kueue names); one group with the
        # GPUs is our default (every resource on the GPU flavor).
        if len(covered) > 1 or any(GPU_RESOURCE not in c for c in covered):
            out["resource_groups"] = covered
        for g, ours in zip(groups, covered, strict=True):
            own = GPU_RESOURCE not in ours
            for e in g.resources:
                model = self.flavors.get(e.flavor, _model(e.flavor))
                self._resource(m, e, model or e.flavor if own else model, out)

    def _resource(self, m: Manifest, e: FlavorResource, model: str | None, out: dict[str, Any]) -> None:
        rname, fname = e.resource, e.flavor
        vals = quota_values(m, e)
        if model is None:
            if rname in GPU_RESOURCES:
                raise m.error(f"{e.path}", f"flavor {fname!r} carries {rname} quota but names no GPU model "
                              f"gpufleet knows; pass --gpu-model {fname}=MODEL (e.g. H100-80GB)")
            self.note(m, e.path, f"{rname} quota on flavor {fname!r}, which has no GPU model")
            return
        if rname in GPU_RESOURCES:
            out.setdefault("quotas", {})[model] = {k: int(v) for k, v in vals.items()}
            return
        key = "memory_gb" if rname == "memory" else rname
        scale = Fraction(1, 10**9) if rname == "memory" else Fraction(1)
        # Bytes → GB exactly (a whole number of bytes has at most 9 decimals in GB), so export
        # gives back the very quantity ("100Gi", not 107.374 GB).
        out.setdefault("resources", {}).setdefault(model, {})[key] = {
            k: float(v * scale) for k, v in vals.items()}

    # -- ClusterQueue, Cohort -------------------------------------------------------------------
    def cluster_queue(self, m: Manifest) -> dict[str, Any]:
        spec = m.body.get("spec") or {}
        if not isinstance(spec, dict):
            raise m.error("spec", "a mapping")
        t: dict[str, Any] = {"name": m.name, "quotas": {}}
        cohort = cohort_link(m, "cohort", "cohortName")
        if cohort is not None:
            t["cohort"] = cohort
        self._groups(m, t)
        known = {"resourceGroups", "preemption", "queueingStrategy", "flavorFungibility", "fairSharing",
                 "admissionScope", "cohortName" if m.version == "v1beta2" else "cohort"}
        if spec.get("namespaceSelector") in ({}, None):
            known.add("namespaceSelector")  # {} selects every namespace: nothing to carry
        self.leftovers(m, spec, known, "spec")
        kq = queue_policy(m, self)
        if kq:
            t["kueue"] = kq
        self._weight(m, spec, t)
        return t

    def _weight(self, m: Manifest, spec: dict, out: dict[str, Any]) -> None:
        fs = spec.get("fairSharing") or {}
        self.leftovers(m, fs, {"weight"}, "spec.fairSharing")
        if "weight" in fs:
            try:
                out["weight"] = parse_quantity(fs["weight"])
            except ValueError as e:
                raise m.error("spec.fairSharing.weight", str(e)) from None

    def cohort(self, m: Manifest) -> dict[str, Any]:
        spec = m.body.get("spec") or {}
        c: dict[str, Any] = {"name": m.name}
        parent = cohort_link(m, "parent", "parentName")
        if parent is not None:
            c["parent"] = parent
        self._groups(m, c)
        self._weight(m, spec, c)
        self.leftovers(m, spec, {"resourceGroups", "fairSharing",
                                 "parentName" if m.version == "v1beta2" else "parent"}, "spec")
        return c


def queue_policy(m: Manifest, tr: Translation | None = None) -> dict[str, Any]:
    """A ClusterQueue's own rules (preemption, queueing, flavor fungibility, admission scope),
    checked, by KueueQueuePolicy's field names (v1beta2's ``MayStopSearch`` is ``Borrow`` /
    ``Preempt``); ``tr`` notes the fields not carried over."""
    spec = _spec(m)
    left = tr.leftovers if tr is not None else _ignore
    kq: dict[str, Any] = {}
    pre = spec.get("preemption") or {}
    left(m, pre, {"withinClusterQueue", "reclaimWithinCohort", "borrowWithinCohort"}, "spec.preemption")
    for k, ours in (("withinClusterQueue", "within_cluster_queue"),
                    ("reclaimWithinCohort", "reclaim_within_cohort")):
        if k in pre:
            kq[ours] = _enum(m, f"spec.preemption.{k}", pre[k], k)
    bwc = pre.get("borrowWithinCohort") or {}
    left(m, bwc, {"policy", "maxPriorityThreshold"}, "spec.preemption.borrowWithinCohort")
    if "policy" in bwc:
        kq["borrow_within_cohort"] = _enum(m, "spec.preemption.borrowWithinCohort.policy", bwc["policy"],
                                           "borrowWithinCohort.policy")
    if "maxPriorityThreshold" in bwc:
        thr = bwc["maxPriorityThreshold"]
        if not isinstance(thr, int) or isinstance(thr, bool):
            raise m.error("spec.preemption.borrowWithinCohort.maxPriorityThreshold",
                          "an integer priority")
        kq["max_priority_threshold"] = thr
    if "queueingStrategy" in spec:
        kq["queueing_strategy"] = _enum(m, "spec.queueingStrategy", spec["queueingStrategy"],
                                        "queueingStrategy")
    fung = spec.get("flavorFungibility") or {}
    left(m, fung, {"whenCanBorrow", "whenCanPreempt", "preference"}, "spec.flavorFungibility")
    if "preference" in fung:
        kq["preference"] = _enum(m, "spec.flavorFungibility.preference", fung["preference"], "preference")
    for k, ours, stop in (("whenCanBorrow", "when_can_borrow", "Borrow"),
                          ("whenCanPreempt", "when_can_preempt", "Preempt")):
        if k in fung:
            v = _enum(m, f"spec.flavorFungibility.{k}", fung[k], k)
            kq[ours] = stop if v == "MayStopSearch" else v
    scope = spec.get("admissionScope") or {}
    left(m, scope, {"admissionMode"}, "spec.admissionScope")
    if "admissionMode" in scope:
        mode = _enum(m, "spec.admissionScope.admissionMode", scope["admissionMode"], "admissionMode")
        if mode != "NoAdmissionFairSharing":
            kq["admission_fair_sharing"] = True
    return kq


@dataclass(frozen=True, slots=True)
class FlavorResource:
    """One ``resources[]`` entry of a flavor in a resource group, as written (``body`` holds
    ``name`` and any of QUOTA_FIELDS); ``path`` names it for errors and notes."""

    flavor: str
    path: str
    body: dict[str, Any]

    @property
    def resource(self) -> str:
        return self.body["name"]


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    """One of ``spec.resourceGroups``: the resources it covers (Kueue's names), its flavors in
    the order Kueue tries them, and every flavor's resource entries."""

    covered: tuple[str, ...]
    flavors: tuple[str, ...]
    resources: tuple[FlavorResource, ...]


#: A resource entry's quantities, by Kueue's name and ours (FlavorQuota's fields).
QUOTA_FIELDS = (("nominalQuota", "nominal"), ("borrowingLimit", "borrowing_limit"),
                ("lendingLimit", "lending_limit"))


def _ignore(*_: Any) -> None:
    return None


def _spec(m: Manifest) -> dict[str, Any]:
    spec = m.body.get("spec") or {}
    if not isinstance(spec, dict):
        raise m.error("spec", "a mapping")
    return spec


def cohort_link(m: Manifest, v1beta1: str, v1beta2: str) -> str | None:
    """The cohort a ClusterQueue joins (``cohort`` / ``cohortName``) or a Cohort's parent
    (``parent`` / ``parentName``), by the field of the object's version."""
    name = _spec(m).get(v1beta2 if m.version == "v1beta2" else v1beta1)
    return None if name is None else str(name)


def local_queue(m: Manifest) -> tuple[str, str]:
    """A LocalQueue's ("namespace/name", its ClusterQueue)."""
    cq = (m.body.get("spec") or {}).get("clusterQueue")
    if not isinstance(cq, str):
        raise m.error("spec.clusterQueue", "the name of a ClusterQueue")
    return f"{m.namespace or 'default'}/{m.name}", cq


def resource_groups(m: Manifest, tr: Translation | None = None) -> tuple[ResourceGroup, ...]:
    """A ClusterQueue's or Cohort's ``spec.resourceGroups``, checked: a malformed group, flavor
    or resource entry is one InputError naming it. ``tr`` notes the fields not carried over (the
    groups' first, then the flavors', in document order)."""
    groups = _spec(m).get("resourceGroups") or []
    if not isinstance(groups, list):
        raise m.error("spec.resourceGroups", "a list of resource groups")
    left = tr.leftovers if tr is not None else _ignore
    covered: list[tuple[str, ...]] = []
    for gi, g in enumerate(groups):
        gp = f"spec.resourceGroups[{gi}]"
        if not isinstance(g, dict) or not isinstance(g.get("flavors"), list):
            raise m.error(gp, "coveredResources and a list of flavors")
        left(m, g, {"coveredResources", "flavors"}, gp)
        names = g.get("coveredResources") or []
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise m.error(f"{gp}.coveredResources", "a list of resource names")
        covered.append(tuple(names))
    out = []
    for gi, g in enumerate(groups):
        flavors, entries = [], []
        for fi, fl in enumerate(g["flavors"]):
            fp = f"spec.resourceGroups[{gi}].flavors[{fi}]"
            if not isinstance(fl, dict) or not isinstance(fl.get("name"), str):
                raise m.error(f"{fp}.name", "the name of a ResourceFlavor")
            left(m, fl, {"name", "resources"}, fp)
            flavors.append(fl["name"])
            for ri, res in enumerate(fl.get("resources") or []):
                rp = f"{fp}.resources[{ri}]"
                if not isinstance(res, dict) or not isinstance(res.get("name"), str):
                    raise m.error(f"{rp}.name", "a resource name (e.g. nvidia.com/gpu, cpu, memory)")
                left(m, res, {"name", *(k for k, _ in QUOTA_FIELDS)}, rp)
                entries.append(FlavorResource(fl["name"], rp, res))
        out.append(ResourceGroup(covered[gi], tuple(flavors), tuple(entries)))
    return tuple(out)


def quota_values(m: Manifest, e: FlavorResource) -> dict[str, Fraction]:
    """The quantities an entry gives, exactly, by FlavorQuota's names: GPUs as whole numbers
    (``parse_gpus``), any other resource as written (``parse_exact``, memory in bytes)."""
    vals: dict[str, Fraction] = {}
    for key, ours in QUOTA_FIELDS:
        if key in e.body:
            try:
                vals[ours] = (Fraction(parse_gpus(e.body[key])) if e.resource in GPU_RESOURCES
                              else parse_exact(e.body[key])[0])
            except ValueError as err:
                raise m.error(f"{e.path}.{key}", str(err)) from None
    return vals


def _admission_fair_sharing(m: Manifest, tr: Translation) -> dict:
    """Kueue's Configuration ``admissionFairSharing``: half-life and sampling interval."""
    afs = m.body.get("admissionFairSharing") or {}
    tr.leftovers(m, afs, {"usageHalfLifeTime", "usageSamplingInterval"}, "admissionFairSharing")
    out: dict[str, float] = {}
    if "usageHalfLifeTime" in afs:
        out["half_life_h"] = parse_duration(m, "admissionFairSharing.usageHalfLifeTime",
                                            afs["usageHalfLifeTime"]) / 3600.0
    if "usageSamplingInterval" in afs:
        out["sampling_interval_s"] = parse_duration(m, "admissionFairSharing.usageSamplingInterval",
                                                    afs["usageSamplingInterval"])
    return out


def _configuration(m: Manifest, tr: Translation) -> dict | None:
    """Kueue's Configuration: only ``fairSharing`` bears on quota decisions. v1beta1 turns it on
    with ``enable: true``; v1beta2 has no ``enable``: a ``fairSharing`` block turns it on (Kueue's
    apis/config/v1beta1/configuration_conversion.go drops a disabled block on the way up)."""
    tr.leftovers(m, m.body, {"apiVersion", "kind", "metadata", "fairSharing", "admissionFairSharing"}, "")
    fs = m.body.get("fairSharing")
    if fs is not None and not isinstance(fs, dict):
        raise m.error("fairSharing", "a mapping (preemptionStrategies, and enable in v1beta1)")
    fs = fs or {}
    v1 = m.version == "v1beta1"
    tr.leftovers(m, fs, {"enable", "preemptionStrategies"} if v1 else {"preemptionStrategies"}, "fairSharing")
    if not (fs.get("enable") if v1 else "fairSharing" in m.body):
        return None
    strategies = fs.get("preemptionStrategies") or list(ENUMS["preemptionStrategies"])
    if not isinstance(strategies, list):
        raise m.error("fairSharing.preemptionStrategies", "a list of strategies")
    for i, v in enumerate(strategies):
        _enum(m, f"fairSharing.preemptionStrategies[{i}]", v, "preemptionStrategies")
    return {"preemption_strategies": strategies}


def to_tenancy(objects: list[Manifest], gpu_models: dict[str, str] | None = None,
               fair_sharing: dict | None = None, sources: Sequence[str] = ()
               ) -> tuple[dict[str, Any], list[str]]:
    """({"tenancy": …, "kueue_local_queues": …}, notes). Raises InputError on a malformed object;
    ``sources`` name the files read, for the error when they hold no ClusterQueue at all."""
    tr = Translation(objects, gpu_models or {})
    tenants, cohorts, classes, local = [], {}, [], {}
    lq_weights: dict[str, float] = {}
    afs_config: dict[str, float] = {}
    for m in objects:
        if m.kind == "ResourceFlavor":
            tr.resource_flavor(m)
        elif m.kind == "ClusterQueue":
            tenants.append((m, tr.cluster_queue(m)))
        elif m.kind == "Cohort":
            cohorts[m.name] = tr.cohort(m)
        elif m.kind == "LocalQueue":
            key, local[key] = local_queue(m)
            lspec = m.body.get("spec") or {}
            tr.leftovers(m, lspec, {"clusterQueue", "fairSharing"}, "spec")
            lfs = lspec.get("fairSharing") or {}
            tr.leftovers(m, lfs, {"weight"}, "spec.fairSharing")
            if "weight" in lfs:
                try:
                    lq_weights[key] = parse_quantity(lfs["weight"])
                except ValueError as e:
                    raise m.error("spec.fairSharing.weight", str(e)) from None
        elif m.kind == "Configuration":
            fair_sharing = _configuration(m, tr) if fair_sharing is None else fair_sharing
            afs_config = _admission_fair_sharing(m, tr)
        elif m.kind == "WorkloadPriorityClass":
            value = m.body.get("value")
            if not isinstance(value, int) or isinstance(value, bool):
                raise m.error("value", "an integer priority")
            classes.append({"name": m.name, "value": value})
    for _, t in tenants:
        if "cohort" in t:
            cohorts.setdefault(t["cohort"], {"name": t["cohort"]})
    for c in list(cohorts.values()):
        if "parent" in c:
            cohorts.setdefault(c["parent"], {"name": c["parent"]})
    if not tenants:
        raise InputError(", ".join(sorted({m.source for m in objects}) or sources) or "input", "",
                         "at least one ClusterQueue")
    section: dict[str, Any] = {"tenants": [t for _, t in tenants]}
    if cohorts:
        section["cohorts"] = list(cohorts.values())
    if classes:
        section["priority_classes"] = classes
    if fair_sharing is not None:
        section["fair_sharing"] = fair_sharing
    if "half_life_h" in afs_config and afs_config["half_life_h"] > 0:
        section["half_life_h"] = afs_config["half_life_h"]
    if lq_weights or "sampling_interval_s" in afs_config or any(
            (t.get("kueue") or {}).get("admission_fair_sharing") for _, t in tenants):
        block: dict[str, Any] = {"local_queue_weights": lq_weights}
        if "sampling_interval_s" in afs_config:
            block["sampling_interval_s"] = afs_config["sampling_interval_s"]
        section["admission_fair_sharing"] = block
    try:
        spec = TenancySpec.model_validate(section)
    except ValidationError as e:
        raise from_validation_error(tenants[0][0].source, e, "tenancy") from None
    problem = spec.problem()
    if problem is not None:
        raise InputError(tenants[0][0].source, *problem)
    return {"tenancy": spec.model_dump(exclude_defaults=True), "kueue_local_queues": local}, tr.notes
