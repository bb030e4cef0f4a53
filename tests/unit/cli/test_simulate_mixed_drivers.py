"""`gpufleet simulate` on a scenario whose fleet starts on two drivers (a mixed fleet before the
rollout): placement follows each node's own driver, and summary.json says how long jobs were
held back by the driver matrix."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from gpufleet.cli.main import app

SCENARIO = """
name: mixed
fleet:
  name: f
  groups: [{nodes: 4, gpu: H100-80GB, gpus_per_node: 8}]
workload:
  jobs:
    - {id: a, gpus: 8, run_time: 1000, cuda: "12.4"}
    - {id: b, gpus: 8, run_time: 1000, cuda: "12.4"}
    - {id: c, gpus: 8, run_time: 1000, cuda: "12.4"}
    - {id: plain, gpus: 8, run_time: 1000}
reliability:
  failure_scale: 0
  days: 1
  upgrade:
    wave: 2
    start_hours: 2
    node_fail_p: 0
    from_driver: 550.54.14
    to_driver: 580.65.06
    nodes: [{match: "*-n000[01]", driver: 520.61.05}]
policies: [gang-bestfit]
"""


def test_a_mixed_fleet_places_each_image_on_the_nodes_whose_own_driver_runs_it(tmp_path):
    """Nodes 0–1 start on 520.61.05 (below the 12.x floor 525: CUDA 12.4 is "no" there), nodes 2–3
    on 550.54.14 (12.4's minimum: native). Four 8-GPU jobs at t = 0: the unlabelled one takes node
    0, two CUDA 12.4 jobs take nodes 2 and 3, and the third CUDA 12.4 job waits although node 1 is
    free, until a 550 node frees at 1,000 s. Held back: 1 job, 1,000 s × 8 GPUs = 2.22 GPU-h, never
    blocked (nodes 2–3 always ran its image). The rollout at 2 h then upgrades all 4 nodes."""
    (tmp_path / "s.yaml").write_text(SCENARIO)
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["simulate", str(tmp_path / "s.yaml"), "--out", str(out), "-o", "json"])
    assert r.exit_code == 0, r.output
    events = [json.loads(line) for line in (out / "events-gang-bestfit.jsonl").read_text().splitlines()]
    starts = {e["job"]: (e["t"], e["detail"]) for e in events if e["event"] == "start"}
    assert {j: starts[j][1].rsplit("-", 1)[1] for j in ("a", "b", "plain")} == {
        "a": "n0002", "b": "n0003", "plain": "n0000"}
    assert starts["c"] == (1000.0, starts["a"][1])
    s = json.loads((out / "summary.json").read_text())["policies"]["gang-bestfit"]
    assert s["driver_held_jobs"] == 1
    assert abs(s["driver_wait_gpu_hours"] - 8 * 1000 / 3600) < 1e-9
    assert s["driver_blocked_gpu_hours"] == 0.0
    assert s["upgrade_nodes_upgraded"] == 4
    assert "jobs held back by the driver matrix" in (out / "report.html").read_text()


def test_a_node_pattern_that_matches_no_node_is_one_line_naming_the_field(tmp_path):
    (tmp_path / "s.yaml").write_text(SCENARIO.replace("*-n000[01]", "g9-*"))
    r = CliRunner().invoke(app, ["simulate", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2
    assert "reliability.upgrade.nodes[0].match" in r.output and len(r.output.strip().splitlines()) == 1


def test_nodes_left_without_a_driver_need_from_driver(tmp_path):
    """Without from_driver, nodes no entry gives a driver would have none (and placement would
    silently stop following the matrix): one line naming the field."""
    (tmp_path / "s.yaml").write_text(SCENARIO.replace("    from_driver: 550.54.14\n", ""))
    r = CliRunner().invoke(app, ["simulate", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "reliability.upgrade.from_driver" in r.output
    assert len(r.output.strip().splitlines()) == 1
