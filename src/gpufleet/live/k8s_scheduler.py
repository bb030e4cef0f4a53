"""``gpufleet k8s scheduler``: a secondary scheduler (``schedulerName: gpufleet``), kept thin:
reader (list + watch into a store) → engine (the same ``analyze`` as ``k8s analyze``, which
calls ``run_cycle``) → writer (bindings, events, pod conditions).

Each tick, as leader only (a Lease):
1. bring every kind's store up to date from its watch; a 410 Gone re-lists that kind (an API
   server restart or etcd compaction looks the same and is survived the same way);
2. reconcile the assume cache: pods the API now shows bound are confirmed, assumptions the API
   never confirmed within the TTL are dropped (their capacity is free again);
3. build a snapshot in which assumed pods already sit on their nodes, and decide;
4. for every gang the engine would start now: check its pods are still pending, assume them all,
   bind them one by one; if one bind fails, the pods already bound are deleted (their
   controllers recreate them) and the assumptions dropped: the gang is bound whole or not at all;
5. for every waiting pod, when its reason changed: a ``FailedScheduling`` Event and the
   ``PodScheduled=False`` condition with the chain's per-node counts and the estimated start;
   for a gang that is a PodGroup, the same reason on the PodGroup once: a Volcano PodGroup gets
   the ``Unschedulable`` condition Volcano itself writes, a scheduler-plugins PodGroup (whose CRD
   has no conditions) a ``FailedScheduling`` Event about the PodGroup, and an upstream
   ``scheduling.k8s.io`` PodGroup the ``PodGroupScheduled=False`` condition on ``podgroups/status``
   (writer.py has the shapes).
"""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from gpufleet.adapters.kubernetes import writer
from gpufleet.adapters.kubernetes.analyze import PROFILE, Analysis, GangReport, analyze
from gpufleet.adapters.kubernetes.pods import K8S_PODGROUP
from gpufleet.adapters.kubernetes.snapshot import Snapshot
from gpufleet.live.cache import AssumeCache
from gpufleet.live.health import TRANSIENT, Health, backoff_s
from gpufleet.live.kube_api import KINDS, ApiError, Gone, KubeApi
from gpufleet.live.metrics import Metrics


@dataclass(frozen=True)
class SchedulerConfig:
    name: str = "gpufleet"
    identity: str = "gpufleet-0"
    lease_namespace: str = "kube-system"
    lease_name: str = "gpufleet-scheduler"
    lease_duration_s: int = 15
    watch_timeout_s: int = 1
    assume_ttl_s: float = 30.0
    assume_runtime_s: float = 86400.0
    #: The engine profile that decides the gangs (policies/registry.py).
    profile: str = PROFILE


@dataclass
class TickReport:
    leader: bool
    bound: list[tuple[str, str]] = field(default_factory=list)
    waiting: dict[str, str] = field(default_factory=dict)
    rolled_back: list[str] = field(default_factory=list)


