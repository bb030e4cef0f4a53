"""A node that dies under running gangs: Slurm marks it down and ends or requeues its jobs; sacct
import, explain and the compare replay report that instead of crashing or dropping the jobs.

The session cluster has SlurmdTimeout=20 (conftest.py): once its slurmd is killed, slurmctld
stops hearing from the node and marks it DOWN within about 20-60 s; a job on it ends NODE_FAIL
(``--no-requeue``) or goes back to the queue (Slurm's default, JobRequeue=1). Set
GPUFLEET_CAPTURE_DIR to keep the sacct output this test reads (tests/data/slurm/sacct-node-fail.txt
was captured that way).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpufleet.adapters.slurm.compare_run import SlurmRun, read_cluster, replay
from gpufleet.adapters.slurm.reader import SACCT_FIELDS
from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.traces.slurm_sacct import parse_sacct

pytestmark = pytest.mark.slurm
VICTIM = "gpu008"


def sbatch(slurm, *args: str) -> str:
    return slurm.run("sbatch", "--parsable", "-o", "/dev/null", "-A", "research", *args).strip()


def gpufleet(slurm, *args: str) -> subprocess.CompletedProcess[str]:
    exe = str(Path(sys.executable).parent / "gpufleet")
    return subprocess.run([exe, *args], env=slurm.env, capture_output=True, text=True, timeout=120,
                          check=False)


def test_a_killed_node_ends_its_gangs_and_every_reader_reports_it(slurm, tmp_path: Path) -> None:
    gang = ["-N", "2", "-w", f"gpu007,{VICTIM}", "--gres=gpu:4", "-t", "10", "--wrap", "sleep 600"]
    failing = sbatch(slurm, "-J", "no-requeue", "--no-requeue", *gang)
    requeued = sbatch(slurm, "-J", "requeue", "--requeue", *gang)
    bystander = sbatch(slurm, "-J", "bystander", "-N", "1", "-w", "gpu001", "--gres=gpu:8", "-t", "1",
                       "--wrap", "sleep 2")
    slurm.wait_until(lambda: len(slurm.run("squeue", "-h", "-t", "R", "-j", f"{failing},{requeued}",
                                           "-o", "%i").split()) == 2, timeout=30)
    slurm.node_kill(VICTIM)
    try:
        state = slurm.wait_until(
            lambda: (s := slurm.run("sacct", "-n", "-X", "-P", "-o", "State", "-j", failing).strip())
            in ("NODE_FAIL",) and s, timeout=150, every=2)
        assert state == "NODE_FAIL"
        node = slurm.run("sinfo", "-h", "-n", VICTIM, "-o", "%T").strip()
        assert node.startswith("down"), node

        # explain: the requeued gang (pending or restarted) and the ended one, without a traceback
        done = gpufleet(slurm, "slurm", "explain", requeued)
        assert done.returncode == 0, done.stderr
        assert f"job {requeued} (requeue" in done.stdout
        # sacct says NODE_FAIL before squeue lets go of the job: it lingers COMPLETING while
        # slurmctld cleans up after the dead node (seconds; longer on a loaded machine)
        slurm.wait_until(lambda: not slurm.run("squeue", "-h", "-j", failing, "-o", "%i",
                                               check=False).strip(), timeout=90, every=2)
        ended = gpufleet(slurm, "slurm", "explain", failing)
        assert ended.returncode == 0, ended.stderr
        assert f"job {failing}: not in the queue: it ended NODE_FAIL" in ended.stdout

        # import-sacct: the failed gang is a job with its state; the requeued one is listed, not lost
        ids = f"{failing},{requeued},{bystander}"
        slurm.wait_until(lambda: "COMPLETED" in slurm.run("sacct", "-n", "-X", "-o", "State", "-j",
                                                          bystander))
        text = slurm.run("sacct", "-a", "-P", "-o", SACCT_FIELDS, "-j", ids)
        if os.environ.get("GPUFLEET_CAPTURE_DIR"):
            Path(os.environ["GPUFLEET_CAPTURE_DIR"], "sacct-node-fail.txt").write_text(text)
        (tmp_path / "sacct.txt").write_text(text)
        done = gpufleet(slurm, "slurm", "import-sacct", str(tmp_path / "sacct.txt"), "--out",
                        str(tmp_path / "t.jsonl"))
        assert done.returncode == 0, done.stderr
        trace = parse_sacct(text)
        states = {r.job_id: r.state for r in trace.records}
        assert states[failing] == "NODE_FAIL" and states[bystander] == "COMPLETED"
        assert requeued in states or requeued in {x.job_id for x in trace.unfinished}
        assert failing in (tmp_path / "t.jsonl").read_text()

        # compare's replay takes the failed gang's observed run time and says how Slurm ended it
        fleet, conf = read_cluster(slurm.slurm_conf)
        shapes = {failing: (2, 4), bystander: (1, 8)}
        ours = {sid: Job(JobId(f"j{sid}"), TenantId("research"), (PodSet("main", n, PodRequest(gpus=g)),),
                         0.0, 1.0, run_time_estimate=300.0) for sid, (n, g) in shapes.items()}
        run = SlurmRun({str(j.id): sid for sid, j in ours.items()}, trace, 0.0, 1.0, None)
        cmp = replay(fleet, conf, list(ours.values()), run)
        assert {f.job_id for f in cmp.facts} == {f"j{failing}", f"j{bystander}"}
        assert cmp.slurm_states == {"NODE_FAIL": (f"j{failing}",)}
    finally:
        slurm.node_back(VICTIM)
