"""`gpufleet node …` from the command line: readable help, text and JSON verdicts, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
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
    assert "dmesg.txt:3:" in res.output
    assert "healthy → suspect → draining → quarantined → diagnosing → repaired" in res.output


def test_node_diagnose_moves_the_node_along_the_health_machine_from_its_state_now():
    """A GPU that fell off the bus, found while the node was in pre-flight: the verdict (reboot)
    takes it out of service and through diagnosis to repaired; it must pass pre-flight again."""
    res = runner.invoke(app, ["node", "diagnose", str(DATA / "xid79-fallen-off-bus"), "--output", "json",
                              "--node-state", "preflight"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["health_path"] == [
        "preflight", "suspect", "draining", "quarantined", "diagnosing", "repaired"]


def test_node_diagnose_json_is_machine_readable():
    res = runner.invoke(app, ["node", "diagnose", str(DATA / "toolkit-not-configured"), "--output", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["layer"] == "container_toolkit" and doc["action"] == "fix_runtime_config"
    # the machine's own events (model/health.py), the state the walk ends in and that state's label
    assert doc["health"] == {
        "start": "healthy", "events": ["fault", "stopped", "drained", "diagnose", "fixed"],
        "state": "repaired", "fleet_label": "down",
        "why": "GPUs are fine; new containers cannot get them"}
    assert doc["health_path"][-1] == doc["health"]["state"]
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
    assert res.exit_code == 2 and "is a file; expected a directory" in res.output


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
    # the listing stops inside its last row: incomplete, so no operand is called missing
    assert "pod listing is incomplete" in res.output and "has no pod in the list" not in res.output


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
    assert "export NCCL_IB_HCA" not in res.output and "aliases" in res.output
    assert "mlx5_10 port 1 is Down / Polling" in res.output


def test_node_nccl_env_exports_device_names_from_a_nic_legend(tmp_path):
    """Legend lines in nvidia-smi's format (constructed: NICn → mlx5_n) turn the aliases into names."""
    legend = tmp_path / "legend.txt"
    legend.write_text("".join(f"  NIC{i}: mlx5_{i}\n" for i in range(9)))
    res = runner.invoke(app, ["node", "nccl-env", "--topo", str(OPS / "nccl/topo-h100-9nic.txt"),
                              "--nic-legend", str(legend)])
    assert res.exit_code == 0, res.output
    assert "export NCCL_IB_HCA='=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8'" in res.output
    legend.write_text("nothing here\n")
    res = runner.invoke(app, ["node", "nccl-env", "--topo", str(OPS / "nccl/topo-h100-9nic.txt"),
                              "--nic-legend", str(legend)])
    assert res.exit_code == 2 and "NICn: device" in res.output


def test_node_nccl_env_rejects_a_file_that_is_not_a_topology():
    res = runner.invoke(app, ["node", "nccl-env", "--topo", str(OPS / "bundles/ib-port-polling/ibstat.txt")])
    assert res.exit_code == 2 and "topo -m" in res.output


def _one_line_exit_2(args: list[str], message: str) -> None:
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1, res.output
    assert message in res.output, res.output


LABELS = str(OPS / "operator/labels-nfd-t4.txt")
TOPO = str(OPS / "nccl/topo-h100-9nic.txt")


@pytest.mark.parametrize(("flag", "value", "message"), [
    ("--nodes", "0", "--nodes: expected an integer from 1 to 100000 (got 0)"),
    ("--nodes", "1000000000000", "--nodes: expected an integer from 1 to 100000"),
    ("--engineers", "-1", "--engineers: expected an integer from 1 to 10000 (got -1)"),
    ("--minutes-per-node", "nan", "--minutes-per-node: expected minutes in (0, 100000) (got nan)"),
    ("--minutes-per-node", "-5", "--minutes-per-node: expected minutes"),
    ("--operator-minutes", "inf", "--operator-minutes: expected minutes in (0, 100000) (got inf)"),
    ("--operator-minutes", "1e308", "--operator-minutes: expected minutes"),
])
def test_operator_status_names_the_one_bad_numeric_flag(flag: str, value: str, message: str) -> None:
    """Before: a multi-line Typer box saying '--nodes and --engineers must be positive' or
    'minutes must be positive numbers' without naming which flag or value."""
    _one_line_exit_2(["node", "operator-status", "--labels", LABELS, flag, value], message)