def _key(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name')}"


class KubeScheduler:
    def __init__(self, api: KubeApi, config: SchedulerConfig | None = None,
                 clock: Callable[[], float] = time.time, metrics: Metrics | None = None) -> None:
        self.api = api
        self.cfg = config or SchedulerConfig()
        self.clock = clock
        self.metrics = metrics or Metrics()
        self.cache = AssumeCache(self.cfg.assume_ttl_s)
        self.store: dict[str, dict[str, dict]] = {k: {} for k in KINDS}
        self.rv: dict[str, str | None] = dict.fromkeys(KINDS)
        self.said: dict[str, str] = {}
        self.health = Health()
        #: The last tick's analysis (the live service's Kubernetes source reads it).
        self.last_analysis: Analysis | None = None

    # 1. reader -----------------------------------------------------------------------------
    def relist(self, kind: str) -> None:
        items, rv = self.api.list(kind)
        self.store[kind] = {_key(o): o for o in items}
        self.rv[kind] = rv

    def refresh(self, kind: str) -> None:
        if self.rv[kind] is None:
            self.relist(kind)
            return
        try:
            for ev in self.api.watch(kind, self.rv[kind] or "", self.cfg.watch_timeout_s):
                obj = ev.get("object") or {}
                rv = (obj.get("metadata") or {}).get("resourceVersion")
                if ev.get("type") in ("ADDED", "MODIFIED"):
                    self.store[kind][_key(obj)] = obj
                elif ev.get("type") == "DELETED":
                    self.store[kind].pop(_key(obj), None)
                if rv:
                    self.rv[kind] = rv
        except Gone:
            self.metrics.inc("watch_restarts")
            self.relist(kind)

    # 3. snapshot with assumptions ----------------------------------------------------------
    def snapshot(self) -> Snapshot:
        snap = Snapshot()
        for kind in KINDS:
            for key, obj in sorted(self.store[kind].items()):
                node = self.cache.node_of(key) if kind == "Pod" else None
                if node is not None:
                    obj = copy.deepcopy(obj)
                    obj.setdefault("spec", {})["nodeName"] = node
                    obj.setdefault("status", {})["phase"] = "Pending"
                snap.add(obj if "kind" in obj else {**obj, "kind": kind}, "api")
        return snap

    def tick(self) -> TickReport:
        now = self.clock()
        if not self.api.acquire_lease(self.cfg.lease_namespace, self.cfg.lease_name, self.cfg.identity,
                                      self.cfg.lease_duration_s, now):
            return TickReport(leader=False)
        started = time.perf_counter()
        for kind in KINDS:
            self.refresh(kind)
        pods = self.store["Pod"]
        # 2. confirm or drop assumptions
        self.cache.reconcile({k: (p.get("spec") or {}).get("nodeName", "") for k, p in pods.items()},
                             set(pods), now)
        analysis = analyze(self.snapshot(), scheduler=self.cfg.name, now=now,
                           assume_runtime_s=self.cfg.assume_runtime_s, defrag=False, profile=self.cfg.profile)
        self.last_analysis = analysis
        report = TickReport(leader=True)
        self.metrics.set_pending(sum(len(g.gang.pods) for g in analysis.gangs))
        for g in analysis.gangs:
            if g.assignments:
                self._bind_gang(g, report, now)
            elif g.code != "GATED":   # a gated pod's PodScheduled=False/SchedulingGated is the API server's
                self._say_why(g, report, now)
        self.metrics.inc("cycles")
        self.metrics.observe_cycle(time.perf_counter() - started)
        return report

    # 4. bind a gang whole or not at all ---------------------------------------------------
    def _bind_gang(self, g: GangReport, report: TickReport, now: float) -> None:
        pods = self.store["Pod"]
        for key, _ in g.assignments:
            pod = pods.get(key)
            if pod is None or (pod.get("spec") or {}).get("nodeName") or self.cache.node_of(key):
                return   # changed under us since the read: decide again next tick
        for key, node in g.assignments:
            self.cache.assume(key, node, now)
        done: list[tuple[str, str]] = []
        for key, node in g.assignments:
            ns, name = key.split("/", 1)
            try:
                self.api.bind(ns, name, writer.binding(ns, name, node))
            except ApiError as e:
                self.metrics.inc("bind_failures")
                self._roll_back(g, done, key, e, now)
                report.rolled_back.append(g.gang.key)
                return
            done.append((key, node))
        for key, node in done:
            self.metrics.inc("bindings")
            ns, name = key.split("/", 1)
            self._event(key, "Scheduled", f"Successfully assigned {key} to {node}", "Normal", "Binding", now)
            self.said.pop(key, None)
        report.bound += done
        self._clear_podgroup(g, now)

    def _clear_podgroup(self, g: GangReport, now: float) -> None:
        """A Volcano PodGroup we marked Unschedulable is marked Scheduled once its gang is bound."""
        said_key = f"VolcanoPodGroup:{g.gang.key}"
        obj = self.store["VolcanoPodGroup"].get(g.gang.key)
        if g.gang.kind != "Volcano PodGroup" or obj is None or self.said.pop(said_key, None) is None:
            return
        ns, name = g.gang.key.split("/", 1)
        existing = (obj.get("status") or {}).get("conditions") or []
        body = writer.volcano_podgroup_scheduled(existing if isinstance(existing, list) else [], now,
                                                 f"{self.cfg.identity}-{int(now)}")
        with contextlib.suppress(ApiError):
            self.api.patch_podgroup(str(obj.get("apiVersion", "")), ns, name, body)

    def _roll_back(self, g: GangReport, done: list[tuple[str, str]], failed: str, err: ApiError,
                   now: float) -> None:
        self.metrics.inc("gang_rollbacks")
        for key, _ in g.assignments:
            self.cache.forget(key)
        for key, _ in done:
            ns, name = key.split("/", 1)
            with contextlib.suppress(ApiError):   # already gone: nothing holds its capacity
                self.api.delete_pod(ns, name)
        note = (f"gang {g.gang.key}: binding {failed} failed ({err}); {len(done)} pod(s) already bound "
                "were deleted so the gang does not hold part of its GPUs")
        for p in g.gang.pods:
            self._event(p.key, "FailedScheduling", note, "Warning", "Scheduling", now)

    # 5. say why the others wait ------------------------------------------------------------
    def _say_why(self, g: GangReport, report: TickReport, now: float) -> None:
        lines = [line for line in g.chain if line.startswith(("per node now:", "engine:", "estimated start:",
                                                               "fit anywhere", "GPU readiness:"))]
        message = f"{g.gang.kind} {g.gang.key}: " + "; ".join(lines)
        for p in g.gang.pods:
            report.waiting[p.key] = message
            if self.said.get(p.key) == message:
                continue
            self._event(p.key, "FailedScheduling", message, "Warning", "Scheduling", now)
            with contextlib.suppress(ApiError):   # the pod went away; the next tick's store drops it
                self.api.patch_pod_status(p.namespace, p.name, writer.unschedulable_condition(message, now))
            self.said[p.key] = message
        self._say_on_podgroup(g, message, now)

    def _say_on_podgroup(self, g: GangReport, message: str, now: float) -> None:
        kind = {"Volcano PodGroup": "VolcanoPodGroup", "PodGroup": "PodGroup",
                K8S_PODGROUP: "KubePodGroup"}.get(g.gang.kind)
        obj = self.store[kind].get(g.gang.key) if kind else None
        said_key = f"{kind}:{g.gang.key}"
        if obj is None or self.said.get(said_key) == message:
            return
        ns, name = g.gang.key.split("/", 1)
        api_version = str(obj.get("apiVersion", ""))
        uid = str((obj.get("metadata") or {}).get("uid", ""))
        with contextlib.suppress(ApiError):   # the PodGroup went away: nothing to write on
            if kind == "VolcanoPodGroup":
                existing = (obj.get("status") or {}).get("conditions") or []
                body = writer.volcano_podgroup_condition(existing if isinstance(existing, list) else [],
                                                         message, now, f"{self.cfg.identity}-{int(now)}")
                self.api.patch_podgroup(api_version, ns, name, body)
            elif kind == "KubePodGroup":
                existing = (obj.get("status") or {}).get("conditions") or []
                self.api.patch_podgroup_status(api_version, ns, name, writer.upstream_podgroup_condition(
                    existing if isinstance(existing, list) else [], message, now))
            else:
                self.api.create_event(ns, writer.podgroup_event(
                    ns, name, uid, api_version, note=message, now=now,
                    controller=f"{self.cfg.name}-scheduler", instance=self.cfg.identity))
        self.said[said_key] = message

    def _event(self, key: str, reason: str, note: str, type_: str, action: str, now: float) -> None:
        ns, name = key.split("/", 1)
        uid = str(((self.store["Pod"].get(key) or {}).get("metadata") or {}).get("uid", ""))
        body = writer.event(ns, name, uid, reason=reason, note=note, type_=type_, action=action, now=now,
                            controller=f"{self.cfg.name}-scheduler", instance=self.cfg.identity)
        with contextlib.suppress(ApiError):   # events are best effort, as in kube-scheduler
            self.api.create_event(ns, body)

    def step(self, interval_s: float) -> float:
        """One cycle that never ends the process on an API or transport failure (live/health.py):
        the failure is counted and kept for the health endpoint, the watches start again from a
        fresh list, and the seconds to wait before the next step come back (a backoff after a
        failure, the rest of the interval after a cycle that worked)."""
        t0 = self.clock()
        try:
            self.tick()
        except TRANSIENT as e:
            self.health.failed(e)
            self.metrics.inc("api_errors")
            for kind in KINDS:
                self.rv[kind] = None
            return backoff_s(interval_s, self.health.consecutive_failures)
        self.health.ok(self.clock())
        return max(0.0, interval_s - (self.clock() - t0))

    def run(self, interval_s: float, stop: Callable[[], bool]) -> None:  # pragma: no cover - loop
        while not stop():
            time.sleep(self.step(interval_s))
