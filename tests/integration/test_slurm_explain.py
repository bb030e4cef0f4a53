"""`explain` on a live queue: the reason Slurm gives, what holds the nodes, and when the job starts."""

import subprocess
import sys
from pathlib import Path

import pytest

from gpufleet.adapters.slurm.compare_run import read_cluster
from gpufleet.adapters.slurm.explain import explain
from gpufleet.adapters.slurm.reader import SlurmCli, SlurmReader
from gpufleet.adapters.slurm.reasons import WaitReason

pytestmark = pytest.mark.slurm


def sbatch(slurm, *args: str) -> str:
    return slurm.run("sbatch", "--parsable", "-o", "/dev/null", "-A", "research", *args).strip()


def test_a_blocked_gang_names_its_blockers_and_gets_slurms_and_our_start(slurm) -> None:
    blocker = sbatch(slurm, "-J", "blocker", "-N", "6", "--gres=gpu:8", "-t", "5", "--wrap", "sleep 120")
    slurm.wait_until(lambda: slurm.run("squeue", "-h", "-j", blocker, "-t", "R", "-o", "%i").strip())
    gang = sbatch(slurm, "-J", "gang", "-N", "4", "--gres=gpu:8", "-t", "10", "--wrap", "sleep 1")
    held = sbatch(slurm, "-J", "held", "-H", "--gres=gpu:1", "-t", "1", "--wrap", "true")
    reader = SlurmReader(SlurmCli(slurm.slurm_conf))

    def planned():
        snap = reader.snapshot()
        job = snap.job(gang)
        return snap if job and job.reason == "Resources" and job.start else None

    snap = slurm.wait_until(planned, timeout=30)
    fleet, conf = read_cluster(slurm.slurm_conf)
    got = explain(snap, gang, fleet, conf)
    assert got.reason is WaitReason.RESOURCES
    text = got.text()
    assert f"held by job {blocker} (blocker, research)" in text
    assert "needs 4 node(s) with 8 free GPUs, 2 such node(s) now" in text
    assert got.slurm_start is not None and got.our_start is not None
    assert abs(got.our_start - got.slurm_start) <= 120
    # the engine plans the gang on the nodes the blocker frees plus the two idle ones
    assert got.engine is not None and len(set(got.engine.planned_nodes)) == 4
    assert ": UNSCHEDULABLE: " in text and "reserved to start at" in text
    assert explain(snap, held).reason is WaitReason.HELD


def test_the_explain_command_prints_the_reason_for_a_held_job(slurm) -> None:
    held = sbatch(slurm, "-J", "held", "-H", "--gres=gpu:1", "-t", "1", "--wrap", "true")
    slurm.wait_until(lambda: "JobHeldUser" in slurm.run("squeue", "-h", "-j", held, "-o", "%r"))
    gpufleet = str(Path(sys.executable).parent / "gpufleet")
    done = subprocess.run([gpufleet, "slurm", "explain", held], env=slurm.env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "Slurm reason: JobHeldUser -> held" in done.stdout
    assert f"scontrol release {held}" in done.stdout
