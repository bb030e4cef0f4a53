"""Fuzzing the CLI's numeric flags and end-to-end runs: exit 0 with a result, or exit 2 with one
line; never a traceback (another exit code or an exception), never a hang (per-example deadline),
and no output file or ``--output json`` document holds a non-finite number."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from gpufleet.cli.main import app

from .strategies import FAST, NASTY_STRINGS, SLOW, strict_json_loads

runner = CliRunner()

number_text = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(2**70), 2**70).map(str),
    st.integers(-2, 20).map(str),
    st.sampled_from(NASTY_STRINGS + ["nan", "inf", "-inf", "1e308", "0", "0.0", "1", "8", "2.5", "4+4"]),
)


def result_or_one_line(res) -> None:
    assert res.exit_code in (0, 2), (res.exit_code, res.output, res.exception)
    if res.exception is not None:
        assert isinstance(res.exception, SystemExit), repr(res.exception)
    if res.exit_code == 2:
        lines = [line for line in res.output.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error:"), res.output


def strict_files(out: Path) -> None:
    for f in list(out.glob("*.json")) + list(out.glob("*.jsonl")):
        for line in ([f.read_text()] if f.suffix == ".json" else f.read_text().splitlines()):
            if line.strip():
                strict_json_loads(line)


TOPOLOGY_FLAGS = ["--tp", "--pp", "--dp", "--gpus-per-node", "--domain-nodes", "--leaf-oversubscription",
                  "--mfu", "--split"]


@FAST
@given(st.lists(st.tuples(st.sampled_from(TOPOLOGY_FLAGS), number_text), min_size=1, max_size=3))
def test_topology_explain_numeric_flags_give_a_result_or_one_line(flags):
    args = ["topology", "explain", "--output", "json"]
    for flag, value in flags:
        args += [flag, value]
    res = runner.invoke(app, args)
    result_or_one_line(res)
    if res.exit_code == 0:
        doc = strict_json_loads(res.stdout)
        assert doc["slowdown"] >= 0.99


@FAST
@given(st.sampled_from(["--seed", "--policy"]), number_text)
def test_simulate_flags_fail_before_running_or_run(tmp_path_factory, flag, value):
    """Only bad values are worth fuzzing here (a good one runs a whole simulation): a good --seed is
    checked by the end-to-end test below."""
    out = tmp_path_factory.mktemp("o")
    res = runner.invoke(app, ["simulate", "deadlock", flag, value, "--out", str(out / "x" / ".."),
                              "--no-progress", "--output", "json", "--policy", "no-such-policy"])
    result_or_one_line(res)
    assert res.exit_code == 2


@st.composite
def tiny_scenario(draw: st.DrawFn) -> dict:
    nodes = draw(st.integers(1, 3))
    gpn = draw(st.sampled_from([1, 4, 8]))
    jobs = [{"id": f"j{i}", "submit": draw(st.sampled_from([0, 60, 3600, 1e-3, 1e9])),
             "run_time": draw(st.sampled_from([1, 60, 3600, 1e-6, 1e8])),
             "replicas": draw(st.integers(1, 5)), "gpus": draw(st.integers(0, 9)),
             "cpus": draw(st.sampled_from([0, 1, 500])),
             "gpu_models": draw(st.sampled_from([[], ["H100"], ["A100-80GB"]]))}
            for i in range(draw(st.integers(1, 4)))]
    for j in jobs:
        if j["gpus"] == 0:
            j["gpu_milli"] = draw(st.sampled_from([100, 500, 1000]))
    return {"name": "fz", "fleet": {"groups": [{"nodes": nodes, "gpu": "H100", "gpus_per_node": gpn}]},
            "workload": {"jobs": jobs},
            "policies": draw(st.lists(st.sampled_from(["gang-easy", "per-pod", "gang-fractional"]),
                                      min_size=1, max_size=2, unique=True)),
            "cycle_interval_s": draw(st.sampled_from([0, 30, 86400]))}


@SLOW
@given(tiny_scenario())
def test_simulate_end_to_end_writes_only_strict_json(tmp_path_factory, doc):
    d = tmp_path_factory.mktemp("s")
    (d / "s.yaml").write_text(yaml.safe_dump(doc))
    res = runner.invoke(app, ["simulate", str(d / "s.yaml"), "--out", str(d / "out"), "--no-progress",
                              "--output", "json"])
    result_or_one_line(res)
    if res.exit_code == 0:
        doc_out = strict_json_loads(res.stdout)
        for s in doc_out["policies"].values():
            assert s["jobs_unschedulable"] <= s["jobs_pending_at_end"]
            if s["wait_jobs"] == 0:
                assert s["wait_p95_s"] is None
        strict_files(d / "out")


NODES = "sn,cpu_milli,memory_mib,gpu,model\nn1,64000,262144,{g1},V100\nn2,96000,393216,{g2},T4\n"
PODS = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"


@SLOW
@given(st.integers(0, 8), st.integers(0, 8),
       st.lists(st.tuples(st.integers(0, 200000), st.integers(0, 2), st.sampled_from([0, 1, 250, 1000]),
                          st.sampled_from(["", "V100", "T4|V100", "P100"])), min_size=1, max_size=6),
       st.sampled_from(["1", "1-2", "0,3", "7-3", "x", "1-100000000"]))
def test_fragbench_end_to_end_gives_a_result_or_one_line(tmp_path_factory, g1, g2, pods, seeds):
    d = tmp_path_factory.mktemp("f")
    (d / "n.csv").write_text(NODES.format(g1=g1, g2=g2))
    rows = "".join(f"p{i},{c},1024,{n},{m if n else 0},{s}\n" for i, (c, n, m, s) in enumerate(pods))
    (d / "p.csv").write_text(PODS + rows)
    res = runner.invoke(app, ["fragbench", "--nodes", str(d / "n.csv"), "--pods", str(d / "p.csv"),
                              "--policy", "fgd", "--seeds", seeds, "--no-progress", "--output", "json",
                              "--out", str(d / "out")])
    result_or_one_line(res)
    if res.exit_code == 0:
        strict_json_loads(res.stdout)
        strict_files(d / "out")


# ---- the new-user sweep of the whole command tree (issue 29): every command's help, a wrong flag,
# NaN, a huge number and a negative one in each numeric option, an empty file in each file option.
# A result (exit 0) or one line and exit 2; never a traceback. Commands that start servers or talk
# to a live cluster are asked for help and a wrong flag only.

def _tree():
    import typer
    import typer._click as click

    root = typer.main.get_command(app)
    ctx = click.Context(root)

    def walk(cmd, path):
        if hasattr(cmd, "list_commands"):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None:
                    yield from walk(sub, (*path, name))
        else:
            yield path, cmd
    return list(walk(root, ()))


COMMANDS = _tree()
LIVE = ("serve", "k8s scheduler")


def _annotation(p):
    return getattr(getattr(p, "type_descriptor", None), "annotation", None)


@pytest.mark.parametrize("path, cmd", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_answers_help_and_refuses_a_wrong_flag_in_one_line(path, cmd):
    res = runner.invoke(app, [*path, "--help"])
    assert res.exit_code == 0 and "Usage" in res.output and "Traceback" not in res.output
    result_or_one_line(res := runner.invoke(app, [*path, "--no-such-flag"]))
    assert res.exit_code == 2


@pytest.mark.timeout(300)
@pytest.mark.parametrize("path, cmd", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_numeric_option_refuses_nan_huge_and_negative_values_in_one_line(path, cmd, tmp_path):
    """Measured on every command of the tree (2026-12-02): each of these values is refused with one
    line; none is accepted and none crashes. A value a command would accept (a legitimately
    negative number) would show as exit 0 here, which result_or_one_line also allows."""
    name = " ".join(path)
    has_out = any("--out" in q.opts for q in cmd.params)
    for p in cmd.params:
        ann = _annotation(p)
        numeric = ann in (int, float, int | None, float | None)
        if type(p).__name__ != "TyperOption" or p.is_flag or not numeric:
            continue
        flag = next(o for o in p.opts if o.startswith("--"))
        huge = "1e308" if ann in (float, float | None) else "99999999999999999999"
        for value in ("nan", huge, "-1"):
            if name.startswith(LIVE) and value == "-1":
                continue   # a valid negative would start the server
            args = [*path, flag, value] + (["--out", str(tmp_path / "o")] if has_out else [])
            result_or_one_line(runner.invoke(app, args))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("path, cmd", [(p, c) for p, c in COMMANDS if not " ".join(p).startswith(LIVE)],
                         ids=[" ".join(p) for p, _ in COMMANDS if not " ".join(p).startswith(LIVE)])
def test_every_file_option_given_an_empty_file_gives_a_result_or_one_line(path, cmd, tmp_path):
    """Exit 1 is allowed for one command: ``preflight run --storage FILE`` fails its gate there (a
    right answer: the storage check cannot write into a file)."""
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    required = [q for q in cmd.params if type(q).__name__ == "TyperArgument" and q.required]
    files = (Path, Path | None, list[Path], list[Path] | None)
    for p in cmd.params:
        if _annotation(p) not in files or "out" in p.name or p.name == "data_dir":
            continue
        if type(p).__name__ == "TyperArgument":
            args = [*path] + [str(empty)] * max(1, len(required))
        else:
            args = [*path] + [str(empty)] * len(required) + [p.opts[0], str(empty)]
        res = runner.invoke(app, args)
        if res.exit_code == 1 and " ".join(path) == "preflight run":
            continue
        result_or_one_line(res)


@pytest.mark.parametrize("url", ["notaurl", "ftp://host:6820", "http://", "6820"])
def test_serve_refuses_a_slurmrestd_address_that_is_not_an_http_url_before_starting(url, tmp_path):
    """Before the check, ``--slurmrestd notaurl`` started the service and reported the source as
    unreachable for ever (found trying serve as a new user, 2026-12-02)."""
    res = runner.invoke(app, ["serve", "--source", "slurm", "--slurmrestd", url,
                              "--data-dir", str(tmp_path / "d"), "--port", "1"])
    assert res.exit_code == 2 and "--slurmrestd" in res.output and "http://host:6820" in res.output
    result_or_one_line(res)
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("flags", [["--kube-mode", "scheduler"], ["--source", "virtual", "--kubeconfig", "k"],
                                   ["--source", "slurm", "--speed", "10"],
                                   ["--source", "kubernetes", "--demo-load"],
                                   ["--source", "kubernetes", "--slurm-user", "bob"],
                                   ["--poll-s", "5"]])
def test_serve_refuses_a_flag_the_chosen_source_does_not_read(flags, tmp_path):
    """Before the check, ``serve --kube-mode scheduler`` (the virtual source) and ``--speed`` with
    a real source started without a word, the flag ignored (new-user review, 2026-12-03)."""
    res = runner.invoke(app, ["serve", *flags, "--data-dir", str(tmp_path / "d"), "--port", "1"])
    flag = next(f for f in flags if f.startswith("--") and f != "--source")
    assert res.exit_code == 2 and flag in res.output and "applies to --source" in res.output, res.output
    result_or_one_line(res)
    assert not (tmp_path / "d").exists()
