"""The store's tables (SQLAlchemy Core). Alembic migrations (migrations/versions/) create and
change them; this module is what the code reads and writes, and a test checks the two agree.

- ``jobs``: every submitted job, its trace-format body and its lifecycle as the service saw it;
  ``(tenant, idempotency_key)`` is unique, so a retried POST finds the first one's row, and
  two tenants' equal keys are two jobs (migration 0003).
- ``tokens``: API tokens, the secret stored as an argon2 hash only.
- ``sessions``: dashboard sign-ins, the cookie's random id stored as a SHA-256 only.
- ``audit``: every mutating call and every refused one: who, what, when, before and after.
- ``node_state``: nodes an admin took out of service (drain, cordon), re-applied at restart.
- ``quota``: quota edits over the tenancy file, re-applied at restart.
- ``meta``: key/value (the source clock at the last tick, so time goes on after a restart).
- ``changes``: the change log. Every mutation (a submission, cancel, hold, release, priority, a
  node action, a quota edit) appends a row in the same transaction as the change itself, numbered
  in commit order; the scheduler leader applies them to the live world in that order, whichever
  replica took the call (service/leader.py).
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData()

#: Job states the store knows. pending/running: in the live world; held: out of it until
#: released; finished, cancelled: done.
JOB_STATES = ("pending", "running", "held", "finished", "cancelled")
LIVE_STATES = ("pending", "running")

jobs = Table(
    "jobs", metadata,
    Column("id", String(256), primary_key=True),
    Column("seq", Integer, nullable=False),
    Column("tenant", String(256), nullable=False),
    Column("state", String(16), nullable=False),
    Column("priority", Integer, nullable=False),
    Column("gpus", Integer, nullable=False),
    Column("body", JSON, nullable=False),
    Column("submit_time", Float, nullable=False),
    Column("start_time", Float),
    Column("end_time", Float),
    Column("idempotency_key", String(256)),
    Column("body_hash", String(64), nullable=False),
    Column("submitted_by", String(64), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    #: Running: where, as [pod set, replica, node] per pod (a new leader adopts it there).
    Column("placement", JSON),
    #: How many times the job was started (a preemption or a failed node restarts it).
    Column("starts", Integer, nullable=False, server_default="0"),
    #: Evictions by the scheduler (preemption), requeues after a node failed, and the GPU-seconds
    #: of work they lost (what ran since the last checkpoint, engine/checkpoints.py).
    Column("preemptions", Integer, nullable=False, server_default="0"),
    Column("requeues", Integer, nullable=False, server_default="0"),
    Column("lost_gpu_s", Float, nullable=False, server_default="0"),
    #: A key is its tenant's: another tenant's same key is another job (and stays unseen).
    UniqueConstraint("tenant", "idempotency_key", name="uq_jobs_tenant_key"),
)
Index("ix_jobs_state", jobs.c.state)
Index("ix_jobs_tenant", jobs.c.tenant)

tokens = Table(
    "tokens", metadata,
    Column("id", String(32), primary_key=True),
    Column("secret_hash", Text, nullable=False),
    Column("role", String(16), nullable=False),
    Column("tenant", String(256)),
    Column("name", String(256), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float),
    Column("revoked_at", Float),
)

sessions = Table(
    "sessions", metadata,
    Column("id_hash", String(64), primary_key=True),
    Column("token_id", String(32), nullable=False, index=True),
    Column("expires_at", Float, nullable=False),
)

audit = Table(
    "audit", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", Float, nullable=False),
    Column("actor", String(64), nullable=False),
    Column("role", String(16), nullable=False),
    Column("action", String(64), nullable=False),
    Column("target", String(512), nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("detail", Text, nullable=False),
    Column("before", JSON),
    Column("after", JSON),
)
Index("ix_audit_at", audit.c.at)

node_state = Table(
    "node_state", metadata,
    Column("node", String(256), primary_key=True),
    Column("state", String(16), nullable=False),
    Column("at", Float, nullable=False),
)

quota = Table(
    "quota", metadata,
    Column("tenant", String(256), primary_key=True),
    Column("flavor", String(64), primary_key=True),
    Column("nominal", Integer, nullable=False),
    Column("borrowing_limit", Integer),
    Column("lending_limit", Integer),
)

meta = Table(
    "meta", metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

changes = Table(
    "changes", metadata,
    Column("seq", BigInteger, primary_key=True, autoincrement=False),
    Column("at", Float, nullable=False),
    Column("kind", String(32), nullable=False),
    Column("target", String(512), nullable=False),
    Column("data", JSON),
)
