"""Auth: every call but /healthz needs a token; roles limit what it may change; every refusal is
audited and changes nothing."""

from __future__ import annotations

import time

import pytest
from tests.unit.service.conftest import bearer, job_body


def refusals(served) -> list[dict]:
    return [e for e in served.svc.store.audit_log(limit=1000) if e["outcome"] == "refused"]


def test_healthz_needs_no_token(served):
    r = served.client.get("/healthz")
    assert r.status_code == 200
    assert r.json()["status"] == "ok"


BAD_HEADERS = [
    ("no token", {}),
    ("not a bearer token", {"Authorization": "Basic YTpi"}),
    ("not a gpufleet token", {"Authorization": "Bearer abc"}),
    ("an unknown token id", {"Authorization": "Bearer gf_0000000000000000_secret"}),
    ("an SQL-shaped token", {"Authorization": "Bearer gf_' OR 1=1 --_x"}),
]


@pytest.mark.parametrize("headers", [h for _, h in BAD_HEADERS], ids=[i for i, _ in BAD_HEADERS])
def test_a_call_without_a_valid_token_is_refused_audited_and_changes_nothing(served, headers):
    r = served.client.post("/api/v1/jobs", json=job_body("j1"), headers=headers)
    assert r.status_code == 401
    assert served.svc.store.count_jobs() == {}
    assert [e["action"] for e in refusals(served)] == ["auth"]


def test_a_wrong_secret_for_a_real_token_id_is_refused(served):
    token_id = served.admin["Authorization"].split("_")[1]
    r = served.client.get("/api/v1/summary", headers=bearer(f"gf_{token_id}_not-the-secret"))
    assert r.status_code == 401
    assert refusals(served)[0]["actor"] == token_id


def test_a_revoked_token_is_refused_at_once(served):
    token, rec = served.svc.auth.create("viewer")
    assert served.client.get("/api/v1/summary", headers=bearer(token)).status_code == 200
    served.svc.auth.revoke(rec.id)
    r = served.client.get("/api/v1/summary", headers=bearer(token))
    assert r.status_code == 401
    assert r.json()["error"]["message"] == "token revoked"


def test_an_expired_token_is_refused(served):
    token, _ = served.svc.auth.create("viewer", expires_in_s=0.05)
    time.sleep(0.1)
    r = served.client.get("/api/v1/summary", headers=bearer(token))
    assert r.status_code == 401
    assert r.json()["error"]["message"] == "token expired"


def test_a_member_submits_for_its_own_tenant_by_default(served):
    r = served.post_job({"id": "mine", "run_time": 60, "pod_sets": [{"replicas": 1, "gpus": 1}]},
                        headers=served.member_a)
    assert r.status_code == 201
    assert r.json()["tenant"] == "a"


def test_a_member_cannot_submit_for_another_tenant(served):
    r = served.post_job(job_body("theirs", tenant="b"), headers=served.member_a)
    assert r.status_code == 403
    assert served.svc.store.count_jobs() == {}
    assert refusals(served)[0]["action"] == "job.submit"


@pytest.mark.parametrize("action", ["cancel", "hold"])
def test_a_member_cannot_touch_another_tenants_job(served, action):
    served.post_job(job_body("bs", tenant="b"), headers=served.member_b)
    r = served.client.post(f"/api/v1/jobs/bs/{action}", headers=served.member_a)
    assert r.status_code == 403
    assert served.svc.store.job("bs").state == "pending"
    assert refusals(served)[0]["action"] == f"job.{action}"


def test_a_viewer_reads_but_cannot_change_anything(served):
    served.post_job(job_body("j1"))
    assert served.client.get("/api/v1/jobs/j1", headers=served.viewer).status_code == 200
    assert served.client.post("/api/v1/jobs/j1/cancel", headers=served.viewer).status_code == 403
    assert served.post_job(job_body("j2"), headers=served.viewer).status_code == 403
    node = served.svc.source.table.names[0]
    assert served.client.post(f"/api/v1/nodes/{node}/drain", headers=served.viewer).status_code == 403
    assert served.svc.store.count_jobs() == {"pending": 1}
    assert len(refusals(served)) == 3


def test_only_an_admin_reads_the_audit_log(served):
    assert served.client.get("/api/v1/audit", headers=served.viewer).status_code == 403
    assert served.client.get("/api/v1/audit", headers=served.admin).status_code == 200


def test_metrics_need_a_token_unless_public(served):
    assert served.client.get("/metrics").status_code == 401
    assert served.client.get("/metrics", headers=served.viewer).status_code == 200
