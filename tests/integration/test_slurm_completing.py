"""A gang whose node dies: after Slurm gives up on the node it lists the job COMPLETING for a
while (slurmctld waits to clean up the dead node's part); `explain` must say the job is ending,
not that it "started" and runs.

Set GPUFLEET_CAPTURE_DIR (and GPUFLEET_CAPTURE_PARTITION_DIR) to keep the outputs the reader
takes; the fixtures in tests/data/slurm/completing/ and partition/ come from
tests/data/slurm/capture-completing.sh, which runs the same steps on a cluster of its own.
"""

import os
import time
from pathlib import Path

import pytest

from gpufleet.adapters.slurm.explain import explain
from gpufleet.adapters.slurm.queue import QueueSnapshot
from gpufleet.adapters.slurm.reader import START_FORMAT, SlurmCli, build_snapshot

pytestmark = pytest.mark.slurm
VICTIM = "gpu008"


def _capture(cli: SlurmCli, save_to_env: str) -> QueueSnapshot:
    """What ``slurm explain`` reads, taken now from the running cluster; saved under the folder
    named by the environment variable ``save_to_env`` when it is set (how the fixtures were made)."""
    taken_at = time.time()
    out = {"squeue.json": cli(["squeue", "--json"]),
           "scontrol-nodes.txt": cli(["scontrol", "show", "node", "-o"]),
           "squeue-start.txt": cli(["squeue", "--start", "-h", "-o", START_FORMAT]),
           "scontrol-jobs.txt": cli(["scontrol", "show", "job", "-o"]),
           "captured-at.txt": f"{taken_at:.0f}\n"}
    if os.environ.get(save_to_env):
        for name, text in out.items():
            Path(os.environ[save_to_env], name).write_text(text)
    return build_snapshot(out["squeue.json"], out["scontrol-nodes.txt"], out["squeue-start.txt"],
                          out["scontrol-jobs.txt"], taken_at)


def test_a_gang_left_completing_by_a_dead_node_is_explained_as_ending(slurm) -> None:
    gang = slurm.run("sbatch", "--parsable", "-o", "/dev/null", "-A", "research", "-J", "dies",
                     "--no-requeue", "-N", "2", "-w", f"gpu007,{VICTIM}", "--gres=gpu:4", "-t", "5",
                     "--wrap", "sleep 300").strip()
    slurm.wait_until(lambda: slurm.run("squeue", "-h", "-t", "R", "-j", gang, "-o", "%i").strip(),
                     timeout=30)
    hold = slurm.hold_epilog(gang)
    cli = SlurmCli(slurm.slurm_conf)
    try:
        slurm.node_kill(VICTIM)
        # the node is DOWN 20-60 s after the kill; the gang stays COMPLETING while gpu007's epilog
        # waits on `hold` (unheld it lasts from under a second to a few: a poll could miss it)
        slurm.wait_until(lambda: slurm.run("squeue", "-h", "-j", gang, "-o", "%T",
                                           check=False).strip() == "COMPLETING", timeout=150, every=0.5)
        snap = _capture(cli, "GPUFLEET_CAPTURE_DIR")
        job = snap.job(gang)
        assert job is not None and job.state == "COMPLETING"
        text = explain(snap, gang).text()
        assert "not waiting: started" not in text
        assert f"job {gang} (dies, account research" in text and "ending" in text
    finally:
        hold.unlink(missing_ok=True)
        slurm.node_back(VICTIM)


def test_a_job_waits_for_its_own_partitions_nodes_while_other_nodes_are_idle(slurm) -> None:
    """Partition ``half`` = gpu[001-004] (made with scontrol for this test). A blocker fills it;
    a 1-node job submitted to ``half`` waits (Resources) though gpu[005-008] are idle: the
    engine must plan it on ``half``'s nodes when the blocker ends, not start it elsewhere."""
    cli = SlurmCli(slurm.slurm_conf)
    slurm.run("scontrol", "create", "PartitionName=half", "Nodes=gpu[001-004]", "MaxTime=INFINITE",
              "State=UP")
    try:
        blocker = slurm.run("sbatch", "--parsable", "-o", "/dev/null", "-A", "research", "-p", "half",
                            "-J", "blocker", "-N", "4", "--gres=gpu:8", "-t", "5", "--wrap",
                            "sleep 300").strip()
        slurm.wait_until(lambda: slurm.run("squeue", "-h", "-t", "R", "-j", blocker, "-o", "%i").strip(),
                         timeout=30)
        waiting = slurm.run("sbatch", "--parsable", "-o", "/dev/null", "-A", "research", "-p", "half",
                            "-J", "in-half", "-N", "1", "--gres=gpu:8", "-t", "10", "--wrap",
                            "sleep 1").strip()
        slurm.wait_until(lambda: "Resources" in slurm.run("squeue", "-h", "-j", waiting, "-o", "%r"),
                         timeout=60, every=0.5)
        snap = _capture(cli, "GPUFLEET_CAPTURE_PARTITION_DIR")
        got = explain(snap, waiting)
        assert got.engine is not None and not got.engine.starts_now
        assert set(got.engine.planned_nodes) <= {"gpu001", "gpu002", "gpu003", "gpu004"}
    finally:
        slurm.run("scancel", "--user=root", check=False)
        slurm.wait_until(lambda: not slurm.queue_ids(), timeout=30)
        slurm.run("scontrol", "delete", "PartitionName=half", check=False)
