"""The simulate report and table agree with their own plots and say what they cover."""

import json

from typer.testing import CliRunner

from gpufleet.cli.main import app

runner = CliRunner()


def test_the_deadlocked_per_pod_run_shows_every_gpu_held_and_none_working(tmp_path):
    """Deadlock scenario: per-pod binds 8 pods × 8 GPUs = 64 of 64 GPUs at t = 0 and never runs.
    Over the shared window [0, 2 h] (gang-bestfit's end) that is 100 % held, 0 % working, and no
    makespan (nothing finished), not 0.0 % and 0 s."""
    res = runner.invoke(app, ["simulate", "deadlock", "--out", str(tmp_path), "--no-progress"])
    assert res.exit_code == 0, res.output
    s = json.loads((tmp_path / "summary.json").read_text())["policies"]
    assert s["per-pod"]["window_s"] == s["gang-bestfit"]["window_s"] == 7200.0
    assert s["per-pod"]["gpu_allocation_pct"] == 100.0
    assert s["per-pod"]["gpu_busy_pct"] == 0.0
    assert s["per-pod"]["makespan_s"] is None and s["per-pod"]["jct_mean_s"] is None
    assert s["gang-bestfit"]["makespan_s"] == 7200.0
    html = (tmp_path / "report.html").read_text()
    assert "Outcome in this run" in html


SMALL = """
name: small
fleet:
  groups: [{nodes: 2, gpu: H100-80GB, gpus_per_node: 8}]
workload:
  jobs:
    - {id: mig, run_time: 600, gpus: 0, mig_profile: 3g.40gb}
    - {id: share, run_time: 600, gpus: 0, gpu_milli: 250}
    - {id: one, run_time: 600, gpus: 1}
policies: [gang-fractional, gang-easy-trusting, topology-aware]
"""


def test_another_scenarios_report_says_its_deadlock_appendix_is_a_side_run(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text(SMALL)
    res = runner.invoke(app, ["simulate", str(p), "--out", str(tmp_path / "o"), "--no-progress"])
    assert res.exit_code == 0, res.output
    html = (tmp_path / "o" / "report.html").read_text()
    assert "Outcome in this run" not in html
    assert "not about this report's workload" in html


def test_mig_and_share_jobs_have_their_own_size_bucket_in_table_and_report(tmp_path):
    """Two fractional jobs (a 3g.40gb slice and a 250-milli share) ask 0 whole GPUs: bucket '<1'."""
    p = tmp_path / "s.yaml"
    p.write_text(SMALL)
    res = runner.invoke(app, ["simulate", str(p), "--out", str(tmp_path / "o"), "--no-progress"])
    assert res.exit_code == 0, res.output
    s = json.loads((tmp_path / "o" / "summary.json").read_text())["policies"]["gang-fractional"]
    assert s["wait_by_size"]["<1"] == {"jobs": 2, "submitted": 2, "wait_p50_s": 0.0, "wait_p95_s": 0.0}
    assert sum(b["submitted"] for b in s["wait_by_size"].values()) == s["jobs_submitted"] == 3
    # the row label folds inside its cell at the 80 columns a pipe gets (issue 29 §5), so its words are
    # read back across the cell's lines
    cells = " ".join(line.split("│")[1].strip() for line in res.output.splitlines() if line.startswith("│"))
    assert "<1 GPU (MIG or share)" in cells
    assert "&lt;1 GPU (MIG or share)" in (tmp_path / "o" / "report.html").read_text()


def test_policy_names_are_whole_when_output_is_not_a_terminal(tmp_path):
    """CliRunner's stdout is not a terminal: three long names must not be cut to 'gang-easy-tr…'."""
    p = tmp_path / "s.yaml"
    p.write_text(SMALL)
    res = runner.invoke(app, ["simulate", str(p), "--out", str(tmp_path / "o"), "--no-progress"])
    assert res.exit_code == 0, res.output
    header = next(line for line in res.output.splitlines() if "metric" in line)
    for name in ("gang-fractional", "gang-easy-trusting", "topology-aware"):
        assert name in header
    assert "…" not in res.output


def test_output_json_prints_the_summary_document_and_no_table(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text(SMALL)
    res = runner.invoke(app, ["simulate", str(p), "--out", str(tmp_path / "o"), "--no-progress",
                              "--output", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert set(doc["policies"]) == {"gang-fractional", "gang-easy-trusting", "topology-aware"}
    assert doc == json.loads((tmp_path / "o" / "summary.json").read_text())
