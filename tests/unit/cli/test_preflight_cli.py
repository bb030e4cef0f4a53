"""`gpufleet preflight run|plan` from the command line."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gpufleet.cli.main import app

runner = CliRunner()


def test_preflight_run_json_lists_every_quick_check_and_passes_when_nothing_failed(tmp_path):
    res = runner.invoke(app, ["preflight", "run", "--quick", "--storage", str(tmp_path), "-o", "json"])
    doc = json.loads(res.output)
    assert [c["name"] for c in doc["checks"]] == [
        "nic",
        "nvlink",
        "storage",
        "dcgm_quick",
        "hbm",
        "gemm",
        "nccl",
    ]
    assert doc["checks"][2]["status"] == "pass"
    assert res.exit_code == (0 if doc["passed"] else 1)


def test_preflight_run_exits_1_when_a_check_fails(tmp_path):
    res = runner.invoke(app, ["preflight", "run", "--storage", str(tmp_path / "nope")])
    assert res.exit_code == 1 and "FAILED: storage" in res.output


def test_preflight_run_rejects_quick_and_long_together():
    res = runner.invoke(app, ["preflight", "run", "--quick", "--long"])
    assert res.exit_code == 2


def test_preflight_plan_prints_the_arithmetic_and_json_has_the_options():
    res = runner.invoke(app, ["preflight", "plan"])
    assert res.exit_code == 0 and "1 − (1 − 0.02)^64 = 0.726" in res.output
    doc = json.loads(runner.invoke(app, ["preflight", "plan", "-o", "json"]).output)
    assert [o["name"] for o in doc["options"]] == ["none", "two-minute gate", "long diagnostic"]


def test_preflight_plan_bad_rate_is_one_line():
    res = runner.invoke(app, ["preflight", "plan", "--bad-node-rate", "nan"])
    assert res.exit_code == 2 and "--bad-node-rate" in res.output


def test_a_gate_where_every_check_was_skipped_is_no_verdict_not_a_pass(monkeypatch):
    """On a machine with no GPU, no RDMA and no --storage every check is skipped. It used to print
    'gate passed' and JSON "passed": true — a node that measured nothing read as fit to join."""
    import gpufleet.cli.preflight as cli
    from gpufleet.ops.preflight import CheckResult

    skipped = [CheckResult(n, "skipped", "skipped: not here") for n in ("nic", "nvlink", "gemm")]
    monkeypatch.setattr(cli, "run_preflight", lambda **_: skipped)
    res = runner.invoke(app, ["preflight", "run"])
    assert res.exit_code == 0
    assert "no verdict: all 3 checks were skipped" in res.output and "gate passed" not in res.output
    doc = json.loads(runner.invoke(app, ["preflight", "run", "-o", "json"]).output)
    assert doc["passed"] is None and doc["checks_run"] == 0


def test_a_gate_with_one_check_run_and_passed_says_how_many_ran(tmp_path):
    res = runner.invoke(app, ["preflight", "run", "--storage", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "gate passed (" in res.output and "checks ran" in res.output


@pytest.mark.parametrize(("args", "message"), [
    (["--min-busbw", "nan"], "--min-busbw: expected a positive number below 1e6 (got nan)"),
    (["--fleet-tflops", "-1"], "--fleet-tflops: expected a positive number below 1e6 (got -1.0)"),
    (["--fleet-hbm", "inf"], "--fleet-hbm: expected a positive number below 1e6 (got inf)"),
    (["--min-nic-gbps", "1e400"], "--min-nic-gbps: expected a positive number"),
    (["--quick", "--long"], "--quick/--long: expected one of them, not both"),
])
def test_preflight_run_bad_flags_are_one_line_before_any_check_runs(args, message):
    """Before: a four-line Typer error box."""
    res = runner.invoke(app, ["preflight", "run", *args])
    assert res.exit_code == 2
    assert len(res.output.strip().splitlines()) == 1 and message in res.output, res.output
