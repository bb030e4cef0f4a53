"""Explain computes its per-shape parts (node counts, capacity fixes) once per shape and
snapshot: jobs of one shape read the same answer, and the next snapshot answers afresh."""

from __future__ import annotations

from tests.unit.service.conftest import job_body

from gpufleet.live.explain import explain, node_counts

NODE0 = "g0-n0000"


def counts_of(e: dict) -> dict[str, int]:
    return {c["reason"]: c["nodes"] for c in e["node_counts"]["worker"]}


def test_two_jobs_of_one_shape_share_the_answer_and_a_drain_makes_a_new_one(served):
    """8 nodes; "big" (8 × 8 GPUs, 1 h) holds every GPU; w1 and w2 (1 × 8 GPUs each) wait with
    the same shape: 8 nodes have fewer than 8 GPUs free for both, and evicting big is the fix.
    Draining node 0 publishes a new snapshot: now 1 node is out of service and 7 lack GPUs (a
    stale per-shape answer would still say 8)."""
    served.post_job(job_body("big", gpus=8, replicas=8, run_time=3600))
    served.tick()
    served.post_job(job_body("w1", gpus=8))
    served.post_job(job_body("w2", gpus=8))
    served.tick(60)
    get = served.client.get
    e1 = get("/api/v1/jobs/w1/explain", headers=served.viewer).json()
    e2 = get("/api/v1/jobs/w2/explain", headers=served.viewer).json()
    assert counts_of(e1) == counts_of(e2) == {"fewer than 8 GPUs free": 8}
    assert e1["fixes"] == e2["fixes"]
    assert e1["fixes"][0]["what"].startswith("preempt 1 running job(s) (big)")
    snap = served.svc.snapshot()
    assert explain(snap, "w2").node_counts == {"worker": node_counts(snap, snap.pending["w2"])["worker"]}
    served.client.post(f"/api/v1/nodes/{NODE0}/drain", headers=served.admin)
    served.tick(1)
    e2 = get("/api/v1/jobs/w2/explain", headers=served.viewer).json()
    assert counts_of(e2) == {"out of service": 1, "fewer than 8 GPUs free": 7}
