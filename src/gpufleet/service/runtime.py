"""The running service: one source, the live loop over it, the store, auth and metrics.

Routes and the dashboard call this object; it is the only one that knows how the parts connect.

A mutation is durable before it is acknowledged: the store commits the job (or the change), its
audit row and its change-log row in one transaction. The scheduler leader (this process, or
another replica on the same PostgreSQL: service/leader.py) reads the change log at every tick and
applies it to the live world. A restart or a new leader therefore rebuilds the live world from the
store: running jobs are adopted on the nodes they run on (the virtual world: where the store says
they were placed; a job placed on fractional slots is queued again), pending jobs are submitted
again in their submission order, held jobs stay held, drained and cordoned nodes stay out, quota
edits are re-applied, and the source clock goes on from where it was.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import replace
from typing import Any

from gpufleet.live.k8s_scheduler import SchedulerConfig
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
from gpufleet.model.tenancy import FlavorQuota
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
from gpufleet.service.leader import NODE_ACTIONS, ChangeLog, Leadership
from gpufleet.service.metrics import ServiceMetrics
from gpufleet.service.store import Store
from gpufleet.service.store.db import JobRecord, body_hash
from gpufleet.service.store.schema import jobs as jobs_table
from gpufleet.service.wake import Listener, listener_for

SOURCES = ("virtual", "slurm", "kubernetes")
log = logging.getLogger("gpufleet.service")


def make_source(config: ServiceConfig) -> Source:
    if config.source not in SOURCES:
        raise InputError("--source", "", f"unknown source {config.source!r}; expected one of "
                         f"{', '.join(SOURCES)}")
    if config.source == "slurm":
        return slurm_source(rest_url=config.slurm_rest, slurm_conf=config.slurm_conf, jwt=config.slurm_jwt,
                            user=config.slurm_user, fleet=config.fleet if config.fleet.nodes else None,
                            poll_s=config.poll_s)
    try:
        prof = profile(config.profile_name, config.fleet.fabric)
    except UnknownPolicy as e:
        raise InputError("--policy", "", str(e)) from None
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
        # The profile the user named decides the cluster's gangs; none named: the snapshot
        # analysis's own (conservative backfill, a start estimate for every gang).
        kube = SchedulerConfig(profile=config.policy) if config.policy is not None else None
        return kubernetes_source(api, mode=config.kube_mode, poll_s=config.poll_s, config=kube)
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
        #: The fleet's node names, for a submission's ``eligible_nodes`` (a virtual fleet's are
        #: fixed; Slurm and Kubernetes judge their own).
        self._node_names = frozenset() if self.external else frozenset(n.id for n in self.source.fleet.nodes)
        #: One submission at a time to an external source: the idempotency check and the
        #: submission must not interleave, or two retries could both reach Slurm.
        self._send_lock = threading.Lock()
        clock = self.store.get_meta("clock")
        # A real source runs on the wall clock (Slurm's and Kubernetes' times are epoch seconds).
        epoch = time.time() if self.external else float(clock) if clock is not None else 0.0
        self.loop = LiveLoop(self.source, speed=1.0 if self.external else config.speed, tick_s=config.tick_s,
                             seed=config.seed, epoch=epoch)
        if config.clock_anchor is not None and config.clock_epoch is not None and not self.external:
            self.loop.anchor(time.time, config.clock_epoch, config.clock_anchor)
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
        self.changes = ChangeLog(self.store, self.source, self.loop, self.external,
                                 on_submit=lambda job: self.metrics.submitted.labels(job.tenant).inc())
        self.loop.before_tick.append(self._pull)
        self.leadership = Leadership(self.store)
        self._listener: Listener | None = None
        self.restored = self.changes.restore() if config.lead and self.leadership.try_lead() else 0
        if self.external and self.leadership.leading:
            self.loop.tick()  # the first read before the first request: nodes and jobs at once

    # --- lifecycle ----------------------------------------------------------------------------
    def _pull(self) -> None:
        """Leader only: the change log's new rows, applied before each tick."""
        if self.leadership.leading:
            self.changes.pull()

    def start(self) -> None:
        if not self.config.run_loop or not self.config.lead:
            return
        if self.leadership.leading:
            self._lead()
        self.leadership.watch(self._took_over, self._lost)

    def _took_over(self) -> None:
        self.restored = self.changes.restore()
        self._lead()

    def _lead(self) -> None:
        """Run the loop, woken by every change another process commits (service/wake.py)."""
        self._announce()
        if self._listener is None:
            self._listener = listener_for(self.store.engine.url, self.store.sqlite, self.loop.wake).start()
        self.loop.start()

    def _lost(self) -> None:
        self.loop.stop()
        if self._listener is not None:
            self._listener.stop()
            self._listener = None

    def _announce(self) -> None:
        if self.config.advertise_url:
            self.store.set_meta("leader_url", self.config.advertise_url)

    def stop(self) -> None:
        self.leadership.stop()
        self._lost()

    @property
    def leading(self) -> bool:
        return self.leadership.leading

    def snapshot(self) -> LiveSnapshot:
        """The live state the loop published last (immutable; any thread). A follower has none:
        503, naming the leader when it announced itself."""
        if not self.leadership.leading:
            url = self.store.get_meta("leader_url")
            raise ApiError(503, "this replica follows: the scheduler leader answers questions about "
                           "the live world" + (f" ({url})" if url else ""))
        return self.loop.snapshot()

    def live(self) -> LiveSnapshot | None:
        """The snapshot, or None on a follower."""
        return self.loop.snapshot() if self.leadership.leading else None

    def tick(self) -> list[LiveEvent]:
        """One loop turn on the caller's thread (tests and benchmarks with ``run_loop=False``)."""
        return self.loop.tick()

    # --- what the loop did, recorded --------------------------------------------------------
    def _persist(self, events: list[LiveEvent]) -> None:
        ups: list[tuple[str, dict[str, Any]]] = []
        running = self.source.running()
        names = self.source.table.names
        for ev in events:
            if ev.job is None:
                continue
            if ev.kind == "start":
                rj = running.get(ev.job)
                where = ([[b.pod_set, b.replica, names[b.node]] for b in rj.bindings]
                         if rj is not None and all(b.slot is None for b in rj.bindings) else None)
                ups.append((ev.job, {"state": "running", "start_time": ev.t, "placement": where,
                                     "starts": jobs_table.c.starts + 1}))
            elif ev.kind == "finish":
                ups.append((ev.job, {"state": "finished", "end_time": ev.t}))
            elif ev.kind == "cancel":  # cancelled in the source itself (scancel), or through us
                ups.append((ev.job, {"state": "cancelled", "end_time": ev.t}))
            elif ev.kind in ("preempt", "requeue"):
                count = jobs_table.c.preemptions if ev.kind == "preempt" else jobs_table.c.requeues
                ups.append((ev.job, {"state": "pending", "start_time": None, "placement": None,
                                     count.name: count + 1,
                                     "lost_gpu_s": jobs_table.c.lost_gpu_s + ev.lost_gpu_s}))
        self.store.apply_job_updates(ups, clock=self.loop.now())

    # --- jobs ---------------------------------------------------------------------------------
    def submit(self, who: Principal, body: Any, key: str | None) -> tuple[JobRecord, bool]:
        """Store a submission (durable on return; the leader's loop takes it from the change
        log): (record, created). An external source gets it first (``_submit_external``)."""
        if self.external:
            sub, digest = self._check(who, body, key)
            return self._submit_external(who, sub, body, key, digest)
        rec, job, audit_row = self._prepare(who, body, key)
        try:
            stored, created = self.store.add_job(rec, audit=audit_row)
        except KeyError:
            raise ApiError(409, f"id: job {rec.id!r} exists already", "id") from None
        return self._accepted(stored, created, rec, job)

    async def submit_async(self, who: Principal, body: Any, key: str | None) -> tuple[JobRecord, bool]:
        """``submit`` for the web server's event loop: validation runs there (no I/O), the
        store's group commit is awaited, no worker thread is held while the disk syncs."""
        if self.external:  # the source's client blocks: a thread
            return await asyncio.to_thread(self.submit, who, body, key)
        rec, job, audit_row = self._prepare(who, body, key)
        try:
            stored, created = await self.store.add_job_async(rec, audit=audit_row)
        except KeyError:
            raise ApiError(409, f"id: job {rec.id!r} exists already", "id") from None
        return self._accepted(stored, created, rec, job)

    def _prepare(self, who: Principal, body: Any, key: str | None) -> tuple[JobRecord, Job, dict[str, Any]]:
        """The checked submission: its record, its job and its audit row (ApiError otherwise)."""
        sub, digest = self._check(who, body, key)
        jid = sub.id or new_job_id()
        t = self.loop.now()
        job = build_job(sub, jid, t)
        now = time.time()
        rec = JobRecord(jid, job.tenant, "pending", job.priority, job.total_gpus, stored_body(sub, jid, t),
                        t, None, None, key, digest, who.actor, now, now)
        return rec, job, self._audit_row(who, "job.submit", jid, None, _record_view(rec))

    def _check(self, who: Principal, body: Any, key: str | None) -> tuple[Any, str]:
        """The parsed submission and its digest, once the caller may make it (ApiError otherwise)."""
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
        # an external source checks its own accounts and says so in its words (a 422 from it)
        if ten is not None and not self.external and ten.tenant(sub.tenant) is None:
            raise ApiError(422, f"tenant: {sub.tenant!r} has no queue (queues: "
                           f"{', '.join(t.name for t in ten.tenants)})", "tenant")
        if not self.external and sub.eligible_nodes:
            unknown = sorted(set(sub.eligible_nodes) - self._node_names)
            if unknown:
                raise ApiError(422, f"eligible_nodes: no node {unknown[0]!r} in the fleet "
                               f"({len(unknown)} of {len(sub.eligible_nodes)} names unknown)",
                               "eligible_nodes")
        return sub, body_hash(body)

    def _accepted(self, stored: JobRecord, created: bool, rec: JobRecord, job: Job) -> tuple[JobRecord, bool]:
        if not created:
            return self._replay(stored, rec.body_hash, rec.idempotency_key)
        if self.leadership.leading and len(self.changes.fresh) < 200_000:
            self.changes.fresh[job.id] = job
        return stored, True

    def _submit_external(self, who: Principal, sub: Any, body: Any, key: str | None,
                         digest: str) -> tuple[JobRecord, bool]:
        """Submit to the source first (Slurm gives the job its id), then store it under that id.

        A retry with the same Idempotency-Key finds the stored record and sends nothing again;
        the lock makes check, send and store one step among concurrent retries. Slurm refusing
        is a 422 with its words, Slurm unreachable a 503; nothing is stored in either case."""
        with self._send_lock:
            if key is not None:
                found = self.store.job_by_key(sub.tenant, key)
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
            if action != "priority" or rec.state == "pending":
                self.store.log_change(c, action, job_id)
        out = self.store.job(job_id)
        assert out is not None
        return out

    # --- nodes and quota ----------------------------------------------------------------------
    def change_node(self, who: Principal, node: str, action: str) -> str:
        if who.role != "admin":
            self._refuse(who, f"node.{action}", node, f"{who.role} may not {action} nodes; admin only")
        if node not in self.source.table.names:
            raise ApiError(404, f"no node {node!r}", "name")
        if not getattr(self.source, "node_actions", True):
            raise ApiError(409, f"{self.source.name}: {action} {node} with the source's own tools "
                           "(kubectl cordon / drain / uncordon); the next read shows it", "action")
        if action not in NODE_ACTIONS:
            raise ApiError(422, f"action must be one of {', '.join(NODE_ACTIONS)}", "action")
        before = self.store.node_states().get(node, "up")
        after = "up" if action == "uncordon" else action
        with self.store.writing() as c:
            self.store.set_node_state(node, None if after == "up" else after, c)
            self.store.audit(c=c, **self._audit_row(who, f"node.{action}", node, {"state": before},
                                                    {"state": after}))
            self.store.log_change(c, "node", node, {"action": action})
        return after

    def change_quota(self, who: Principal, tenant: str, flavor: str, q: FlavorQuota) -> None:
        if who.role != "admin":
            self._refuse(who, "quota.set", f"{tenant}/{flavor}",
                         f"{who.role} may not change quotas; admin only")
        owner = getattr(self.source, "quota_owner", None)
        if owner:
            raise ApiError(409, f"{owner}.", "tenant")
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
            self.store.log_change(c, "quota", f"{tenant}/{flavor}", _quota_dict(q))

    def jobs_of(self, rows: list[JobRecord]) -> list[Job]:
        return [job_from_body(r.body) for r in rows]


def _quota_dict(q: FlavorQuota) -> dict[str, int | None]:
    return {"nominal": q.nominal, "borrowing_limit": q.borrowing_limit, "lending_limit": q.lending_limit}