def test_an_empty_file_a_folder_or_a_device_where_a_file_is_expected_is_one_line(tmp_path) -> None:
    """An empty labels file used to print a whole 'not a GPU node' chain and exit 0; a folder was
    reported as 'no such file'."""
    empty = tmp_path / "labels.txt"
    empty.write_text("\n  \n")
    _one_line_exit_2(["node", "operator-status", "--labels", str(empty)], "empty file")
    _one_line_exit_2(["node", "operator-status", "--labels", LABELS, "--pods", str(empty)], "empty file")
    _one_line_exit_2(["node", "operator-status", "--labels", str(tmp_path)], "is a folder, expected a file")
    _one_line_exit_2(["node", "nccl-env", "--topo", str(tmp_path)], "is a folder, expected a file")
    _one_line_exit_2(["node", "nccl-env", "--topo", "/dev/null"], "not a regular file")
    _one_line_exit_2(["node", "nccl-env", "--topo", TOPO, "--nccl-log", str(empty)], "empty file")


def test_nccl_env_refuses_an_ib_file_with_no_ports_instead_of_saying_nothing(tmp_path) -> None:
    """Before: a text file with no ibstat/sysfs port in it was read as 'no port problems'."""
    junk = tmp_path / "ibstat.txt"
    junk.write_text("mlx5 not here\n")
    _one_line_exit_2(["node", "nccl-env", "--topo", TOPO, "--ib", str(junk)], "no ports found")


@pytest.mark.parametrize(("value", "message"), [
    ("0", "--timeout: expected seconds in (0, 3600] (got 0.0)"),
    ("nan", "(got nan)"), ("-1", "(got -1.0)"), ("inf", "(got inf)"),
    ("1e308", "(got 1e+308)"),  # was an OverflowError traceback from subprocess
])
def test_node_collect_bad_timeout_is_one_line(tmp_path, value: str, message: str) -> None:
    _one_line_exit_2(["node", "collect", "--out", str(tmp_path / "b"), "--timeout", value], message)


def test_node_diagnose_of_a_fifo_is_one_line_and_exit_2(tmp_path):
    import os

    os.mkfifo(tmp_path / "pipe")
    res = runner.invoke(app, ["node", "diagnose", str(tmp_path / "pipe")])
    assert res.exit_code == 2 and res.output.strip().count("\n") == 0
    assert "is a FIFO, expected a bundle folder or a text file" in res.output


def test_node_diagnose_of_one_file_reads_it_by_its_content(tmp_path):
    """A kernel log saved under a name we do not know, given as the bundle itself."""
    (tmp_path / "log1").write_text((DATA / "xid74-nvlink" / "dmesg.txt").read_text())
    res = runner.invoke(app, ["node", "diagnose", str(tmp_path / "log1"), "-o", "json"])
    doc = json.loads(res.output)
    assert (doc["layer"], doc["sources"], doc["confident"]) == ("nvlink_fabric", {"log1": "dmesg"}, True)


def test_node_diagnose_says_incomplete_before_the_action():
    """healthy-h100's -q holds 1 of its 8 GPU blocks (test_bundle_integrity)."""
    res = runner.invoke(app, ["node", "diagnose", str(DATA / "healthy-h100")])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    warn = next(i for i, ln in enumerate(lines)
                if ln.startswith("warning   incomplete bundle: nvidia-smi-q.txt"))
    act = next(i for i, ln in enumerate(lines) if ln.startswith("action"))
    assert warn < act and "not confident" in lines[act]
    res = runner.invoke(app, ["node", "diagnose", str(DATA / "healthy-h100"), "-o", "json"])
    doc = json.loads(res.output)
    assert doc["confident"] is False
    assert doc["incomplete"][0].startswith("nvidia-smi-q.txt: 1 of 8 GPU blocks")
