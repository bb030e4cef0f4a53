"""`gpufleet simulate` with the topology runtime model, and scenario files with training layouts."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from gpufleet.cli.main import app

runner = CliRunner()

TRAINING = """
name: tiny-training
description: a tiny training fleet for tests
fleet:
  fabric: {leaf_oversubscription: 2.0}
  groups: [{nodes: 8, gpu: H100-80GB, gpus_per_node: 8, leaf_size: 4}]
workload:
  generator: {days: 0.5, offered_load: 0.8, max_gpus: 32, seed: 3, training: {fraction: 0.8}}
runtime_model: topology
policies: [topology-blind, gang-bestfit, topology-aware]
"""


def test_simulate_reports_per_job_slowdown_for_each_policy(tmp_path):
    scn = tmp_path / "tiny.yaml"
    scn.write_text(TRAINING)
    out = tmp_path / "out"
    res = runner.invoke(app, ["simulate", str(scn), "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "training-job slowdown (p95)" in res.output
    policies = json.loads((out / "summary.json").read_text())["policies"]
    assert set(policies) == {"topology-blind", "gang-bestfit", "topology-aware"}
    for s in policies.values():
        assert s["slowdown_jobs"] > 0 and s["slowdown_mean"] >= 1.0 and s["slowdown_p95"] >= 1.0
    html = (out / "report.html").read_text()
    assert "Topology: what placement costs" in html
    assert "slowdown 2.34x" in html  # the 4 + 4 arithmetic


def test_a_scenario_without_a_runtime_model_reports_no_slowdown(tmp_path):
    scn = tmp_path / "plain.yaml"
    scn.write_text(TRAINING.replace("runtime_model: topology\n", ""))
    out = tmp_path / "out"
    res = runner.invoke(app, ["simulate", str(scn), "--out", str(out), "--no-progress",
                              "--policy", "topology-aware"])
    assert res.exit_code == 0, res.output
    s = json.loads((out / "summary.json").read_text())["policies"]["topology-aware"]
    assert "slowdown_mean" not in s
    assert "Topology: what placement costs" not in (out / "report.html").read_text()


def test_a_job_whose_layout_does_not_match_its_gpus_gets_a_one_line_error(tmp_path):
    scn = tmp_path / "bad.yaml"
    scn.write_text("""
fleet: {groups: [{nodes: 2, gpu: H100-80GB}]}
workload:
  jobs: [{id: a, replicas: 2, gpus: 4, run_time: 60, tp: 8, pp: 2}]
""")
    res = runner.invoke(app, ["simulate", str(scn), "--out", str(tmp_path / "o"), "--no-progress"])
    assert res.exit_code != 0
    assert "tp*cp*dp*pp = 8*1*1*2 = 16" in res.output and "Traceback" not in res.output


def test_an_unknown_training_model_names_the_known_ones(tmp_path):
    scn = tmp_path / "bad.yaml"
    scn.write_text("""
fleet: {groups: [{nodes: 2, gpu: H100-80GB}]}
workload:
  jobs: [{id: a, replicas: 1, gpus: 8, run_time: 60, tp: 8, model: gpt-5}]
""")
    res = runner.invoke(app, ["simulate", str(scn), "--out", str(tmp_path / "o"), "--no-progress"])
    assert res.exit_code != 0 and "llama-70b" in res.output


def test_the_topology_aware_and_blind_policies_are_selectable_by_name(tmp_path):
    scn = tmp_path / "tiny.yaml"
    scn.write_text(TRAINING)
    res = runner.invoke(app, ["simulate", str(scn), "--out", str(tmp_path / "o"), "--no-progress",
                              "--policy", "topology-blind", "--policy", "topology-aware"])
    assert res.exit_code == 0, res.output
    assert "topology-blind" in res.output and "topology-aware" in res.output
