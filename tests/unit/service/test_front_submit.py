"""The front's own ``POST /api/v1/jobs`` (service/front.py ``Front._submit``): a caller whose
token is in the cache takes the short path, any other the FastAPI route; both answer the same."""

from __future__ import annotations

from fastapi.testclient import TestClient

from gpufleet.service.front import Front

from .conftest import job_body


def test_the_short_path_answers_as_the_route_does(served_tenancy):
    """The first post verifies member a's token (the route), the rest find it cached (the short
    path): a new job is 201 with its Location, a retry with its key 200 with the same job, the
    key on another body 422 naming it, a bad field 422 naming it, tenant b 403 with an audit row
    saying refused, a body that is not JSON 422, a token that is not one 401."""
    s = served_tenancy
    a = s.member_a
    with TestClient(Front(s.svc, lambda: "http://127.0.0.1:9")) as front:
        first = front.post("/api/v1/jobs", json=job_body("f1"), headers=a)
        assert first.status_code == 201 and first.json()["tenant"] == "a"
        new = front.post("/api/v1/jobs", json=job_body("f2"), headers={**a, "Idempotency-Key": "k"})
        assert new.status_code == 201 and new.headers["location"] == "/api/v1/jobs/f2"
        assert new.json().keys() == first.json().keys() and new.json()["state"] == "pending"
        again = front.post("/api/v1/jobs", json=job_body("f2"), headers={**a, "Idempotency-Key": "k"})
        assert again.status_code == 200 and again.json()["id"] == "f2"
        other = front.post("/api/v1/jobs", json=job_body("f3"), headers={**a, "Idempotency-Key": "k"})
        assert other.status_code == 422 and other.json()["error"]["field"] == "Idempotency-Key"
        bad = front.post("/api/v1/jobs", json={**job_body("f4"), "gpus_typo": 1}, headers=a)
        assert bad.status_code == 422 and bad.json()["error"]["field"] == "gpus_typo"
        theirs = front.post("/api/v1/jobs", json=job_body("f5", tenant="b"), headers=a)
        assert theirs.status_code == 403
        assert s.svc.store.audit_log(limit=1000)[-1]["outcome"] == "refused"
        junk = front.post("/api/v1/jobs", content=b"{not json",
                          headers={**a, "Content-Type": "application/json"})
        assert junk.status_code == 422 and "error" in junk.json()
        nobody = front.post("/api/v1/jobs", json=job_body("f6"), headers={"Authorization": "Bearer gf_x_y"})
        assert nobody.status_code == 401
    assert [r.id for r in s.svc.store.jobs(limit=10)] == ["f1", "f2"]
