"""`gpufleet slurm ...` on the captured files: what it writes, and one-line errors with exit code 2."""

from pathlib import Path

from typer.testing import CliRunner

from gpufleet.adapters.slurm.fleet_conf import read_fleet
from gpufleet.cli.main import app
from gpufleet.model.fleet_config import load_fleet

DATA = Path(__file__).parents[2] / "data" / "slurm"
runner = CliRunner()


def test_import_conf_then_export_conf_reproduces_the_cluster(tmp_path: Path) -> None:
    out = tmp_path / "fleet.yaml"
    res = runner.invoke(app, ["slurm", "import-conf", str(DATA / "slurm.conf"),
                              "--gres", str(DATA / "gres.conf"),
                              "--topology", str(DATA / "topology.conf"), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "16 nodes, 128 GPUs, 2 leaves" in res.output
    original = read_fleet(DATA / "slurm.conf", DATA / "gres.conf", [DATA / "topology.conf"]).fleet
    assert load_fleet(out) == original
    res = runner.invoke(app, ["slurm", "export-conf", str(out), "--out", str(tmp_path / "conf")])
    assert res.exit_code == 0, res.output
    conf = tmp_path / "conf"
    assert read_fleet(conf / "slurm.conf", conf / "gres.conf", [conf / "topology.conf"]).fleet == original


def test_export_conf_reads_the_compact_fleet_form_too(tmp_path: Path) -> None:
    (tmp_path / "f.yaml").write_text("fleet:\n  groups:\n    - {nodes: 36, gpu: GB200, gpus_per_node: 4, "
                                     "nvlink_domain_nodes: 18, leaf_size: 18}\n")
    res = runner.invoke(app, ["slurm", "export-conf", str(tmp_path / "f.yaml"), "--out", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    assert "BlockSizes=18" in (tmp_path / "c" / "topology-block.conf").read_text()


def test_import_sacct_lists_what_it_left_out(tmp_path: Path) -> None:
    res = runner.invoke(app, ["slurm", "import-sacct", str(DATA / "sacct.txt"),
                              "--out", str(tmp_path / "t.jsonl")])
    assert res.exit_code == 0, res.output
    assert "left out: job 6 (CANCELLED): cancelled before it started" in res.output
    assert len((tmp_path / "t.jsonl").read_text().splitlines()) == 15


def test_bad_input_ends_with_one_line_and_exit_code_2(tmp_path: Path) -> None:
    bad = tmp_path / "slurm.conf"
    bad.write_text("NodeName=n1 CPUs=8 RealMemory=1 Gres=gpu:tpu:8\n")
    res = runner.invoke(app, ["slurm", "import-conf", str(bad), "--out", str(tmp_path / "f.yaml")])
    assert res.exit_code == 2
    assert "Traceback" not in res.output
    assert "NodeName=n1: Gres: expected one GPU type known to the catalog" in res.output


def test_explain_without_slurm_says_so_in_one_line(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("SLURM_CONF", raising=False)
    res = runner.invoke(app, ["slurm", "explain", "1"])
    assert res.exit_code == 2
    assert len(res.output.strip().splitlines()) == 1
    assert "no slurm.conf there (pass --slurm-conf or set SLURM_CONF)" in res.output


def test_explain_reads_a_captured_queue_and_prints_both_start_estimates() -> None:
    res = runner.invoke(app, ["slurm", "explain", "17", "--from", str(DATA)])
    assert res.exit_code == 0, res.output
    assert "Slurm reason: Priority -> priority" in res.output
    assert "Slurm's planned start: 2026-11-30" in res.output
    assert "engine (slurm-like-conservative): UNSCHEDULABLE: reserved to start" in res.output
    assert "estimated start 2026-11-30" in res.output and "on gpu[009-010]" in res.output  # Slurm's plan


def test_explain_of_a_job_not_in_the_queue_says_where_to_look() -> None:
    res = runner.invoke(app, ["slurm", "explain", "99", "--from", str(DATA)])
    assert res.exit_code == 2
    assert "job 99: not in the queue" in res.output


def test_import_conf_reads_the_topology_conf_beside_slurm_conf_without_being_told(tmp_path: Path) -> None:
    """tests/data/slurm/topology.conf puts gpu[001-008] on leaf01 and gpu[009-016] on leaf02."""
    out = tmp_path / "fleet.yaml"
    res = runner.invoke(app, ["slurm", "import-conf", str(DATA / "slurm.conf"), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "2 leaves" in res.output
    assert [n.leaf for n in load_fleet(out).nodes] == ["leaf01"] * 8 + ["leaf02"] * 8


def _trace(tmp_path: Path) -> Path:
    fleet_file, trace = tmp_path / "fleet.yaml", tmp_path / "trace.jsonl"
    assert runner.invoke(app, ["slurm", "import-conf", str(DATA / "slurm.conf"), "--out", str(fleet_file)]
                         ).exit_code == 0
    assert runner.invoke(app, ["slurm", "import-sacct", str(DATA / "sacct.txt"), "--out", str(trace)]
                         ).exit_code == 0
    return trace


def test_simulate_replays_a_sacct_trace_with_slurms_policy_and_shows_what_slurm_did(tmp_path: Path) -> None:
    """The captured sacct has 15 jobs that ran; Slurm's own row ranks itself perfectly (tau 1.000)."""
    import json

    trace = _trace(tmp_path)
    res = runner.invoke(app, ["simulate", "--fleet", str(tmp_path / "fleet.yaml"), "--trace", str(trace),
                              "--policy", "slurm", "--slurm-conf", str(DATA / "slurm.conf"),
                              "--no-progress", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert list(summary["policies"]) == ["slurm"]
    assert summary["policies"]["slurm"]["jobs_finished"] == 15
    rows = {r["schedule"]: r for r in summary["slurm_actual"]}
    assert rows["Slurm (what it did)"]["jobs"] == 15 and rows["slurm"]["jobs"] == 15
    assert rows["Slurm (what it did)"]["Kendall tau vs Slurm"] == "1.000"
    assert 0.0 <= float(rows["slurm"]["Kendall tau vs Slurm"]) <= 1.0
    report = (tmp_path / "o" / "report.html").read_text()
    assert "What Slurm did" in report and "Slurm (what it did)" in report


def test_simulate_policy_slurm_without_a_conf_is_one_line_and_exit_2(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    res = runner.invoke(app, ["simulate", "--fleet", str(tmp_path / "fleet.yaml"), "--trace", str(trace),
                              "--policy", "slurm", "--no-progress", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2
    assert "--policy slurm: expected --slurm-conf FILE" in res.output
    assert "Traceback" not in res.output


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _conf_without_controller(tmp_path: Path) -> Path:
    text = (DATA / "slurm.conf").read_text()
    conf = tmp_path / "slurm.conf"
    conf.write_text(text + f"SlurmctldHost=nowhere(127.0.0.1)\nSlurmctldPort={_closed_port()}\n")
    for name in ("gres.conf", "topology.conf"):
        (tmp_path / name).write_text((DATA / name).read_text())
    return conf


def test_compare_without_a_controller_says_so_in_a_second_with_how_to_start_one(tmp_path: Path) -> None:
    import time

    conf = _conf_without_controller(tmp_path)
    started = time.monotonic()
    res = runner.invoke(app, ["slurm", "compare", "--slurm-conf", str(conf), "--out", str(tmp_path / "o")])
    assert time.monotonic() - started < 10
    assert res.exit_code == 2
    assert "no slurmctld answers (127.0.0.1:" in res.output
    assert "slurm-emulated-cluster.sh up" in res.output
    assert not (tmp_path / "o").exists()


def test_explain_without_a_slurm_conf_names_the_missing_file_and_the_test_cluster(tmp_path: Path) -> None:
    res = runner.invoke(app, ["slurm", "explain", "12", "--slurm-conf", str(tmp_path / "none.conf")])
    assert res.exit_code == 2
    assert "none.conf: no slurm.conf there" in res.output and "slurm-emulated-cluster.sh" in res.output


def test_explain_with_a_silent_controller_is_one_line_not_slurms_error(tmp_path: Path) -> None:
    conf = _conf_without_controller(tmp_path)
    res = runner.invoke(app, ["slurm", "explain", "12", "--slurm-conf", str(conf)])
    assert res.exit_code == 2
    assert "no slurmctld answers" in res.output and "Traceback" not in res.output


def test_binary_files_get_one_line_naming_the_file(tmp_path: Path) -> None:
    binary = tmp_path / "slurm.conf"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00\xd0\xff\xfe" * 10)
    for args in (["slurm", "import-conf", str(binary), "--out", str(tmp_path / "f.yaml")],
                 ["slurm", "import-sacct", str(binary), "--out", str(tmp_path / "t.jsonl")]):
        res = runner.invoke(app, args)
        assert res.exit_code == 2
        assert f"{binary}: byte 8: expected" in res.output and "binary data" in res.output


def test_compare_refuses_unbounded_sizes_before_asking_slurm(tmp_path: Path) -> None:
    for flag, value, message in (("--jobs", "100000000", "--jobs: expected 2 to 10000 jobs"),
                                 ("--timeout", "nan", "--timeout: expected seconds in (0, 86400]"),
                                 ("--timeout", "inf", "--timeout: expected seconds in (0, 86400]")):
        res = runner.invoke(app, ["slurm", "compare", "--slurm-conf", str(DATA / "slurm.conf"), flag, value,
                                  "--out", str(tmp_path / "o")])
        assert res.exit_code == 2 and message in res.output, res.output


def test_simulate_policy_slurm_with_a_missing_empty_or_folder_conf_is_one_line(tmp_path: Path) -> None:
    """A missing conf, a folder, a binary file and an empty (comments-only) file are each refused:
    the empty one used to replay silently with all-zero weights (plain FIFO) and exit 0."""
    trace = _trace(tmp_path)
    (tmp_path / "empty.conf").write_text("# nothing but a comment\n\n")
    (tmp_path / "bin.conf").write_bytes(b"\xff\xfe\x00\x01" * 64)
    cases = {tmp_path / "nope.conf": "cannot read file", tmp_path: "cannot read file",
             tmp_path / "bin.conf": "expected a UTF-8 text file",
             tmp_path / "empty.conf": "no Key=Value lines"}
    for conf, message in cases.items():
        res = runner.invoke(app, ["simulate", "--fleet", str(tmp_path / "fleet.yaml"), "--trace", str(trace),
                                  "--policy", "slurm", "--slurm-conf", str(conf), "--no-progress",
                                  "--out", str(tmp_path / "o")])
        assert res.exit_code == 2, (conf, res.output)
        assert message in res.output and len(res.output.strip().splitlines()) == 1, res.output


def test_an_out_path_that_cannot_be_written_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    """import-conf --out FOLDER raised IsADirectoryError with a traceback (exit 1); export-conf and
    simulate --out naming an existing file raised FileExistsError."""
    a_file = tmp_path / "taken.txt"
    a_file.write_text("x")
    fleet_file = tmp_path / "fleet.yaml"
    assert runner.invoke(app, ["slurm", "import-conf", str(DATA / "slurm.conf"), "--out", str(fleet_file)]
                         ).exit_code == 0
    for args, message in (
        (["slurm", "import-conf", str(DATA / "slurm.conf"), "--out", str(tmp_path)], "Is a directory"),
        (["slurm", "export-conf", str(fleet_file), "--out", str(a_file)], "is a file; expected a directory"),
    ):
        res = runner.invoke(app, args)
        assert res.exit_code == 2, res.output
        assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1, res.output
        assert message in res.output
