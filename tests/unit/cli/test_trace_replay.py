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


def test_a_traces_eligible_nodes_keep_its_jobs_on_those_nodes_in_a_simulation(tmp_path):
    """4 nodes × 8 GPUs (h100-g0-n0000 … n0003). Jobs a and b (8 GPUs each, at t=0) may use
    h100-g0-n0003 only, so b starts when a ends (t=100), on that node, though three nodes idle;
    c (any node) starts at once. The line round-trips through the reader and the writer."""
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text("fleet:\n  name: four\n  groups:\n"
                     "    - {nodes: 4, gpu: H100-80GB, gpus_per_node: 8, leaf_size: 4}\n")
    only = '"eligible_nodes": ["h100-g0-n0003"]'
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(
        f'{{"id": "{j}", "submit_time": 0, "run_time": 100, "pod_sets": [{{"replicas": 1, "gpus": 8}}]'
        f'{", " + only if j != "c" else ""}}}\n' for j in ("a", "b", "c")))
    jobs = read_jobs(trace)
    assert jobs[0].eligible_nodes == frozenset({"h100-g0-n0003"}) and jobs[2].eligible_nodes is None
    write_jobs(tmp_path / "again.jsonl", jobs)
    assert read_jobs(tmp_path / "again.jsonl") == jobs
    out = tmp_path / "out"
    r = runner.invoke(app, ["simulate", "--fleet", str(fleet), "--trace", str(trace), "--out", str(out),
                            "--no-progress", "-p", "gang-bestfit"])
    assert r.exit_code == 0, r.output
    events = map(json.loads, (out / "events-gang-bestfit.jsonl").read_text().splitlines())
    starts = {e["job"]: (e["t"], e["detail"]) for e in events if e["event"] == "start"}
    assert starts["a"] == (0.0, "h100-g0-n0003") and starts["b"] == (100.0, "h100-g0-n0003")
    assert starts["c"][0] == 0.0 and starts["c"][1] != "h100-g0-n0003"
