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
    res = runner.invoke(app, ["slurm", "explain", "1"])
    assert res.exit_code == 2
    assert "squeue: command not found" in res.output


def test_explain_reads_a_captured_queue_and_prints_both_start_estimates() -> None:
    res = runner.invoke(app, ["slurm", "explain", "17", "--from", str(DATA)])
    assert res.exit_code == 0, res.output
    assert "Slurm reason: Priority -> priority" in res.output
    assert "Slurm's planned start: 2026-11-30" in res.output
    assert "our reading: 2026-11-30" in res.output


def test_explain_of_a_job_not_in_the_queue_says_where_to_look() -> None:
    res = runner.invoke(app, ["slurm", "explain", "99", "--from", str(DATA)])
    assert res.exit_code == 2
    assert "job 99: not in the queue" in res.output
