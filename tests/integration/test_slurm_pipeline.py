"""The pipelines the README documents, run end to end on the live test Slurm as a user would:
import-conf → import-sacct (JSONL and CSV) → simulate (no tenancy, the accounts' tenancy as a
scenario, Kueue manifests exported from it, --policy slurm) → explain, all through the CLI.

One workload for every pipeline (jobs submitted once, in a module-scoped fixture), so the test
costs one short batch of Slurm jobs (about 10 s) on the package's cluster.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.adapters.slurm.reader import SACCT_FIELDS, SlurmCli, SlurmReader
from gpufleet.cli.main import app

pytestmark = pytest.mark.slurm
runner = CliRunner()


def sbatch(slurm, *args: str) -> str:
    return slurm.run("sbatch", "--parsable", "-o", "/dev/null", *args).strip()


@pytest.fixture(scope="module")
def imported(slurm_cluster, tmp_path_factory) -> dict[str, Path | dict[str, str]]:
    """A blocker on 6 of the 8 nodes for 4 s, then a 4-node gang that must wait for it, and two
    1-GPU jobs that fit beside it: the history has a wait to explain. Files as the CLI wrote them."""
    slurm = slurm_cluster
    slurm.cancel_all_and_wait()
    d = tmp_path_factory.mktemp("pipeline")
    ids = {"blocker": sbatch(slurm, "-J", "blocker", "-A", "prod", "-N", "6", "--gres=gpu:8", "-t", "2",
                             "--wrap", "sleep 4")}
    slurm.wait_until(lambda: slurm.run("squeue", "-h", "-j", ids["blocker"], "-t", "R", "-o", "%i").strip())
    ids["gang"] = sbatch(slurm, "-J", "gang", "-A", "research", "-N", "4", "--gres=gpu:8", "-t", "2",
                         "--wrap", "sleep 2")
    for i in (1, 2):
        ids[f"small{i}"] = sbatch(slurm, "-J", f"small{i}", "-A", "research", "--gres=gpu:1", "-t", "1",
                                  "--wrap", "sleep 1")
    reader = SlurmReader(SlurmCli(slurm.slurm_conf))
    slurm.wait_until(lambda: len(reader.sacct(list(ids.values())).jobs) == len(ids), timeout=90)
    sacct = d / "sacct.txt"
    sacct.write_text(slurm.run("sacct", "-a", "-P", "-o", SACCT_FIELDS, "-j", ",".join(ids.values())))
    files = {"fleet": d / "fleet.yaml", "trace": d / "trace.jsonl", "csv": d / "trace.csv",
             "tenancy": d / "tenancy.yaml", "dir": d}
    etc = slurm.etc
    for argv in (["slurm", "import-conf", str(etc / "slurm.conf"), "--gres", str(etc / "gres.conf"),
                  "--topology", str(etc / "topology.conf"), "--out", str(files["fleet"])],
                 ["slurm", "import-sacct", str(sacct), "--out", str(files["trace"])],
                 ["slurm", "import-sacct", str(sacct), "--out", str(files["csv"])],
                 ["slurm", "import-tenancy", str(etc / "slurm.conf"), "--out", str(files["tenancy"])]):
        res = runner.invoke(app, argv, env=slurm.env)
        assert res.exit_code == 0, (argv[:2], res.output)
    return {**files, "ids": ids}


def simulate(*argv: str) -> dict:
    out = Path(argv[argv.index("--out") + 1])
    res = runner.invoke(app, ["simulate", *argv, "--no-progress"])
    assert res.exit_code == 0, res.output
    return json.loads((out / "summary.json").read_text())


def test_the_history_replays_on_the_imported_fleet_from_jsonl_and_csv_alike(imported) -> None:
    d = imported["dir"]
    by_jsonl = simulate("--fleet", str(imported["fleet"]), "--trace", str(imported["trace"]),
                        "--out", str(d / "plain"))
    by_csv = simulate("--fleet", str(imported["fleet"]), "--trace", str(imported["csv"]),
                      "--out", str(d / "csv"))
    assert by_jsonl["fleet_gpus"] == 64
    for s in by_jsonl["policies"].values():
        assert s["jobs_finished"] == s["jobs_submitted"] == 4
    strip = {"sim_wall_s"}
    assert [{k: v for k, v in s.items() if k not in strip} for s in by_jsonl["policies"].values()] == \
        [{k: v for k, v in s.items() if k not in strip} for s in by_csv["policies"].values()]
    assert len(by_csv["slurm_actual"]) == len(by_jsonl["slurm_actual"])


def test_the_history_replays_under_the_accounts_tenancy_and_under_kueue_manifests_made_from_it(imported):
    d = imported["dir"]
    scenario = d / "tenancy-scenario.yaml"
    scenario.write_text("name: live-tenancy\nfleet: {file: fleet.yaml}\nworkload: {trace: trace.jsonl}\n"
                        "policies: [tenancy, tenancy-easy]\n" + imported["tenancy"].read_text())
    for s in simulate(str(scenario), "--out", str(d / "tenancy"))["policies"].values():
        assert s["jobs_finished"] == 4
    exported = runner.invoke(app, ["kueue", "export", str(imported["tenancy"])])
    assert exported.exit_code == 0, exported.output
    (d / "kueue.yaml").write_text(exported.stdout)
    kueue = simulate("--fleet", str(imported["fleet"]), "--trace", str(imported["trace"]),
                     "--kueue", str(d / "kueue.yaml"), "--out", str(d / "kueue"))
    assert len(kueue["policies"]) == 2
    assert all(s["jobs_finished"] == 4 for s in kueue["policies"].values())


def test_the_history_replays_under_slurms_rules_and_explain_tells_the_gangs_wait(imported, slurm_cluster):
    """The gang (job ids['gang']) waited for the 6-node blocker in Slurm; under --policy slurm the
    replay makes it wait too (4 + 6 nodes > 8), and explain says for how long and why."""
    d = imported["dir"]
    out = d / "slurm-rules"
    summary = simulate("--fleet", str(imported["fleet"]), "--trace", str(imported["trace"]),
                       "--policy", "slurm", "--slurm-conf", str(slurm_cluster.etc / "slurm.conf"),
                       "--out", str(out))
    assert summary["policies"]["slurm"]["jobs_finished"] == 4
    gang = imported["ids"]["gang"]
    res = runner.invoke(app, ["explain", gang, "--run", str(out), "--output", "json"])
    assert res.exit_code == 0, res.output
    (story,) = json.loads(res.stdout)
    assert story["policy"] == "slurm" and story["waited_s"] > 0
    assert story["by_reason"], "a wait with no reason"
