"""The running service: one source, the live loop over it, the store, auth and metrics.

Routes and the dashboard call this object; it is the only one that knows how the parts connect.

A mutation is durable before it is acknowledged: the store commits the job (or the change) and
its audit row in one transaction, then the change is posted to the loop, which applies it at its
next tick. A restart therefore rebuilds the live world from the store: pending and running jobs
are submitted again in their submission order (the virtual world restarts their runs: it has no
processes to find again), held jobs stay held, drained and cordoned nodes stay out, quota edits
are re-applied, and the source clock goes on from where it was.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

from gpufleet.live.kube_api import OfficialKubeApi
from gpufleet.live.kubernetes import MODES as KUBE_MODES
from gpufleet.live.kubernetes import kubernetes_source
from gpufleet.live.loop import LiveLoop
from gpufleet.live.slurm import slurm_source
from gpufleet.live.snapshot import LiveSnapshot
from gpufleet.live.source import LiveEvent, Source, SourceRefused, SourceUnavailable
from gpufleet.live.virtual import VirtualSource
from gpufleet.model.errors import InputError
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job
from gpufleet.model.tenancy import FlavorQuota, Tenancy
from gpufleet.policies.registry import UnknownPolicy, profile
from gpufleet.service.auth import Auth, Principal
from gpufleet.service.config import ServiceConfig
from gpufleet.service.demo import DemoLoad
from gpufleet.service.errors import ApiError
from gpufleet.service.events import EventRing
from gpufleet.service.jobs import (
    BadSubmission,
    build_job,
    job_from_body,
    new_job_id,
    parse_submission,
    stored_body,
)
from gpufleet.service.metrics import ServiceMetrics
from gpufleet.service.store import Store
from gpufleet.service.store.db import JobRecord, body_hash

SOURCES = ("virtual", "slurm", "kubernetes")
NODE_ACTIONS = {"drain": False, "cordon": False, "fail": False, "uncordon": True}


def make_source(config: ServiceConfig) -> Source:
    if config.source not in SOURCES:
        raise InputError("--source", "", f"unknown source {config.source!r}; expected one of "
                         f"{', '.join(SOURCES)}")
    if config.source == "slurm":
        return slurm_source(rest_url=config.slurm_rest, slurm_conf=config.slurm_conf, jwt=config.slurm_jwt,
                            user=config.slurm_user, fleet=config.fleet if config.fleet.nodes else None,
                            poll_s=config.poll_s)
    if config.source == "kubernetes":
        if config.kube_mode not in KUBE_MODES:
            raise InputError("--kube-mode", "", f"expected one of {', '.join(KUBE_MODES)}, "
                             f"got {config.kube_mode!r}")
        try:
            api = OfficialKubeApi(config.kubeconfig)
        except ImportError:
            raise InputError("--source", "kubernetes", "needs the kubernetes client: pip install "
                             "'gpufleet[k8s-scheduler]'") from None
        except Exception as e:  # the client's config errors (no kubeconfig, no in-cluster token)
            raise InputError("--kubeconfig", config.kubeconfig or "", f"no cluster to talk to: {e}") from None
        return kubernetes_source(api, mode=config.kube_mode, poll_s=config.poll_s)
    try:
        prof = profile(config.profile_name, config.fleet.fabric)
    except UnknownPolicy as e:
        raise InputError("--policy", "", str(e)) from None
    return VirtualSource(config.fleet, prof, config.tenancy)


def is_external(source: Source) -> bool:
    """A real world that holds its own jobs (Slurm, Kubernetes): jobs are submitted to it and
    changed in it from the request's thread and read back; its clock is the wall clock."""
    return bool(getattr(source, "external", False))


def _record_view(r: JobRecord) -> dict[str, Any]:
    return {"id": r.id, "tenant": r.tenant, "state": r.state, "priority": r.priority, "gpus": r.gpus,
            "submit_time": r.submit_time, "start_time": r.start_time, "end_time": r.end_time}


