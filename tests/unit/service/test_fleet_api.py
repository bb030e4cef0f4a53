"""The live fleet through the API: summary, nodes and their admin actions, queues and quota,
explain, metrics, the decision stream, the OpenAPI document."""

from __future__ import annotations

import re

from tests.unit.service.conftest import job_body

NODE0 = "g0-n0000"


def test_the_summary_counts_every_gpu_in_exactly_one_state(served):
    """Fleet 64 GPUs (8 nodes of 8); a 5×8 job runs (40 allocated); of the 3 empty nodes one is
    drained (8 drained, a planned act: not unhealthy), one failed (8 unhealthy); 8 free remain:
    40 + 8 + 8 + 8 = 64. /metrics says the same."""
    served.post_job(job_body("run", gpus=8, replicas=5))
    served.tick()
    empty = [n for n in served.svc.source.table.names
             if not served.client.get(f"/api/v1/nodes/{n}", headers=served.viewer).json()["jobs"]]
    served.client.post(f"/api/v1/nodes/{empty[0]}/drain", headers=served.admin)
    served.client.post(f"/api/v1/nodes/{empty[1]}/fail", headers=served.admin)
    served.tick()
    g = served.client.get("/api/v1/summary", headers=served.viewer).json()["gpus"]
    assert (g["total"], g["allocated"], g["drained"], g["unhealthy"], g["free"]) == (64, 40, 8, 8, 8)
    assert g["allocated"] + g["free"] + g["drained"] + g["unhealthy"] == g["total"]
    text = served.client.get("/metrics", headers=served.viewer).text
    assert 'gpufleet_gpus{state="drained"} 8.0' in text
    assert 'gpufleet_gpus{state="unhealthy"} 8.0' in text


def test_free_gpus_no_pending_job_can_use_are_stranded(served):
    """A 4-GPU job on one node leaves 4 free there; a waiting 8-GPU-per-pod job cannot use them."""
    served.post_job(job_body("small", gpus=4))
    served.tick()
    served.post_job(job_body("huge", gpus=8, replicas=8))
    served.tick()
    s = served.client.get("/api/v1/summary", headers=served.viewer).json()
    assert s["gpus"]["stranded"] == 4
    assert s["pending_by_reason"]["capacity"] + s["pending_by_reason"]["reservation"] == 1


def test_a_drained_node_takes_no_new_work_and_uncordon_returns_it(served):
    for n in served.svc.source.table.names:
        if n != NODE0:
            served.client.post(f"/api/v1/nodes/{n}/cordon", headers=served.admin)
    served.tick()
    served.client.post(f"/api/v1/nodes/{NODE0}/drain", headers=served.admin)
    served.post_job(job_body("j1"))
    served.tick()
    assert served.client.get("/api/v1/jobs/j1", headers=served.viewer).json()["state"] == "pending"
    assert served.client.get(f"/api/v1/nodes/{NODE0}", headers=served.viewer).json()["state"] == "drain"
    served.client.post(f"/api/v1/nodes/{NODE0}/uncordon", headers=served.admin)
    served.tick()
    assert served.client.get("/api/v1/jobs/j1", headers=served.viewer).json()["state"] == "running"


def test_a_node_action_is_audited_with_before_and_after(served):
    served.client.post(f"/api/v1/nodes/{NODE0}/cordon", headers=served.admin)
    e = [x for x in served.svc.store.audit_log() if x["action"] == "node.cordon"][0]
    assert (e["target"], e["before"], e["after"]) == (NODE0, {"state": "up"}, {"state": "cordon"})


def test_a_failed_node_requeues_its_job(served):
    for n in served.svc.source.table.names[1:]:
        served.client.post(f"/api/v1/nodes/{n}/cordon", headers=served.admin)
    served.post_job(job_body("j1"))
    served.tick()
    assert NODE0 in served.client.get("/api/v1/jobs/j1", headers=served.viewer).json()["nodes"]
    served.client.post(f"/api/v1/nodes/{NODE0}/fail", headers=served.admin)
    served.tick()
    assert served.client.get("/api/v1/jobs/j1", headers=served.viewer).json()["state"] == "pending"


def test_an_unknown_node_is_a_404_and_an_unknown_action_a_422(served):
    assert served.client.get("/api/v1/nodes/nope", headers=served.viewer).status_code == 404
    assert served.client.post("/api/v1/nodes/nope/drain", headers=served.admin).status_code == 404
    r = served.client.post(f"/api/v1/nodes/{NODE0}/explode", headers=served.admin)
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "path.action"


def test_queues_show_quota_against_usage(served_tenancy):
    s = served_tenancy
    s.post_job(job_body("a1", gpus=8, replicas=2, tenant="a"), headers=s.member_a)
    s.tick()
    qa = next(q for q in s.client.get("/api/v1/queues", headers=s.viewer).json() if q["name"] == "a")
    f = qa["flavors"][0]
    assert (f["nominal"], f["usage"], f["borrowed"], f["lendable"]) == (32, 16, 0, 16)
    assert qa["weighted_share"] == 16 / 32


