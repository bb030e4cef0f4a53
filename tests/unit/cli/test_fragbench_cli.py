import json

from typer.testing import CliRunner

from gpufleet.cli.main import app

runner = CliRunner()

NODES = "sn,cpu_milli,memory_mib,gpu,model\n" + "".join(f"n{i},64000,262144,2,T4\n" for i in range(4))
PODS = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n" + "".join(
    f"p{i},{2000 + 1000 * (i % 3)},1024,1,{(250, 500, 1000)[i % 3]}\n" for i in range(12))


def files(tmp_path, pods=PODS):
    (tmp_path / "nodes.csv").write_text(NODES)
    (tmp_path / "pods.csv").write_text(pods)
    return ["fragbench", "--nodes", str(tmp_path / "nodes.csv"), "--pods", str(tmp_path / "pods.csv")]


def test_fragbench_prints_a_table_and_ends_with_one_json_line_of_kpis(tmp_path):
    out = tmp_path / "out"
    res = runner.invoke(app, [*files(tmp_path), "--policy", "fgd", "--policy", "bestfit", "--seeds", "1-2",
                              "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output.strip().splitlines()[-1])
    assert doc["pods"] == "pods.csv"
    assert set(doc["results"]) == {"fgd", "bestfit"}
    assert set(doc["results"]["fgd"]) == {"unallocated_pct_at_100", "unallocated_std", "alloc_pct_at_130"}
    for name in ("curves.csv", "curves.json", "alloc_pct.png", "frag_pct.png", "frag_ratio_pct.png"):
        assert (out / name).stat().st_size > 0
    assert "fragbench" in res.output


def test_fragbench_runs_every_policy_when_none_is_named(tmp_path):
    res = runner.invoke(app, [*files(tmp_path), "--seeds", "5", "--no-progress"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output.strip().splitlines()[-1])
    assert {"random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd", "fgdbal", "fgdres"} \
        <= set(doc["results"])


def test_a_bad_pod_value_ends_with_exit_code_2_and_a_line_naming_file_row_and_field(tmp_path):
    bad = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,lots,1,1,500\n"
    res = runner.invoke(app, [*files(tmp_path, bad), "--no-progress"])
    assert res.exit_code == 2
    assert "pods.csv: row 2, field 'cpu_milli'" in res.output
    assert "Traceback" not in res.output


def test_a_missing_file_unknown_policy_or_bad_seeds_end_with_exit_code_2(tmp_path):
    args = files(tmp_path)
    for extra, words in ((["--policy", "nope"], "expected one of"), (["--seeds", "9-3"], "--seeds"),):
        res = runner.invoke(app, [*args, *extra, "--no-progress"])
        assert res.exit_code == 2 and words in res.output
    res = runner.invoke(app, ["fragbench", "--nodes", str(tmp_path / "none.csv"), "--pods", args[-1]])
    assert res.exit_code == 2 and "none.csv: file not found" in res.output
