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


OPS = DATA.parent


def test_node_operator_status_names_the_blocker_and_the_bringup_arithmetic():
    res = runner.invoke(
        app,
        [
            "node",
            "operator-status",
            "--labels",
            str(OPS / "operator/labels-a100-mig.yaml"),
            "--pods",
            str(OPS / "operator/pods-toolkit-validation-stuck.txt"),
            "--nodes",
            "8",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "BLOCKS the chain" in res.output and "operator-validator" in res.output
    assert "ceil(8/1)×60 min = 480 min" in res.output


def test_node_operator_status_json_and_a_binary_labels_file(tmp_path):
    res = runner.invoke(
        app, ["node", "operator-status", "--labels", str(OPS / "operator/labels-nfd-t4.txt"), "-o", "json"]
    )
    assert json.loads(res.output)["gpu_node"] is True
    b = tmp_path / "bin"
    b.write_bytes(b"\x00\x01" * 50)
    res = runner.invoke(app, ["node", "operator-status", "--labels", str(b)])
    assert res.exit_code == 2 and "binary file" in res.output


def test_node_nccl_env_prints_exports_and_problems():
    res = runner.invoke(
        app,
        [
            "node",
            "nccl-env",
            "--topo",
            str(OPS / "nccl/topo-h100-9nic.txt"),
            "--ib",
            str(OPS / "bundles/ib-port-polling/ibstat.txt"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "export NCCL_IB_HCA='=NIC1,NIC2,NIC3,NIC4,NIC5,NIC6,NIC7,NIC8'" in res.output
    assert "mlx5_10 port 1 is Down / Polling" in res.output


def test_node_nccl_env_rejects_a_file_that_is_not_a_topology():
    res = runner.invoke(app, ["node", "nccl-env", "--topo", str(OPS / "bundles/ib-port-polling/ibstat.txt")])
    assert res.exit_code == 2 and "topo -m" in res.output
