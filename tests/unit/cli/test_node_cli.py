"""`gpufleet node …` from the command line: readable help, text and JSON verdicts, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from gpufleet.cli.main import app

runner = CliRunner()
DATA = Path(__file__).resolve().parents[2] / "data" / "ops" / "bundles"


def test_node_diagnose_help_names_the_layers_and_the_bundle():
    res = runner.invoke(app, ["node", "diagnose", "--help"])
    assert res.exit_code == 0 and "root cause" in res.output


def test_node_diagnose_prints_layer_action_evidence_and_health_events():
    res = runner.invoke(app, ["node", "diagnose", str(DATA / "xid119-gsp-timeout")])
    assert res.exit_code == 0, res.output
    assert "gpu_xid" in res.output and "reset_gpu" in res.output
    assert "dmesg.txt:3:" in res.output and "drain → quarantine → repair → preflight" in res.output


def test_node_diagnose_json_is_machine_readable():
    res = runner.invoke(app, ["node", "diagnose", str(DATA / "toolkit-not-configured"), "--output", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["layer"] == "container_toolkit" and doc["action"] == "fix_runtime_config"
    assert doc["health_event"]["events"] == ["suspect", "repair", "preflight"]
    assert doc["sources"] == {"docker-run.txt": "docker-run", "nvidia-smi.txt": "nvidia-smi"}


def test_node_diagnose_of_a_missing_folder_is_one_line_and_exit_2(tmp_path):
    res = runner.invoke(app, ["node", "diagnose", str(tmp_path / "nope")])
    assert res.exit_code == 2
    assert res.output.strip().count("\n") == 0 and "no such bundle folder" in res.output


def test_node_diagnose_rejects_an_unknown_output_format():
    res = runner.invoke(app, ["node", "diagnose", str(DATA / "healthy-h100"), "--output", "yaml"])
    assert res.exit_code == 2 and "text" in res.output and "json" in res.output


def test_node_collect_writes_a_bundle_and_points_to_diagnose(tmp_path):
    res = runner.invoke(app, ["node", "collect", "--out", str(tmp_path / "b"), "--timeout", "5"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "b" / "MANIFEST.json").exists()
    assert "gpufleet node diagnose" in res.output


def test_node_collect_into_a_file_is_one_line_and_exit_2(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    res = runner.invoke(app, ["node", "collect", "--out", str(f)])
    assert res.exit_code == 2 and "is not a folder" in res.output
