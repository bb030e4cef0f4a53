"""A real Slurm cluster's config and accounting (captured, tests/data/slurm) replayed in the
simulator: import-conf → fleet.yaml, import-sacct → trace.jsonl, simulate --fleet --trace."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli.main import app
from gpufleet.model.errors import InputError
from gpufleet.testing.builders import job
from gpufleet.traces.jsonl import read_jobs, write_jobs

DATA = Path(__file__).resolve().parents[2] / "data" / "slurm"
runner = CliRunner()


def test_a_captured_slurm_cluster_and_its_history_replay_in_the_simulator(tmp_path):
    fleet, trace, out = tmp_path / "fleet.yaml", tmp_path / "trace.jsonl", tmp_path / "out"
    r = runner.invoke(app, ["slurm", "import-conf", str(DATA / "slurm.conf"),
                            "--gres", str(DATA / "gres.conf"), "--topology", str(DATA / "topology.conf"),
                            "--out", str(fleet)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["slurm", "import-sacct", str(DATA / "sacct.txt"), "--out", str(trace)])
    assert r.exit_code == 0, r.output
    jobs = read_jobs(trace)
    r = runner.invoke(app, ["simulate", "--fleet", str(fleet), "--trace", str(trace), "--out", str(out),
                            "--no-progress"])
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["fleet_gpus"] == 128
    for s in summary["policies"].values():
        assert s["jobs_submitted"] == len(jobs) and s["jobs_finished"] == len(jobs)


def test_jobs_round_trip_through_json_lines(tmp_path):
    jobs = [job("a").tenant("x").gpus(8).gang(2).runs(60, estimate=120).build(),
            job("b").gpus(1).models("H100-80GB").at(5).runs(30).build()]
    write_jobs(tmp_path / "t.jsonl", jobs)
    assert read_jobs(tmp_path / "t.jsonl") == jobs


@pytest.mark.parametrize(("line", "expected"), [
    ('{"id": "a", "submit_time": 0, "run_time": 5}', ":1: pod_sets: missing required field"),
    ('{"id": "a", "submit_time": 0, "run_time": 5, "pod_sets": [{"replicas": 1, "gpus": 1, '
     '"gpu_models": ["H900"]}]}', ":1: pod_sets.gpu_models"),
    ("not json", ":1: not a JSON object"),
], ids=["a missing pod set", "an unknown GPU model", "a line that is not JSON"])
def test_a_bad_trace_line_is_named_by_file_and_line(tmp_path, line, expected):
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(InputError) as err:
        read_jobs(path)
    assert expected in str(err.value) and str(path) in str(err.value)
