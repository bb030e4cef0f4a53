"""One scheduler leader among ``serve`` replicas, and the change log that feeds it (``ChangeLog``).

Every replica serves the API and stores what it is asked (a submission is durable on the 201,
whichever replica took it); one replica, the leader, runs the live loop and its effects. The
store is the only channel between them: each mutation appends a row to ``changes`` in its own
transaction (store/db.py, numbered in commit order), and the leader, at every tick, reads the rows
past the last one it applied and turns them into loop commands. A new leader first notes the
last number, then rebuilds the world from the store (running jobs adopted where they run, pending
ones queued, held ones kept out, node states and quota edits re-applied), then applies the rows
after that number; every command is idempotent (a job already in the world is not submitted
again), so a change seen both ways is applied once.

Who leads (``Leadership``):

- PostgreSQL: the replica holding ``pg_try_advisory_lock(LEADER_LOCK)`` on a dedicated connection
  (a session lock: PostgreSQL drops it when that connection ends, and a kill -9 ends it at once,
  the kernel closing the socket). Followers try again every ``poll_s``, so one leads again within
  about a second of the leader's death. The leader checks its connection as often; if it broke,
  the lock may be someone else's, and it stops acting (its loop stops) before anything else.
- SQLite: the process holding a POSIX lock (``lockf``) on ``<database>.leader``; the kernel drops
  it when the process dies. Replicas then share one machine and its disk (a leader and followers
  that take the web traffic: bench/serve_load.py ``--replicas``). POSIX locks belong to the
  process, so services opened one after another in one process (tests, a restart) all lead.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection, text

from gpufleet.live.loop import Command, LiveLoop
from gpufleet.live.source import LiveEvent, Source
from gpufleet.live.virtual import VirtualSource
from gpufleet.model.job import Job
from gpufleet.model.tenancy import FlavorQuota
from gpufleet.service.jobs import job_from_body
from gpufleet.service.store import Store
from gpufleet.service.store.db import JobRecord

#: pg_advisory_lock key of the scheduler leader ("gpul" in ASCII).
LEADER_LOCK = 0x6770756C
log = logging.getLogger("gpufleet.leader")
NODE_ACTIONS = {"drain": False, "cordon": False, "fail": False, "uncordon": True}


class Leadership:
    def __init__(self, store: Store, poll_s: float = 1.0) -> None:
        self.store = store
        self.poll_s = poll_s
        self.leading = False
        self._conn: Connection | None = None
        self._fd: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def try_lead(self) -> bool:
        """Take the lock if it is free; whether this replica leads now."""
        if self.leading:
            return True
        if self.store.sqlite:
            return self._lock_file()
        try:
            if self._conn is None:
                self._conn = self.store.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            got = bool(self._conn.execute(text(f"SELECT pg_try_advisory_lock({LEADER_LOCK})")).scalar())
        except Exception as e:  # the database is away: try again later
            log.warning("leader lock: %s", e)
            self._drop()
            return False
        self.leading = got
        return got

    def _lock_file(self) -> bool:
        path = self.store.engine.url.database
        if not path or path == ":memory:":
            self.leading = True
            return True
        if self._fd is None:
            self._fd = os.open(f"{path}.leader", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        self.leading = True
        return True

    def still_leading(self) -> bool:
        if self.store.sqlite:
            return True
        try:
            assert self._conn is not None
            self._conn.execute(text("SELECT 1"))
            return True
        except Exception:
            self._drop()
            self.leading = False
            return False

    def _drop(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):  # closing a broken connection
                self._conn.close()
            self._conn = None

    def watch(self, on_lead: Callable[[], None], on_lost: Callable[[], None]) -> None:
        """Run on a thread: wait for the lock (``on_lead`` once taken), then watch it (``on_lost``
        if the connection that holds it broke)."""
        def run() -> None:
            while not self._stop.is_set():
                if not self.leading:
                    if self.try_lead():
                        on_lead()
                elif not self.still_leading():
                    on_lost()
                    return
                self._stop.wait(self.poll_s)
        self._thread = threading.Thread(target=run, name="gpufleet-leadership", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._drop()
        if self._fd is not None:
            os.close(self._fd)  # releases the lock
            self._fd = None


class ChangeLog:
    """The leader's side of the change log: the world rebuilt from the store (``restore``), then
    the rows after it applied as loop commands (``pull``, on the loop's thread before each tick).

    ``fresh`` holds the jobs this process stored since the last pull, their ``Job`` built
    already, so the pull need not read and parse them again."""

    def __init__(self, store: Store, source: Source, loop: LiveLoop, external: bool,
                 on_submit: Callable[[Job], None] | None = None) -> None:
        self.store, self.source, self.loop, self.external = store, source, loop, external
        #: Called with each submitted job the pull applies (whichever process stored it: the
        #: leader counts them for /metrics).
        self.on_submit = on_submit
        self.cursor = 0
        self.fresh: dict[str, Job] = {}

    def restore(self) -> int:
        """Put the store's live jobs, node states and quota edits back into the world; how many
        jobs. The change log's last number is read first: what comes after it is applied by the
        pull, and what both see is applied once (every command is idempotent)."""
        self.cursor = self.store.last_change()
        self.fresh.clear()
        for row in self.store.quotas():
            self.loop.post(quota_command(row["tenant"], row["flavor"], FlavorQuota(
                row["nominal"], row["borrowing_limit"], row["lending_limit"])))
        for node, state in sorted(self.store.node_states().items()):
            if node in self.source.table.names:
                self.loop.post(node_command(node, state))
        recs = self.store.live_jobs()
        # an external source holds its own jobs and still runs them (and stamps them with epoch
        # seconds, past what a trace's submit_time allows): nothing to rebuild, its next read shows them
        adopt = getattr(self.source, "adopt", None)
        store, external = self.store, self.external

        def submit_all(src: Source, now: float) -> list[LiveEvent]:
            requeued = []
            for r in sorted(recs, key=lambda r: r.state != "running"):  # running first: they hold nodes
                job = job_from_body(r.body)
                if job.id in src.pending() or job.id in src.running():
                    continue
                if r.state == "running" and not external:  # an external source still runs it
                    if adopt is not None and r.placement and r.start_time is not None \
                            and adopt(job, r.start_time, r.placement, now):
                        continue
                    requeued.append(r.id)
                src.submit(job, now)
            if requeued:
                store.apply_job_updates((jid, {"state": "pending", "start_time": None, "placement": None})
                                        for jid in requeued)
            return []

        if recs and not external:
            self.loop.post(submit_all)
        return len(recs)

    def pull(self) -> None:
        """The change log's new rows, as loop commands in their order."""
        rows = self.store.changes_after(self.cursor)
        if self.external:  # jobs went to the source on the request's thread: nodes and quota only
            self.cursor = rows[-1]["seq"] if rows else self.cursor
            rows = [r for r in rows if r["kind"] in ("node", "quota")]
        for row, rec in self._with_records(rows):
            self.cursor = max(self.cursor, row["seq"])
            if row["kind"] == "submit" and rec is not None and not isinstance(rec, Job):
                try:
                    rec = job_from_body(rec.body)
                except ValueError as e:  # a stored body this build cannot read: skip it, keep going
                    log.warning("change %s: job %s not applied (%s)", row["seq"], row["target"],
                                str(e).splitlines()[0])
                    continue
            cmd = self._command(row, rec)
            if row["kind"] == "submit" and isinstance(rec, Job) and self.on_submit is not None:
                self.on_submit(rec)
            if cmd is not None:  # a submission only adds a job: the engine may reuse its memo
                self.loop.post(cmd, rec if row["kind"] == "submit" else None)

    def _with_records(self, rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], Any]]:
        """The change rows with what each needs: a submitted job (from ``fresh``, else its
        record), a released or re-prioritised job's record as it is now (its body holds the new
        priority); records read in one query."""
        need = {r["target"] for r in rows if r["kind"] in ("release", "priority")
                or (r["kind"] == "submit" and r["target"] not in self.fresh)}
        recs = self.store.bodies(sorted(need)) if need else {}
        out = []
        for r in rows:
            got = self.fresh.pop(r["target"], None) if r["kind"] == "submit" else None
            out.append((r, got if got is not None else recs.get(r["target"])))
        return out

    def _command(self, row: dict[str, Any], rec: Job | JobRecord | None) -> Command | None:
        kind, target, data = row["kind"], row["target"], row["data"] or {}
        if self.external and kind not in ("node", "quota"):
            return None  # sent to the source on the request's thread; its next read shows it
        if kind in ("submit", "release", "priority"):
            if rec is None:
                return None
            job = rec if isinstance(rec, Job) else job_from_body(rec.body)
            if kind == "priority":
                def reprioritise(src: Source, now: float) -> list[LiveEvent]:
                    if job.id in src.pending():
                        src.replace(job)
                        return [LiveEvent(now, "priority", job.id, detail=str(job.priority))]
                    return []
                return reprioritise
            return submit_command(job, kind)
        if kind in ("cancel", "hold"):
            def withdraw(src: Source, now: float) -> list[LiveEvent]:
                return [LiveEvent(now, kind, target)] if src.withdraw(target, now) else []
            return withdraw
        if kind == "node":
            return node_command(target, data["action"])
        if kind == "quota":
            tenant, _, flavor = target.partition("/")
            return quota_command(tenant, flavor, FlavorQuota(
                data["nominal"], data.get("borrowing_limit"), data.get("lending_limit")))
        return None


