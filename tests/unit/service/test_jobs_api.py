"""Jobs through the API: submit, list, one job, explain, cancel, hold, release, priority."""

from __future__ import annotations

import pytest
from tests.unit.service.conftest import job_body


def test_a_submitted_job_is_acknowledged_stored_and_started_by_the_next_cycle(served):
    r = served.post_job(job_body("j1", gpus=8, replicas=2))
    assert r.status_code == 201
    assert r.json()["state"] == "pending"
    served.tick()
    got = served.client.get("/api/v1/jobs/j1", headers=served.viewer).json()
    assert got["state"] == "running"
    assert len(got["nodes"]) == 2


def test_a_job_runs_for_its_stated_time_on_the_source_clock_then_finishes(served):
    served.post_job(job_body("j1", run_time=600))
    served.tick()
    served.tick(599)
    assert served.client.get("/api/v1/jobs/j1", headers=served.viewer).json()["state"] == "running"
    served.tick(2)
    got = served.client.get("/api/v1/jobs/j1", headers=served.viewer).json()
    assert got["state"] == "finished"
    assert got["end_time"] - got["start_time"] == pytest.approx(600)


def test_a_retry_with_the_same_idempotency_key_returns_the_first_job_and_adds_nothing(served):
    first = served.post_job(job_body("j1"), key="k-1")
    again = served.post_job(job_body("j1"), key="k-1")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == "j1"
    served.tick()
    assert len(served.svc.snapshot().running) == 1


def test_a_retry_without_an_id_gets_the_id_the_first_call_minted(served):
    body = {"run_time": 60, "pod_sets": [{"replicas": 1, "gpus": 1}]}
    a = served.post_job(body, key="k-2").json()["id"]
    b = served.post_job(body, key="k-2").json()["id"]
    assert a == b


def test_an_idempotency_key_reused_for_another_job_is_refused_naming_the_header(served):
    served.post_job(job_body("j1"), key="k-1")
    r = served.post_job(job_body("j2"), key="k-1")
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "Idempotency-Key"


def test_an_idempotency_key_is_the_tenants_own(served_tenancy):
    """Members of a and b both post with key "shared": two jobs, each in its own tenant, and
    neither learns of the other's; a's retry still finds a's job (200), b's too."""
    s = served_tenancy
    a = s.post_job(job_body("ja", tenant="a"), s.member_a, key="shared")
    b = s.post_job(job_body("jb", tenant="b"), s.member_b, key="shared")
    assert (a.status_code, b.status_code) == (201, 201)
    assert (b.json()["id"], b.json()["tenant"]) == ("jb", "b")
    again_a = s.post_job(job_body("ja", tenant="a"), s.member_a, key="shared")
    again_b = s.post_job(job_body("jb", tenant="b"), s.member_b, key="shared")
    assert (again_a.status_code, again_a.json()["id"]) == (200, "ja")
    assert (again_b.status_code, again_b.json()["id"]) == (200, "jb")
    other = s.post_job(job_body("jc", tenant="b"), s.member_b, key="shared")
    assert other.status_code == 422 and "ja" not in other.text


def test_a_job_naming_a_node_the_fleet_lacks_is_a_422_naming_eligible_nodes(served):
    """"nope" is no node of the virtual fleet: refused and not stored; a real name is taken."""
    r = served.post_job({**job_body("j1"), "eligible_nodes": ["nope"]})
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "eligible_nodes" and "'nope'" in r.json()["error"]["message"]
    assert served.svc.store.job("j1") is None
    name = served.svc.source.table.names[0]
    assert served.post_job({**job_body("j1"), "eligible_nodes": [name]}).status_code == 201


def test_a_job_id_taken_already_is_a_conflict(served):
    served.post_job(job_body("j1"))
    r = served.post_job(job_body("j1", gpus=2))
    assert r.status_code == 409
    assert r.json()["error"]["field"] == "id"


BAD = [
    ("run time NaN", {"run_time": float("nan")}, "run_time"),
    ("run time negative", {"run_time": -1}, "run_time"),
    ("no pod sets", {"pod_sets": []}, "pod_sets"),
    ("zero replicas", {"pod_sets": [{"replicas": 0, "gpus": 8}]}, "pod_sets.0.replicas"),
    ("a huge GPU count", {"pod_sets": [{"replicas": 1, "gpus": 10**12}]}, "pod_sets.0.gpus"),
    ("an unknown GPU model", {"pod_sets": [{"replicas": 1, "gpus": 1, "gpu_models": ["Z9"]}]},
     "pod_sets.0.gpu_models.0"),
    ("a path-shaped id", {"id": "../../etc/passwd"}, "id"),
    ("an SQL-shaped id", {"id": "x'; DROP TABLE jobs;--"}, "id"),
    ("an SQL-shaped tenant", {"tenant": "a' OR '1'='1"}, "tenant"),
    ("an unknown field", {"colour": "red"}, "colour"),
    ("a string for a number", {"run_time": "soon"}, "run_time"),
]


