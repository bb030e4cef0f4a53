"""No wrong number with exit 0: unschedulable jobs are reported, empty statistics say so, duplicate
ids and node names are errors, non-finite numbers never load and never reach a JSON file."""

import json
import math

import pytest
from typer.testing import CliRunner

from gpufleet.cli.main import app

runner = CliRunner()

FLEET = "fleet:\n  groups: [{nodes: 2, gpu: H100-80GB, gpus_per_node: 8}]\n"


def scenario(tmp_path, jobs: str, extra: str = "", fleet: str = FLEET):
    p = tmp_path / "s.yaml"
    p.write_text(f"name: s\n{fleet}workload:\n  jobs:\n{jobs}{extra}policies: [gang-easy]\n")
    return p


def simulate(tmp_path, path, *args):
    return runner.invoke(app, ["simulate", str(path), "--out", str(tmp_path / "out"), "--no-progress",
                               *args])


def strict_json(text: str):
    """json.loads with NaN/Infinity refused, as RFC 8259 parsers do."""
    def refuse(name):
        raise ValueError(f"non-finite {name}")
    return json.loads(text, parse_constant=refuse)


def test_jobs_that_can_never_run_are_counted_listed_and_explained(tmp_path):
    """A 4 × 8 = 32-GPU gang and an A100 job on a 16-GPU H100 fleet can never run; one 1-GPU job can."""
    path = scenario(tmp_path, "    - {id: big, run_time: 3600, replicas: 4, gpus: 8}\n"
                              "    - {id: a100, run_time: 3600, gpus: 1, gpu_models: [A100-80GB]}\n"
                              "    - {id: ok, run_time: 3600, gpus: 1}\n")
    res = simulate(tmp_path, path)
    assert res.exit_code == 0, res.output
    assert "2 of 3 jobs can never run" in res.output
    s = strict_json((tmp_path / "out" / "summary.json").read_text())["policies"]["gang-easy"]
    assert s["jobs_unschedulable"] == 2
    assert [u["id"] for u in s["unschedulable_jobs"]] == ["big", "a100"]
    assert "32 GPUs" in s["unschedulable_jobs"][0]["reason"]
    assert s["wait_jobs"] == 1
    html = (tmp_path / "out" / "report.html").read_text()
    assert "2 of 3 jobs can never run" in html and "needs GPU model A100-80GB" in html


def test_a_wait_percentile_over_no_jobs_is_null_not_zero(tmp_path):
    """Only an unschedulable job: nothing starts, so no wait statistic has a value."""
    path = scenario(tmp_path, "    - {id: big, run_time: 3600, replicas: 4, gpus: 8}\n")
    res = simulate(tmp_path, path)
    assert res.exit_code == 0, res.output
    s = strict_json((tmp_path / "out" / "summary.json").read_text())["policies"]["gang-easy"]
    assert s["wait_jobs"] == 0
    assert s["wait_p50_s"] is None and s["wait_p95_s"] is None
    assert all(b["wait_p95_s"] is None for b in s["wait_by_size"].values())
    row = res.output.split("queue wait p95")[1].split("\n")[0]
    assert "n/a" in row and "0 s" not in row


def test_duplicate_job_ids_in_a_scenario_are_an_error(tmp_path):
    path = scenario(tmp_path, "    - {id: a, run_time: 3600}\n    - {id: a, run_time: 60}\n")
    res = simulate(tmp_path, path)
    assert res.exit_code == 2
    assert "job id 'a' appears twice" in res.output and "jobs[0]" in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_two_fleet_groups_with_one_prefix_are_an_error(tmp_path):
    fleet = ("fleet:\n  groups:\n    - {nodes: 2, gpu: H100-80GB, prefix: gpu}\n"
             "    - {nodes: 2, gpu: H100-80GB, prefix: gpu}\n")
    path = scenario(tmp_path, "    - {id: a, run_time: 60}\n", fleet=fleet)
    res = simulate(tmp_path, path)
    assert res.exit_code == 2
    assert "groups[0] and groups[1]" in res.output and "prefix" in res.output


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", ".NaN", "1e400"])
def test_non_finite_numbers_in_a_scenario_are_rejected(tmp_path, value):
    path = scenario(tmp_path, f"    - {{id: a, run_time: {value}}}\n")
    res = simulate(tmp_path, path)
    assert res.exit_code == 2
    assert "run_time" in res.output and "Traceback" not in res.output


def test_non_finite_numbers_in_a_trace_are_rejected(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"id": "a", "submit_time": NaN, "run_time": 60, '
                     '"pod_sets": [{"replicas": 1, "gpus": 1}]}\n')
    fleet = tmp_path / "f.yaml"
    fleet.write_text(FLEET)
    res = runner.invoke(app, ["simulate", "--fleet", str(fleet), "--trace", str(trace), "--out",
                              str(tmp_path / "o"), "--no-progress"])
    assert res.exit_code == 2
    assert "t.jsonl:1" in res.output and "submit_time" in res.output


def test_a_fleet_of_zero_gpu_nodes_is_an_error(tmp_path):
    fleet = ("fleet:\n  nodes:\n    - {id: c1, gpu: H100-80GB, gpus: 0, cpus: 64, memory_gb: 256, zone: z,"
             " spine: s, leaf: l, nvlink_domain: c1}\n")
    path = scenario(tmp_path, "    - {id: a, run_time: 60, gpus: 0, cpus: 1}\n", fleet=fleet)
    res = simulate(tmp_path, path)
    assert res.exit_code == 2 and "no GPUs" in res.output


def test_a_quota_larger_than_the_fleet_warns(tmp_path):
    """nominal 10,000 H100 GPUs against a 16-GPU fleet never limits the tenant."""
    tenancy = ("tenancy:\n  tenants:\n    - {name: default, quotas: {H100-80GB: {nominal: 10000}}}\n")
    path = scenario(tmp_path, "    - {id: a, run_time: 60}\n", extra=tenancy)
    res = simulate(tmp_path, path, "--policy", "tenancy")
    assert res.exit_code == 0, res.output
    assert "warning" in res.output and "10,000 GPUs" in res.output and "16 H100-80GB" in res.output


def test_json_writer_turns_non_finite_into_null_and_refuses_nothing():
    from gpufleet.report.jsonsafe import dumps
    text = dumps({"a": math.nan, "b": [math.inf, -math.inf, 1.5], "c": {"d": float("nan")}})
    assert strict_json(text) == {"a": None, "b": [None, None, 1.5], "c": {"d": None}}


@pytest.mark.parametrize("field", ["half_life_h: .inf", "grace_s: .nan", "usage_weight: .nan"])
def test_non_finite_numbers_in_a_tenancy_section_are_rejected(tmp_path, field):
    tenancy = (f"tenancy:\n  {field}\n  tenants:\n"
               "    - {name: default, quotas: {H100-80GB: {nominal: 8}}}\n")
    path = scenario(tmp_path, "    - {id: a, run_time: 60}\n", extra=tenancy)
    res = simulate(tmp_path, path, "--policy", "tenancy")
    assert res.exit_code == 2 and field.split(":")[0] in res.output and "finite" in res.output
