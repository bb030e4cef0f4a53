"""Studies run from the page as background jobs on the live fleet's shape (study_kinds.py,
studies.py), over the service tests' fleet: 2 leaves × 4 nodes × 8 H100s = 64 GPUs, tenants a
(nominal 32) and b (16) in cohort org; today's policy is tenancy-easy (the default with a tenancy).
"""

from __future__ import annotations

import html as html_lib

import pytest

from gpufleet.econ.inputs import load_inputs
from gpufleet.service.dashboard import study_kinds
from gpufleet.sim.fleet_events.failures import FailureConfig, mean_out_of_service_s
from gpufleet.studies import reliability as R

from .test_pages import ORIGIN, sign_in, submit, text


def dashboard(s):  # noqa: ANN001, ANN201
    return s.client.app.state.dashboard


def run(s, kind: str, form: dict) -> str:
    """Start a study from the page, wait for it, and return its finished card's text."""
    r = s.client.post(f"/studies/{kind}", data=form, headers=ORIGIN)
    assert r.status_code == 200, r.text
    sid = r.text.split('id="study-')[1].split('"')[0]
    study = dashboard(s).studies.wait(sid, 120)
    assert study is not None and study.state == "done", (study.state, study.error)
    card = s.client.get(f"/studies/{kind}/{sid}")
    assert card.status_code == 200 and 'data-state="done"' in card.text
    return text(card.text)


def test_other_policies_on_todays_queue_put_today_first_and_count_the_same_queue(served_tenancy) -> None:
    """Four 16-GPU gangs of tenant a: three run (the cohort's 48 GPUs), g3 waits on quota. Under any
    policy g3 starts within a day (its blockers run 3,600 s), so every row starts the 1 pending job."""
    s = served_tenancy
    for i in range(4):
        submit(s, f"g{i}", gpus=8, replicas=2)
    s.tick()
    sign_in(s, s.viewer)
    card = run(s, "policies", {"policies": "gang-easy", "days": "1", "seeds": "1"})
    assert "Of 1 pending jobs, started within 1 d" in card
    assert card.index("tenancy-easy (today)") < card.index("gang-easy")
    assert card.count(" 1.0 ") == 2


def test_a_small_sweep_runs_every_cell(served_tenancy) -> None:
    s = served_tenancy
    s.tick()
    sign_in(s, s.viewer)
    card = run(s, "sweep", {"policies": "gang-easy", "loads": "50, 90", "days": "0.1"})
    assert card.count("tenancy-easy (today)") == 2 and card.count("gang-easy") == 2
    assert card.count(" 50% ") == 2 and card.count(" 90% ") == 2


def test_fragbench_replays_the_live_jobs_pods_on_this_fleet(served_tenancy) -> None:
    """Three 1-pod 8-GPU jobs and a 2-pod one: 5 pods on the 8 nodes."""
    s = served_tenancy
    for i in range(3):
        submit(s, f"j{i}", gpus=8)
    submit(s, "k", gpus=8, replicas=2)
    s.tick()
    sign_in(s, s.viewer)
    card = run(s, "fragbench", {"packers": "bestfit,fgd", "seeds": "2"})
    assert "FGD's fill on this fleet (8 nodes) with the live jobs' 5 pods" in card
    assert "bestfit" in card and "fgd" in card


def test_spares_are_the_finite_source_answer_for_this_fleets_node_count(served_tenancy) -> None:
    s = served_tenancy
    s.tick()
    sign_in(s, s.viewer)
    cfg = FailureConfig()
    want = R.spares_for_pool_finite(8, cfg.rate_per_node_s(8), mean_out_of_service_s(cfg, 8), 0.05)
    card = run(s, "spares", {"risk": "0.05"})
    assert f"Hot spares for 8 nodes: {want} keep P(no spare when needed) under 0.05" in card


@pytest.mark.parametrize(("kind", "form", "starts"), [
    pytest.param("policies", {"policies": "tenancy-easy"}, "policies: choose at least one policy besides",
                 id="only today's policy"),
    pytest.param("policies", {"policies": "nope"}, "policies: 'nope' is not one of", id="an unknown policy"),
    pytest.param("policies", {"policies": "gang-easy", "days": "nan"},
                 "days: expected a number from 0.01 to 7", id="NaN days"),
    pytest.param("sweep", {"loads": "10, 20, 30, 40"}, "loads: at most 3 at once", id="too many loads"),
    pytest.param("fragbench", {"seeds": "99"}, "seeds: expected a number from 1 to 3", id="too many seeds"),
    pytest.param("spares", {"risk": "2"}, "risk: expected a number from 1e-06 to 0.5", id="a risk over 0.5"),
])
def test_bad_study_input_gets_one_line_naming_the_field(served_tenancy, kind: str, form: dict,
                                                        starts: str) -> None:
    s = served_tenancy
    s.tick()
    sign_in(s, s.viewer)
    r = s.client.post(f"/studies/{kind}", data=form, headers=ORIGIN)
    assert r.status_code == 422
    assert f'id="study-error">{starts}' in html_lib.unescape(r.text)


def test_fragbench_with_no_gpu_jobs_says_there_is_nothing_to_replay(served_tenancy) -> None:
    s = served_tenancy
    s.tick()
    with pytest.raises(study_kinds.ApiError, match="no live job asks for GPUs"):
        study_kinds.fragbench_workload(s.svc.snapshot())


def test_a_study_needs_a_session_and_a_page_of_ours(served_tenancy) -> None:
    s = served_tenancy
    s.client.cookies.clear()
    assert s.client.post("/studies/spares", data={}, headers=ORIGIN).status_code == 401
    sign_in(s, s.viewer)
    r = s.client.post("/studies/spares", data={}, headers={"Origin": "http://evil.example"})
    assert r.status_code == 403


def test_plan_capacity_plans_for_the_demand_this_fleet_has_run(served_tenancy) -> None:
    """b1 (16 GPUs, 3,600 s) has finished, a1 (8 GPUs) has run 5,400 s: 16 × 1 h + 8 × 1.5 h = 28
    GPU-hours, at most 24 GPUs at once; all on demand costs 28 × the on-demand price."""
    s = served_tenancy
    s.post_job({"id": "a1", "tenant": "a", "run_time": 7200.0, "pod_sets": [{"replicas": 1, "gpus": 8}]})
    s.post_job({"id": "b1", "tenant": "b", "run_time": 3600.0, "pod_sets": [{"replicas": 2, "gpus": 8}]})
    s.tick()
    s.tick(3600.0)
    s.tick(1800.0)
    assert s.svc.store.job("b1").state == "finished" and s.svc.store.job("a1").state == "running"
    sign_in(s, s.viewer)
    card = run(s, "capacity", {})
    od = load_inputs(None).capacity.od_price_per_gpu_hr
    assert "Capacity mix for 2 h of this fleet's demand" in card and "peak 24)" in card
    assert f"all on demand 0 — ${28 * od:,.0f}" in card


def test_plan_capacity_before_anything_ran_says_so(served_tenancy) -> None:
    s = served_tenancy
    s.tick()
    sign_in(s, s.viewer)
    r = s.client.post("/studies/capacity", data={}, headers=ORIGIN)
    assert r.status_code == 422 and "no job has run on this fleet yet" in r.text
