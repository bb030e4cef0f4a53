"""A run owns its --out directory (cli/outdir.py): it clears what it wrote last time, never what it
did not write, and `explain` reads only this run's event logs."""

import json
from pathlib import Path

from typer.testing import CliRunner

from gpufleet.cli.main import app
from gpufleet.cli.outdir import MARKER

runner = CliRunner()


def simulate(out: Path, *policies: str):
    argv = ["simulate", "deadlock", "--out", str(out), "--no-progress"]
    for p in policies:
        argv += ["--policy", p]
    return runner.invoke(app, argv)


def test_a_rerun_in_the_same_directory_leaves_no_stale_event_log_for_explain(tmp_path):
    out = tmp_path / "run"
    assert simulate(out, "gang-bestfit", "per-pod").exit_code == 0
    assert (out / "events-per-pod.jsonl").exists()
    assert simulate(out, "gang-bestfit").exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "events-gang-bestfit.jsonl", "report.html",
                                                     "summary.json"]
    res = runner.invoke(app, ["explain", "train-b", "--run", str(out), "--output", "json"])
    assert res.exit_code == 0, res.output
    assert [s["policy"] for s in json.loads(res.stdout)] == ["gang-bestfit"]


def test_a_directory_holding_files_gpufleet_did_not_write_is_refused_and_left_untouched(tmp_path):
    (tmp_path / "thesis.tex").write_text("mine")
    (tmp_path / "summary.json").write_text("{}")
    res = simulate(tmp_path, "gang-bestfit")
    assert res.exit_code == 2
    assert "holds files gpufleet did not write (summary.json, thesis.tex)" in res.output
    assert len(res.output.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json", "thesis.tex"]
    assert (tmp_path / "summary.json").read_text() == "{}"


def test_a_directory_holding_another_commands_output_is_refused(tmp_path):
    assert runner.invoke(app, ["plan", "capacity", "--out", str(tmp_path)]).exit_code == 0
    before = sorted(p.name for p in tmp_path.iterdir())
    res = simulate(tmp_path, "gang-bestfit")
    assert res.exit_code == 2
    assert "holds the output of `gpufleet plan capacity`" in res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_files_added_beside_a_run_survive_the_next_run(tmp_path):
    assert simulate(tmp_path, "gang-bestfit", "per-pod").exit_code == 0
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("keep")
    assert simulate(tmp_path, "gang-bestfit").exit_code == 0
    assert (tmp_path / "notes" / "mine.txt").read_text() == "keep"
    assert not (tmp_path / "events-per-pod.jsonl").exists()


def test_a_marker_never_makes_gpufleet_delete_outside_its_directory(tmp_path):
    """A marker naming ../outside.txt or a symlink to a file elsewhere (edited by hand, or a
    hostile folder) deletes neither: only plain files inside the directory are removed."""
    out, outside = tmp_path / "run", tmp_path / "outside.txt"
    outside.write_text("keep")
    assert simulate(out, "gang-bestfit").exit_code == 0
    (out / "link.txt").symlink_to(outside)
    marker = json.loads((out / MARKER).read_text())
    marker["files"] += ["../outside.txt", "link.txt"]
    (out / MARKER).write_text(json.dumps(marker))
    assert simulate(out, "gang-bestfit").exit_code == 0
    assert outside.read_text() == "keep"


def test_a_run_that_did_not_finish_is_cleared_and_explain_says_so_meanwhile(tmp_path):
    assert simulate(tmp_path, "gang-bestfit").exit_code == 0
    (tmp_path / MARKER).write_text(json.dumps({"command": "simulate", "finished": False, "files": []}))
    res = runner.invoke(app, ["explain", "train-b", "--run", str(tmp_path)])
    assert res.exit_code == 2 and "did not finish" in res.output
    res = simulate(tmp_path, "per-pod")
    assert res.exit_code == 0, res.output
    assert not (tmp_path / "events-gang-bestfit.jsonl").exists()
    assert json.loads((tmp_path / MARKER).read_text())["finished"] is True


def test_simulate_hybrid_writes_its_report_to_out_and_json_alone_on_stdout(tmp_path):
    res = runner.invoke(app, ["simulate", "hybrid", "--nodes", "8", "--days", "0.25", "--out", str(tmp_path),
                              "-o", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert json.loads((tmp_path / "summary.json").read_text()) == doc
    assert set(doc["arms"]) <= {"static", "dynamic", "all-k8s"} and "all-k8s" in doc["arms"]
    assert "Arms side by side" in (tmp_path / "report.html").read_text()