@pytest.mark.parametrize(("change", "field"), [(c, f) for _, c, f in BAD], ids=[i for i, _, _ in BAD])
def test_bad_input_is_a_422_naming_the_field_and_changes_nothing(served, change, field):
    body = {**job_body("ok-id"), **change}
    r = served.client.post("/api/v1/jobs", content=__import__("json").dumps(body),
                           headers={**served.admin, "Content-Type": "application/json"})
    assert r.status_code == 422, r.text
    assert r.json()["error"]["field"] == field
    assert served.svc.store.count_jobs() == {}


def test_a_body_that_is_not_an_object_is_a_422(served):
    r = served.client.post("/api/v1/jobs", json=[1, 2], headers=served.admin)
    assert r.status_code == 422


def test_the_cursor_pages_through_every_job_exactly_once(served):
    for i in range(25):
        served.post_job(job_body(f"j{i:02d}", gpus=1))
    seen, after = [], None
    while True:
        params = {"limit": 7, **({"after": after} if after else {})}
        page = served.client.get("/api/v1/jobs", params=params, headers=served.viewer).json()
        seen += [j["id"] for j in page["jobs"]]
        after = page["next"]
        if after is None:
            break
    assert seen == [f"j{i:02d}" for i in range(25)]


def test_the_list_filters_by_state(served):
    served.post_job(job_body("big", gpus=8, replicas=8))
    served.post_job(job_body("waits", gpus=8, replicas=8))
    served.tick()
    page = served.client.get("/api/v1/jobs", params={"state": "pending"}, headers=served.viewer).json()
    assert [j["id"] for j in page["jobs"]] == ["waits"]
    assert page["jobs"][0]["reason"] in ("capacity", "reservation")
    assert page["jobs"][0]["estimated_start"] == pytest.approx(3600, abs=1)


def test_cancel_frees_a_running_jobs_gpus_at_the_next_tick(served):
    served.post_job(job_body("j1", gpus=8, replicas=8))
    served.tick()
    assert served.client.post("/api/v1/jobs/j1/cancel", headers=served.admin).json()["state"] == "cancelled"
    served.tick()
    summary = served.client.get("/api/v1/summary", headers=served.viewer).json()
    assert summary["gpus"]["free"] == 64


def test_a_held_job_waits_outside_the_queue_until_released(served):
    served.post_job(job_body("j1", gpus=8, replicas=8))
    served.post_job(job_body("j2", gpus=8))
    served.tick()
    assert served.client.post("/api/v1/jobs/j2/hold", headers=served.admin).json()["state"] == "held"
    served.tick()
    assert "j2" not in served.svc.snapshot().pending
    assert served.client.post("/api/v1/jobs/j2/release", headers=served.admin).json()["state"] == "pending"
    served.tick()
    assert "j2" in served.svc.snapshot().pending


def test_a_change_the_jobs_state_does_not_allow_is_a_conflict(served):
    served.post_job(job_body("j1"))
    served.tick()
    r = served.client.post("/api/v1/jobs/j1/hold", headers=served.admin)
    assert r.status_code == 409
    assert "running" in r.json()["error"]["message"]


@pytest.mark.parametrize(("raised", "starts"), [(False, "first"), (True, "second")],
                         ids=["in submission order the first one starts",
                              "raised, the second one starts instead"])
def test_priority_decides_which_of_two_waiting_jobs_takes_the_last_free_node(served, raised, starts):
    """64 GPUs; "big" holds 56, so one node (8 GPUs) is left; "first" and "second" each want it."""
    served.post_job(job_body("big", gpus=8, replicas=7))
    served.tick()
    served.post_job(job_body("first", gpus=8))
    served.post_job(job_body("second", gpus=8))
    if raised:
        r = served.client.post("/api/v1/jobs/second/priority", json={"priority": 10}, headers=served.admin)
        assert r.json()["priority"] == 10
    served.tick()
    assert set(served.svc.snapshot().running) == {"big", starts}


def test_an_unknown_job_is_a_404(served):
    assert served.client.get("/api/v1/jobs/nope", headers=served.viewer).status_code == 404
    assert served.client.post("/api/v1/jobs/nope/cancel", headers=served.admin).status_code == 404
