"""A store made at migration 0002 (idempotency keys unique alone), upgraded by opening it: what
the SQLite and the PostgreSQL tests both check (test_restart.py, test_serve_postgres.py)."""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, text

from gpufleet.service.store import Store
from gpufleet.service.store.db import MIGRATIONS, JobRecord


def _record(jid: str, tenant: str, key: str) -> JobRecord:
    return JobRecord(jid, tenant, "pending", 0, 1, {"id": jid}, 0.0, None, None, key, "h-" + jid,
                     "test", 0.0, 0.0)


def check_key_upgrade(url: str) -> None:
    """At 0002, a's job "ja" holds key "k". Opened by the store (upgraded to head): a's retry
    finds "ja" and stores nothing; b's job with "k" is stored; a second b job with "k" is not."""
    engine = create_engine(url)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0002")
        conn.execute(text("INSERT INTO jobs (id, seq, tenant, state, priority, gpus, body, submit_time, "
                          "idempotency_key, body_hash, submitted_by, created_at, updated_at) VALUES "
                          "('ja', 1, 'a', 'pending', 0, 1, '{}', 0, 'k', 'h-ja', 'test', 0, 0)"))
    engine.dispose()
    store = Store(url)
    try:
        found, created = store.add_job(_record("ja2", "a", "k"))
        assert (found.id, created) == ("ja", False)
        got, created = store.add_job(_record("jb", "b", "k"))
        assert (got.id, got.tenant, created) == ("jb", "b", True)
        found, created = store.add_job(_record("jb2", "b", "k"))
        assert (found.id, created) == ("jb", False)
        assert store.job_by_key("a", "k").id == "ja"  # type: ignore[union-attr]
    finally:
        store.close()