def test_a_quota_edit_changes_admission_and_is_audited(served_tenancy):
    """Tenant b's nominal quota cut from 16 to 0, borrowing limit 0: a job of b waits for quota."""
    s = served_tenancy
    r = s.client.put("/api/v1/queues/b/quota/H100-80GB", json={"nominal": 0, "borrowing_limit": 0},
                     headers=s.admin)
    assert r.status_code == 200
    s.post_job(job_body("b1", gpus=8, tenant="b"), headers=s.member_b)
    s.tick()
    job = s.client.get("/api/v1/jobs/b1", headers=s.viewer).json()
    assert job["reason"] == "quota"
    e = [x for x in s.svc.store.audit_log() if x["action"] == "quota.set"][0]
    assert (e["before"]["nominal"], e["after"]["nominal"]) == (16, 0)


def test_a_member_cannot_edit_quota(served_tenancy):
    s = served_tenancy
    r = s.client.put("/api/v1/queues/a/quota/H100-80GB", json={"nominal": 64}, headers=s.member_a)
    assert r.status_code == 403


def test_explain_gives_the_engines_chain_estimate_blockers_and_fixes(served):
    """8 nodes; "big" runs on all of them for an hour; "next" (2 nodes) waits for it: its estimate
    is big's end (t=3600) and big is what blocks it; evicting big is the fix. The policy named is
    the profile the service runs (gang-easy by default, docs/service.md), not its placer step."""
    served.post_job(job_body("big", gpus=8, replicas=8, run_time=3600))
    served.tick()
    served.post_job(job_body("next", gpus=8, replicas=2))
    served.tick(60)
    e = served.client.get("/api/v1/jobs/next/explain", headers=served.viewer).json()
    assert e["state"] == "pending"
    assert (e["policy"], e["policy_step"]) == ("gang-easy", "gang-bestfit")
    assert e["chain"]
    assert abs(e["estimated_start"] - 3600) < 1
    assert e["blockers"] == ["big"]
    counts = {c["reason"]: c["nodes"] for c in e["node_counts"]["worker"]}
    assert counts == {"fewer than 8 GPUs free": 8}
    assert e["fixes"][0]["what"].startswith("preempt 1 running job(s) (big)")
    assert abs(e["fixes"][0]["displaced_gpu_h"] - 64 * 60 / 3600) < 1e-3  # rounded to 3 places


def test_explain_of_a_job_no_fleet_can_hold_says_so_and_how_to_change_it(served):
    served.post_job(job_body("giant", gpus=16))
    served.tick()
    e = served.client.get("/api/v1/jobs/giant/explain", headers=served.viewer).json()
    assert e["reason"] == "unresolvable"
    assert "at most 8 GPUs per pod" in e["fixes"][0]["what"]


def test_metrics_use_the_kueue_and_slurm_exporter_names_without_job_labels(served):
    served.post_job(job_body("j1"))
    served.post_job(job_body("j2", gpus=8, replicas=8))
    served.tick()
    text = served.client.get("/metrics", headers=served.viewer).text
    for name in ("gpufleet_pending_jobs", "gpufleet_admitted_jobs_total", "gpufleet_gpus",
                 "gpufleet_admission_wait_time_seconds_bucket", "gpufleet_cycle_duration_seconds_bucket",
                 "gpufleet_preempted_jobs_total", "gpufleet_queue_weighted_share"):
        assert name in text, name
    assert 'gpufleet_gpus{state="allocated"} 8.0' in text
    assert not re.search(r'job="', text)


def test_the_event_stream_replays_decisions_after_the_last_id_seen(served):
    served.post_job(job_body("j1"))
    served.tick()
    text = served.client.get("/api/v1/events", params={"once": True}, headers=served.viewer).text
    kinds = re.findall(r"^event: (\w+)$", text, re.M)
    assert kinds == ["submit", "start"]
    later = served.client.get("/api/v1/events", params={"once": True},
                              headers={**served.viewer, "Last-Event-ID": "1"}).text
    assert re.findall(r"^event: (\w+)$", later, re.M) == ["start"]


def test_the_openapi_document_lists_every_route(served):
    doc = served.client.get("/api/v1/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    for path in ("/api/v1/jobs", "/api/v1/jobs/{job_id}", "/api/v1/jobs/{job_id}/explain",
                 "/api/v1/summary", "/api/v1/nodes", "/api/v1/queues", "/api/v1/audit", "/api/v1/events"):
        assert path in doc["paths"], path


def test_history_sums_waits_jct_and_gpu_hours_per_tenant(served):
    """Tenant x's "all" takes the 64 GPUs for an hour (64 GPU-h, wait 0); tenant t's "second"
    (8 GPUs, an hour) starts when it ends: wait 3600 s, JCT 7200 s, 8 GPU-h."""
    served.post_job(job_body("all", gpus=8, replicas=8, run_time=3600, tenant="x"))
    served.tick()
    served.post_job(job_body("second", gpus=8, run_time=3600, tenant="t"))
    served.tick(3600)
    served.tick(3600)
    served.tick(1)
    h = {r["tenant"]: r for r in served.client.get("/api/v1/history", headers=served.viewer).json()}
    assert h["x"]["finished"] == 1 and abs(h["x"]["gpu_hours"] - 64) < 1e-6
    assert h["t"]["finished"] == 1
    assert abs(h["t"]["wait_mean_s"] - 3600) < 1
    assert abs(h["t"]["jct_mean_s"] - 7200) < 1
    assert abs(h["t"]["gpu_hours"] - 8) < 1e-6
