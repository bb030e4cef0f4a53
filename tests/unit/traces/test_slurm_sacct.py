"""A trace from real sacct --parsable2 output captured on the emulated cluster (tests/data/slurm)."""

import json
from pathlib import Path

import pytest

from gpufleet.model.errors import InputError
from gpufleet.traces.sacct_csv import write_csv
from gpufleet.traces.slurm_sacct import (
    parse_duration,
    parse_sacct,
    pod_sets_from_tres,
    read_sacct,
    write_jsonl,
)

DATA = Path(__file__).parents[2] / "data" / "slurm"
HEADER = "JobID|JobName|Account|AllocTRES|Submit|Start|End|Elapsed|TimelimitRaw|State|NNodes"


@pytest.fixture(scope="module")
def trace():
    return read_sacct(DATA / "sacct.txt")


def by_id(trace, job_id: str):
    return next(j for j in trace.jobs if j.id == job_id)


def test_every_job_that_ran_becomes_a_job_and_steps_are_skipped_and_counted(trace) -> None:
    assert sorted(j.id for j in trace.jobs) == sorted(
        ["1", "2", "3", "4", "5", "7", "8_1", "8_2", "8_3", "9", "12", "13", "14", "15", "24"])
    assert trace.steps_skipped == 17
    assert trace.summary() == "15 jobs; skipped 17 job steps, 9 never started, 0 still running"


def test_jobs_cancelled_before_they_started_are_reported_not_dropped(trace) -> None:
    assert [(x.job_id, x.state) for x in trace.not_started][:2] == [("6", "CANCELLED"), ("16", "CANCELLED")]
    assert {x.why for x in trace.not_started} == {"cancelled before it started"}
    assert len(trace.not_started) == 9


def test_a_gang_of_two_full_nodes_is_two_pods_of_eight_gpus(trace) -> None:
    gang = by_id(trace, "3")
    assert [(ps.replicas, ps.request.gpus, ps.request.cpus, ps.request.memory_gb) for ps in gang.pod_sets] \
        == [(2, 8, 64.0, 500.0)]
    assert gang.tenant == "prod"
    assert dict(gang.labels)["slurm.qos"] == "high"
    assert gang.priority == 2063


def test_time_limit_is_the_estimate_and_elapsed_the_run_time(trace) -> None:
    timed_out = by_id(trace, "7")
    assert timed_out.run_time_estimate == 60.0
    assert timed_out.run_time == 87.0
    assert dict(timed_out.labels)["slurm.state"] == "TIMEOUT"
    assert by_id(trace, "1").run_time_estimate == 120.0


def test_submit_times_count_from_the_first_submission_and_records_keep_slurms_starts(trace) -> None:
    assert min(j.submit_time for j in trace.jobs) == 0.0
    rec = next(r for r in trace.records if r.job_id == "15")
    assert (rec.submit, rec.start, rec.wait) == (4.0, 6.0, 2.0)
    assert rec.node_list == "gpu003"


def test_jobs_still_running_are_listed_as_unfinished() -> None:
    text = HEADER + ("\n42|run|a|cpu=1,gres/gpu=1,node=1|2024-01-01T00:00:00|2024-01-01T00:00:05|Unknown|"
                     "00:01:00|5|RUNNING|1\n")
    got = parse_sacct(text)
    assert got.jobs == ()
    assert [(x.job_id, x.why) for x in got.unfinished] == [("42", "still running: no run time yet")]


def test_gpus_that_do_not_divide_over_the_nodes_give_a_second_pod_set() -> None:
    sets = pod_sets_from_tres({"gres/gpu": "5", "cpu": "4", "mem": "8G"}, 2)
    assert [(ps.replicas, ps.request.gpus) for ps in sets] == [(1, 3), (1, 2)]
    assert sum(ps.replicas * ps.request.gpus for ps in sets) == 5


def test_typed_gpu_tres_become_allowed_models() -> None:
    sets = pod_sets_from_tres({"gres/gpu": "8", "gres/gpu:h100": "8", "node": "1"}, 1)
    assert sets[0].request.gpu_models == ("H100-80GB",)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("00:00:05", 5), ("1-02:03:04", 93784), ("05:30", 330), ("00:01.500", 1.5), ("UNLIMITED", None)],
    ids=["hours minutes seconds", "days and a dash", "minutes and seconds", "fractional seconds",
         "unlimited has no duration"],
)
def test_slurm_durations_parse(text: str, seconds: float | None) -> None:
    assert parse_duration(text) == seconds