def submit_command(job: Job, kind: str = "submit") -> Command:
    def cmd(src: Source, now: float) -> list[LiveEvent]:
        if job.id in src.pending() or job.id in src.running():
            return []  # applied already (a new leader's restore and its pull both saw it)
        src.submit(job, now)
        return [LiveEvent(now, kind, job.id)]
    return cmd


def node_command(node: str, state: str) -> Command:
    def cmd(src: Source, now: float) -> list[LiveEvent]:
        ok = NODE_ACTIONS[state]
        if state == "fail" and isinstance(src, VirtualSource):
            hit = src.fail_node(node, now)
            src.out_of_service[node] = "fail"
            return [LiveEvent(now, "fail", node=node)] + [
                LiveEvent(now, "requeue", jid, node, "its node failed",
                          lost_gpu_s=src.failed_lost.get(jid, 0.0)) for jid in hit]
        src.set_schedulable(node, ok)
        if ok:
            src.out_of_service.pop(node, None)
        else:
            src.out_of_service[node] = state
        return [LiveEvent(now, state, node=node)]
    return cmd


def quota_command(tenant: str, flavor: str, q: FlavorQuota) -> Command:
    def cmd(src: Source, now: float) -> list[LiveEvent]:
        ten = src.tenancy
        if ten is None or ten.tenant(tenant) is None:
            return []
        src.tenancy = ten.with_quota(tenant, flavor, q)
        return [LiveEvent(now, "quota", detail=f"{tenant}/{flavor} nominal={q.nominal}")]
    return cmd
