"""Bad input never gives a traceback or an unbounded run: one line, exit 2, checked before work."""

import pytest
from typer.testing import CliRunner

from gpufleet.cli.main import app

runner = CliRunner()

FLEET = "fleet:\n  groups: [{nodes: 1, gpu: H100-80GB}]\n"


def run(*args):
    return runner.invoke(app, list(args))


def one_line_error(res, *needles):
    assert res.exit_code == 2, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1, res.output
    for n in needles:
        assert n in lines[0], lines[0]


def test_out_pointing_at_a_file_fails_before_the_simulation(tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("")
    res = run("simulate", "deadlock", "--out", str(blocker), "--no-progress")
    one_line_error(res, "--out", "is a file")


def test_out_under_a_file_cannot_be_created(tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("")
    res = run("simulate", "deadlock", "--out", str(blocker / "sub"), "--no-progress")
    one_line_error(res, "--out", "cannot write there")


@pytest.mark.parametrize("flag, value", [
    ("--mfu", "0"), ("--mfu", "nan"), ("--mfu", "-1"), ("--gpus-per-node", "0"),
    ("--leaf-oversubscription", "0"), ("--leaf-oversubscription", "inf"), ("--domain-nodes", "0"),
    ("--tp", "100000000"),
])
def test_topology_explain_rejects_values_that_would_divide_by_zero_or_never_end(flag, value):
    one_line_error(run("topology", "explain", flag, value), flag)


def test_topology_explain_bounds_the_world_size_and_names_the_limit():
    one_line_error(run("topology", "explain", "--tp", "8", "--dp", "4096", "--split", "8"), "16,384")


@pytest.mark.parametrize("body, field, limit", [
    ("workload: {generator: {days: .inf}}\n", "days", "finite"),
    ("workload: {generator: {days: 100000}}\n", "days", "365"),
    ("workload: {generator: {days: 1}}\ncycle_interval_s: .inf\n", "cycle_interval_s", "finite"),
    ("workload: {generator: {days: 1}}\ncycle_interval_s: 1e9\n", "cycle_interval_s", "86400"),
    ("workload: {jobs: [{id: a, run_time: 60, replicas: 1000000000}]}\n", "replicas", "100000"),
])
def test_unbounded_scenario_sizes_are_refused_with_the_limit(tmp_path, body, field, limit):
    p = tmp_path / "s.yaml"
    p.write_text(FLEET + body)
    one_line_error(run("simulate", str(p), "--out", str(tmp_path / "o"), "--no-progress"), field, limit)


def test_a_fleet_of_a_hundred_million_nodes_is_refused_with_the_limit(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("fleet:\n  groups: [{nodes: 100000000, gpu: H100}]\nworkload: {generator: {days: 1}}\n")
    one_line_error(run("simulate", str(p), "--no-progress"), "groups[0].nodes", "50000")


def test_a_generated_workload_too_large_to_simulate_is_refused_with_its_estimate(tmp_path):
    """50,000 nodes × 8 = 400,000 GPUs for 365 days draws far more than 2,000,000 jobs."""
    p = tmp_path / "s.yaml"
    p.write_text("fleet:\n  groups: [{nodes: 50000, gpu: H100}]\nworkload: {generator: {days: 365}}\n")
    one_line_error(run("simulate", str(p), "--out", str(tmp_path / "o"), "--no-progress"),
                   "workload.generator", "2,000,000")


def test_fragbench_bounds_the_number_of_seeds():
    one_line_error(run("fragbench", "--nodes", "x.csv", "--pods", "y.csv", "--seeds", "1-100000000"),
                   "--seeds", "1,000")


@pytest.mark.parametrize("content", [b"\xff\xfe\x00\x01binary", b"name: x\n\xe9t\xe9\n", b"a\x00b"])
def test_binary_or_non_utf8_scenarios_name_the_file(tmp_path, content):
    p = tmp_path / "weird.yaml"
    p.write_bytes(content)
    one_line_error(run("simulate", str(p), "--no-progress"), "weird.yaml")


def test_a_binary_trace_names_the_trace(tmp_path):
    fleet = tmp_path / "f.yaml"
    fleet.write_text(FLEET)
    trace = tmp_path / "t.jsonl"
    trace.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    one_line_error(run("simulate", "--fleet", str(fleet), "--trace", str(trace), "--no-progress"),
                   "t.jsonl")


def test_a_bad_fleet_file_is_named_as_itself(tmp_path):
    fleet = tmp_path / "f.yaml"
    fleet.write_text("fleet:\n  groups: [{nodes: -1, gpu: H100}]\n")
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"id": "a", "submit_time": 0, "run_time": 1, '
                     '"pod_sets": [{"replicas": 1, "gpus": 1}]}\n')
    one_line_error(run("simulate", "--fleet", str(fleet), "--trace", str(trace), "--no-progress"),
                   "f.yaml", "fleet.groups[0].nodes")


def test_an_unknown_flag_is_one_line():
    one_line_error(run("simulate", "--bogus"), "--bogus", "simulate --help")


def test_a_negative_seed_is_one_line():
    one_line_error(run("simulate", "--seed", "-1"), "--seed")


def test_an_error_line_keeps_its_brackets_as_text(capsys):
    """Rich read "[ray]" in "pip install 'gpufleet[ray]'" as markup and printed 'gpufleet'."""
    from gpufleet.cli.common import fail, warn

    fail("the sweep needs Ray: pip install 'gpufleet[ray]'; groups[0].gpu is wrong")
    warn("CEL needs pip install 'gpufleet[k8s]'")
    err = capsys.readouterr().err
    assert "pip install 'gpufleet[ray]'; groups[0].gpu is wrong" in err
    assert "pip install 'gpufleet[k8s]'" in err

