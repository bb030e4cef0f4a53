"""Kueue quota arithmetic for a pending gang: does its ClusterQueue's quota admit it now, and if
not, which ClusterQueue / flavor / resource blocks it and by how much.

Read from the snapshot (``kueue.x-k8s.io`` v1beta1 or v1beta2) through adapters/kueue, as
``gpufleet kueue import`` reads manifests: ClusterQueues (resource groups, ``cohort`` /
``cohortName``, ``flavorFungibility``), Cohorts (``parent`` / ``parentName``, their own
resource groups), LocalQueues (namespace/name → ClusterQueue).

Usage per (ClusterQueue, flavor, resource): the admitted Workloads' (``Admitted`` or
``QuotaReserved`` true, not ``Finished``) ``status.admission.podSetAssignments[].flavors`` and
``resourceUsage``; a ClusterQueue none of whose admitted Workloads is in the snapshot falls back
on its own ``status.flavorsReservation`` (else ``flavorsUsage``).

Demand: the Workload's ``status.resourceRequests`` (Kueue's per-pod-set totals), else
``spec.podSets[].count`` × the template's pod request, else (a pod carrying only the
``kueue.x-k8s.io/queue-name`` label) the gang's pods; ``pods`` is the pod count.

The arithmetic is the engine's: policies/quota.py's ``QuotaLedger`` (the cohort tree, lending
and borrowing limits) on every resource of a queue (``quota_key``: ``flavor/resource``, GPUs by
flavor), in milli-units so CPU (``300m``) and memory (bytes) are integers; per resource group
holding a demanded resource, policies/kueue/flavors.py's ``assign_group`` tries the flavors in
the queue's order, as Kueue does (``whenCanBorrow: TryNextFlavor`` prefers a later flavor that
fits without borrowing). A resource fits when d ≤ available (what the queue can still admit,
counting what its cohort may lend within its borrowing limit; less than nominal − used when its
unused quota is lent out). When no flavor fits, each flavor's most short resource is named with
the ledger's ``Shortfall``: ``short by = d − available`` (no cohort: ``used + d − nominal``).
Preemption is not counted: a workload that fits only by preempting is reported as blocked, with
the arithmetic that shows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpufleet.adapters.kubernetes.pods import KubePod, container_resources, pod_total
from gpufleet.adapters.kubernetes.quantity import QuantityError, parse_quantity
from gpufleet.adapters.kueue.read import SnapshotObject, snapshot_objects
from gpufleet.adapters.kueue.to_tenancy import (
    ResourceGroup,
    cohort_link,
    local_queue,
    queue_policy,
    quota_values,
    resource_groups,
)
from gpufleet.engine.status import Shortfall
from gpufleet.model.errors import InputError
from gpufleet.model.tenancy import Cohort, FlavorQuota, KueueQueuePolicy, Tenancy, TenantQueue
from gpufleet.policies.kueue.flavors import assign_group
from gpufleet.policies.quota import QuotaLedger, quota_key

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
MILLI = 1000


def _milli(value: Any, where: str) -> int:
    try:
        return round(parse_quantity(value) * MILLI)
    except (QuantityError, ValueError, TypeError) as e:
        raise InputError("snapshot", where, f"a Kubernetes quantity ({e})") from None


def show(resource: str, milli: int) -> str:
    """A quantity for people: memory in Gi, cpu in cores, others as counts."""
    x = milli / MILLI
    if resource == "memory" or resource.endswith("memory"):
        return f"{x / 2**30:.4g}Gi"
    return f"{x:g}"


@dataclass(frozen=True, slots=True)
class QuotaBlock:
    """One flavor that cannot take the demand, and the first resource that is short."""

    cluster_queue: str
    flavor: str
    resource: str
    needed: str
    short_by: str
    detail: str


@dataclass
class QuotaVerdict:
    cluster_queue: str
    demand: dict[str, int]
    admits: bool
    flavors: dict[str, str] = field(default_factory=dict)     # resource -> flavor chosen
    borrows: bool = False
    blocks: list[QuotaBlock] = field(default_factory=list)
    source: str = ""

    def line(self) -> str:
        need = ", ".join(f"{r} {show(r, v)}" for r, v in sorted(self.demand.items()))
        head = (f"quota arithmetic ({self.source}): ClusterQueue {self.cluster_queue or '(unknown)'} "
                f"needs {need}")
        if self.admits:
            fl = ", ".join(sorted(set(self.flavors.values())))
            return f"{head}: fits in flavor {fl}" + (" by borrowing from its cohort" if self.borrows else "")
        return f"{head}: blocked: " + "; ".join(b.detail for b in self.blocks)


def _quotas(m: SnapshotObject, groups: tuple[ResourceGroup, ...]) -> tuple[tuple[str, FlavorQuota], ...]:
    return tuple((quota_key(e.flavor, e.resource),
                  FlavorQuota(**{k: round(v * MILLI) for k, v in quota_values(m, e).items()}))
                 for g in groups for e in g.resources)


def is_true(obj: dict, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [] if isinstance(c, dict))


class KueueQuota:
    """The quota tree of a snapshot and the usage charged against it (module docstring)."""

    def __init__(self, cqs: list[SnapshotObject], cohorts: list[SnapshotObject],
                 local_queues: list[SnapshotObject], workloads: list[SnapshotObject]) -> None:
        self.groups = {m.name: resource_groups(m) for m in cqs}
        tenants = [TenantQueue(m.name, cohort=cohort_link(m, "cohort", "cohortName") or None,
                               quotas=_quotas(m, self.groups[m.name]),
                               kueue=KueueQueuePolicy(**queue_policy(m))) for m in cqs]
        tree = {m.name: Cohort(m.name, cohort_link(m, "parent", "parentName") or None,
                               _quotas(m, resource_groups(m))) for m in cohorts}
        for c in [t.cohort for t in tenants] + [c.parent for c in tree.values()]:
            if c:
                tree.setdefault(c, Cohort(c))   # Kueue creates a cohort a queue names
        self.tenancy = Tenancy(tuple(tenants), tuple(tree.values()))
        self.local: dict[str, str] = dict(local_queue(m) for m in local_queues)
        self.ledger = QuotaLedger(self.tenancy)
        self._charge([m.body for m in cqs], [m.body for m in workloads])

    def _charge(self, cqs: list[dict], workloads: list[dict]) -> None:
        charged: set[str] = set()
        for w in workloads:
            status = w.get("status") or {}
            adm = status.get("admission") or {}
            holds = is_true(w, "Admitted") or is_true(w, "QuotaReserved")
            if not adm or is_true(w, "Finished") or not holds:
                continue
            cq = str(adm.get("clusterQueue") or "")
            charged.add(cq)
            for psa in adm.get("podSetAssignments") or []:
                flavors = psa.get("flavors") or {}
                for r, q in (psa.get("resourceUsage") or {}).items():
                    if r in flavors:
                        self.ledger.add(cq, quota_key(str(flavors[r]), r), _milli(q, f"Workload {r}"))
        for o in cqs:
            name = str((o.get("metadata") or {}).get("name"))
            st = o.get("status") or {}
            if name in charged:
                continue
            for fu in st.get("flavorsReservation") or st.get("flavorsUsage") or []:
                for res in fu.get("resources") or []:
                    self.ledger.add(name, quota_key(str(fu.get("name")), str(res.get("name"))),
                                    _milli(res.get("total", 0), f"ClusterQueue {name} status"))

    # -- demand ---------------------------------------------------------------------------
    def queue_of(self, workload: dict | None, pods: tuple[KubePod, ...]) -> tuple[str, str]:
        """(ClusterQueue, LocalQueue as "namespace/name") of a workload or of pods labelled with
        a queue name; the LocalQueue is "" when none is named."""
        ns = pods[0].namespace if pods else "default"
        lq = ""
        if workload is not None:
            lq = str((workload.get("spec") or {}).get("queueName") or "")
            ns = str((workload.get("metadata") or {}).get("namespace") or ns)
        if not lq and pods:
            lq = dict(pods[0].labels).get(QUEUE_LABEL, "")
        return self.local.get(f"{ns}/{lq}", ""), f"{ns}/{lq}" if lq else ""

    @staticmethod
    def demand(workload: dict | None, pods: tuple[KubePod, ...]) -> tuple[dict[str, int], str]:
        """(milli-units per resource, where the numbers come from)."""
        out: dict[str, int] = {}
        if workload is not None:
            reqs = (workload.get("status") or {}).get("resourceRequests") or []
            sets = (workload.get("spec") or {}).get("podSets") or []
            out["pods"] = sum(int(s.get("count") or 0) for s in sets) * MILLI
            if reqs:
                for rr in reqs:
                    for r, q in (rr.get("resources") or {}).items():
                        out[r] = out.get(r, 0) + _milli(q, f"Workload resourceRequests {r}")
                return out, "Workload status.resourceRequests"
            for s in sets:
                n = int(s.get("count") or 0)
                tspec = ((s.get("template") or {}).get("spec") or {})
                for r, q in _pod_request(tspec).items():
                    out[r] = out.get(r, 0) + n * q
            return out, "Workload spec.podSets"
        out["pods"] = len(pods) * MILLI
        for p in pods:
            for r, v in (("cpu", p.cpus), ("memory", p.memory_gb * 2**30), ("nvidia.com/gpu", p.gpus)):
                if v:
                    out[r] = out.get(r, 0) + round(v * MILLI)
        return out, "the gang's pods"

    # -- the check ------------------------------------------------------------------------
    def check(self, cq: str, demand: dict[str, int], source: str = "", local_queue: str = "") -> QuotaVerdict:
        """The quota arithmetic for ``demand`` in ClusterQueue ``cq``; ``local_queue``
        ("namespace/name") is the queue the work was submitted to, named when ``cq`` is unknown."""
        v = QuotaVerdict(cq, {r: d for r, d in demand.items() if d > 0}, admits=True, source=source)
        t = self.tenancy.tenant(cq)
        if t is None:
            v.admits = False
            if cq:
                why = (f"ClusterQueue {cq}" + (f" (the clusterQueue of LocalQueue {local_queue})"
                                               if local_queue else "") + " is not in the snapshot"
                       + ("" if self.groups else
                          " (it holds no ClusterQueue: kubectl get clusterqueues -o json)"))
            elif local_queue:
                why = f"LocalQueue {local_queue} is not in the snapshot, so its ClusterQueue is unknown"
            else:
                why = "no queue named: the Workload has no spec.queueName and the pods no queue-name label"
            v.blocks.append(QuotaBlock(cq, "", "", "", "", why))
            return v
        covered = {r for g in self.groups[cq] for r in g.covered}
        for r in sorted(set(v.demand) - covered - {"pods"}):
            v.admits = False
            v.blocks.append(QuotaBlock(cq, "", r, show(r, v.demand[r]), show(r, v.demand[r]),
                                       f"{r} is not covered by ClusterQueue {cq}"))
        for g in self.groups[cq]:
            need = {r: v.demand[r] for r in g.covered if v.demand.get(r, 0) > 0}
            if not need:
                continue
            chosen, borrows, short = assign_group(self.ledger, cq, g.flavors, need)
            if chosen is None:
                v.admits = False
                worst: dict[str, Shortfall] = {}
                for s in short:
                    if s.flavor not in worst or s.short > worst[s.flavor].short:
                        worst[s.flavor] = s
                v.blocks += [self._block(t, s) for s in worst.values()]
            else:
                v.flavors.update({r: chosen for r in need})
                v.borrows = v.borrows or borrows
        return v

    def _block(self, t: TenantQueue, s: Shortfall) -> QuotaBlock:
        """One flavor's most short resource, in words."""
        r, f, cq = s.resource, s.flavor, t.name
        q, used = t.quota(quota_key(f, r)), self.ledger.used(cq, quota_key(f, r))
        limit = q.borrowing_limit
        detail = (f"{r} in flavor {f}: needs {show(r, s.needed)}, ClusterQueue {cq} uses {show(r, used)} of "
                  f"nominal {show(r, q.nominal)}"
                  + (f" (borrowing limit {show(r, limit)})" if limit is not None else "")
                  + (f", cohort {t.cohort} leaves {show(r, s.available)} it may take" if t.cohort
                     else ", no cohort to borrow from")
                  + f": short by {show(r, s.short)}")
        return QuotaBlock(cq, f, r, show(r, s.needed), show(r, s.short), detail)


def _pod_request(spec: dict) -> dict[str, int]:
    """A pod template's request in milli-units, counted as for pods (pods.py's ``pod_total``)."""
    containers, inits = spec.get("containers") or [], spec.get("initContainers") or []
    names = dict.fromkeys(n for c in containers + inits for n in container_resources(c))
    return {n: int(pod_total(containers, inits, n, lambda q, n=n: _milli(q, f"podSets container {n}")))
            for n in names}


def from_snapshot(objects: dict[str, list[dict]]) -> KueueQuota | None:
    """The quota book of a snapshot's Kueue objects; None when it holds none. A snapshot with
    Workloads or LocalQueues but no ClusterQueue gets a book too, so that every check names the
    ClusterQueue it cannot find instead of quietly skipping the quota step."""
    cqs, cohorts, lqs, wls = (snapshot_objects(objects.get(k, []))
                              for k in ("ClusterQueue", "Cohort", "LocalQueue", "Workload"))
    if not cqs and not lqs and not wls:
        return None
    return KueueQuota(cqs, cohorts, lqs, wls)
