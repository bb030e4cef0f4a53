"""The bundled reliability scenario: a 2,048-GPU job on a fleet that breaks at Llama 3's rates."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from gpufleet.cli.main import app
from gpufleet.cli.simulate import run_policies
from gpufleet.model.errors import InputError
from gpufleet.sim.metrics import summarize
from gpufleet.sim.scenario import bundled, parse_scenario

runner = CliRunner()


def test_both_policies_meet_the_same_failures_and_report_their_cost():
    """One job, the whole fleet: under either policy the same nodes fail at the same times, the
    3-minute recovery takes 30 + 30 + 60 + 60 = 180 s each time, and every interruption used a spare."""
    scn = bundled("reliability")
    results = run_policies(scn, ["gang-bestfit", "gang-easy"], None, show_progress=False)
    faults = {n: [e for e in r.recorder.log if e[1] == "node-fault"] for n, r in results.items()}
    assert faults["gang-bestfit"] == faults["gang-easy"] and faults["gang-easy"]
    s = summarize(results["gang-easy"], scn.tenancy)
    assert s["interruptions"] > 0 and s["recovery_p50_s"] == pytest.approx(180.0)
    assert s["no_spare_when_needed"] == 0
    assert 90.0 < s["goodput_pct"] < 100.0
    assert set(s["lost_gpu_hours_by_cause"]) >= {"gpu-xid", "checkpointing"}
    json.dumps(s, allow_nan=False)  # summary.json stays strict JSON


def test_lost_gpu_hours_add_up_to_the_goodput_gap():
    """GPU-time of the job from first start to finish − work kept = Σ lost by cause: lost work,
    idle until teardown, wait for a spare (2,048 GPUs × 60 s per interruption here), checkpoint
    load, and δ/τ of checkpoint writes. Every lost hour has a cause, within 1%."""
    scn = bundled("reliability")
    r = run_policies(scn, ["gang-bestfit"], None, show_progress=False)["gang-bestfit"]
    s = summarize(r)
    j = r.jobs["pretrain-2048"]
    held_h = j.total_gpus * (r.finishes[j.id] - r.starts[j.id]) / 3600
    gap_h = held_h * (1 - s["goodput_pct"] / 100)
    assert math.isclose(sum(s["lost_gpu_hours_by_cause"].values()), gap_h, rel_tol=0.01)


def test_more_spares_than_nodes_is_one_clear_error():
    data = {"fleet": {"groups": [{"nodes": 4, "gpu": "H100-80GB", "gpus_per_node": 8}]},
            "workload": {"jobs": [{"id": "a", "run_time": 60}]}, "reliability": {"spares": 4}}
    with pytest.raises(InputError, match="reliability.spares"):
        parse_scenario(data, "<test>")


def test_a_non_finite_failure_scale_is_refused_in_one_line(tmp_path):
    scn = tmp_path / "bad.yaml"
    scn.write_text("fleet: {groups: [{nodes: 4, gpu: H100-80GB, gpus_per_node: 8}]}\n"
                   "workload: {jobs: [{id: a, run_time: 60}]}\nreliability: {failure_scale: .nan}\n")
    res = runner.invoke(app, ["simulate", str(scn), "--out", str(tmp_path / "o"), "--no-progress"])
    assert res.exit_code == 2 and "failure_scale" in res.output
