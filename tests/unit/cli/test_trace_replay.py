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


def _import_captured(tmp_path: Path) -> tuple[Path, Path]:
    fleet, trace = tmp_path / "fleet.yaml", tmp_path / "trace.jsonl"
    for argv in (["slurm", "import-conf", str(DATA / "slurm.conf"), "--gres", str(DATA / "gres.conf"),
                  "--topology", str(DATA / "topology.conf"), "--out", str(fleet)],
                 ["slurm", "import-sacct", str(DATA / "sacct.txt"), "--out", str(trace)]):
        r = runner.invoke(app, argv)
        assert r.exit_code == 0, r.output
    return fleet, trace


def test_a_per_node_fleet_from_slurm_replays_under_a_tenancy_scenario(tmp_path):
    """import-conf writes the per-node fleet form (nodes:, no groups:); a scenario that points at it
    and adds the tenancy import-tenancy wrote used to crash reading the fleet's groups. Every job of
    the trace finishes under each tenancy policy."""
    fleet, trace = _import_captured(tmp_path)
    ten = tmp_path / "tenancy.yaml"
    r = runner.invoke(app, ["slurm", "import-tenancy", str(DATA / "slurm.conf"), "--assoc",
                            str(DATA / "sacctmgr-assoc.txt"), "--qos", str(DATA / "sacctmgr-qos.txt"),
                            "--cluster", "gfit", "--out", str(ten)])
    assert r.exit_code == 0, r.output
    scenario = tmp_path / "scn.yaml"
    scenario.write_text(f"name: slurm-tenancy\nfleet: {{file: {fleet.name}}}\n"
                        f"workload: {{trace: {trace.name}}}\npolicies: [tenancy, tenancy-easy]\n"
                        + ten.read_text())
    out = tmp_path / "out"
    r = runner.invoke(app, ["simulate", str(scenario), "--out", str(out), "--no-progress"])
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["policies"]) == {"tenancy", "tenancy-easy"}
    for s in summary["policies"].values():
        assert s["jobs_finished"] == len(read_jobs(trace))


def test_a_tenancy_quota_on_a_model_the_per_node_fleet_lacks_is_one_line(tmp_path):
    fleet, trace = _import_captured(tmp_path)
    scenario = tmp_path / "scn.yaml"
    scenario.write_text(f"name: x\nfleet: {{file: {fleet.name}}}\nworkload: {{trace: {trace.name}}}\n"
                        "policies: [tenancy]\ntenancy:\n  tenants:\n"
                        "    - {name: research, quotas: {A100-80GB: {nominal: 8}}}\n")
    r = runner.invoke(app, ["simulate", str(scenario), "--out", str(tmp_path / "o"), "--no-progress"])
    assert r.exit_code == 2
    assert "quota for A100-80GB, which the fleet does not have (H100-80GB)" in r.output


def test_a_per_node_fleet_replays_under_kueue_manifests_exported_from_slurm_accounts(tmp_path):
    """slurm import-tenancy → kueue export → simulate --kueue: the trace runs under our tenancy
    policy and Kueue's rules, every job finishing under both."""
    fleet, trace = _import_captured(tmp_path)
    ten, manifests, out = tmp_path / "t.yaml", tmp_path / "kueue.yaml", tmp_path / "out"
    r = runner.invoke(app, ["slurm", "import-tenancy", str(DATA / "slurm.conf"), "--assoc",
                            str(DATA / "sacctmgr-assoc.txt"), "--qos", str(DATA / "sacctmgr-qos.txt"),
                            "--cluster", "gfit", "--out", str(ten)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["kueue", "export", str(ten)])
    assert r.exit_code == 0, r.output
    manifests.write_text(r.stdout)
    r = runner.invoke(app, ["simulate", "--fleet", str(fleet), "--trace", str(trace), "--kueue",
                            str(manifests), "--out", str(out), "--no-progress"])
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["policies"]) == 2
    for s in summary["policies"].values():
        assert s["jobs_finished"] == len(read_jobs(trace))


def test_import_sacct_csv_replays_the_same_jobs_as_its_jsonl(tmp_path):
    """The CSV is recognised by its header (here under a .txt name), keeps labels (QOS, requested
    CPUs) and the record of what Slurm did, so simulate reads it as it reads the JSONL."""
    from gpufleet.traces.slurm_sacct import read_actual

    _, trace = _import_captured(tmp_path)
    csv_path = tmp_path / "trace.csv"
    r = runner.invoke(app, ["slurm", "import-sacct", str(DATA / "sacct.txt"), "--out", str(csv_path)])
    assert r.exit_code == 0, r.output
    assert r.stdout == "", "notes go to stderr"
    renamed = tmp_path / "trace.txt"
    renamed.write_text(csv_path.read_text())
    assert read_jobs(renamed) == read_jobs(trace)
    assert read_actual(renamed) == read_actual(trace) != {}


def test_a_csv_trace_with_a_job_split_over_two_rows_is_one_job_with_two_pod_sets(tmp_path):
    """A job of 3 nodes holding 16 GPUs is split 6 + 5 + 5 (an even split, the remainder on one pod
    set): two rows with one id, 1 × 6 and 2 × 5 GPUs, are one job of 6 + 2 × 5 = 16 GPUs."""
    from gpufleet.traces.sacct_csv import CSV_COLUMNS

    path = tmp_path / "t.csv"
    path.write_text(",".join(CSV_COLUMNS) + "\n"
                    "7,a,0,60,120,0,1,6,8,10,,COMPLETED,0,60,batch,{},\n"
                    "7,a,0,60,120,0,2,5,8,10,,COMPLETED,0,60,batch,{},\n")
    (j,) = read_jobs(path)
    assert [(ps.replicas, ps.request.gpus) for ps in j.pod_sets] == [(1, 6), (2, 5)]
    assert j.total_gpus == 16


@pytest.mark.parametrize(("row", "expected"), [
    ("1,a,0,60,,0,1,x,8,10,,COMPLETED,0,60,batch,{},",
     ":2: gpus_per_pod: expected a whole number, got 'x'"),
    ("1,a,nan,60,,0,1,1,8,10,,COMPLETED,0,60,batch,{},", ":2: submit_time: expected a finite number"),
    ("1,a,0,60,,0,1,1,8,10,,COMPLETED,0,60,batch,[1],", ":2: labels: expected a JSON object of strings"),
    ("1,a,0,60,,0,1,1", ":2: expected 17 comma-separated cells"),
    ("1,a,0,60,,0,1,200,8,10,,COMPLETED,0,60,batch,{},",
     ":2: pod_sets[0].gpus: Input should be less than or equal to 128"),
], ids=["a count that is not a number", "NaN", "labels that are not an object", "a cut row",
        "more GPUs per pod than the format allows"])
def test_a_bad_csv_trace_cell_is_named_by_file_line_and_column(tmp_path, row, expected):
    from gpufleet.traces.sacct_csv import CSV_COLUMNS

    path = tmp_path / "t.csv"
    path.write_text(",".join(CSV_COLUMNS) + "\n" + row + "\n")
    with pytest.raises(InputError) as err:
        read_jobs(path)
    assert str(path) in str(err.value) and expected in str(err.value)
