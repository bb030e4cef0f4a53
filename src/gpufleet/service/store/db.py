"""Open the store, migrate it to the current schema, and read and write its rows.

SQLite runs in WAL mode with ``synchronous=FULL``: a commit is on disk before the call returns,
so an acknowledged submission (201) survives a kill -9 and a power cut. SQLite takes one writer
at a time; writes here go through one lock so request threads queue in Python instead of
spinning on SQLITE_BUSY. PostgreSQL needs no such lock. The schema is Alembic's
(migrations/versions/), applied at open; PostgreSQL replicas that start together take an
advisory lock around it.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, create_engine, delete, event, func, insert, select, update
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, OperationalError

from gpufleet.service.store.group import GroupCommit
from gpufleet.service.store.schema import (
    LIVE_STATES,
    audit,
    changes,
    jobs,
    meta,
    node_state,
    quota,
    sessions,
    tokens,
)
from gpufleet.service.wake import CHANNEL, Nudge

MIGRATIONS = Path(__file__).parent / "migrations"
#: pg_advisory_lock key for migrations (any constant shared by all replicas): "gpuf" in ASCII.
MIGRATION_LOCK = 0x67707566
#: pg_advisory_xact_lock key held while a transaction numbers its change-log rows ("gpuc"): the
#: numbers are then handed out in commit order across replicas, so a reader that has seen
#: number n has seen every change before it (with a sequence, a transaction that drew 10 could
#: commit after one that drew 11, and a reader at 11 would skip it for good).
CHANGES_LOCK = 0x67707563


class StoreError(Exception):
    """The store cannot be opened or used (bad URL, unreachable database)."""


@dataclass(frozen=True, slots=True)
class JobRecord:
    id: str
    tenant: str
    state: str
    priority: int
    gpus: int
    body: dict[str, Any]
    submit_time: float
    start_time: float | None
    end_time: float | None
    idempotency_key: str | None
    body_hash: str
    submitted_by: str
    created_at: float
    updated_at: float
    seq: int = 0
    placement: list | None = None
    starts: int = 0
    preemptions: int = 0
    requeues: int = 0
    lost_gpu_s: float = 0.0


@dataclass(frozen=True, slots=True)
class TokenRecord:
    id: str
    secret_hash: str
    role: str
    tenant: str | None
    name: str
    created_at: float
    expires_at: float | None
    revoked_at: float | None


def body_hash(body: dict[str, Any]) -> str:
    """The request a key was first used for, as a digest (a retry must send the same one)."""
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _job(row: Any) -> JobRecord:
    m = row._mapping
    return JobRecord(**{k: m[k] for k in JobRecord.__slots__})


def _sqlite_pragmas(dbapi_conn: Any, _: Any) -> None:
    # The sqlite3 module's own transaction handling is off (SQLAlchemy's pysqlite recipe): it
    # opens a transaction only at the first INSERT/UPDATE, so a SAVEPOINT before it began one of
    # its own and RELEASE committed it: each job of a group was its own commit and fsync (46
    # submissions/s). ``_sqlite_begin`` emits BEGIN when SQLAlchemy begins.
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=FULL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def _sqlite_begin(conn: Connection) -> None:
    # A write takes the database's write lock at BEGIN (IMMEDIATE): a deferred one would read
    # the change log's last number, then fail to upgrade when another process wrote meanwhile.
    conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("gpufleet_write")
                         else "BEGIN")


def _normalise(url: str) -> str:
    """``postgresql://`` means psycopg 3 here (SQLAlchemy's default driver is psycopg2)."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def _audit_values(*, actor: str, role: str, action: str, target: str, outcome: str, detail: str = "",
                  before: Any = None, after: Any = None) -> dict[str, Any]:
    return dict(at=time.time(), actor=actor, role=role, action=action, target=target[:512],
                outcome=outcome, detail=detail, before=before, after=after)


