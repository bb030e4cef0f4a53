"""A restart rebuilds the live world from the store: jobs, holds, node states, quota, the clock."""

from __future__ import annotations

from sqlalchemy import inspect
from tests.unit.service.conftest import TENANCY, job_body, serve
from tests.unit.service.key_upgrade import check_key_upgrade

from gpufleet.service.store import Store
from gpufleet.service.store.schema import metadata


def test_after_a_restart_every_live_job_is_back_once_and_held_jobs_stay_held(tmp_path):
    first = serve(tmp_path / "d")
    with first.client:
        first.post_job(job_body("runs", gpus=8, replicas=4))
        first.post_job(job_body("waits", gpus=8, replicas=8))
        first.post_job(job_body("held", gpus=1))
        first.post_job(job_body("done", gpus=1, run_time=10))
        assert first.client.post("/api/v1/jobs/held/hold", headers=first.admin).status_code == 200
        first.tick()
        assert first.client.post("/api/v1/nodes/g0-n0007/drain", headers=first.admin).status_code == 200
        first.tick(20)
        clock = first.svc.loop.now()
    first.svc.store.close()

    again = serve(tmp_path / "d")
    with again.client:
        assert again.svc.restored == 2
        again.tick()
        snap = again.svc.snapshot()
        assert set(snap.running) | set(snap.pending) == {"runs", "waits"}
        assert snap.now >= clock
        assert snap.out_of_service == {"g0-n0007": "drain"}
        states = {j: again.svc.store.job(j).state for j in ("held", "done")}
        assert states == {"held": "held", "done": "finished"}
    again.svc.store.close()


def test_a_quota_edit_survives_a_restart(tmp_path):
    first = serve(tmp_path / "d", TENANCY)
    with first.client:
        first.client.put("/api/v1/queues/a/quota/H100-80GB", json={"nominal": 8}, headers=first.admin)
    first.svc.store.close()
    again = serve(tmp_path / "d", TENANCY)
    with again.client:
        again.tick()
        queues = again.client.get("/api/v1/queues", headers=again.viewer).json()
        qa = next(q for q in queues if q["name"] == "a")
        assert qa["flavors"][0]["nominal"] == 8
    again.svc.store.close()


def test_the_migrations_build_the_schema_the_code_reads(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'm.db'}")
    insp = inspect(store.engine)
    for table in metadata.sorted_tables:
        got = {c["name"] for c in insp.get_columns(table.name)}
        assert got == {c.name for c in table.columns}, table.name
    store.close()


def test_a_store_made_before_per_tenant_keys_upgrades_and_keeps_its_keys(tmp_path):
    """A store at migration 0002 (keys unique alone) holding a's job under key k: after the
    upgrade, a's retry still finds it and b may use k for a job of its own."""
    check_key_upgrade(f"sqlite:///{tmp_path / 'old.db'}")
