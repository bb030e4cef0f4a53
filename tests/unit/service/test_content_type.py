"""A JSON-body route refuses a body of another media type with 415 naming the header (issue 24
§2): ``curl -d`` sends ``application/x-www-form-urlencoded``, and the answer used to be 422
"body: Input should be a valid dictionary", which names neither the header nor the fix.

The rule (service/errors.py ``not_json``): ``application/json`` or ``application/<x>+json``, with
any parameters; a body without a ``Content-Type`` is refused too (FastAPI's own route always
refused it; only the front's short path, a cached token, read it as JSON). The token is checked
first: a caller without one learns only 401."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from gpufleet.service.front import Front

from .conftest import job_body

FORM = "application/x-www-form-urlencoded"
NODE0 = "g0-n0000"
DIAGNOSIS = {"layer": "driver", "failure": "Xid 79", "action": "drain"}

#: Every route that takes a JSON body: (method, path, a body it would take).
JSON_ROUTES = [
    ("POST", "/api/v1/jobs", job_body("j1", tenant="a")),
    ("POST", "/api/v1/jobs/j0/priority", {"priority": 5}),
    ("PUT", "/api/v1/queues/a/quota/H100-80GB", {"nominal": 8}),
    ("POST", "/api/v1/whatif", {"seeds": 1}),
    ("POST", f"/api/v1/nodes/{NODE0}/diagnosis", DIAGNOSIS),
    ("POST", f"/api/v1/nodes/{NODE0}/diagnosis/bundle", {"files": {"dmesg.txt": "NVRM: Xid 79"}}),
]


def _send(client: TestClient, method: str, path: str, body: dict, headers: dict, ctype: str | None):
    h = {**headers, **({"Content-Type": ctype} if ctype is not None else {})}
    return client.request(method, path, content=json.dumps(body).encode(), headers=h)


@pytest.mark.parametrize("method, path, body", JSON_ROUTES, ids=[f"{m} {p}" for m, p, _ in JSON_ROUTES])
def test_a_form_encoded_body_is_a_415_naming_the_header_and_changes_nothing(served_tenancy, method,
                                                                            path, body):
    """The body is valid JSON; only its declared type is wrong: 415, the API's error body, the
    field ``Content-Type``, and nothing stored (job j0 keeps priority 0, the quota 32, no
    diagnosis, no audit row beyond the token setup's)."""
    s = served_tenancy
    assert s.post_job(job_body("j0", tenant="a")).status_code == 201
    rows = len(s.svc.store.audit_log(limit=1000))
    r = _send(s.client, method, path, body, s.admin, FORM)
    assert r.status_code == 415, r.text
    assert r.json() == {"error": {"status": 415, "field": "Content-Type", "message": (
        f"Content-Type: expected application/json, got {FORM} "
        "(with curl -d, add -H 'Content-Type: application/json')")}}
    assert [j.id for j in s.svc.store.jobs(limit=10)] == ["j0"]
    assert s.svc.store.job("j0").priority == 0
    assert s.svc.store.quotas() == []
    assert len(s.svc.store.audit_log(limit=1000)) == rows


@pytest.mark.parametrize("ctype, status", [
    (FORM, 415),
    ("text/plain", 415),
    (None, 415),
    ("application/jsonx", 415),
    ("application/json", 201),
    ("Application/JSON; charset=utf-8", 201),
    ("application/merge-patch+json", 201),
], ids=lambda v: str(v))
def test_the_front_short_path_and_the_route_answer_every_content_type_alike(served_tenancy, ctype,
                                                                            status):
    """The front's first post with a fresh token goes to the FastAPI route (the token is not yet
    cached), its second takes the short path (cached): both get ``status``. Before, a missing
    type was 422 on the route and 201 on the short path, ``application/jsonx`` the same."""
    s = served_tenancy
    token, _ = s.svc.auth.create("member", "a")
    who = {"Authorization": f"Bearer {token}"}
    assert s.svc.auth.cached(who["Authorization"]) is None
    with TestClient(Front(s.svc, lambda: "http://127.0.0.1:9")) as front:
        first = _send(front, "POST", "/api/v1/jobs", job_body("f1"), who, ctype)
        assert s.svc.auth.cached(who["Authorization"]) is not None
        second = _send(front, "POST", "/api/v1/jobs", job_body("f2"), who, ctype)
    assert (first.status_code, second.status_code) == (status, status), (first.text, second.text)
    if status == 415:
        assert first.json() == second.json()
        assert first.json()["error"]["message"].startswith(
            f"Content-Type: expected application/json, got {ctype or 'none'}")


def test_no_token_is_a_401_before_the_content_type_is_looked_at(served_tenancy):
    r = _send(served_tenancy.client, "POST", "/api/v1/whatif", {"seeds": 1}, {}, FORM)
    assert r.status_code == 401


def test_routes_without_a_json_body_take_any_content_type(served_tenancy):
    """``curl -d '' -X POST …/drain`` (form-encoded, empty) drains; an empty POST with no type at
    all to a JSON-body route is the body's own 422 ("Field required"), not a 415."""
    s = served_tenancy
    assert s.post_job(job_body("j0", tenant="a")).status_code == 201
    r = s.client.post(f"/api/v1/nodes/{NODE0}/drain", content=b"", headers={**s.admin, "Content-Type": FORM})
    assert r.status_code == 200 and r.json()["state"] == "drain"
    r = s.client.post("/api/v1/jobs/j0/cancel", content=b"x=1", headers={**s.admin, "Content-Type": FORM})
    assert r.status_code == 200 and r.json()["state"] == "cancelled"
    r = s.client.post("/api/v1/whatif", headers=s.admin)
    assert r.status_code == 422 and r.json()["error"]["field"] == "body"


def test_the_openapi_document_lists_the_415_on_each_json_body_route_only(served_tenancy):
    doc = served_tenancy.client.get("/api/v1/openapi.json").json()
    with415 = {(m.upper(), p) for p, item in doc["paths"].items() for m, op in item.items()
               if "415" in op.get("responses", {})}
    assert with415 == {(m, p.replace("j0", "{job_id}").replace(NODE0, "{name}")
                        .replace("queues/a/quota/H100-80GB", "queues/{tenant}/quota/{flavor}"))
                       for m, p, _ in JSON_ROUTES}
