"""gpufleet Jobs submitted to a real Slurm, and read back from its accounting as a trace."""

from dataclasses import replace

import pytest

from gpufleet.adapters.slurm.fleet_conf import read_fleet
from gpufleet.adapters.slurm.hostlist import expand
from gpufleet.adapters.slurm.reader import SlurmCli, SlurmReader
from gpufleet.adapters.slurm.writer import SlurmWriter
from gpufleet.testing.builders import job

pytestmark = pytest.mark.slurm


def test_jobs_go_to_slurm_and_come_back_from_sacct_with_the_same_shape(slurm) -> None:
    cli = SlurmCli(slurm.slurm_conf)
    jobs = [
        job("gang").tenant("prod").gpus(8).gang(2).runs(2, estimate=90).build(),
        job("one-gpu").tenant("research").gpus(1).cpus(4).runs(1).build(),
        job("packed").tenant("research").gpus(2).gang(4).runs(1).build(),
    ]
    ids = SlurmWriter(cli, gpus_per_node=8).submit_all(jobs)
    reader = SlurmReader(cli)

    def finished():
        trace = reader.sacct(list(ids.values()))
        return trace if len(trace.jobs) == len(jobs) else None

    trace = slurm.wait_until(finished, timeout=40)
    by_slurm_id = {j.id: j for j in trace.jobs}
    back = {ours: by_slurm_id[theirs] for ours, theirs in ids.items()}
    assert [(ps.replicas, ps.request.gpus) for ps in back["gang"].pod_sets] == [(2, 8)]
    assert back["packed"].total_gpus == 8 and back["packed"].total_pods == 1
    assert back["gang"].tenant == "prod" and back["one-gpu"].tenant == "research"
    assert back["gang"].run_time_estimate == 120.0
    assert {ours: dict(j.labels)["slurm.name"] for ours, j in back.items()} == {o: o for o in ids}
    assert back["one-gpu"].pod_sets[0].request.cpus == 4.0
    assert all(1 <= j.run_time <= 30 for j in trace.jobs)
    assert {r.state for r in trace.records} == {"COMPLETED"}


def test_a_job_that_asks_for_one_leaf_gets_nodes_under_one_switch(slurm) -> None:
    fleet = read_fleet(slurm.etc / "slurm.conf", slurm.etc / "gres.conf", [slurm.etc / "topology.conf"]).fleet
    leaf_of = {n.id: n.leaf for n in fleet.nodes}
    cli = SlurmCli(slurm.slurm_conf)
    filler = job("filler").tenant("research").gpus(8).runs(30).build()
    wide = replace(job("leafy").tenant("research").gpus(8).gang(3).runs(300).build(),
                   labels=(("topology", "leaf"),))
    writer = SlurmWriter(cli)
    writer.submit(filler)
    slurm_id = writer.submit(wide)
    nodes = slurm.wait_until(lambda: slurm.run("squeue", "-h", "-j", slurm_id, "-t", "R", "-o", "%N").strip())
    assert len({leaf_of[n] for n in expand(nodes)}) == 1


def test_jobs_that_never_start_are_reported_by_the_trace(slurm) -> None:
    cli = SlurmCli(slurm.slurm_conf)
    held = slurm.run("sbatch", "--parsable", "-o", "/dev/null", "-H", "-A", "research", "--gres=gpu:1",
                     "-t", "1", "--wrap", "true").strip()
    slurm.run("scancel", held)
    trace = slurm.wait_until(lambda: (t := SlurmReader(cli).sacct([held])).not_started and t)
    assert [(x.job_id, x.why) for x in trace.not_started] == [(held, "cancelled before it started")]
