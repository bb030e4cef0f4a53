"""`explain` on two real captures (tests/data/slurm/completing/ and partition/, see the README
there): a gang Slurm still lists COMPLETING after its node died, and a job that may use only its
partition's nodes while others are idle."""

from pathlib import Path

from gpufleet.adapters.slurm.engine_view import cycle_input, fleet_from_snapshot
from gpufleet.adapters.slurm.explain import explain
from gpufleet.adapters.slurm.queue import QueueSnapshot
from gpufleet.adapters.slurm.reader import build_snapshot

DATA = Path(__file__).parents[2] / "data" / "slurm"


def captured(folder: str) -> QueueSnapshot:
    d = DATA / folder
    text = [(d / n).read_text() for n in ("squeue.json", "scontrol-nodes.txt", "squeue-start.txt",
                                          "scontrol-jobs.txt")]
    return build_snapshot(*text, taken_at=float((d / "captured-at.txt").read_text()))


def test_a_gang_completing_after_its_node_died_is_explained_as_ending_not_as_started() -> None:
    """Job 1 (2 × 4 GPUs on gpu[007-008], --no-requeue) lost gpu008; Slurm lists it COMPLETING,
    Reason=NodeDown, on gpu007 alone, from its start 1796083220 to its end 1796083253 (33 s)."""
    snap = captured("completing")
    text = explain(snap, "1").text()
    assert "not waiting: started" not in text
    assert "ending: Slurm lists it COMPLETING (reason NodeDown)" in text
    assert "Slurm is cleaning up on gpu007, which stay allocated" in text
    assert "a node under it failed: Slurm ends it NODE_FAIL" in text
    # the bystander on gpu001 runs on: it is explained as running
    assert "not waiting: started" in explain(snap, "2").text()


def test_a_completing_gang_still_holds_its_gpus_in_the_engines_view() -> None:
    """Until it leaves the queue its 4 GPUs on gpu007 stay allocated (scontrol: gpu007 is
    IDLE+COMPLETING), so the engine counts them as held: 8 − 4 = 4 free there; gpu001 holds the
    bystander's 8 (0 free); gpu008 is down."""
    snap = captured("completing")
    inp = cycle_input(snap, fleet_from_snapshot(snap, None))
    free = dict(zip(inp.nodes.names, inp.nodes.gpu_free.tolist(), strict=True))
    assert free["gpu007"] == 4 and free["gpu001"] == 0
    assert {str(rj.job.id) for rj in inp.running} == {"1", "2"}


def test_a_job_in_a_partition_waits_for_that_partitions_nodes_while_others_are_idle() -> None:
    """Partition ``half`` = gpu[001-004]; blocker job 3 holds all four from 1796083258 with a
    5-minute limit, so they free at 1796083258 + 300 = 1796083558. Job 4 (1 × 8 GPUs, in
    ``half``) waits although gpu[005-008] are idle: the engine must not start it there. It
    reserves it at 1796083558 on gpu001, which is where and when Slurm planned it
    (squeue --start)."""
    snap = captured("partition")
    got = explain(snap, "4")
    assert got.engine is not None and not got.engine.starts_now
    assert got.engine.planned_nodes == ("gpu001",)
    assert got.our_start == 1796083558.0 == got.slurm_start
    assert "(on the 4 schedulable node(s) it is eligible for)" in got.text()
    inp = cycle_input(snap, fleet_from_snapshot(snap, None))
    (waiting,) = inp.pending
    assert waiting.job.eligible_nodes == frozenset({"gpu001", "gpu002", "gpu003", "gpu004"})


def test_a_job_in_a_partition_of_every_node_gets_no_node_filter() -> None:
    """In the main capture every node is in partition ``gpu``: the jobs waiting for capacity
    (16, 17, 18, and 22 pinned by ``-w gpu016``) get no filter from their partition; only 22
    keeps its --nodelist filter."""
    d = DATA
    snap = build_snapshot((d / "squeue.json").read_text(), (d / "scontrol-nodes.txt").read_text(),
                          (d / "squeue-start.txt").read_text(), (d / "scontrol-jobs.txt").read_text(),
                          1796043801.0)
    inp = cycle_input(snap, fleet_from_snapshot(snap, None))
    assert {str(pj.job.id): pj.job.eligible_nodes for pj in inp.pending} == {
        "16": None, "17": None, "18": None, "22": frozenset({"gpu016"})}
