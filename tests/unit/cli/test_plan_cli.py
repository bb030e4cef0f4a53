"""`gpufleet plan …`: defaults run, JSON and HTML come out, bad input is one line with exit 2."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gpufleet.cli.main import app

runner = CliRunner()


def test_plan_capacity_runs_on_its_defaults_and_writes_json_and_html(tmp_path):
    res = runner.invoke(app, ["plan", "capacity", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "capacity.json").read_text())
    assert data["solution"]["cost"] < data["all_on_demand_cost"]
    assert "<img" in (tmp_path / "capacity.html").read_text()


def test_plan_capacity_json_output_is_parseable_and_names_the_solver():
    res = runner.invoke(app, ["plan", "capacity", "--output", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["solution"]["solver"].startswith("HiGHS")
    assert data["spot"]["largest_gang_nodes_on_spot"] >= 1


def test_plan_capacity_reads_a_csv_demand_curve(tmp_path):
    """Two hours: 10 GPUs then 0. With c = 0.6 the GPU used half the time is not committed."""
    csv = tmp_path / "d.csv"
    csv.write_text("time_s,gpus\n0,10\n3600,0\n")
    res = runner.invoke(app, ["plan", "capacity", "--demand", str(csv), "--no-spot", "--no-blocks",
                              "--output", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["demand"]["hours"] == 2
    assert data["solution"]["committed_gpus"] == 0
    assert data["solution"]["gpu_hours"]["on_demand"] == pytest.approx(10.0)


@pytest.mark.parametrize(("content", "needle"), [
    (b"", "empty file"),
    (b"\x00\x01\xff\xfe\x00binary", "binary"),
    (b"time_s,gpus\n0,nan\n", "line 2"),
    (b"time_s,gpus\n0,1e30\n", "line 2"),
    (b"when,how\n0,1\n", "header"),
    (b"time_s,gpus\n0,1\n9000000000,2\n", "5 years"),
], ids=["empty file", "binary file", "NaN", "huge number", "wrong columns", "a span too long to plan"])
def test_plan_capacity_rejects_a_bad_demand_file_with_one_line(tmp_path, content, needle):
    f = tmp_path / "bad.csv"
    f.write_bytes(content)
    res = runner.invoke(app, ["plan", "capacity", "--demand", str(f)])
    assert res.exit_code == 2
    assert needle in res.output
    assert "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) <= 2


@pytest.mark.parametrize(("yaml_text", "needle"), [
    ("capacity: {committed_ratio: -1}\n", "capacity.committed_ratio"),
    ("capacity: {od_price_per_gpu_hr: .nan}\n", "capacity.od_price_per_gpu_hr"),
    ("capacity: {typo: 1}\n", "unknown field"),
    ("- a list\n", "expected a YAML mapping"),
], ids=["negative ratio", "NaN price", "unknown key", "not a mapping"])
def test_plan_capacity_rejects_bad_inputs_naming_file_and_field(tmp_path, yaml_text, needle):
    f = tmp_path / "in.yaml"
    f.write_text(yaml_text)
    res = runner.invoke(app, ["plan", "capacity", "--inputs", str(f)])
    assert res.exit_code == 2
    assert needle in res.output
    assert str(f.name) in res.output


def test_plan_capacity_rejects_an_unknown_flag_with_exit_2():
    res = runner.invoke(app, ["plan", "capacity", "--bogus"])
    assert res.exit_code == 2


def test_plan_help_lists_every_planner():
    res = runner.invoke(app, ["plan", "--help"])
    assert res.exit_code == 0
    assert "capacity" in res.output


def test_plan_coldstart_runs_on_its_defaults_and_writes_its_page(tmp_path):
    res = runner.invoke(app, ["plan", "coldstart", "--arrivals", "20000", "--seeds", "2",
                              "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "coldstart.json").read_text())
    assert data["warm_pool"]["size_loss"] == 75
    assert "<img" in (tmp_path / "coldstart.html").read_text()


@pytest.mark.parametrize("args", [["--rate", "nan"], ["--rate", "-1"], ["--target", "2"],
                                  ["--rate", "1e308"]],
                         ids=["NaN rate", "negative rate", "probability above one", "huge rate"])
def test_plan_coldstart_rejects_bad_numbers_with_one_line(args):
    res = runner.invoke(app, ["plan", "coldstart", *args])
    assert res.exit_code == 2
    assert "Traceback" not in res.output


def test_plan_sandboxes_runs_on_its_defaults_and_writes_its_page(tmp_path):
    res = runner.invoke(app, ["plan", "sandboxes", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "sandboxes.json").read_text())
    assert data["sessions"] == 50000
    assert "<img" in (tmp_path / "sandboxes.html").read_text()


def test_plan_sandboxes_rejects_a_mix_class_no_tier_can_take(tmp_path):
    f = tmp_path / "in.yaml"
    f.write_text("sandboxes:\n"
                 "  mix:\n    - {name: vm, share: 1, memory_gib: 1, vcpus: 1, gpu: timeslice,"
                 " isolation: 3}\n")
    res = runner.invoke(app, ["plan", "sandboxes", "--inputs", str(f)])
    assert res.exit_code == 2
    assert "fits no tier" in res.output


def test_plan_sandboxes_rejects_zero_sessions():
    res = runner.invoke(app, ["plan", "sandboxes", "--sessions", "0"])
    assert res.exit_code == 2
    assert "sessions" in res.output


SERVING_TRACE = (__import__("pathlib").Path(__file__).resolve().parents[4]
                 / "shared/data/alibaba-serving-2025/disaggregated_DLRM_trace.csv")


@pytest.mark.slow  # eight simulations of a 3-day window: ~40 s on a loaded machine
@pytest.mark.skipif(not SERVING_TRACE.is_file(), reason="the Alibaba 2025 serving trace is not in ../shared")
def test_simulate_serving_replays_the_real_trace_and_writes_the_report(tmp_path):
    res = runner.invoke(app, ["simulate", "serving", "--trace", str(SERVING_TRACE), "--out", str(tmp_path),
                              "--no-progress"])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "summary.json").read_text())["serving"]
    names = [d["name"] for d in summary["designs"]]
    assert names == ["dedicated", "fully shared"]
    assert summary["designs"][0]["breaches"] == 0
    assert "Floor sweep" in (tmp_path / "report.html").read_text()


@pytest.mark.skipif(not SERVING_TRACE.is_file(), reason="the Alibaba 2025 serving trace is not in ../shared")
def test_plan_serving_on_half_a_day_of_the_real_trace_gives_json_and_a_page(tmp_path):
    """Dedicated never breaches (every replica ready in 15 + 90 = 105 s < 120 s); the sweep ends at
    the pool, where nothing is lent, so its last floor never breaches either."""
    res = runner.invoke(app, ["plan", "serving", "--trace", str(SERVING_TRACE), "--days", "0.5",
                              "--output", "json", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "serving.json").read_text())
    assert data["designs"][0]["breaches"] == 0
    assert data["sweep"][-1]["floor"] == data["pool_gpus"]
    assert data["sweep"][-1]["breaches"] == 0
    assert "Floor sweep" in (tmp_path / "serving.html").read_text()


@pytest.mark.parametrize(("args", "needle"), [
    (["--days", "nan"], "serving.days"), (["--days", "40"], "serving.days"),
    (["--trace", "/nonexistent.csv"], "no such file")],
    ids=["NaN days", "more days than the trace", "missing trace"])
def test_plan_serving_rejects_bad_input_with_one_line(args, needle):
    res = runner.invoke(app, ["plan", "serving", *args])
    assert res.exit_code == 2
    assert needle in res.output
    assert "Traceback" not in res.output


@pytest.mark.parametrize("name", ["capacity", "coldstart", "sandboxes", "serving", "spares", "upgrade"])
def test_every_planner_takes_out_and_its_help_names_the_files_it_writes(name):
    from gpufleet.cli.plan import PLAN_COMMANDS

    assert name in PLAN_COMMANDS
    res = runner.invoke(app, ["plan", name, "--help"], terminal_width=300)
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "--out" in text and f"DIR/{name}.json" in text and f"DIR/{name}.html" in text


def test_plan_upgrade_writes_its_json_and_html_with_out(tmp_path):
    res = runner.invoke(app, ["plan", "upgrade", "--nodes", "100", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "upgrade.json").read_text())["nodes"] == 100
    assert "Driver upgrade waves" in (tmp_path / "upgrade.html").read_text()