class Service:
    def __init__(self, config: ServiceConfig, store: Store | None = None,
                 source: Source | None = None) -> None:
        self.config = config
        self.store = store or Store(config.db_url)
        self.auth = Auth(self.store, config.argon2_time_cost, config.argon2_memory_kib)
        self.source = source if source is not None else make_source(config)
        self.external = is_external(self.source)
        #: One submission at a time to an external source: the idempotency check and the
        #: submission must not interleave, or two retries could both reach Slurm.
        self._send_lock = threading.Lock()
        clock = self.store.get_meta("clock")
        # A real source runs on the wall clock (Slurm's and Kubernetes' times are epoch seconds).
        epoch = time.time() if self.external else float(clock) if clock is not None else 0.0
        self.loop = LiveLoop(self.source, speed=1.0 if self.external else config.speed, tick_s=config.tick_s,
                             seed=config.seed, epoch=epoch)
        self.events = EventRing()
        self.loop.sinks.append(self._persist)
        self.loop.sinks.append(self.events.extend)
        self.metrics = ServiceMetrics(self)
        self.loop.sinks.append(self.metrics.observe_events)
        self.loop.cycle_observers.append(self.metrics.observe_cycle)
        self.demo = None
        if config.demo_load:
            self.demo = DemoLoad(self, seed=config.seed)
            self.loop.before_tick.append(self.demo.feed)
        self.restored = self._restore()
        if self.external:
            self.loop.tick()  # the first read before the first request: nodes and jobs at once

    # --- lifecycle ----------------------------------------------------------------------------
    def _restore(self) -> int:
        """Put the store's live jobs, node states and quota edits back into the world."""
        for row in self.store.quotas():
            self.loop.post(self._quota_command(row["tenant"], row["flavor"], FlavorQuota(
                row["nominal"], row["borrowing_limit"], row["lending_limit"])))
        for node, state in sorted(self.store.node_states().items()):
            if node in self.source.table.names:
                self.loop.post(self._node_command(node, state))
        recs = self.store.live_jobs()
        jobs = [job_from_body(r.body) for r in recs]
        # an external source still runs its jobs: they come back with the source's next read
        requeued = [r.id for r in recs if r.state == "running"] if not self.external else []
        if requeued:
            self.store.apply_job_updates((jid, {"state": "pending", "start_time": None}) for jid in requeued)

        def submit_all(src: Source, now: float) -> list[LiveEvent]:
            for j in jobs:
                src.submit(j, now)
            return []

        if jobs:
            self.loop.post(submit_all)
        return len(jobs)

    def start(self) -> None:
        if self.config.run_loop:
            self.loop.start()

    def stop(self) -> None:
        self.loop.stop()

    def snapshot(self) -> LiveSnapshot:
        """The live state the loop published last (immutable; any thread)."""
        return self.loop.snapshot()

    def tick(self) -> list[LiveEvent]:
        """One loop turn on the caller's thread (tests and benchmarks with ``run_loop=False``)."""
        return self.loop.tick()

    # --- what the loop did, recorded --------------------------------------------------------
    def _persist(self, events: list[LiveEvent]) -> None:
        ups: list[tuple[str, dict[str, Any]]] = []
        for ev in events:
            if ev.job is None:
                continue
            if ev.kind == "start":
                ups.append((ev.job, {"state": "running", "start_time": ev.t}))
            elif ev.kind == "finish":
                ups.append((ev.job, {"state": "finished", "end_time": ev.t}))
            elif ev.kind in ("preempt", "requeue"):
                ups.append((ev.job, {"state": "pending", "start_time": None}))
        self.store.apply_job_updates(ups, clock=self.loop.now())

    # --- jobs ---------------------------------------------------------------------------------
    def submit(self, who: Principal, body: Any, key: str | None) -> tuple[JobRecord, bool]:
        """Store a submission (durable on return) and post it to the loop: (record, created)."""
        if key is not None and not (1 <= len(key) <= 256):
            raise ApiError(422, "Idempotency-Key: 1 to 256 characters", "Idempotency-Key")
        try:
            sub = parse_submission(body)
        except BadSubmission as e:
            raise ApiError(422, str(e), e.field) from None
        if sub.tenant == "default" and who.role == "member" and "tenant" not in body:
            sub = sub.model_copy(update={"tenant": who.tenant})
        if not who.may_write_tenant(sub.tenant):
            self._refuse(who, "job.submit", sub.tenant,
                         f"{who.role} may not submit for tenant {sub.tenant!r}")
        ten = self.source.tenancy
        if ten is not None and ten.tenant(sub.tenant) is None:
            raise ApiError(422, f"tenant: {sub.tenant!r} has no queue (queues: "
                           f"{', '.join(t.name for t in ten.tenants)})", "tenant")
        digest = body_hash(body)
        if self.external:
            return self._submit_external(who, sub, body, key, digest)
        jid = sub.id or new_job_id()
        t = sub.submit_time if sub.submit_time is not None else self.loop.now()
        job = build_job(sub, jid, t)
        now = time.time()
        rec = JobRecord(jid, job.tenant, "pending", job.priority, job.total_gpus, stored_body(sub, jid, t),
                        t, None, None, key, digest, who.actor, now, now)
        try:
            stored, created = self.store.add_job(rec, audit=self._audit_row(
                who, "job.submit", jid, None, _record_view(rec)))
        except KeyError:
            raise ApiError(409, f"id: job {jid!r} exists already", "id") from None
        if not created:
            return self._replay(stored, digest, key)
        self.metrics.submitted.labels(job.tenant).inc()
        self.loop.post(self._submit_command(job))
        return stored, True

    def _submit_external(self, who: Principal, sub: Any, body: Any, key: str | None,
                         digest: str) -> tuple[JobRecord, bool]:
        """Submit to the source first (Slurm gives the job its id), then store it under that id.

        A retry with the same Idempotency-Key finds the stored record and sends nothing again;
        the lock makes check, send and store one step among concurrent retries. Slurm refusing
        is a 422 with its words, Slurm unreachable a 503; nothing is stored in either case."""
        with self._send_lock:
            if key is not None:
                found = self.store.job_by_key(key)
                if found is not None:
                    return self._replay(found, digest, key)
            t = self.loop.now()
            job = build_job(sub, sub.id or new_job_id(), t)
            try:
                jid = self.source.send(job)  # type: ignore[attr-defined]
            except SourceRefused as e:
                raise ApiError(422, f"{self.source.name} refused the job: {e}", "body") from None
            except SourceUnavailable as e:
                raise ApiError(503, f"{self.source.name} cannot take submissions now: {e}") from None
            job = replace(job, id=JobId(jid))
            now = time.time()
            rec = JobRecord(jid, job.tenant, "pending", job.priority, job.total_gpus,
                            stored_body(sub, jid, t), t, None, None, key, digest, who.actor, now, now)
            stored, created = self.store.add_job(rec, audit=self._audit_row(
                who, "job.submit", jid, None, {**_record_view(rec), "source": self.source.name}))
        self.metrics.submitted.labels(job.tenant).inc()
        return stored, created

    @staticmethod
    def _submit_command(job: Job, kind: str = "submit"):  # noqa: ANN205 (a loop Command)
        def cmd(src: Source, now: float) -> list[LiveEvent]:
            src.submit(job, now)
            return [LiveEvent(now, kind, job.id)]
        return cmd

    def _replay(self, found: JobRecord, digest: str, key: str | None) -> tuple[JobRecord, bool]:
        if found.body_hash != digest:
            raise ApiError(422, f"Idempotency-Key {key!r} was used for a different job ({found.id})",
                           "Idempotency-Key")
        return found, False

    def _audit_row(self, who: Principal, action: str, target: str, before: Any, after: Any,
                   outcome: str = "ok", detail: str = "") -> dict[str, Any]:
        return dict(actor=who.actor, role=who.role, action=action, target=target, outcome=outcome,
                    detail=detail, before=before, after=after)

    def _refuse(self, who: Principal, action: str, target: str, why: str, status: int = 403) -> None:
        self.store.audit(**self._audit_row(who, action, target, None, None, "refused", why))
        raise ApiError(status, why)

    def job_record(self, job_id: str) -> JobRecord:
        rec = self.store.job(job_id)
        if rec is None:
            raise ApiError(404, f"no job {job_id!r}", "job_id")
        return rec

    def change_job(self, who: Principal, job_id: str, action: str, priority: int | None = None) -> JobRecord:
        """cancel, hold, release or priority: checked against the store, recorded with before
        and after, then posted to the loop."""
        rec = self.store.job(job_id)
        if rec is None:
            self._refuse(who, f"job.{action}", job_id, f"no job {job_id!r}", 404)
        assert rec is not None
        if not who.may_write_tenant(rec.tenant):
            mine = f" of tenant {who.tenant!r}" if who.tenant else ""
            self._refuse(who, f"job.{action}", job_id,
                         f"{who.role}{mine} may not change tenant {rec.tenant!r}'s jobs")
        allowed = {"cancel": ("pending", "running", "held"), "hold": ("pending",), "release": ("held",),
                   "priority": ("pending", "held")}[action]
        if rec.state not in allowed:
            raise ApiError(409, f"job {job_id!r} is {rec.state}; {action} needs it "
                           f"{' or '.join(allowed)}", "state")
        values: dict[str, Any] = {}
        body = dict(rec.body)
        if action == "cancel":
            values = {"state": "cancelled", "end_time": self.loop.now()}
        elif action == "hold":
            values = {"state": "held"}
        elif action == "release":
            values = {"state": "pending"}
        else:
            body["priority"] = priority
            values = {"priority": priority, "body": body}
        after = {**_record_view(rec), **{k: v for k, v in values.items() if k != "body"}}
        if self.external:
            try:
                self.source.control(action, job_id, priority)  # type: ignore[attr-defined]
            except SourceRefused as e:
                raise ApiError(409, f"{self.source.name} refused {action}: {e}", "state") from None
            except SourceUnavailable as e:
                raise ApiError(503, f"{self.source.name} cannot {action} now: {e}") from None
        with self.store.writing() as c:
            self.store.set_job(job_id, c, **values)
            self.store.audit(c=c, **self._audit_row(who, f"job.{action}", job_id, _record_view(rec), after))
        was_live = rec.state in ("pending", "running")
        if self.external:
            pass  # done by the source above; its next read shows it
        elif action in ("cancel", "hold") and was_live:
            def withdraw(src: Source, now: float) -> list[LiveEvent]:
                return [LiveEvent(now, action, job_id)] if src.withdraw(job_id, now) else []
            self.loop.post(withdraw)
        elif action == "release":
            job = job_from_body(body)
            self.loop.post(self._submit_command(job, "release"))
        elif action == "priority" and rec.state == "pending":
            job = job_from_body(body)

            def reprioritise(src: Source, now: float) -> list[LiveEvent]:
                if job_id in src.pending():
                    src.replace(job)
                    return [LiveEvent(now, "priority", job_id, detail=str(priority))]
                return []
            self.loop.post(reprioritise)
        out = self.store.job(job_id)
        assert out is not None
        return out

    # --- nodes and quota ----------------------------------------------------------------------
    def _node_command(self, node: str, state: str):  # noqa: ANN202 (a loop Command)
        def cmd(src: Source, now: float) -> list[LiveEvent]:
            ok = NODE_ACTIONS[state]
            if state == "fail" and isinstance(src, VirtualSource):
                hit = src.fail_node(node, now)
                src.out_of_service[node] = "fail"
                return [LiveEvent(now, "fail", node=node)] + [
                    LiveEvent(now, "requeue", jid, node, "its node failed") for jid in hit]
            src.set_schedulable(node, ok)
            if ok:
                src.out_of_service.pop(node, None)
            else:
                src.out_of_service[node] = state
            return [LiveEvent(now, state, node=node)]
        return cmd

    def change_node(self, who: Principal, node: str, action: str) -> str:
        if who.role != "admin":
            self._refuse(who, f"node.{action}", node, f"{who.role} may not {action} nodes; admin only")
        if node not in self.source.table.names:
            raise ApiError(404, f"no node {node!r}", "name")
        if action not in NODE_ACTIONS:
            raise ApiError(422, f"action must be one of {', '.join(NODE_ACTIONS)}", "action")
        before = self.store.node_states().get(node, "up")
        after = "up" if action == "uncordon" else action
        with self.store.writing() as c:
            self.store.set_node_state(node, None if after == "up" else after, c)
            self.store.audit(c=c, **self._audit_row(who, f"node.{action}", node, {"state": before},
                                                    {"state": after}))
        self.loop.post(self._node_command(node, action))
        return after

    def _quota_command(self, tenant: str, flavor: str, q: FlavorQuota):  # noqa: ANN202
        def cmd(src: Source, now: float) -> list[LiveEvent]:
            ten = src.tenancy
            if ten is None:
                return []
            tenants = tuple(replace(t, quotas=tuple((f, q if f == flavor else old) for f, old in t.quotas)
                                    + (() if any(f == flavor for f, _ in t.quotas) else ((flavor, q),)))
                            if t.name == tenant else t for t in ten.tenants)
            src.tenancy = Tenancy(tenants=tenants, **{f: getattr(ten, f) for f in _TENANCY_REST})
            return [LiveEvent(now, "quota", detail=f"{tenant}/{flavor} nominal={q.nominal}")]
        return cmd

    def change_quota(self, who: Principal, tenant: str, flavor: str, q: FlavorQuota) -> None:
        if who.role != "admin":
            self._refuse(who, "quota.set", f"{tenant}/{flavor}",
                         f"{who.role} may not change quotas; admin only")
        ten = self.source.tenancy
        if ten is None:
            raise ApiError(409, "this service runs without a tenancy (start it with --tenancy FILE)")
        t = ten.tenant(tenant)
        if t is None:
            raise ApiError(404, f"no queue {tenant!r}", "tenant")
        if flavor not in {n.gpu for n in self.config.fleet.nodes}:
            raise ApiError(422, f"flavor: the fleet has no {flavor!r} GPUs", "flavor")
        old = t.quota(flavor)
        with self.store.writing() as c:
            self.store.set_quota(tenant, flavor, q.nominal, q.borrowing_limit, q.lending_limit, c)
            self.store.audit(c=c, **self._audit_row(
                who, "quota.set", f"{tenant}/{flavor}",
                _quota_dict(old), _quota_dict(q)))
        self.loop.post(self._quota_command(tenant, flavor, q))

    def jobs_of(self, rows: list[JobRecord]) -> list[Job]:
        return [job_from_body(r.body) for r in rows]


def _quota_dict(q: FlavorQuota) -> dict[str, int | None]:
    return {"nominal": q.nominal, "borrowing_limit": q.borrowing_limit, "lending_limit": q.lending_limit}


#: Tenancy's fields after ``tenants``, in order (a quota edit copies them).
_TENANCY_REST = [f for f in Tenancy.__dataclass_fields__ if f not in ("tenants", "_by_name")]
