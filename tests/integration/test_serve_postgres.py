"""The service on a real PostgreSQL (127.0.0.1:5432, trust auth): the same schema, the same API.

Each test creates a database of its own and drops it afterwards. Skipped only when no
PostgreSQL answers there.
"""

from __future__ import annotations

import secrets
from concurrent.futures import ThreadPoolExecutor

import pytest

psycopg = pytest.importorskip("psycopg")

from tests.unit.service.conftest import job_body, serve  # noqa: E402
from tests.unit.service.key_upgrade import check_key_upgrade  # noqa: E402
from tests.unit.service.session_upgrade import check_session_upgrade  # noqa: E402

ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


@pytest.fixture
def pg_url():
    try:
        admin = psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as e:
        pytest.skip(f"no PostgreSQL on 127.0.0.1:5432 ({e})")
    name = f"gpufleet_test_{secrets.token_hex(4)}"
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql://postgres@127.0.0.1:5432/{name}"
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def test_the_service_runs_on_postgresql_and_restarts_from_it(pg_url, tmp_path):
    first = serve(tmp_path, db=pg_url)
    with first.client:
        assert first.post_job(job_body("runs", gpus=8, replicas=4), key="k1").status_code == 201
        assert first.post_job(job_body("runs", gpus=8, replicas=4), key="k1").status_code == 200
        first.post_job(job_body("waits", gpus=8, replicas=8))
        first.tick()
        assert first.client.get("/api/v1/jobs/runs", headers=first.viewer).json()["state"] == "running"
    first.svc.store.close()
    again = serve(tmp_path, db=pg_url)
    with again.client:
        assert again.svc.restored == 2
        again.tick()
        page = again.client.get("/api/v1/jobs", headers=again.viewer).json()
        assert [j["id"] for j in page["jobs"]] == ["runs", "waits"]
        actions = [e["action"] for e in again.svc.store.audit_log()]
        assert actions.count("job.submit") == 2
    again.svc.store.close()


def test_concurrent_retries_with_one_key_store_one_job(pg_url, tmp_path):
    s = serve(tmp_path, db=pg_url)
    with s.client:
        def once(_: int) -> int:
            return s.post_job(job_body("same", gpus=1), key="one-key").status_code

        with ThreadPoolExecutor(8) as pool:
            codes = sorted(pool.map(once, range(16)))
        assert codes.count(201) == 1
        assert codes.count(200) == 15
        assert s.svc.store.count_jobs() == {"pending": 1}
    s.svc.store.close()


def test_a_postgresql_store_made_before_per_tenant_keys_upgrades_and_keeps_its_keys(pg_url):
    """As the SQLite test (test_restart.py): PostgreSQL named 0001's constraint itself."""
    check_key_upgrade(pg_url)


def test_a_postgresql_store_made_before_sessions_upgrades_and_its_token_signs_in(pg_url, tmp_path):
    """As the SQLite test (dashboard/test_session.py)."""
    check_session_upgrade(pg_url, tmp_path)
