"""A store made at migration 0003 (before dashboard sessions) with a token in it, upgraded by the
service opening it: what the SQLite and the PostgreSQL tests both check (dashboard/test_session.py,
test_serve_postgres.py)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from argon2 import PasswordHasher
from sqlalchemy import create_engine, inspect, text
from tests.unit.service.conftest import serve

from gpufleet.service.dashboard.session import COOKIE
from gpufleet.service.store.db import MIGRATIONS
from gpufleet.service.store.schema import sessions

TOKEN_ID, SECRET = "0003aaaabbbbcccc", "made-before-sessions"


def check_session_upgrade(url: str, data_dir: Path) -> None:
    """At 0003 there is no sessions table and one admin token "old-ops". The service opens the
    store (to head: 0004 adds the table); the token signs in on the dashboard, its one session
    row stands for it, its pages answer, and revoking it deletes the row and signs it out."""
    engine = create_engine(url)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0003")
        assert "sessions" not in inspect(conn).get_table_names()
        conn.execute(text("INSERT INTO tokens (id, secret_hash, role, tenant, name, created_at) VALUES "
                          "(:id, :hash, 'admin', NULL, 'old-ops', 0)"),
                     {"id": TOKEN_ID, "hash": PasswordHasher(time_cost=1, memory_cost=1024).hash(SECRET)})
    engine.dispose()
    s = serve(data_dir, db=url)
    try:
        with s.client:
            r = s.client.post("/login", data={"token": f"gf_{TOKEN_ID}_{SECRET}"},
                              headers={"Origin": "http://testserver"}, follow_redirects=False)
            assert r.status_code == 303 and COOKIE in s.client.cookies
            page = s.client.get("/queues")
            assert page.status_code == 200 and "old-ops · admin" in page.text
            assert _session_tokens(s) == [TOKEN_ID]
            s.svc.auth.revoke(TOKEN_ID)
            assert _session_tokens(s) == []
            assert s.client.get("/queues", follow_redirects=False).status_code == 303
    finally:
        s.svc.store.close()


def _session_tokens(s) -> list[str]:
    with s.svc.store.engine.connect() as c:
        return [r.token_id for r in c.execute(sessions.select())]
