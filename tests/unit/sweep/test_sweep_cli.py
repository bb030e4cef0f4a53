import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from gpufleet.cli.main import app
from gpufleet.sweep.cell import TIMING_COLUMNS
from gpufleet.sweep.run import run_sweep
from gpufleet.sweep.spec import load_sweep

runner = CliRunner()

SCENARIO = """
name: tiny
fleet:
  groups: [{nodes: 4, gpu: H100-80GB, gpus_per_node: 8, leaf_size: 2}]
workload:
  generator: {days: 0.1, offered_load: 0.9, max_gpus: 16}
"""

SPEC = """
name: t
scenarios: [tiny.yaml]
policies: [gang-bestfit, per-pod]
seeds: 2
parameters:
  offered_load: [0.6, 1.2]
"""


@pytest.fixture
def spec_file(tmp_path):
    (tmp_path / "tiny.yaml").write_text(SCENARIO)
    (tmp_path / "sweep.yaml").write_text(SPEC)
    return tmp_path / "sweep.yaml"


def without_timing(rows):
    return [{k: v for k, v in r.items() if k not in TIMING_COLUMNS} for r in rows]


def test_sweep_writes_one_parquet_row_per_cell_and_a_report(spec_file, tmp_path):
    """1 scenario × 2 loads × 2 policies × 2 seeds = 8 rows."""
    out = tmp_path / "out"
    res = runner.invoke(app, ["sweep", str(spec_file), "--out", str(out), "--workers", "1", "--no-progress"])
    assert res.exit_code == 0, res.output
    table = pq.read_table(out / "results.parquet")
    assert table.num_rows == 8
    assert table.column_names[:5] == ["cell_id", "scenario", "offered_load", "policy", "seed"]
    rows = table.to_pylist()
    assert {(r["offered_load"], r["policy"], r["seed"]) for r in rows} == {
        (load, p, s) for load in (0.6, 1.2) for p in ("gang-bestfit", "per-pod") for s in (1, 2)}
    assert all(r["jobs_submitted"] > 0 for r in rows)
    html = (out / "report.html").read_text()
    assert "p (Holm)" in html and "offered_load=1.2" in html


def test_a_rerun_reuses_every_finished_cell_and_runs_only_the_missing_ones(spec_file, tmp_path):
    out = tmp_path / "out"
    sw = load_sweep(spec_file)
    first = run_sweep(sw, out, workers=1, report=False)
    assert (first.ran, first.reused) == (8, 0)
    again = run_sweep(sw, out, workers=1, report=False)
    assert (again.ran, again.reused) == (0, 8)
    assert again.rows == first.rows
    (out / "cells" / f"{sw.cells[3].id}.json").unlink()
    (out / "cells" / f"{sw.cells[5].id}.json").write_text("{torn")
    third = run_sweep(sw, out, workers=1, report=False)
    assert (third.ran, third.reused) == (2, 6)
    assert without_timing(third.rows) == without_timing(first.rows)


def test_two_local_processes_give_the_rows_one_process_gives(spec_file, tmp_path):
    sw = load_sweep(spec_file)
    one = run_sweep(sw, tmp_path / "a", workers=1, report=False)
    two = run_sweep(sw, tmp_path / "b", workers=2, report=False)
    assert without_timing(two.rows) == without_timing(one.rows)


@pytest.mark.parametrize("content, says", [
    ("", "expected a mapping"),
    ("scenarios: [tiny.yaml]\npolicies: [gang-bestfit]\nseeds: -1\n", "seeds"),
    ("scenarios: [tiny.yaml]\npolicies: [gang-bestfit]\nparameters: {offered_load: [.nan]}\n", "NaN"),
    ("scenarios: [tiny.yaml]\npolicies: [gang-bestfit]\nseeds: 1e400\n", "seeds"),
    ("scenarios: [missing.yaml]\npolicies: [gang-bestfit]\n", "missing.yaml"),
    ("scenarios: [\n", "YAML syntax error"),
], ids=["an empty file", "negative seeds", "a NaN parameter", "a huge number", "a missing scenario",
        "broken YAML"])
def test_bad_spec_files_end_with_one_line_and_exit_2(tmp_path, content, says):
    (tmp_path / "tiny.yaml").write_text(SCENARIO)
    bad = tmp_path / "bad.yaml"
    bad.write_text(content)
    res = runner.invoke(app, ["sweep", str(bad), "--out", str(tmp_path / "o"), "--no-progress"])
    assert res.exit_code == 2
    assert says in res.output
    assert "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) <= 2  # one line, perhaps wrapped by the terminal


def test_a_binary_spec_file_is_refused_in_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(bytes(range(256)) * 4)
    res = runner.invoke(app, ["sweep", str(bad), "--no-progress"])
    assert res.exit_code == 2 and "Traceback" not in res.output


def test_zero_workers_is_refused(spec_file):
    res = runner.invoke(app, ["sweep", str(spec_file), "--workers", "0"])
    assert res.exit_code == 2 and "--workers" in res.output


def test_help_names_the_ray_option():
    res = runner.invoke(app, ["sweep", "--help"])
    assert res.exit_code == 0 and "--ray" in res.output


def test_a_trace_on_a_fleet_is_a_scenario_whose_seeds_vary_only_the_engine(tmp_path):
    """A trace is the workload: every seed replays the same jobs, so jobs_submitted is the trace's
    length (3) in every row."""
    from gpufleet.testing.builders import job
    from gpufleet.traces.jsonl import write_jobs

    (tmp_path / "fleet.yaml").write_text(
        "fleet:\n  groups: [{nodes: 2, gpu: H100-80GB, gpus_per_node: 8}]\n")
    write_jobs(tmp_path / "week.jsonl", [job("a").gpus(8).build(), job("b").gpus(8).gang(2).at(60).build(),
                                         job("c").gpus(4).at(120).build()])
    (tmp_path / "s.yaml").write_text("scenarios: [{fleet: fleet.yaml, trace: week.jsonl}]\n"
                                     "policies: [gang-bestfit, per-pod]\nseeds: 2\n")
    out = run_sweep(load_sweep(tmp_path / "s.yaml"), tmp_path / "out", workers=1, report=False)
    assert len(out.rows) == 4
    assert {r["scenario"] for r in out.rows} == {"week"}
    assert {r["jobs_submitted"] for r in out.rows} == {3}


def test_an_out_path_that_is_a_file_is_refused(spec_file, tmp_path):
    (tmp_path / "taken").write_text("x")
    res = runner.invoke(app, ["sweep", str(spec_file), "--out", str(tmp_path / "taken"), "--no-progress"])
    assert res.exit_code == 2 and "is a file" in res.output
