"""The live queue read from captured squeue/scontrol output, Slurm reasons, and `explain`."""

from pathlib import Path

import pytest

from gpufleet.adapters.slurm.compare_run import read_cluster
from gpufleet.adapters.slurm.explain import explain
from gpufleet.adapters.slurm.queue import jobs_ahead
from gpufleet.adapters.slurm.reader import SlurmReader, build_snapshot, parse_scontrol_kv
from gpufleet.adapters.slurm.reasons import WaitReason, map_reason
from gpufleet.engine.status import StatusCode

DATA = Path(__file__).parents[2] / "data" / "slurm"
TAKEN_AT = 1796043801.0  # shortly after the running jobs of the capture started
RUNNING_END = 1796043798.0 + 1800  # the three 4-node training jobs: start + 30-min limit
FLEET, CONF = read_cluster(DATA / "slurm.conf")


def captured(name: str) -> str:
    return (DATA / name).read_text()


@pytest.fixture(scope="module")
def snap():
    return build_snapshot(captured("squeue.json"), captured("scontrol-nodes.txt"),
                          captured("squeue-start.txt"), captured("scontrol-jobs.txt"), TAKEN_AT)


@pytest.mark.parametrize(
    ("slurm", "ours", "status"),
    [
        ("Resources", WaitReason.RESOURCES, StatusCode.UNSCHEDULABLE),
        ("Priority", WaitReason.PRIORITY, StatusCode.WAIT),
        ("ReqNodeNotAvail, UnavailableNodes:gpu016", WaitReason.NODES_UNAVAILABLE, StatusCode.UNSCHEDULABLE),
        ("QOSMaxGRESPerUser", WaitReason.QUOTA, StatusCode.NOT_ADMITTED),
        ("AssocGrpGRES", WaitReason.QUOTA, StatusCode.NOT_ADMITTED),
        ("Dependency", WaitReason.DEPENDENCY, StatusCode.WAIT),
        ("DependencyNeverSatisfied", WaitReason.DEPENDENCY_NEVER, StatusCode.UNRESOLVABLE),
        ("BeginTime", WaitReason.BEGIN_TIME, StatusCode.WAIT),
        ("JobHeldUser", WaitReason.HELD, StatusCode.WAIT),
        ("PartitionTimeLimit", WaitReason.PARTITION_LIMIT, StatusCode.UNRESOLVABLE),
        ("SomethingNew", WaitReason.UNKNOWN, StatusCode.WAIT),
    ],
    ids=["Resources means no room now", "Priority means others go first", "a drained required node",
         "a QOS GPU cap per user", "an account group GPU cap", "a dependency",
         "a dependency that cannot hold",
         "a begin time", "a user hold", "a partition time limit", "a reason we do not know yet"],
)
def test_slurm_reasons_map_to_our_codes(slurm: str, ours: WaitReason, status: StatusCode) -> None:
    assert map_reason(slurm) is ours
    assert ours.status is status
    assert ours.explanation


@pytest.mark.parametrize(("reason", "phrase"), [
    (WaitReason.RESOURCES, "running jobs release them"), (WaitReason.PRIORITY, "higher priority"),
    (WaitReason.NODES_UNAVAILABLE, "down, drained or reserved"), (WaitReason.QUOTA, "QOS or account limit"),
    (WaitReason.DEPENDENCY, "--dependency"), (WaitReason.DEPENDENCY_NEVER, "can never satisfy"),
    (WaitReason.BEGIN_TIME, "--begin"), (WaitReason.HELD, "until released"),
    (WaitReason.RESERVATION, "advance reservation"), (WaitReason.PARTITION_LIMIT, "more than the partition"),
    (WaitReason.PARTITION_DOWN, "partition is down"), (WaitReason.LICENSES, "licenses"),
    (WaitReason.BAD_REQUEST, "cannot be satisfied"), (WaitReason.SCHEDULER, "has not looked at it"),
    (WaitReason.UNKNOWN, "does not classify"),
])
def test_every_reason_has_a_plain_explanation_of_its_own(reason: WaitReason, phrase: str) -> None:
    assert phrase in reason.explanation
    assert sum(r.explanation == reason.explanation for r in WaitReason) == 1


