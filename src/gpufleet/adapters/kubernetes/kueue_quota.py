"""Kueue quota arithmetic for a pending gang: does its ClusterQueue's quota admit it now, and if
not, which ClusterQueue / flavor / resource blocks it and by how much.

Read from the snapshot (``kueue.x-k8s.io`` v1beta1 or v1beta2): ClusterQueues (resource groups:
covered resources, flavors in order, per resource ``nominalQuota``, ``borrowingLimit``,
``lendingLimit``; ``cohort`` / ``cohortName``; ``flavorFungibility.whenCanBorrow``), Cohorts
(``parentName``, their own resource groups), LocalQueues (namespace/name → ClusterQueue).

Usage per (ClusterQueue, flavor, resource): the admitted Workloads' (``Admitted`` or
``QuotaReserved`` true, not ``Finished``) ``status.admission.podSetAssignments[].flavors`` and
``resourceUsage``; a ClusterQueue none of whose admitted Workloads is in the snapshot falls back
on its own ``status.flavorsReservation`` (else ``flavorsUsage``).

Demand: the Workload's ``status.resourceRequests`` (Kueue's per-pod-set totals), else
``spec.podSets[].count`` × the template's pod request, else (a pod carrying only the
``kueue.x-k8s.io/queue-name`` label) the gang's pods; ``pods`` is the pod count.

The arithmetic is policies/quota.py's ``QuotaLedger`` (the cohort tree, lending and borrowing
limits), on keys ``flavor/resource`` in milli-units so CPU (``300m``) and memory (bytes) are
integers. Per resource group holding a demanded resource, flavors are tried in the queue's
order, as Kueue does; a flavor fits when every demanded resource of the group fits:

    without borrowing: used + d ≤ nominal, and d ≤ available (what the queue can still admit,
                       which is less than nominal − used when its unused quota is lent out)
    borrowing (queue in a cohort): d ≤ available, where available counts what the cohort can
                       lend (Σ of the others' unused nominal, each capped by its lendingLimit)
                       and is capped by the queue's borrowingLimit

``whenCanBorrow: Borrow`` (v1beta2 ``MayStopSearch``, the default) takes the first flavor that
fits; ``TryNextFlavor`` prefers a later flavor that fits without borrowing. When no flavor fits,
each flavor's first short resource is named with ``short by = d − available`` (no cohort:
``used + d − nominal``). Preemption is not counted: a workload that fits only by preempting is
reported as blocked, with the arithmetic that shows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpufleet.adapters.kubernetes.pods import KubePod
from gpufleet.adapters.kubernetes.quantity import QuantityError, parse_quantity
from gpufleet.adapters.kueue.read import GROUP, VERSIONS
from gpufleet.adapters.kueue.to_tenancy import ENUMS
from gpufleet.model.errors import InputError
from gpufleet.model.tenancy import Cohort, FlavorQuota, Tenancy, TenantQueue
from gpufleet.policies.quota import QuotaLedger

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
class Group:
    covered: tuple[str, ...]
    flavors: tuple[str, ...]


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


def _groups(spec: dict, where: str) -> tuple[list[Group], list[tuple[str, str, FlavorQuota]]]:
    groups, quotas = [], []
    for gi, g in enumerate(spec.get("resourceGroups") or []):
        if not isinstance(g, dict):
            raise InputError("snapshot", f"{where}.spec.resourceGroups[{gi}]", "a resource group (a map)")
        flavors = []
        for fi, fl in enumerate(g.get("flavors") or []):
            fname = str((fl or {}).get("name") or "")
            flavors.append(fname)
            for ri, res in enumerate((fl or {}).get("resources") or []):
                p = f"{where}.spec.resourceGroups[{gi}].flavors[{fi}].resources[{ri}]"
                nominal = _milli(res.get("nominalQuota", 0), f"{p}.nominalQuota")
                bl = _milli(res["borrowingLimit"], f"{p}.borrowingLimit") if "borrowingLimit" in res else None
                ll = _milli(res["lendingLimit"], f"{p}.lendingLimit") if "lendingLimit" in res else None
                quotas.append((fname, str(res.get("name")), FlavorQuota(nominal, bl, ll)))
        groups.append(Group(tuple(str(r) for r in g.get("coveredResources") or []), tuple(flavors)))
    return groups, quotas


def _key(flavor: str, resource: str) -> str:
    return f"{flavor}/{resource}"


def is_true(obj: dict, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [] if isinstance(c, dict))


class KueueQuota:
    """The quota tree of a snapshot and the usage charged against it (module docstring)."""

    def __init__(self, cqs: list[dict], cohorts: list[dict], local_queues: list[dict],
                 workloads: list[dict]) -> None:
        self.groups: dict[str, list[Group]] = {}
        self.fungibility: dict[str, str] = {}
        self.local: dict[str, str] = {}
        tenants, cohort_objs, named = [], {}, set()
        for o in cqs:
            name = str((o.get("metadata") or {}).get("name"))
            spec = o.get("spec") or {}
            groups, quotas = _groups(spec, f"ClusterQueue {name}")
            self.groups[name] = groups
            when = str((spec.get("flavorFungibility") or {}).get("whenCanBorrow") or "Borrow")
            if when not in ENUMS["whenCanBorrow"]:
                raise InputError("snapshot", f"ClusterQueue {name}.spec.flavorFungibility.whenCanBorrow",
                                 f"one of {', '.join(ENUMS['whenCanBorrow'])}, not {when!r}")
            self.fungibility[name] = "TryNextFlavor" if when == "TryNextFlavor" else "Borrow"
            cohort = spec.get("cohortName") or spec.get("cohort")
            if cohort:
                named.add(str(cohort))
            tenants.append(TenantQueue(name, cohort=str(cohort) if cohort else None,
                                       quotas=tuple((_key(f, r), q) for f, r, q in quotas)))
        for o in cohorts:
            name = str((o.get("metadata") or {}).get("name"))
            spec = o.get("spec") or {}
            _, quotas = _groups(spec, f"Cohort {name}")
            parent = spec.get("parentName") or spec.get("parent")
            cohort_objs[name] = Cohort(name, str(parent) if parent else None,
                                       tuple((_key(f, r), q) for f, r, q in quotas))
        for c in list(named) + [c.parent for c in cohort_objs.values() if c.parent]:
            cohort_objs.setdefault(c, Cohort(c))   # Kueue creates a cohort a queue names
        self.tenancy = Tenancy(tuple(tenants), tuple(cohort_objs.values()))
        for o in local_queues:
            meta = o.get("metadata") or {}
            self.local[f"{meta.get('namespace') or 'default'}/{meta.get('name')}"] = str(
                (o.get("spec") or {}).get("clusterQueue") or "")
        self.ledger = QuotaLedger(self.tenancy)
        self._charge(cqs, workloads)

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
                        self.ledger.add(cq, _key(str(flavors[r]), r), _milli(q, f"Workload {r}"))
        for o in cqs:
            name = str((o.get("metadata") or {}).get("name"))
            st = o.get("status") or {}
            if name in charged:
                continue
            for fu in st.get("flavorsReservation") or st.get("flavorsUsage") or []:
                for res in fu.get("resources") or []:
                    self.ledger.add(name, _key(str(fu.get("name")), str(res.get("name"))),
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
            wanted = [r for r in g.covered if v.demand.get(r, 0) > 0]
            if not wanted:
                continue
            chosen, borrows, blocks = self._flavor(cq, t, g, wanted, v.demand)
            if chosen is None:
                v.admits = False
                v.blocks += blocks
            else:
                v.flavors.update({r: chosen for r in wanted})
                v.borrows = v.borrows or borrows
        return v

    def _flavor(self, cq: str, t: TenantQueue, g: Group, wanted: list[str], demand: dict[str, int]
                ) -> tuple[str | None, bool, list[QuotaBlock]]:
        borrow_at: str | None = None
        blocks: list[QuotaBlock] = []
        for f in g.flavors:
            worst: tuple[int, QuotaBlock] | None = None
            needs_borrow = False
            for r in wanted:
                key, d = _key(f, r), demand[r]
                q = t.quota(key)
                used = self.ledger.used(cq, key)
                avail = self.ledger.available(("t", cq), key)
                if used + d <= q.nominal and d <= avail:
                    continue
                if t.cohort is not None and d <= avail:
                    needs_borrow = True
                    continue
                short = (used + d - q.nominal) if t.cohort is None else d - max(0, avail)
                detail = (f"{r} in flavor {f}: needs {show(r, d)}, ClusterQueue {cq} uses {show(r, used)} of "
                          f"nominal {show(r, q.nominal)}"
                          + (f" (borrowing limit {show(r, q.borrowing_limit)})"
                             if q.borrowing_limit is not None else "")
                          + (f", cohort {t.cohort} leaves {show(r, max(0, avail))} it may take" if t.cohort
                             else ", no cohort to borrow from")
                          + f": short by {show(r, short)}")
                if worst is None or short > worst[0]:
                    worst = (short, QuotaBlock(cq, f, r, show(r, d), show(r, short), detail))
            if worst is not None:
                blocks.append(worst[1])
                continue
            if not needs_borrow:
                return f, False, []
            if self.fungibility.get(cq) != "TryNextFlavor":
                return f, True, []
            borrow_at = borrow_at or f
        if borrow_at is not None:
            return borrow_at, True, []
        return None, False, blocks


def _pod_request(spec: dict) -> dict[str, int]:
    """A pod template's request in milli-units (sum of containers, raised to the largest init)."""
    out: dict[str, int] = {}
    for c in spec.get("containers") or []:
        for r, q in _res(c).items():
            out[r] = out.get(r, 0) + _milli(q, f"podSets container {r}")
    for c in spec.get("initContainers") or []:
        for r, q in _res(c).items():
            out[r] = max(out.get(r, 0), _milli(q, f"podSets initContainer {r}"))
    return out


def _res(container: dict) -> dict[str, Any]:
    res = container.get("resources") or {}
    return {**(res.get("limits") or {}), **(res.get("requests") or {})}


def from_snapshot(objects: dict[str, list[dict]]) -> KueueQuota | None:
    """The quota book of a snapshot's Kueue objects; None when it holds none. A snapshot with
    Workloads or LocalQueues but no ClusterQueue gets a book too, so that every check names the
    ClusterQueue it cannot find instead of quietly skipping the quota step."""
    def kueue(kind: str) -> list[dict]:
        out = []
        for o in objects.get(kind, []):
            group, _, version = str(o.get("apiVersion", "")).rpartition("/")
            if group != GROUP:
                continue
            if version not in VERSIONS:
                name = (o.get("metadata") or {}).get("name", "?")
                raise InputError("snapshot", f"{kind} {name}.apiVersion",
                                 f"{GROUP}/{' or '.join(VERSIONS)}, not {o.get('apiVersion')!r}")
            out.append(o)
        return out
    cqs = kueue("ClusterQueue")
    if not cqs and not kueue("LocalQueue") and not kueue("Workload"):
        return None
    return KueueQuota(cqs, kueue("Cohort"), kueue("LocalQueue"), kueue("Workload"))
