import json

import pytest
from typer.testing import CliRunner

from gpufleet.cli.main import app

runner = CliRunner()

SMALL = """
name: small
description: a tiny fleet for tests
fleet:
  groups:
    - {nodes: 4, gpu: H100-80GB, gpus_per_node: 8, leaf_size: 2}
workload:
  generator: {days: 0.5, offered_load: 0.9, max_gpus: 16, seed: 3}
policies: [gang-bestfit, per-pod]
"""

SUMMARY_KEYS = {"jobs_submitted", "jobs_finished", "jobs_pending_at_end", "gpu_allocation_pct",
                "stranded_gpus_avg", "wait_p50_s", "wait_p95_s", "wait_p99_s", "jct_mean_s",
                "makespan_s", "deadlocked", "events", "sim_wall_s"}


def test_simulate_writes_a_summary_and_a_self_contained_report(tmp_path):
    scn = tmp_path / "small.yaml"
    scn.write_text(SMALL)
    out = tmp_path / "out"
    res = runner.invoke(app, ["simulate", str(scn), "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["policies"]) == {"gang-bestfit", "per-pod"}
    for s in summary["policies"].values():
        assert set(s) >= SUMMARY_KEYS
        assert s["jobs_submitted"] > 0
    html = (out / "report.html").read_text()
    assert "http://" not in html and "https://" not in html
    assert html.count("data:image/png;base64,") >= 3
    assert "Gang deadlock" in html
    assert (out / "events-gang-bestfit.jsonl").exists()


def test_simulate_runs_a_bundled_scenario_by_name(tmp_path):
    res = runner.invoke(app, ["simulate", "deadlock", "--out", str(tmp_path), "--no-progress"])
    assert res.exit_code == 0, res.output
    s = json.loads((tmp_path / "summary.json").read_text())["policies"]
    assert s["per-pod"]["deadlocked"] and not s["gang-bestfit"]["deadlocked"]


BAD = [
    ("an unknown GPU model", SMALL.replace("H100-80GB", "H900"), "fleet.groups[0].gpu"),
    ("a negative count", SMALL.replace("nodes: 4", "nodes: -4"), "fleet.groups[0].nodes"),
    ("a missing field", SMALL.replace("workload:", "ignored:"), "workload: missing required field"),
    ("a YAML syntax error", SMALL.replace("policies: [gang-bestfit, per-pod]", "policies: [gang"),
     "YAML syntax error"),
    ("an unknown policy", SMALL.replace("per-pod]", "fastest]"), "policies"),
]


@pytest.mark.parametrize(("case", "text", "expected"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_scenario_gets_one_line_and_exit_code_2(tmp_path, case, text, expected):
    scn = tmp_path / "bad.yaml"
    scn.write_text(text)
    res = runner.invoke(app, ["simulate", str(scn), "--out", str(tmp_path / "o"), "--no-progress"])
    assert res.exit_code == 2
    lines = [x for x in res.output.strip().splitlines() if x.strip()]
    assert len(lines) == 1, res.output
    assert str(scn) in lines[0] and expected in lines[0]
    assert "Traceback" not in res.output


def test_an_option_the_serving_study_does_not_take_is_refused_not_ignored():
    """`simulate serving --days -1` used to run the default study and exit 0, dropping the flag."""
    res = CliRunner().invoke(app, ["simulate", "serving", "--days", "-1"])
    assert res.exit_code == 2
    assert "No such option: --days" in res.output and "plan serving --help" in res.output


def test_the_progress_bar_ends_with_the_jobs_day_not_the_clock_of_the_repairs_after_them():
    """One 8-GPU job of 2 days (172,800 s) with failures on for 30 days: the simulated clock runs
    on through repairs after the job, but the run — its makespan — ends with the job, about day
    2.0 (plus any restart), and that is the day the bar ends on. Its length is submit + run time
    (2 days), not the last arrival (0 s, which filled the bar at once)."""
    from gpufleet.cli import simulate as S
    from gpufleet.sim.scenario import parse_scenario

    scn = parse_scenario({
        "name": "p", "fleet": {"name": "f", "groups": [{"nodes": 4, "gpu": "H100-80GB", "gpus_per_node": 8}]},
        "workload": {"jobs": [{"id": "a", "gpus": 8, "run_time": 172800, "checkpoint_interval_s": 3600,
                               "checkpoint_cost_s": 30, "restart_s": 60, "kind": "training"}]},
        "reliability": {"failure_scale": 1.0, "recovery": "3-minute", "spares": 1, "days": 30, "seed": 1},
        "policies": ["gang-bestfit"]}, "<test>")
    with S.err_console.capture() as cap:
        res = S.run_policies(scn, ["gang-bestfit"], 1, True)
    end_day = res["gang-bestfit"].end_time / 86400
    assert 2.0 <= end_day < 2.5
    assert f"done: jobs end day {end_day:.1f}" in cap.get()