def test_the_snapshot_holds_the_running_and_pending_jobs_of_the_capture(snap) -> None:
    running = {j.job_id for j in snap.jobs if j.running}
    pending = {j.job_id for j in snap.jobs if j.pending}
    assert running == {"7", "12", "13", "14", "15"}
    assert pending == {str(i) for i in range(16, 24)}
    big = snap.job("16")
    assert (big.nodes, big.gpus_per_node, big.time_limit_s) == (8, 8, 3600.0)
    assert big.planned_nodes == tuple(f"gpu{i:03d}" for i in range(1, 9))
    assert snap.job("18").switches == "1@00:05:00"
    assert snap.job("22").required_nodes == ("gpu016",)


def test_node_state_counts_allocated_gpus_and_drained_nodes_are_unschedulable(snap) -> None:
    nodes = {n.name: n for n in snap.nodes}
    assert (nodes["gpu003"].gpus, nodes["gpu003"].gpus_alloc) == (8, 2)
    assert not nodes["gpu016"].schedulable and nodes["gpu016"].reason == "fabric check"
    assert sum(n.gpus_free for n in snap.nodes) == 21


def test_a_job_behind_higher_priority_jobs_names_them_and_gets_both_start_estimates(snap) -> None:
    """Job 17 (2 nodes × 8 GPUs) waits behind 18 and 16. Slurm planned it at RUNNING_END on
    gpu[009-010]; the engine, from the same state, plans the same second on the same nodes (16 takes
    gpu[001-008] then; 18 is not planned, see the next test)."""
    got = explain(snap, "17", FLEET, CONF)
    assert got.reason is WaitReason.PRIORITY
    assert [j.job_id for j in jobs_ahead(snap, snap.job("17"))] == ["18", "16"]
    assert got.slurm_start == RUNNING_END == 1796045598.0
    assert got.our_start == RUNNING_END
    assert got.engine is not None and got.engine.planned_nodes == snap.job("17").planned_nodes \
        == ("gpu009", "gpu010")
    text = got.text()
    assert "2 eligible job(s) ahead of it: 18 (72 GPUs, prio 1285), 16 (64 GPUs, prio 1253)" in text
    assert "held by job 12 (train-1, prod): gpu[001-002,006-007], 32 GPUs" in text
    assert "needs 2 node(s) with 8 free GPUs, 1 such node(s) now (gpu004)" in text


def test_a_job_pinned_to_a_drained_node_cannot_start_until_the_node_returns(snap) -> None:
    got = explain(snap, "22", FLEET, CONF)
    assert got.reason is WaitReason.NODES_UNAVAILABLE
    assert got.our_start is None
    assert "it requires gpu016; not schedulable now: gpu016 (idle+drain: fabric check)" in got.text()
    assert "engine: it cannot start until its required node(s) gpu016 return to service" in got.text()


@pytest.mark.parametrize(
    ("job_id", "reason", "detail"),
    [
        ("19", WaitReason.DEPENDENCY, "depends on: afterok:16(unfulfilled)"),
        ("21", WaitReason.HELD, "release it with: scontrol release 21"),
        ("23", WaitReason.QUOTA, "limit hit: QOSMaxGRESPerUser (qos small, account research)"),
        ("20", WaitReason.BEGIN_TIME, "eligible from:"),
    ],
    ids=["a dependency names the job it waits for", "a held job says how to release it",
         "a QOS cap names the limit and the QOS", "a begin time says from when"],
)
def test_jobs_that_wait_for_something_else_than_capacity_say_what(snap, job_id: str, reason: WaitReason,
                                                                   detail: str) -> None:
    got = explain(snap, job_id)
    assert got.reason is reason
    assert detail in got.text()
    assert got.our_start is None
    assert "held by job" not in got.text()


def test_the_engine_plans_the_big_job_where_slurm_did_because_the_wide_job_waits_for_one_switch(snap) -> None:
    """Job 18 (9 nodes, prio 1285, --switches=1@00:05:00) is ahead of 16 (8 nodes, prio 1253), but
    no leaf has 9 nodes (two leaves of 8), so within its 5-min wait neither Slurm nor the engine plans
    it; 16 then gets gpu[001-008] at RUNNING_END — Slurm's own plan, node for node."""
    got = explain(snap, "16", FLEET, CONF)
    assert got.our_start == got.slurm_start == RUNNING_END
    assert got.engine is not None and got.engine.planned_nodes == snap.job("16").planned_nodes \
        == tuple(f"gpu{i:03d}" for i in range(1, 9))
    wide = explain(snap, "18", FLEET, CONF)
    assert wide.our_start is None and wide.slurm_start is None
    assert "engine: not planned while --switches=1@00:05:00 binds: no leaf switch has 9 usable nodes" \
        in wide.text()


