"""``gpufleet k8s analyze``: a cluster snapshot → allocated vs usable, stranded GPUs, and for
every pending pod or gang the chain of what holds it back, with the engine's start estimate.

The engine decides: pending gangs become our jobs, bound pods become running jobs whose
``PodBinding``s hold capacity on a ``NodeTable.from_fleet`` table, and ``run_cycle`` with the
``gang-conservative`` profile (reservations for the first 16 blocked jobs) says who would start
now and when the others would. Kubernetes filters that our table does not model (taints, node
selectors and affinity, a failed GPU layer, DRA eligibility) travel on each job as its
``eligible_nodes``, so one engine run decides every gang (engine_run.py).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from gpufleet.adapters.kubernetes import capacity, engine_run, kueue_quota
from gpufleet.adapters.kubernetes.capacity import Overcommit, Stranded
from gpufleet.adapters.kubernetes.cel import SelectorError
from gpufleet.adapters.kubernetes.claims import DraState, read_dra
from gpufleet.adapters.kubernetes.defrag import DefragPlan
from gpufleet.adapters.kubernetes.defrag_milp import plan as defrag_plan
from gpufleet.adapters.kubernetes.filters import (
    capacity_reason,
    node_reasons,
    pod_shape,
    static_reason,
    summary,
)
from gpufleet.adapters.kubernetes.fixes import Fix, rank_fixes
from gpufleet.adapters.kubernetes.fragmentation import fragmentation
from gpufleet.adapters.kubernetes.jobs import Gang, group, minimum
from gpufleet.adapters.kubernetes.kueue import is_kueue, read_workload, workload_of
from gpufleet.adapters.kubernetes.kueue_quota import QuotaVerdict
from gpufleet.adapters.kubernetes.nodes import KubeNode, TopologyLabels, read_node
from gpufleet.adapters.kubernetes.pods import (
    UPSTREAM_API,
    KubePod,
    read_pod,
    read_podgroup,
    read_upstream,
    timestamp,
)
from gpufleet.adapters.kubernetes.snapshot import Snapshot
from gpufleet.adapters.kubernetes.stranding import CountsVsClaims, counts_vs_claims
from gpufleet.engine.status import StatusCode
from gpufleet.engine.types import CycleInput
from gpufleet.model.errors import InputError

PROFILE = engine_run.PROFILE


@dataclass
class GangReport:
    gang: Gang
    reasons: Counter[str]
    fits_empty: bool
    code: str
    engine: str
    estimated_start: float | None
    blockers: list[str]
    layers_down: Counter[str]
    chain: list[str] = field(default_factory=list)
    counts_vs_claims: CountsVsClaims | None = None
    fixes: list[Fix] = field(default_factory=list)
    #: (pod key, node) for every pod the engine would bind now (empty when the gang waits).
    assignments: list[tuple[str, str]] = field(default_factory=list)
    #: nodes every pod of the gang may use (taints, selectors, affinity, layers, DRA); the job's
    #: ``eligible_nodes`` in the engine run (engine_run.py)
    eligible: frozenset[str] = frozenset()
    #: Kueue quota arithmetic for the gang's ClusterQueue (kueue_quota.py); None: not Kueue
    quota: QuotaVerdict | None = None


@dataclass
class Analysis:
    now: float
    nodes: list[KubeNode]
    pods: list[KubePod]
    gangs: list[GangReport]
    stranded: list[Stranded]
    totals: dict[str, int]
    skipped: Counter[str]
    notes: list[str]
    assume_runtime_s: float
    #: pod size (GPUs) -> share of free GPUs a pod of that size cannot use (fragmentation.py)
    fragmentation: dict[int, float] = field(default_factory=dict)
    #: moves of running gangs that let waiting GPU demand start (defrag.py); None: none helps
    defrag: DefragPlan | None = None
    #: Kueue Workloads waiting for quota with no pending pod in the snapshot (a suspended Job
    #: creates no pods until admitted): "namespace/name" -> the quota arithmetic
    queued: dict[str, QuotaVerdict] = field(default_factory=dict)
    #: where ``now`` came from: "--now", or the object whose timestamp is the latest
    now_source: str = ""
    #: nodes whose bound pods request more GPUs than they allocate (capacity.py)
    overcommitted: list[Overcommit] = field(default_factory=list)
    #: The engine cycle the gangs were decided by (None: no nodes); the live service's
    #: Kubernetes source publishes its nodes, jobs and statuses.
    engine_input: CycleInput | None = None


def _now(snap: Snapshot, pods: list[KubePod]) -> tuple[float, str]:
    """The snapshot's time and where it was read: the latest timestamp among node heartbeats and
    the creations and starts of pods that hold or wait for capacity. Finished pods (Succeeded,
    Failed) are left out: they bear on no estimate, and one created after the capture (a
    merged folder, a later ``kubectl get``) must not move every estimate with it."""
    best, src = 0.0, "no timestamp in the snapshot (estimates are relative to 1970-01-01)"
    for p in pods:
        if p.phase in ("Succeeded", "Failed"):
            continue
        for what, t in (("created", p.created), ("started", p.started)):
            if t is not None and t > best:
                best, src = t, f"Pod {p.key} {what}"
    for n in snap.of("Node"):
        for c in (n.get("status") or {}).get("conditions") or []:
            t = timestamp(c.get("lastHeartbeatTime"))
            if t is not None and t > best:
                best, src = t, f"Node {(n.get('metadata') or {}).get('name', '?')} heartbeat"
    return best, (f"latest timestamp in the snapshot: {src}" if best else src)


def _usage(nodes: list[KubeNode], pods: list[KubePod], notes: list[str]) -> dict[str, list[float]]:
    used = {n.name: [0.0, 0.0, 0.0] for n in nodes}
    orphans = 0
    for p in pods:
        if not p.holds_capacity:
            continue
        if p.node_name not in used:
            orphans += 1
            continue
        u = used[p.node_name]
        u[0] += p.gpus
        u[1] += p.cpus
        u[2] += p.memory_gb
    if orphans:
        notes.append(f"{orphans} bound pod(s) on nodes missing from the snapshot were left out of usage")
    return used


def analyze(snap: Snapshot, *, topology: TopologyLabels | None = None, assume_runtime_s: float = 86400.0,
            now: float | None = None, scheduler: str | None = None, defrag: bool = True,
            defrag_method: str = "milp", profile: str = PROFILE) -> Analysis:
    """The analysis of ``snap``; with ``scheduler``, only pending pods whose ``schedulerName`` is
    that one are decided (the others still hold what they are bound to). ``defrag=False`` skips
    the cluster-wide defrag plan (the live scheduler's ticks do not act on it). ``profile``: the
    engine profile that decides the pending gangs (engine_run.py)."""
    topo = topology or TopologyLabels()
    dra = _guard("DRA objects", read_dra, snap)
    nodes = [_guard(_name("Node", o), read_node, o, topo, dra_gpus=dra.gpu_devices(_name("", o).strip()))
             for o in snap.of("Node")]
    pods = [_guard(_name("Pod", o), read_pod, o) for o in snap.of("Pod")]
    pods = [replace(p, gpus=p.gpus + dra.gpus_of(p)) if p.claims else p for p in pods]
    podgroups = {pg.key: pg for pg in (_guard(_name("PodGroup", o), read_podgroup, o)
                                       for o in snap.of("PodGroup"))}
    podgroups.update({pg.key: pg for o in snap.of("Workload") if str(o.get("apiVersion", "")).startswith(
        UPSTREAM_API) for pg in _guard(_name("Workload", o), read_upstream, o)})
    notes: list[str] = list(dra.notes)
    t_now, now_source = (now, "--now") if now is not None else _now(snap, pods)
    used = _usage(nodes, pods, notes)
    over = capacity.overcommitted(nodes, used, pods)
    held = _claims_without_pods(nodes, used, dra)
    sched = {n.name: n.node.health.schedulable for n in nodes}
    free = {n.name: ((max(0.0, n.node.gpus - used[n.name][0]), n.node.cpus - used[n.name][1],
                      n.node.memory_gb - used[n.name][2]) if sched[n.name] else (0.0, 0.0, 0.0))
            for n in nodes}
    pending = [p for p in pods if p.pending and (scheduler is None or p.scheduler == scheduler)]
    running_gangs = group([p for p in pods if p.holds_capacity and p.node_name in used], podgroups)
    pending_gangs = group(pending, podgroups)
    decided = engine_run.run(nodes, running_gangs, [g for g in pending_gangs if not _held(g)],
                             t_now, assume_runtime_s, dra, held, profile)
    notes += decided.notes
    results = decided.results
    mig_free = _mig_free(nodes, pods)
    caches = _Caches(layers=Counter(f"{n.blocker.name}: {n.blocker.detail}" for n in nodes
                                    if n.blocker is not None and n.has_gpus))
    reports = [_report(g, nodes, free, results.get(g.key), t_now, dra, mig_free, caches)
               for g in pending_gangs]
    for r in reports:
        r.eligible = decided.eligible.get(r.gang.key, frozenset())
    queued = _quota(snap, reports)
    for r in reports:
        if r.code not in ("SCHEDULED", *HELD):
            r.fixes = rank_fixes(r.gang, r.reasons, nodes, free, running_gangs, t_now, caches.fixes)
            if r.fixes:
                r.chain.append("fixes (by GPU-hours of other work moved): " + "; ".join(
                    f"{i}) {f.what}: {f.displaced_gpu_h:g} GPU-h" for i, f in enumerate(r.fixes[:3], 1)))
    stranded = capacity.stranded(nodes, used, free, pending, dra)
    totals = capacity.totals(nodes, used, free, stranded, pending, over)
    if any(p.mig for p in pending):
        notes.append("MIG requests are checked by the node filters; the engine estimate covers "
                     "whole-GPU pods and single MIG instances")
    frag = fragmentation([int(free[n.name][0]) for n in nodes if n.node.health.schedulable and n.node.gpus])
    plan = defrag_plan(nodes, _after_starts(free, reports, pending), running_gangs,
                       [minimum(r.gang) for r in reports if r.fits_empty
                        and r.code not in ("SCHEDULED", *HELD)],
                       t_now, defrag_method) if defrag else None
    return Analysis(t_now, nodes, pods, reports, stranded, totals, snap.skipped, notes, assume_runtime_s,
                    frag, plan, queued, now_source, over, decided.input)


@dataclass
class _Caches:
    """Answers shared by pending gangs of one pod shape (filters.pod_shape), for one snapshot:
    at 4,000 nodes and thousands of pending pods, each gang asking every node again was most of
    the analysis's time (bench/README.md, "k8s analyze at 4,000 nodes")."""

    layers: Counter[str]
    reasons: dict = field(default_factory=dict)
    fits_empty: dict = field(default_factory=dict)
    empty_reasons: dict = field(default_factory=dict)
    fixes: dict = field(default_factory=dict)


def _quota(snap: Snapshot, reports: list[GangReport]) -> dict[str, QuotaVerdict]:
    """The quota step of each chain: the Workload's own conditions, then (with ClusterQueues in
    the snapshot) the quota arithmetic of kueue_quota.py for the gang's ClusterQueue. Returns
    the arithmetic for Workloads not admitted that no pending gang stands for (suspended Jobs)."""
    raw = {((o.get("metadata") or {}).get("namespace") or "default", (o.get("metadata") or {}).get("name")): o
           for o in snap.of("Workload") if is_kueue(o)}
    workloads = [read_workload(o) for o in raw.values()]
    book = _guard("Kueue quota objects", kueue_quota.from_snapshot, snap.objects)
    seen: set[tuple[str, str]] = set()
    for r in reports:
        w = workload_of(r.gang.pods[0], workloads) if workloads and r.gang.pods else None
        if w is not None:
            r.chain[1] = w.quota_line()
        if book is None or (w is not None and w.conditions.get("Admitted", ("",))[0] == "True"):
            continue
        obj = raw.get((w.namespace, w.name)) if w is not None else None
        cq, lq = book.queue_of(obj, r.gang.pods)
        if not cq and obj is None and not lq:
            continue   # not a Kueue-managed gang
        demand, source = _guard("Kueue Workload", book.demand, obj, r.gang.pods)
        r.quota = book.check(cq, demand, source, lq)
        if w is None:
            r.chain[1] = f"quota: LocalQueue {lq} (no Workload in the snapshot)"
        r.chain.insert(2, r.quota.line())
        seen.add((w.namespace, w.name) if w is not None else ("", ""))
    queued: dict[str, QuotaVerdict] = {}
    for key, obj in raw.items() if book is not None else ():
        if key in seen or any(kueue_quota.is_true(obj, c) for c in ("Admitted", "QuotaReserved", "Finished")):
            continue
        cq, lq = book.queue_of(obj, ())
        demand, source = _guard("Kueue Workload", book.demand, obj, ())
        queued[f"{key[0]}/{key[1]}"] = book.check(cq, demand, source, lq)
    return queued


#: codes of gangs no scheduler places yet (not decided by the engine, no fixes, not in the plan)
HELD = ("WAITING_FOR_POD_GROUP", "GATED")


def _held(g: Gang) -> bool:
    return bool(g.missing_group) or any(p.gates for p in g.pods)


def _after_starts(free: dict, reports: list[GangReport], pending: list[KubePod]) -> dict:
    """Free capacity once the gangs the engine starts now hold their nodes."""
    out = {k: list(v) for k, v in free.items()}
    by_key = {p.key: p for p in pending}
    for r in reports:
        for key, node in r.assignments:
            p = by_key.get(key)
            if p is not None and node in out:
                f = out[node]
                out[node] = [f[0] - p.gpus, f[1] - p.cpus, f[2] - p.memory_gb]
    return out


def _name(kind: str, obj: dict) -> str:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    return f"{kind} {meta.get('name', '?')}"


def _guard(what: str, fn, *args, **kw):
    """Call a reader; a field of the wrong type (a list where a map belongs, a string for a
    number) becomes one ``InputError`` naming the object, never a traceback."""
    try:
        return fn(*args, **kw)
    except (InputError, SelectorError):
        raise
    except (TypeError, AttributeError, KeyError, ValueError) as e:
        raise InputError("snapshot", what, f"unexpected field type or value ({type(e).__name__}: {e})"
                         ) from None


def _claims_without_pods(nodes: list[KubeNode], used: dict, dra: DraState) -> dict[str, int]:
    """GPUs held by allocated claims beyond what bound pods account for, per DRA node (a claim
    allocated before its pod binds, or one the snapshot's pods do not name). Added to usage."""
    out = {}
    for n in nodes:
        if n.gpu.capacity:
            continue
        taken = sum(1 for d in dra.devices.get(n.name, ()) if d.key in dra.used
                    and d.attributes.get("gpu.nvidia.com/type") == "gpu")
        extra = taken - int(used[n.name][0])
        if extra > 0:
            out[n.name] = extra
            used[n.name][0] += extra
    return out


_AT = re.compile(r"t=(\d+(?:\.\d+)?)s \(in (\d+(?:\.\d+)?)s\)")


def _engine_text(status) -> str:
    """The engine's code and reasons, with its simulated-clock times (``t=1742508005s (in
    81716s)``: on a snapshot the clock is Unix time) read as a UTC time and a duration."""
    reasons = list(dict.fromkeys(status.reasons))
    text = f"{status.code}" + (": " + "; ".join(reasons) if reasons else "")
    return _AT.sub(lambda m: f"{clock(float(m[1]))} (in {float(m[2]) / 3600:.1f} h)", text)


def clock(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _mig_free(nodes: list[KubeNode], pods: list[KubePod]) -> dict[str, dict[str, int]]:
    """Free MIG instances per node and profile (mixed strategy): allocatable minus bound pods'."""
    out = {n.name: {k: a for k, (_, a) in n.gpu.mig.items()} for n in nodes if n.node.health.schedulable}
    for p in pods:
        if p.holds_capacity and p.node_name in out:
            for k, v in p.mig.items():
                out[p.node_name][k] = out[p.node_name].get(k, 0) - v
    return out


def _empty_reasons(p: KubePod, nodes: list[KubeNode], dra: DraState) -> Counter[str]:
    """Per reason, the nodes that could not hold one pod ``p`` even empty ("fits" for the rest)."""
    out: Counter[str] = Counter()
    for n in nodes:
        why = static_reason(p, n, dra) or capacity_reason(
            p, n.node.gpus, n.node.cpus, n.node.memory_gb, {k: a for k, (_, a) in n.gpu.mig.items()})
        out[(why or "fits").replace("free ", "")] += 1
    return out


def _report(g: Gang, nodes: list[KubeNode], free: dict, result: tuple | None, now: float,
            dra: DraState, mig_free: dict[str, dict[str, int]] | None = None,
            caches: _Caches | None = None) -> GangReport:
    caches = caches or _Caches(Counter(f"{n.blocker.name}: {n.blocker.detail}" for n in nodes
                                       if n.blocker is not None and n.has_gpus))
    reasons: Counter[str] = Counter()
    empty: Counter[str] = Counter()
    for p in g.pods[:1]:  # the gang's pods share a spec as a rule; the first speaks for them
        reasons = node_reasons(p, nodes, free, dra, mig_free, caches.reasons)
        shape = pod_shape(p)
        empty = caches.empty_reasons.get(shape) if shape is not None else None
        if empty is None:
            empty = _empty_reasons(p, nodes, dra)
            if shape is not None:
                caches.empty_reasons[shape] = empty
    fits_empty = bool(empty.get("fits"))
    layers = caches.layers
    code, engine, start, blockers, assignments = "UNKNOWN", "not examined", None, [], []
    if result is not None:
        status, res, running, placed, names, assignments = result
        if placed:
            code, engine, start = "SCHEDULED", f"fits now: would bind on {', '.join(placed)}", now
        elif status is not None:
            code, engine = str(status.code), _engine_text(status)
            start = res.start if res is not None else status.estimated_start
            if res is not None:
                held = {names[i] for i in res.nodes}
                for rj in running:
                    on = sorted({names[b.node] for b in rj.bindings} & held)
                    if on:
                        blockers.append(f"{rj.job.id} on {', '.join(on)}")
    first = g.pods[0] if g.pods else None
    asks = (f"{g.gpus} GPU(s)" if g.gpus or first is None or first.mig
            else f"no GPU (CPU-only: {first.cpus:g} CPU(s), {first.memory_gb:.3g} GB per pod)")
    chain = [f"{g.kind} {g.key}: {len(g.pods)} pending pod(s), {asks}"
             + (f", minMember {g.min_member}" if g.kind.endswith(("PodGroup", "Workload"))
                and not g.missing_group else ""),
             "quota: no Kueue Workload in the snapshot (not checked)",
             "fit anywhere (cluster empty): "
             + ("yes" if fits_empty else "no: no node could ever hold one pod ("
                + summary(empty).removesuffix(" ") + ")"),
             "per node now: " + (summary(reasons) or "no nodes")]
    if layers:
        chain.append("GPU readiness: " + "; ".join(f"{n} node(s) {r}" for r, n in layers.most_common(3)))
    gates = sorted({name for p in g.pods for name in p.gates})
    if g.missing_group:
        code = "WAITING_FOR_POD_GROUP"
        engine = (f"not placed: the pods name {g.kind} {g.missing_group}, which is not in the snapshot; "
                  "the scheduler keeps them pending until it exists")
    elif gates:
        code = "GATED"
        engine = (f"not placed: scheduling gate(s) {', '.join(gates)} (no scheduler considers a gated pod "
                  "until its gates are removed; kueue.x-k8s.io/admission is removed when Kueue admits it)")
    chain.append(f"engine: {engine}")
    if code not in ("SCHEDULED", str(StatusCode.UNRESOLVABLE), *HELD):
        chain.append("estimated start: " + (f"{clock(start)} (+{(start - now) / 3600:.1f} h from now)"
                                            if start is not None else "none")
                     + (f"; waits for {'; '.join(blockers)}" if blockers else ""))
    cvc = _counts_vs_claims(g, dra)
    if cvc is not None:
        chain.append(f"counts vs claims: of {cvc.qualifying} free GPU(s) this claim accepts, a count request "
                     f"(nvidia.com/gpu + node selector) leaves {cvc.unusable_counts} unusable "
                     f"({cvc.mixed_nodes} mixed node(s)), the claim {cvc.unusable_claims}; "
                     f"pods that fit: {cvc.pods_counts} vs {cvc.pods_claims}")
    return GangReport(g, reasons, fits_empty, code, engine, start, blockers, layers, chain,
                      counts_vs_claims=cvc, assignments=assignments)


def _counts_vs_claims(g: Gang, dra: DraState) -> CountsVsClaims | None:
    """The stranding arithmetic for the gang's first whole-GPU claim request (stranding.py)."""
    claims, _ = dra.pod_claims(g.pods[0]) if g.pods and g.pods[0].claims else ([], [])
    req = next((r for c in claims for r in c.requests
                if r.device_class == "gpu.nvidia.com" and r.mode == "ExactCount"), None)
    if req is None or not dra.devices:
        return None
    return counts_vs_claims(dra.devices, req, dra.classes, dra.used)
