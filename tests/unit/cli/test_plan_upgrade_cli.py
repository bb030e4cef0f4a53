"""`gpufleet plan upgrade`: wave sizes vs rollout time and capacity out, the simulated replay,
a fleet + trace, and bad input."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gpufleet.cli.main import app
from gpufleet.testing.builders import job
from gpufleet.traces.jsonl import write_jobs

runner = CliRunner()


def _json(*args: str) -> dict:
    res = runner.invoke(app, ["plan", "upgrade", *args, "--output", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_2000_nodes_in_waves_of_20_take_22_7_hours_and_every_plan_the_same_gpu_hours():
    """Defaults: 2,000 nodes, canary 20 (1%), 8 min per node, jobs saving every 30 min, drain ≤ 300 s.
    Waves of 20: canary (slowest drain of 20 ≈ 300 s + 480 s + 1 h soak = 4,380 s) + ⌈1,980/20⌉ = 99
    waves × (300 + 480 s) = 77,220 s: 81,600 s = 22.67 h. Every node is out once for E[min(X, 300)]
    = 300 − 300²/3,600 = 275 s + 480 s: 2,000 × 755 s × 8 GPUs = 3,355.6 GPU-h whatever the wave.
    The five default waves are 1%, 2.5%, 5%, 10%, 25% of 2,000."""
    out = _json()
    plans = out["plans"]
    assert [p["wave"] for p in plans] == [20, 50, 100, 200, 500]
    assert plans[0]["waves"] == 100
    assert plans[0]["rollout_hours"] == pytest.approx(81_600 / 3600, abs=0.01)
    assert all(p["capacity_gpu_hours_out"] == pytest.approx(2000 * 755 * 8 / 3600) for p in plans)
    assert [p["max_capacity_out_pct"] for p in plans] == [1.0, 2.5, 5.0, 10.0, 25.0]
    hours = [p["rollout_hours"] for p in plans]
    assert hours == sorted(hours, reverse=True)


def test_the_simulated_replay_agrees_with_the_plan_within_5_percent():
    """128 busy nodes, waves of 16, no validation failures: rollout = canary (2 nodes: drain
    300 − 300·(1/6)²/3 = 290.7 s + 480 + 3,600) + 8 waves × (≈300 + 480) and job GPU-hours lost =
    128 × (875 s of work + 480 s waiting for the node + 60 s restart) × 8 GPUs = 402.5 GPU-h;
    the simulator, with Llama 3 failures on the way, within 5% of both. Four seeds: the planned
    GPU-hours lost lie inside the simulated 95% interval (per job the loss spreads 556 s around
    875 s, so the mean of 128 jobs spreads ±49 s, 3.5% of the 1,415 s per job: one seed alone
    could read 7% off and still be right)."""
    plan = _json("--nodes", "128", "--wave", "16", "--fail-rate", "0", "--simulate",
                 "--seeds", "4")["plans"][0]
    assert plan["job_gpu_hours_lost"] == pytest.approx(128 * (875 + 480 + 60) * 8 / 3600)
    assert plan["sim_finished"] and not plan["sim_rolled_back"]
    assert plan["sim_rollout_hours"] == pytest.approx(plan["rollout_hours"], rel=0.05)
    assert plan["sim_job_gpu_hours_lost"] == pytest.approx(plan["job_gpu_hours_lost"], rel=0.05)
    assert plan["sim_job_gpu_hours_lost_ci"]["seeds"] == 4
    assert plan["sim_job_gpu_hours_lost_verdict"] == "agrees"


def test_a_fleet_and_a_trace_are_planned_for_their_nodes_and_replayed(tmp_path):
    fleet, trace = tmp_path / "fleet.yaml", tmp_path / "t.jsonl"
    fleet.write_text("fleet: {name: f, groups: [{nodes: 8, gpu: H100-80GB, gpus_per_node: 8, "
                     "leaf_size: 8}]}\n")
    write_jobs(trace, [job(f"j{i}").gpus(8).gang(2).runs(20_000).checkpoints(1800, 10, 60).at(60.0 * i)
                       .build() for i in range(4)])
    out = _json("--fleet", str(fleet), "--trace", str(trace), "--wave", "2", "--simulate")
    assert out["nodes"] == 8 and out["gpus_per_node"] == 8
    plan = out["plans"][0]
    assert plan["sim_finished"] and plan["sim_jobs_drained"] >= 4


def test_text_output_shows_a_row_per_wave_and_the_canary_odds():
    res = runner.invoke(app, ["plan", "upgrade", "--nodes", "400", "--wave", "4", "--wave", "100"],
                        env={"COLUMNS": "160"})
    assert res.exit_code == 0, res.output
    assert "P(a bad driver caught)" in res.output and "100 (25.0%)" in res.output


@pytest.mark.parametrize("args", [["--wave", "0"], ["--wave", "501"], ["--node-minutes", "nan"],
                                  ["--drain-timeout", "1e300"], ["--fail-rate", "2"], ["--nodes", "many"],
                                  ["--canary", "9999"], ["--fleet", "f.yaml"], ["--bogus"],
                                  ["--nodes", "5000", "--simulate"], ["--checkpoint-minutes", "inf"],
                                  ["--seed", "-1"], ["--seed", "1" + "0" * 30]])
def test_bad_input_gets_one_line_and_exit_2(args):
    res = runner.invoke(app, ["plan", "upgrade", *args])
    assert res.exit_code == 2
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) <= 3


def test_an_empty_fleet_file_is_named_in_one_line(tmp_path):
    (tmp_path / "f.yaml").write_text("")
    (tmp_path / "t.jsonl").write_text("")
    res = runner.invoke(app, ["plan", "upgrade", "--fleet", str(tmp_path / "f.yaml"), "--trace",
                              str(tmp_path / "t.jsonl")])
    assert res.exit_code == 2 and "f.yaml" in res.output


def test_help_names_every_knob():
    res = runner.invoke(app, ["plan", "upgrade", "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0
    for opt in ("--wave", "--canary", "--node-minutes", "--drain-timeout", "--simulate", "--output"):
        assert opt in res.output


def test_the_plan_says_which_images_may_land_on_upgraded_nodes():
    out = _json("--nodes", "100", "--from-driver", "550.54.14", "--to-driver", "580.65.06",
                "--image-cuda", "12.4", "--image-cuda", "13.0")
    where = {r["cuda"]: r["may_run_on"] for r in out["compatibility"]["images"]}
    assert where == {"12.4": "any node", "13.0": "upgraded nodes only"}


@pytest.mark.parametrize("args", [["--from-driver", "550", "--to-driver", "580"],
                                  ["--from-driver", "550", "--to-driver", "x", "--image-cuda", "12.4"],
                                  ["--from-driver", "550", "--to-driver", "580", "--image-cuda", "12.7"]])
def test_bad_compatibility_input_gets_one_line_and_exit_2(args):
    res = runner.invoke(app, ["plan", "upgrade", *args])
    assert res.exit_code == 2 and "Traceback" not in res.output


def _sim(*extra: str) -> dict:
    base = ("--nodes", "16", "--wave", "4", "--canary", "0", "--fail-rate", "0", "--simulate")
    return {k: v for k, v in _json(*base, *extra)["plans"][0].items() if k.startswith("sim_")}


def test_the_replay_with_images_that_run_on_both_drivers_is_the_replay_without_images():
    """CUDA 12.4 is native on 550.54.14 (its minimum) and on 580.65.06: no job is restricted, so
    every simulated figure is the one of the replay without drivers, and no job waits at the end."""
    plain = _sim()
    assert plain["sim_jobs_waiting_at_end"] == 0
    assert _sim("--from-driver", "550.54.14", "--to-driver", "580.65.06", "--image-cuda", "12.4") == plain


def test_the_replay_of_a_downgrade_leaves_the_jobs_whose_image_needs_the_old_driver_waiting():
    """580.65.06 → 550.54.14 over 16 busy nodes, jobs alternating CUDA 12.4 and 13.0 images: 13.0
    is "no" on 550 (below the 13.x floor 580), so each 13.0 job drained by its wave restarts only on
    nodes still on 580, and once all 16 run 550 none can: the 8 CUDA 13.0 jobs wait at the end."""
    out = _sim("--from-driver", "580.65.06", "--to-driver", "550.54.14", "--image-cuda", "12.4",
               "--image-cuda", "13.0")
    assert out["sim_jobs_waiting_at_end"] == 8
    assert out["sim_finished"]


def test_the_plan_weighs_each_images_nccl_build_and_the_nodes_kernel():
    """CUDA 12.4 with NCCL 2.27.3+cuda12.9 on 550.54.14: the image is native (12.4's minimum), the
    NCCL build (12.9 wants 575.51.03) only minor-compat, so the image is minor-compat there and runs
    on any node; a bare NCCL 2.30.7 in a 13.0 image is its +cuda13.3 build: upgraded nodes only.
    Kernel 5.15 is above 580's module floor (4.15); kernel 4.4 is not: every node would fail."""
    base = ("--nodes", "100", "--from-driver", "550.54.14", "--to-driver", "580.65.06",
            "--image-cuda", "12.4", "--image-cuda", "13.0",
            "--image-nccl", "2.27.3+cuda12.9", "--image-nccl", "2.30.7")
    cm = _json(*base, "--kernel", "5.15.0-91-generic")["compatibility"]
    rows = {r["cuda"]: (r["nccl"], r["old_driver"], r["may_run_on"]) for r in cm["images"]}
    assert rows == {"12.4": ("2.27.3+cuda12.9", "minor-compat", "any node"),
                    "13.0": ("2.30.7", "no", "upgraded nodes only")}
    assert cm["kernel"]["new_driver_ok"] is True
    old = _json(*base, "--kernel", "4.4.0", "--canary", "0", "--wave", "10")
    kr = old["compatibility"]["kernel"]
    assert kr["new_driver_ok"] is False and "4.15" in kr["why"]
    assert old["plans"][0]["failed_nodes"] == 100  # the module loads nowhere: every node fails validation


@pytest.mark.parametrize(("extra", "says"), [
    (["--image-nccl", "x"], "--image-nccl"),
    (["--image-nccl", "2.27.3+cuda13.0"], "--image-nccl"),
    (["--image-nccl", "2.27.3", "--image-nccl", "2.27.3"], "one per --image-cuda"),
    (["--kernel", "nan"], "--kernel"),
    (["--kernel", "1e999"], "--kernel"),
    (["--kernel", "3.2.0"], "--kernel"),
])
def test_a_bad_nccl_or_kernel_gets_one_line_naming_the_option_and_exit_2(extra, says):
    res = runner.invoke(app, ["plan", "upgrade", "--from-driver", "550.54.14", "--to-driver", "580.65.06",
                              "--image-cuda", "12.4", *extra])
    assert res.exit_code == 2 and says in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_a_kernel_without_drivers_is_refused():
    res = runner.invoke(app, ["plan", "upgrade", "--kernel", "5.15.0"])
    assert res.exit_code == 2 and "--from-driver" in res.output
