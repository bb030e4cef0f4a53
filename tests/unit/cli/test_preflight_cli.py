"""`gpufleet preflight run|plan` from the command line."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gpufleet.cli.main import app

runner = CliRunner()


def test_preflight_run_json_lists_every_quick_check_and_passes_only_when_every_check_ran(tmp_path):
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
    skipped = [c["name"] for c in doc["checks"] if c["status"] == "skipped"]
    assert doc["not_run"] == skipped
    assert doc["passed"] is (not skipped and not doc["failed"])
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


def fake_checks(monkeypatch, *results):
    import gpufleet.cli.preflight as cli
    from gpufleet.ops.preflight import CheckResult

    checks = [CheckResult(n, status, detail) for n, status, detail in results]
    monkeypatch.setattr(cli, "run_preflight", lambda **_: checks)


def test_a_gate_where_a_check_could_not_run_fails_instead_of_passing(monkeypatch):
    """On a machine with no GPU and no RDMA only storage runs. It used to exit 0 with 'gate passed
    (1 of 7 checks ran)': a node that measured almost nothing read as fit to join."""
    fake_checks(monkeypatch, ("nic", "skipped", "skipped: no RDMA device"),
                ("nvlink", "skipped", "skipped: no NVIDIA driver"), ("storage", "pass", "writable"))
    res = runner.invoke(app, ["preflight", "run"], env={"COLUMNS": "300"})
    assert res.exit_code == 1
    assert "gate FAILED: NOT RUN" in res.output and "nic (no RDMA device)" in res.output
    assert "gate passed" not in res.output
    doc = json.loads(runner.invoke(app, ["preflight", "run", "-o", "json"]).output)
    assert doc["passed"] is False and doc["not_run"] == ["nic", "nvlink"] and doc["checks_run"] == 1


def test_a_waived_check_that_cannot_run_lets_the_gate_pass_and_is_recorded(monkeypatch):
    fake_checks(monkeypatch, ("nvlink", "skipped", "skipped: no NVLink reported on this node"),
                ("storage", "pass", "writable"))
    res = runner.invoke(app, ["preflight", "run", "--waive", "nvlink", "-o", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["passed"] is True and doc["waived"] == ["nvlink"]
    assert [c["waived"] for c in doc["checks"]] == [True, False]


def test_a_waiver_never_excuses_a_check_that_ran_and_failed(monkeypatch):
    fake_checks(monkeypatch, ("storage", "fail", "not writable"), ("nic", "pass", "ok"))
    res = runner.invoke(app, ["preflight", "run", "--waive", "storage"], env={"COLUMNS": "300"})
    assert res.exit_code == 1
    assert "FAILED: storage" in res.output and "unused waiver(s): storage" in res.output


def test_a_gate_where_every_check_was_waived_measured_nothing_and_does_not_pass(monkeypatch):
    fake_checks(monkeypatch, ("nic", "skipped", "skipped: x"), ("nvlink", "skipped", "skipped: y"))
    res = runner.invoke(app, ["preflight", "run", "--waive", "nic", "--waive", "nvlink"],
                        env={"COLUMNS": "300"})
    assert res.exit_code == 1 and "none of the 2 checks ran" in res.output


def test_waiving_a_check_the_gate_does_not_have_is_one_line_and_exit_2():
    res = runner.invoke(app, ["preflight", "run", "--waive", "dcgm_long"])
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1
    assert "'dcgm_long' is not a check of this gate" in res.output


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
