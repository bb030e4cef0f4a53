"""`gpufleet simulate --fleet F --trace T --kueue CONFIG`: a trace under a Kueue config, decided
by our policy and by Kueue's rules, side by side."""

import json
from pathlib import Path

from typer.testing import CliRunner

from gpufleet.cli.main import app
from gpufleet.testing.builders import job
from gpufleet.traces.jsonl import write_jobs

DATA = Path(__file__).resolve().parents[2] / "data" / "kueue"
runner = CliRunner()
FLEET = "fleet: {name: two, groups: [{nodes: 2, gpu: H100-80GB, gpus_per_node: 8, leaf_size: 2}]}\n"


def test_a_trace_replays_under_kueues_gpu_example_with_both_rule_sets(tmp_path):
    """Kueue's sample GPU queue (16 GPUs of tas-flavor = H100) on 2 × 8-GPU nodes. Jobs name the
    LocalQueue (default/tas-user-queue) or its bare name; three 8-GPU jobs of 1 h arrive at 0:
    two start at 0, the third at 3,600 under either rule set (quota 16 = the fleet)."""
    cfg, fleet, trace, out = (tmp_path / n for n in ("tenancy.yaml", "fleet.yaml", "t.jsonl", "out"))
    r = runner.invoke(app, ["kueue", "import", str(DATA / "v1beta2" / "tas-sample-gpu-queues.yaml"),
                            "--gpu-model", "tas-flavor=H100-80GB", "--out", str(cfg)])
    assert r.exit_code == 0, r.output
    fleet.write_text(FLEET)
    write_jobs(trace, [job(f"j{i}").tenant("default/tas-user-queue" if i else "tas-user-queue")
                       .gpus(8).runs(3600).build() for i in range(3)])
    r = runner.invoke(app, ["simulate", "--fleet", str(fleet), "--trace", str(trace), "--kueue", str(cfg),
                            "--out", str(out), "--no-progress"])
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["policies"]) == {"tenancy", "kueue"}
    for s in summary["policies"].values():
        assert s["jobs_finished"] == 3 and s["makespan_s"] == 7_200
    assert "Ours and Kueue, side by side" in (out / "report.html").read_text()


def test_a_trace_tenant_without_a_queue_gets_one_line(tmp_path):
    cfg, fleet, trace = (tmp_path / n for n in ("tenancy.yaml", "fleet.yaml", "t.jsonl"))
    runner.invoke(app, ["kueue", "import", str(DATA / "v1beta2" / "tas-sample-gpu-queues.yaml"),
                        "--gpu-model", "tas-flavor=H100-80GB", "--out", str(cfg)])
    fleet.write_text(FLEET)
    write_jobs(trace, [job("j0").tenant("nobody").gpus(8).build()])
    r = runner.invoke(app, ["simulate", "--fleet", str(fleet), "--trace", str(trace), "--kueue", str(cfg),
                            "--no-progress", "--out", str(tmp_path / "o")])
    assert r.exit_code == 2
    assert "job j0: tenant" in r.stderr and "'nobody'" in r.stderr
    r2 = runner.invoke(app, ["simulate", "tenancy", "--kueue", str(cfg)])
    assert r2.exit_code == 2 and "--kueue goes with --fleet and --trace" in r2.stderr


def test_simulate_takes_the_gpu_model_of_a_flavor_straight_from_kueues_manifests(tmp_path):
    """Kueue's sample names its flavor tas-flavor, no GPU model: without --gpu-model the replay
    stops with one line saying to pass it; with --gpu-model tas-flavor=H100-80GB the same three
    jobs replay as from an imported config (two at 0, one at 3,600: makespan 7,200). Given with
    an imported config, or without --kueue, --gpu-model is one line and exit 2."""
    fleet, trace, out = (tmp_path / n for n in ("fleet.yaml", "t.jsonl", "out"))
    fleet.write_text(FLEET)
    write_jobs(trace, [job(f"j{i}").tenant("tas-user-queue").gpus(8).runs(3600).build() for i in range(3)])
    sample = str(DATA / "v1beta2" / "tas-sample-gpu-queues.yaml")
    base = ["simulate", "--fleet", str(fleet), "--trace", str(trace), "--kueue", sample, "--no-progress"]
    r = runner.invoke(app, [*base, "--out", str(out / "a")])
    assert r.exit_code == 2 and "pass --gpu-model tas-flavor=MODEL" in r.stderr
    r = runner.invoke(app, [*base, "--gpu-model", "tas-flavor=H100-80GB", "--out", str(out / "b")])
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "b" / "summary.json").read_text())
    assert all(s["makespan_s"] == 7_200 for s in summary["policies"].values())
    bad = runner.invoke(app, [*base, "--gpu-model", "tas-flavor"])
    assert bad.exit_code == 2 and "FLAVOR=MODEL" in bad.stderr
    alone = runner.invoke(app, ["simulate", "tenancy", "--gpu-model", "x=H100-80GB"])
    assert alone.exit_code == 2 and "--gpu-model goes with --kueue" in alone.stderr
