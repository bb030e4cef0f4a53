"""What-if from the live state: the simulator forked and run forward."""

from __future__ import annotations

import pytest
from tests.unit.service.conftest import job_body

from gpufleet.live.whatif import Change, fork, fork_seeds
from gpufleet.service.jobs import build_job, parse_submission


def probe(replicas: int) -> dict:
    return {"run_time": 600, "pod_sets": [{"replicas": replicas, "gpus": 8}]}


def test_a_shape_that_fits_only_after_a_running_job_ends_starts_when_it_ends(served):
    """All 8 nodes run "big" for 3600 s; a 2-node probe starts at its end (seed 0: stated times)."""
    served.post_job(job_body("big", gpus=8, replicas=8, run_time=3600))
    served.tick()
    r = served.client.post("/api/v1/whatif", json={"job": probe(2), "seeds": 1}, headers=served.viewer)
    assert r.status_code == 200, r.text
    assert r.json()["runs"][0]["wait_s"] == pytest.approx(3600, abs=1)


def test_jobs_that_end_early_on_later_seeds_spread_the_answer_earlier(served):
    """Seeds > 0 draw remaining run × U(0.5, 1): the probe waits between 1800 and 3600 s."""
    served.post_job(job_body("big", gpus=8, replicas=8, run_time=3600))
    served.tick()
    out = served.client.post("/api/v1/whatif", json={"job": probe(2), "seeds": 4},
                             headers=served.viewer).json()
    assert out["started_in"] == 4
    assert 1800 - 1 <= out["wait_min_s"] <= out["wait_median_s"] <= out["wait_max_s"] <= 3600 + 1
    assert out["wait_min_s"] < 3600


def test_draining_nodes_in_the_what_if_leaves_the_live_fleet_alone(served):
    """Draining 7 of 8 nodes: a 2-node probe can never start; the live nodes stay in service."""
    names = list(served.svc.source.table.names)
    out = served.client.post("/api/v1/whatif", json={"job": probe(2), "drain": names[:7], "seeds": 1,
                                                      "horizon_s": 86400}, headers=served.viewer).json()
    assert out["started_in"] == 0
    assert served.client.get("/api/v1/summary", headers=served.viewer).json()["nodes_out_of_service"] == 0


def test_a_seed_that_spends_its_cpu_budget_says_how_far_it_got_and_the_basis_says_why(served):
    """The probe waits 3600 s for "big"; a budget too small for one simulated instant stops
    the run at once: no start, ``complete`` false, 0 s simulated, and the basis names the
    budget. The default budget answers it (complete, 3600 s)."""
    served.post_job(job_body("big", gpus=8, replicas=8, run_time=3600))
    served.tick()
    cut = served.client.post("/api/v1/whatif", json={"job": probe(2), "seeds": 1, "budget_s": 1e-9},
                             headers=served.viewer).json()
    assert (cut["started_in"], cut["runs"][0]["complete"], cut["runs"][0]["simulated_s"]) == (0, False, 0)
    assert "spent their 1e-09 CPU s first" in cut["basis"]
    full = served.client.post("/api/v1/whatif", json={"job": probe(2), "seeds": 1},
                              headers=served.viewer).json()
    assert full["runs"][0]["complete"] and full["runs"][0]["simulated_s"] == pytest.approx(3600, abs=1)


@pytest.mark.parametrize(("body", "field"), [
    ({"job": {"run_time": 1, "pod_sets": []}}, "job.pod_sets"),
    ({"drain": ["no-such-node"]}, "drain.0"),
    ({"policy": "nope"}, "policy"),
    ({"horizon_s": 1e12}, "horizon_s"),
    ({"seeds": 0}, "seeds"),
    ({"budget_s": 0}, "budget_s"),
    ({"budget_s": 1e9}, "budget_s"),
    ({"drains": ["node-0"]}, "drains"),
    ({"quota": [{"tenant": "a", "flavor": "H100-80GB", "nominal": 8, "borrow": 8}]}, "quota.0.borrow"),
    ({"job": {"run_time": 60, "pod_sets": [{"replicas": 1, "gpus": 8, "gpu_models": ["B200"]}]}},
     "job.pod_sets.0"),
    ({"job": {"run_time": 60, "pod_sets": [{"replicas": 1, "gpus": 1}, {"replicas": 9, "gpus": 8}]}},
     "job.pod_sets.1"),
], ids=["a job with no pod sets", "an unknown node", "an unknown policy", "a horizon past 30 days",
        "no seeds", "no CPU budget", "a budget past 600 s",
        "a misspelt field", "a misspelt quota field", "a GPU model the fleet lacks",
        "a second pod set bigger than the fleet (9 of 8 nodes)"])
def test_a_bad_what_if_is_a_422_naming_the_field(served, body, field):
    r = served.client.post("/api/v1/whatif", json=body, headers=served.viewer)
    assert r.status_code == 422
    assert r.json()["error"]["field"] == field


def test_seeds_forked_into_child_processes_answer_what_the_same_forks_answer_here(served):
    """fork_seeds runs each seed in a child process: the answers are the in-process ones, seed
    by seed (the same snapshot, the same seeded draws)."""
    served.post_job(job_body("big", gpus=8, replicas=8, run_time=3600))
    served.post_job(job_body("next", gpus=8, replicas=4, run_time=1800))
    served.tick()
    snap = served.svc.snapshot()
    shape = build_job(parse_submission({"id": "p", **probe(2)}), "p", snap.now)
    here = [fork(snap, served.svc.source.profile, Change(), shape, seed=k) for k in range(3)]
    there = fork_seeds(snap, served.svc.source.profile, Change(), shape, 3)
    assert there == here
    assert here[0].probe_start == pytest.approx(snap.now + 3600, abs=1)


def test_seeds_past_the_core_count_wait_for_a_free_core_and_answer_the_same(served, monkeypatch):
    """One core: the 3 children run one after another; their answers are the in-process ones."""
    served.post_job(job_body("big", gpus=8, replicas=8, run_time=3600))
    served.tick()
    snap = served.svc.snapshot()
    shape = build_job(parse_submission({"id": "p", **probe(2)}), "p", snap.now)
    here = [fork(snap, served.svc.source.profile, Change(), shape, seed=k) for k in range(3)]
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0})
    assert fork_seeds(snap, served.svc.source.profile, Change(), shape, 3) == here