class Store:
    def __init__(self, url: str) -> None:
        url = _normalise(url)
        try:
            parsed = make_url(url)
        except ArgumentError:
            raise StoreError(f"--db {url!r}: not a database URL (expected postgresql://… or "
                             "sqlite:///PATH)") from None
        self.sqlite = parsed.get_backend_name() == "sqlite"
        if parsed.get_backend_name() not in ("sqlite", "postgresql"):
            raise StoreError(f"--db: {parsed.get_backend_name()!r} is not supported "
                             "(expected postgresql://… or sqlite:///PATH)")
        if self.sqlite and parsed.database not in (None, "", ":memory:"):
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        kw: dict[str, Any] = {}
        if self.sqlite:
            kw["connect_args"] = {"check_same_thread": False, "timeout": 30}
        else:
            kw.update(pool_size=16, max_overflow=16, pool_pre_ping=True)
        try:
            self.engine: Engine = create_engine(parsed, **kw)
        except Exception as e:  # a missing driver, a malformed option
            raise StoreError(f"--db: {e}") from None
        if self.sqlite:
            event.listen(self.engine, "connect", _sqlite_pragmas)
            event.listen(self.engine, "begin", _sqlite_begin)
        self._write = threading.Lock() if self.sqlite else None
        #: Wakes the scheduler leader after a commit that logged a change (service/wake.py).
        self._nudge = Nudge(parsed.database if self.sqlite else None)
        self.url = parsed.render_as_string(hide_password=True)
        try:
            self.migrate()
        except OperationalError as e:
            raise StoreError(f"--db {self.url}: cannot open the store ({e.orig})") from None
        #: Submissions are committed in groups by one thread (store/group.py).
        self._commits = GroupCommit(self._insert)

    # --- schema -------------------------------------------------------------------------------
    def migrate(self) -> None:
        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS))
        with self.engine.begin() as conn:
            if not self.sqlite:
                conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")

    def close(self) -> None:
        self._commits.stop()
        self._nudge.close()
        self.engine.dispose()

    @contextmanager
    def writing(self) -> Iterator[Connection]:
        """One write transaction, committed (to disk) when the block ends."""
        if self._write is None:
            with self.engine.begin() as c:
                yield c
            return
        with self._write, self.engine.connect() as conn:
            conn.execution_options(gpufleet_write=True)
            try:
                with conn.begin():
                    yield conn
            finally:
                changed = conn.info.pop("gpufleet_changed", False)
            if changed:
                self._nudge.send()

    def _first_seq(self, c: Connection) -> int:
        """The next change-log number, inside a write transaction (which holds it until commit).
        The leader is nudged when it commits: PostgreSQL's NOTIFY is delivered at commit, SQLite's
        datagram is sent by ``writing`` once the commit returned."""
        if not self.sqlite:
            c.exec_driver_sql(f"SELECT pg_advisory_xact_lock({CHANGES_LOCK}), pg_notify('{CHANNEL}', '')")
        else:
            c.info["gpufleet_changed"] = True
        return int(c.execute(select(func.coalesce(func.max(changes.c.seq), 0))).scalar_one()) + 1

    def log_change(self, c: Connection, kind: str, target: str, data: Any = None) -> int:
        """Append one change in the caller's write transaction; its number."""
        seq = self._first_seq(c)
        c.execute(insert(changes).values(seq=seq, at=time.time(), kind=kind, target=target[:512], data=data))
        return seq

    def changes_after(self, seq: int, limit: int = 20_000) -> list[dict[str, Any]]:
        """Changes numbered above ``seq``, in order (what the leader has not applied yet)."""
        q = select(changes).where(changes.c.seq > seq).order_by(changes.c.seq).limit(limit)
        with self.engine.connect() as c:
            return [dict(r._mapping) for r in c.execute(q)]

    def last_change(self) -> int:
        with self.engine.connect() as c:
            return int(c.execute(select(func.coalesce(func.max(changes.c.seq), 0))).scalar_one())

    def bodies(self, ids: Sequence[str]) -> dict[str, JobRecord]:
        """Job records by id (one query per 500 ids)."""
        out: dict[str, JobRecord] = {}
        ids = list(ids)
        with self.engine.connect() as c:
            for k in range(0, len(ids), 500):
                for r in c.execute(select(jobs).where(jobs.c.id.in_(ids[k:k + 500]))):
                    rec = _job(r)
                    out[rec.id] = rec
        return out

    # --- jobs ---------------------------------------------------------------------------------
    def add_job(self, rec: JobRecord, audit: dict[str, Any] | None = None) -> tuple[JobRecord, bool]:
        """Insert a job (and its audit row, in the same transaction). With an idempotency key
        already used: the first job's row and False (found after the unique index refused the
        insert, so a first submission costs no lookup). A job id already taken (without a matching
        key) raises ``KeyError``."""
        row = self._job_row(rec)
        return self._added(rec, row, self._commits.put(row, audit))

    async def add_job_async(self, rec: JobRecord, audit: dict[str, Any] | None = None
                            ) -> tuple[JobRecord, bool]:
        """``add_job`` for a coroutine: it awaits the group commit instead of blocking a thread
        (the lookup after a refused key, rare, blocks)."""
        row = self._job_row(rec)
        return self._added(rec, row, await self._commits.put_async(row, audit))

    def _job_row(self, rec: JobRecord) -> dict[str, Any]:
        return {k: getattr(rec, k) for k in JobRecord.__slots__}

    def _added(self, rec: JobRecord, row: dict[str, Any], ok: bool) -> tuple[JobRecord, bool]:
        if not ok:
            if rec.idempotency_key is not None:
                found = self.job_by_key(rec.tenant, rec.idempotency_key)
                if found is not None:  # a concurrent retry with the same key won the race
                    return found, False
            raise KeyError(rec.id)
        return JobRecord(**row), True

    def _insert(self, items: list[tuple[dict[str, Any], dict[str, Any] | None]]) -> list[bool]:
        """Insert jobs (each with its audit row) in one transaction: one executemany per table
        (a statement built per row cost more than the fsync). When the unique index refuses one
        (a duplicate id or key), again one savepoint per job, so only that one fails. True per
        job stored."""
        audits = [_audit_values(**a) for _, a in items if a is not None]
        try:
            with self.writing() as c:
                first = self._first_seq(c)
                now = time.time()
                for k, (row, _) in enumerate(items):
                    row["seq"] = first + k
                c.execute(insert(jobs), [r for r, _ in items])
                c.execute(insert(changes), [dict(seq=r["seq"], at=now, kind="submit", target=r["id"],
                                                 data=None) for r, _ in items])
                if audits:
                    c.execute(insert(audit), audits)
            return [True] * len(items)
        except IntegrityError:
            pass
        out = []
        with self.writing() as c:
            seq = self._first_seq(c)
            for row, audit_row in items:
                row["seq"] = seq
                try:
                    with c.begin_nested():
                        c.execute(insert(jobs).values(**row))
                        c.execute(insert(changes).values(seq=seq, at=time.time(), kind="submit",
                                                         target=row["id"], data=None))
                        if audit_row is not None:
                            self.audit(c=c, **audit_row)
                    out.append(True)
                    seq += 1
                except IntegrityError:
                    out.append(False)
        return out

    def job(self, job_id: str) -> JobRecord | None:
        with self.engine.connect() as c:
            row = c.execute(select(jobs).where(jobs.c.id == job_id)).first()
        return _job(row) if row is not None else None

    def job_by_key(self, tenant: str, key: str) -> JobRecord | None:
        """The tenant's job submitted with this key (keys are per tenant)."""
        with self.engine.connect() as c:
            row = c.execute(select(jobs).where(jobs.c.tenant == tenant,
                                               jobs.c.idempotency_key == key)).first()
        return _job(row) if row is not None else None

    def jobs(self, *, tenant: str | None = None, state: Sequence[str] | None = None,
             after: str | None = None, limit: int = 100) -> list[JobRecord]:
        """Jobs ordered by id, from just after ``after`` (the cursor)."""
        q = select(jobs)
        if tenant is not None:
            q = q.where(jobs.c.tenant == tenant)
        if state:
            q = q.where(jobs.c.state.in_(list(state)))
        if after is not None:
            q = q.where(jobs.c.id > after)
        q = q.order_by(jobs.c.id).limit(limit)
        with self.engine.connect() as c:
            return [_job(r) for r in c.execute(q)]

    def live_jobs(self) -> list[JobRecord]:
        """Jobs to put back in the live world at restart (pending and running), in submit order."""
        q = select(jobs).where(jobs.c.state.in_(LIVE_STATES)).order_by(jobs.c.seq, jobs.c.id)
        with self.engine.connect() as c:
            return [_job(r) for r in c.execute(q)]

    def set_job(self, job_id: str, c: Connection | None = None, **values: Any) -> None:
        values["updated_at"] = time.time()
        stmt = update(jobs).where(jobs.c.id == job_id).values(**values)
        if c is not None:
            c.execute(stmt)
            return
        with self.writing() as conn:
            conn.execute(stmt)

    def apply_job_updates(self, updates: Iterable[tuple[str, dict[str, Any]]],
                          clock: float | None = None) -> None:
        """Many job state changes (one tick's starts and finishes) and the source clock, in one
        transaction."""
        now = time.time()
        with self.writing() as c:
            for jid, values in updates:
                c.execute(update(jobs).where(jobs.c.id == jid).values(updated_at=now, **values))
            if clock is not None:
                self._set_meta(c, "clock", repr(clock))

    def count_jobs(self) -> dict[str, int]:
        with self.engine.connect() as c:
            rows = c.execute(select(jobs.c.state, func.count()).group_by(jobs.c.state)).all()
        return {s: int(n) for s, n in rows}

    def history(self, since: float = 0.0) -> list[JobRecord]:
        """Finished jobs that ended at or after ``since`` (source time)."""
        q = select(jobs).where(jobs.c.state == "finished", jobs.c.end_time >= since).order_by(jobs.c.end_time)
        with self.engine.connect() as c:
            return [_job(r) for r in c.execute(q)]

    def evictions(self, since: float = 0.0) -> dict[str, tuple[int, int, float]]:
        """Per tenant, over jobs submitted at or after ``since`` that were ever evicted:
        (preemptions, node-failure requeues, GPU-seconds lost)."""
        q = (select(jobs.c.tenant, func.sum(jobs.c.preemptions), func.sum(jobs.c.requeues),
                    func.sum(jobs.c.lost_gpu_s))
             .where(jobs.c.submit_time >= since, (jobs.c.preemptions + jobs.c.requeues) > 0)
             .group_by(jobs.c.tenant))
        with self.engine.connect() as c:
            return {t: (int(p), int(r), float(g)) for t, p, r, g in c.execute(q)}

    # --- tokens -------------------------------------------------------------------------------
    def add_token(self, rec: TokenRecord, audit: dict[str, Any] | None = None) -> None:
        """Insert a token (and its audit row, in the same transaction)."""
        with self.writing() as c:
            c.execute(insert(tokens).values(**{k: getattr(rec, k) for k in TokenRecord.__slots__}))
            if audit is not None:
                self.audit(c=c, **audit)

    def token(self, token_id: str) -> TokenRecord | None:
        with self.engine.connect() as c:
            row = c.execute(select(tokens).where(tokens.c.id == token_id)).first()
        return TokenRecord(**row._mapping) if row is not None else None

    def tokens(self) -> list[TokenRecord]:
        with self.engine.connect() as c:
            rows = c.execute(select(tokens).order_by(tokens.c.created_at))
            return [TokenRecord(**r._mapping) for r in rows]

    def revoke_token(self, token_id: str, at: float, audit: dict[str, Any] | None = None) -> bool:
        """Revoke a token and delete its dashboard sessions, in one transaction (a session of a
        revoked token is refused anyway, by its token's row: this keeps no dead rows); the audit
        row goes in the same transaction when the token was active (only one of two concurrent
        revocations changes the row, and only that one is audited)."""
        with self.writing() as c:
            n = c.execute(update(tokens).where(tokens.c.id == token_id, tokens.c.revoked_at.is_(None))
                          .values(revoked_at=at)).rowcount
            c.execute(delete(sessions).where(sessions.c.token_id == token_id))
            if n > 0 and audit is not None:
                self.audit(c=c, **audit)
        return n > 0

    def add_session(self, id_hash: str, token_id: str, expires_at: float) -> None:
        """Open a session, and delete the expired ones in the same transaction: the table then
        holds at most the sign-ins of the last ``MAX_AGE_S`` (dashboard/session.py), not every
        one since the store was made. The sweep scans the table (no index on the expiry): a few
        thousand rows, once per sign-in, a human action."""
        with self.writing() as c:
            c.execute(delete(sessions).where(sessions.c.expires_at <= time.time()))
            c.execute(insert(sessions).values(id_hash=id_hash, token_id=token_id, expires_at=expires_at))

    def session(self, id_hash: str) -> tuple[str, float] | None:
        """(token id, expiry) of a dashboard session."""
        with self.engine.connect() as c:
            row = c.execute(select(sessions.c.token_id, sessions.c.expires_at)
                            .where(sessions.c.id_hash == id_hash)).first()
        return (row.token_id, row.expires_at) if row is not None else None

    def delete_session(self, id_hash: str) -> str | None:
        """Forget a session (and sessions already expired); the token id it stood for, if any."""
        found = self.session(id_hash)
        with self.writing() as c:
            c.execute(delete(sessions).where((sessions.c.id_hash == id_hash)
                                             | (sessions.c.expires_at <= time.time())))
        return found[0] if found else None

    # --- audit --------------------------------------------------------------------------------
    def audit(self, *, c: Connection | None = None, **what: Any) -> None:
        """One audit row: actor, role, action, target, outcome, and detail, before, after."""
        row = _audit_values(**what)
        if c is not None:
            c.execute(insert(audit).values(**row))
            return
        with self.writing() as conn:
            conn.execute(insert(audit).values(**row))

    def audit_log(self, *, after: int | None = None, limit: int = 100,
                  actor: str | None = None) -> list[dict[str, Any]]:
        q = select(audit)
        if after is not None:
            q = q.where(audit.c.id > after)
        if actor is not None:
            q = q.where(audit.c.actor == actor)
        with self.engine.connect() as c:
            return [dict(r._mapping) for r in c.execute(q.order_by(audit.c.id).limit(limit))]

    # --- nodes, quota, meta -------------------------------------------------------------------
    def node_states(self) -> dict[str, str]:
        with self.engine.connect() as c:
            return {r.node: r.state for r in c.execute(select(node_state))}

    def set_node_state(self, node: str, state: str | None, c: Connection) -> None:
        c.execute(node_state.delete().where(node_state.c.node == node))
        if state is not None:
            c.execute(insert(node_state).values(node=node, state=state, at=time.time()))

    def quotas(self) -> list[dict[str, Any]]:
        with self.engine.connect() as c:
            rows = c.execute(select(quota).order_by(quota.c.tenant, quota.c.flavor))
            return [dict(r._mapping) for r in rows]

    def set_quota(self, tenant: str, flavor: str, nominal: int, borrowing_limit: int | None,
                  lending_limit: int | None, c: Connection) -> None:
        c.execute(quota.delete().where(quota.c.tenant == tenant, quota.c.flavor == flavor))
        c.execute(insert(quota).values(tenant=tenant, flavor=flavor, nominal=nominal,
                                       borrowing_limit=borrowing_limit, lending_limit=lending_limit))

    def get_meta(self, key: str) -> str | None:
        with self.engine.connect() as c:
            return c.execute(select(meta.c.value).where(meta.c.key == key)).scalar_one_or_none()

    def _set_meta(self, c: Connection, key: str, value: str) -> None:
        c.execute(meta.delete().where(meta.c.key == key))
        c.execute(insert(meta).values(key=key, value=value))

    def set_meta(self, key: str, value: str, c: Connection | None = None) -> None:
        """Set ``key``; inside the caller's transaction when given ``c`` (with its audit row)."""
        if c is not None:
            self._set_meta(c, key, value)
            return
        with self.writing() as conn:
            self._set_meta(conn, key, value)