def test_without_slurm_conf_the_engine_reads_gpu_counts_from_scontrol_and_agrees_on_job_17(snap) -> None:
    assert explain(snap, "17").our_start == RUNNING_END


def test_a_node_drained_under_no_job_is_named_for_a_job_waiting_for_resources(snap) -> None:
    assert "not schedulable now: gpu016 (idle+drain: fabric check)" in explain(snap, "18", FLEET, CONF).text()


def test_a_running_job_is_explained_as_not_waiting(snap) -> None:
    got = explain(snap, "15")
    assert got.reason is None and "not waiting: started" in got.text()


def test_scontrol_values_with_spaces_are_kept_whole() -> None:
    kv = parse_scontrol_kv("NodeName=gpu016 State=IDLE+DRAIN "
                           "Reason=fabric check [root@2026-11-30T13:03:21] Weight=1")
    assert kv["Reason"] == "fabric check [root@2026-11-30T13:03:21]" and kv["Weight"] == "1"


def test_the_reader_asks_slurm_through_its_runner() -> None:
    answers = {"squeue --json": captured("squeue.json"),
               "scontrol show node -o": captured("scontrol-nodes.txt"),
               "squeue --start": captured("squeue-start.txt"),
               "scontrol show job -o": captured("scontrol-jobs.txt")}
    asked: list[str] = []

    def runner(argv):
        key = next(k for k in answers if " ".join(argv).startswith(k))
        asked.append(key)
        return answers[key]

    snapshot = SlurmReader(runner).snapshot()
    assert asked == ["squeue --json", "scontrol show node -o", "squeue --start", "scontrol show job -o"]
    assert snapshot.job("16") is not None


def test_the_jobs_holding_capacity_are_listed_in_the_order_the_engine_expects_them_to_end(snap) -> None:
    """Running jobs end, on the engine's capacity timeline, at start + time limit: job 7 at
    1796043794 + 60 = 1796043854, job 15 at 1796043800 + 1,200 = 1796045000, the three 4-node
    training jobs (12, 13, 14) at 1796043798 + 1,800 = RUNNING_END. The "held by" lines of job 17
    (which waits on capacity) list them in that order, each with that time."""
    from gpufleet.adapters.slurm.engine_view import release_schedule
    from gpufleet.adapters.slurm.explain import when

    schedule = release_schedule(snap, FLEET, CONF)
    assert schedule == [("7", 1796043854.0), ("15", 1796045000.0), ("12", RUNNING_END),
                        ("13", RUNNING_END), ("14", RUNNING_END)]
    held = [line for line in explain(snap, "17", FLEET, CONF).text().splitlines() if "held by job" in line]
    assert [line.split("held by job ")[1].split(" ")[0] for line in held] == ["7", "15", "12", "13", "14"]
    assert all(line.endswith(f"until ~{when(end)}") for line, (_, end) in zip(held, schedule, strict=True))


def test_a_job_pinned_by_nodelist_is_planned_on_its_own_node_not_on_a_free_one() -> None:
    """Four 8-GPU nodes; job 1 runs on gpu001 from t0 − 100 with a 700 s limit, so it ends at
    t0 + 600. Job 2 (1 node × 8 GPUs, --nodelist=gpu001) waits on Resources: gpu002–gpu004 are
    free, but it may use gpu001 only, so the engine plans it there at t0 + 600 rather than now."""
    from gpufleet.adapters.slurm.engine_view import engine_reading
    from gpufleet.adapters.slurm.queue import NodeState, QueuedJob, QueueSnapshot

    t0 = 1_800_000_000.0
    nodes = tuple(NodeState(f"gpu00{i}", "MIXED" if i == 1 else "IDLE", 8, 8 if i == 1 else 0)
                  for i in range(1, 5))
    running = QueuedJob("1", "train", "RUNNING", "None", 1, 8, t0 - 200, time_limit_s=700.0,
                        start=t0 - 100, node_list=("gpu001",))
    pinned = QueuedJob("2", "pinned", "PENDING", "Resources", 1, 8, t0 - 50, priority=10,
                       time_limit_s=600.0, required_nodes=("gpu001",))
    reading = engine_reading(QueueSnapshot(t0, (running, pinned), nodes), "2")
    assert not reading.starts_now
    assert reading.estimated_start == t0 + 600
    assert reading.planned_nodes == ("gpu001",)
