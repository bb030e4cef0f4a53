"""Spot in a scenario file (``reliability.spot``): spot nodes, reclaim rates per zone, notice,
zone events — validated by pydantic (one line, exit 2) and run through `gpufleet simulate`."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from gpufleet.cli.main import app

SCENARIO = """
name: spot
fleet:
  name: f
  groups:
    - {nodes: 4, gpu: H100-80GB, gpus_per_node: 8, zone: z0}
    - {nodes: 4, gpu: H100-80GB, gpus_per_node: 8, zone: z1}
workload:
  jobs:
%JOBS%
reliability:
  failure_scale: 0
  days: 2
  spot:
    nodes: 8
    reclaims_per_node_day: 0
    notice_s: 30
    away_hours: 0.5
    zones:
      z0: {reclaims_per_node_day: 4}
policies: [gang-bestfit]
"""
JOBS = "\n".join(f"    - {{id: j{i}, gpus: 8, run_time: 150000, checkpoint_interval_s: 1800, restart_s: 60}}"
                 for i in range(8))


def _write(tmp_path, text: str):
    p = tmp_path / "s.yaml"
    p.write_text(text.replace("%JOBS%", JOBS))
    return p


def test_only_the_zone_with_a_reclaim_rate_loses_nodes_and_the_count_is_its_poisson_mean(tmp_path):
    """Zone z0's 4 spot nodes are reclaimed at 4 per node-day, z1's at 0 (the default). Over the
    2-day stream: E = 4 nodes × 4 × 2 = 32 notices (Poisson, σ = √32 = 5.7; within 3σ), none on
    z1. Each notice stops the job on its node (30 s notice, no checkpoint fits: work since the last
    save is lost), so summary.json charges GPU-hours to "spot" and counts interruptions."""
    out = tmp_path / "out"
    path = _write(tmp_path, SCENARIO)
    r = CliRunner().invoke(app, ["simulate", str(path), "--out", str(out), "-o", "json"])
    assert r.exit_code == 0, r.output
    events = [json.loads(x) for x in (out / "events-gang-bestfit.jsonl").read_text().splitlines()]
    notices = [e["job"] for e in events if e["event"] == "spot-notice"]
    assert all("-g0-" in n for n in notices)  # the z0 group
    assert abs(len(notices) - 32) <= 3 * math.sqrt(32)
    s = json.loads((out / "summary.json").read_text())["policies"]["gang-bestfit"]
    assert s["interruptions"] >= 1 and s["lost_gpu_hours_by_cause"]["spot"] > 0


@pytest.mark.parametrize(("old", "new", "field"), [
    ("nodes: 8\n", "nodes: 9\n", "reliability.spot.nodes"),
    ("z0: {reclaims", "z7: {reclaims", "reliability.spot.zones.z7"),
    ("notice_s: 30", "notice_s: .nan", "reliability.spot.notice_s"),
    ("reclaims_per_node_day: 0\n", "reclaims_per_node_day: -1\n", "reliability.spot.reclaims_per_node_day"),
    ("away_hours: 0.5", "away_hours: 1e300", "reliability.spot.away_hours"),
    ("notice_s: 30", "notice_s: 30\n    rate: 3", "reliability.spot"),
    ("z0: {reclaims_per_node_day: 4}", "z0: {fraction: 0}", "reliability.spot.zones.z0.fraction"),
])
def test_a_bad_spot_section_is_one_line_naming_the_field_and_exit_2(tmp_path, old, new, field):
    assert old in SCENARIO
    r = CliRunner().invoke(app, ["simulate", str(_write(tmp_path, SCENARIO.replace(old, new))),
                                 "--out", str(tmp_path / "o")])
    assert r.exit_code == 2, r.output
    assert field in r.output and len(r.output.strip().splitlines()) == 1