def test_the_trace_writes_as_jsonl_and_csv(trace, tmp_path: Path) -> None:
    write_jsonl(trace, tmp_path / "t.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert len(rows) == 15 and rows[0]["tenant"] == "research" and rows[0]["slurm"]["state"] == "COMPLETED"
    write_csv(trace, tmp_path / "t.csv")
    assert (tmp_path / "t.csv").read_text().splitlines()[0].startswith("id,tenant,submit_time,run_time")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "sacct: empty file"),
        ("JobID|State\n1|COMPLETED\n", "sacct: header: missing column Submit"),
        (HEADER + "\n1|x|a|gpu=1\n", "sacct: line 2: expected 11 '|'-separated fields, got 4"),
        (HEADER + "\n1|x|a|node=1|yesterday|None|None|0|1|PENDING|1\n",
         "sacct: line 2: Submit: expected an ISO time"),
    ],
    ids=["an empty file", "a header without Submit", "a short row", "a time that is not ISO"],
)
def test_bad_sacct_output_gives_one_line(text: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        parse_sacct(text)
    assert str(err.value).startswith(message)


def test_a_job_cancelled_at_once_while_pending_is_not_started_although_slurm_gives_it_a_start() -> None:
    # real 22.05 output: a held job cancelled within a second gets Start = End = the cancel time
    text = ("JobID|State|Submit|Start|End|Elapsed|AllocTRES|NodeList\n"
            "13|CANCELLED by 0|2026-11-30T13:11:09|2026-11-30T13:11:09|2026-11-30T13:11:09|00:00:00||"
            "None assigned\n")
    got = parse_sacct(text)
    assert got.jobs == ()
    assert [(x.job_id, x.state, x.why) for x in got.not_started] == [
        ("13", "CANCELLED", "cancelled before it started")]


def test_a_placeholder_row_slurmdbd_made_before_the_jobs_own_record_arrived_is_incomplete_not_a_job() -> None:
    # real 22.05 output (emulated cluster, slurmdbd): the job completed, but its row was created
    # from the step and completion messages alone; a second later it read gang|prod|normal|...|2|
    text = (
        "JobID|JobName|Account|QOS|AllocTRES|ReqTRES|Submit|Start|End|Elapsed|TimelimitRaw|State|NNodes|"
        "Priority|NodeList\n"
        "40|allocation|prod|Unknown|billing=128,cpu=128,gres/gpu=16,mem=1000G,node=2||2026-11-30T13:30:57|"
        "2026-11-30T13:30:58|2026-11-30T13:31:00|00:00:02||COMPLETED|2|0|gpu001\n"
        "40.batch|batch|prod||cpu=64,gres/gpu=8,mem=500G,node=1||2026-11-30T13:30:58|2026-11-30T13:30:58|"
        "2026-11-30T13:31:00|00:00:02||COMPLETED|1||gpu001\n"
    )
    got = parse_sacct(text)
    assert got.jobs == ()
    assert [(x.job_id, x.why.split(":")[0]) for x in got.unfinished] == [
        ("40", "accounting record incomplete")]


def test_the_same_job_once_its_record_is_merged_has_its_time_limit_and_priority() -> None:
    text = (
        "JobID|JobName|Account|QOS|AllocTRES|ReqTRES|Submit|Start|End|Elapsed|TimelimitRaw|State|NNodes|"
        "Priority|NodeList\n"
        "40|gang|prod|normal|billing=128,cpu=128,gres/gpu=16,mem=1000G,node=2|billing=2,cpu=2,gres/gpu=16,"
        "mem=1000G,node=2|2026-11-30T13:30:57|2026-11-30T13:30:58|2026-11-30T13:31:00|00:00:02|2|COMPLETED|2|"
        "1126|gpu[001-002]\n"
    )
    (gang,) = parse_sacct(text).jobs
    assert (gang.run_time_estimate, gang.priority, dict(gang.labels)["slurm.name"]) == (120.0, 1126, "gang")


def test_requested_cpus_and_nodes_are_kept_for_slurms_job_size_priority(trace) -> None:
    """Job 1 asked for 1 CPU (ReqTRES cpu=1) and was given 8 (AllocTRES cpu=8, DefCpuPerGPU=8): the
    pod holds 8, the priority counts 1, so its size factor is (1/16 + 1/1024) / 2 on 16 × 64 CPUs."""
    from gpufleet.policies.slurm_like import SlurmPriority

    job = by_id(trace, "1")
    assert job.pod_sets[0].request.cpus == 8.0
    assert (dict(job.labels)["slurm.req_cpus"], dict(job.labels)["slurm.req_nodes"]) == ("1", "1")
    prio = SlurmPriority(nodes=16, cpus=16 * 64, weight_size=1000)
    assert prio.size_factor(job) == pytest.approx((1 / 16 + 1 / 1024) / 2)


ROW = "1|j|acct|{tres}|2026-11-30T13:00:00|{start}|{end}|00:00:02|2|COMPLETED|1"


@pytest.mark.parametrize(("tres", "start", "end", "message"), [
    ("cpu=8,gres/gpu=-2,node=1", "2026-11-30T13:00:01", "2026-11-30T13:00:03",
     "line 2: AllocTRES: gres/gpu: expected a whole number ≥ 0, got '-2'"),
    ("cpu=nan,gres/gpu=1,node=1", "2026-11-30T13:00:01", "2026-11-30T13:00:03",
     "line 2: AllocTRES: cpu: expected a whole number ≥ 0, got 'nan'"),
    ("cpu=8,gres/gpu=1,mem=infG,node=1", "2026-11-30T13:00:01", "2026-11-30T13:00:03",
     "line 2: AllocTRES: mem: expected a size"),
    ("cpu=8,gres/gpu=1,node=1", "2026-11-30T13:00:05", "2026-11-30T13:00:03",
     "line 2: End: expected End ≥ Start"),
])
def test_a_negative_count_a_non_number_or_an_end_before_the_start_is_one_error_naming_line_and_field(
        tres: str, start: str, end: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_sacct(HEADER + "\n" + ROW.format(tres=tres, start=start, end=end))


def test_a_node_failure_keeps_the_failed_gang_and_lists_the_requeued_one() -> None:
    """Captured on the emulated cluster (tests/data/slurm/README.md): job 1 ended NODE_FAIL after
    31 s on gpu[007-008]; job 2 went back to the queue (PENDING, no start)."""
    got = read_sacct(DATA / "sacct-node-fail.txt")
    failed = by_id(got, "1")
    assert dict(failed.labels)["slurm.state"] == "NODE_FAIL" and failed.run_time == 31.0
    assert [(ps.replicas, ps.request.gpus) for ps in failed.pod_sets] == [(2, 4)]
    assert sorted(j.id for j in got.jobs) == ["1", "3"]
    assert [(x.job_id, x.state) for x in got.unfinished] == [("2", "PENDING")]
    assert "requeued after a node failure" in got.unfinished[0].why
    assert got.not_started == ()


FULL_HEADER = "JobID|JobName|Account|AllocTRES|Submit|Start|End|Elapsed|TimelimitRaw|State|NNodes|Priority"
FULL_ROW = ("1|j|acct|cpu=8,gres/gpu=1,node=1|2026-11-30T13:00:00|2026-11-30T13:00:01|2026-11-30T13:00:03"
            "|{elapsed}|{limit}|COMPLETED|1|{priority}")


@pytest.mark.parametrize(("elapsed", "limit", "priority", "message"), [
    ("00:00:02", "abc", "1031", "line 2: TimelimitRaw: expected whole minutes or UNLIMITED, got 'abc'"),
    ("00:00:02", "-5", "1031", "line 2: TimelimitRaw: expected whole minutes or UNLIMITED, got '-5'"),
    ("00:00:02", "nan", "1031", "line 2: TimelimitRaw"),
    ("00:00:02", "2", "high", "line 2: Priority: expected a whole number ≥ 0, got 'high'"),
    ("00:00:02", "2", "-7", "line 2: Priority"),
    ("two secs", "2", "1031", r"line 2: Elapsed: expected \[D-\]HH:MM:SS, got 'two secs'"),
])
def test_a_garbled_time_limit_priority_or_elapsed_is_one_error_not_a_silent_default(
        elapsed: str, limit: str, priority: str, message: str) -> None:
    """Before the QA pass these rows were read with no limit (estimate None), priority 0 and the
    run time from End − Start: exit 0 with a trace that differed from what Slurm recorded."""
    with pytest.raises(InputError, match=message):
        parse_sacct(FULL_HEADER + "\n" + FULL_ROW.format(elapsed=elapsed, limit=limit, priority=priority))


@pytest.mark.parametrize("limit", ["UNLIMITED", "Partition_Limit"])
def test_a_job_without_its_own_limit_has_no_estimate(limit: str) -> None:
    """sacct prints UNLIMITED / Partition_Limit in TimelimitRaw for jobs with no limit of their own."""
    trace = parse_sacct(FULL_HEADER + "\n" + FULL_ROW.format(elapsed="00:00:02", limit=limit, priority="7"))
    assert trace.jobs[0].run_time_estimate is None
    assert trace.jobs[0].priority == 7
