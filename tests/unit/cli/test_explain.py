"""`gpufleet explain`: the headline counts every interval the job was queued, reasons name the
run's policy and the step that gave them, and times read as run clock times and durations."""

import json

from typer.testing import CliRunner

from gpufleet.cli.explain import attribute, clock, steps_of
from gpufleet.cli.main import app

runner = CliRunner()
RECLAIM = """
name: reclaim
fleet:
  groups: [{nodes: 2, gpu: H100-80GB, gpus_per_node: 8}]
workload:
  jobs:
    - {id: a1, tenant: a, run_time: 3600, replicas: 2, gpus: 8}
    - {id: b1, tenant: b, submit: 600, run_time: 1200, replicas: 1, gpus: 8}
tenancy:
  grace_s: 30
  cohorts: [{name: org}]
  tenants:
    - {name: a, cohort: org, quotas: {H100-80GB: {nominal: 8, borrowing_limit: 8}}}
    - {name: b, cohort: org, quotas: {H100-80GB: {nominal: 8}}}
policies: [tenancy-easy]
"""


def reclaim_run(tmp_path):
    (tmp_path / "s.yaml").write_text(RECLAIM)
    res = runner.invoke(app, ["simulate", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "o"),
                              "--no-progress"])
    assert res.exit_code == 0, res.output
    return tmp_path / "o"


def test_a_job_that_started_at_once_and_was_evicted_is_not_headlined_as_waiting_0_s(tmp_path):
    """a1 (16 GPUs) borrows b's node at t=0; b1 arrives at 600 s within b's quota and reclaims it:
    a1 is evicted at 600 + 30 s grace = 630 s and requeued; it restarts when b1 ends at
    630 + 1200 = 1830 s. It waited 1830 − 630 = 1200 s = 20.0 min, none of it before its first start."""
    run = reclaim_run(tmp_path)
    res = runner.invoke(app, ["explain", "a1", "--run", str(run), "--output", "json"])
    (doc,) = json.loads(res.stdout)
    assert doc["waited_s"] == 1200.0 and doc["waited_before_first_start_s"] == 0.0 and doc["requeues"] == 1
    text = runner.invoke(app, ["explain", "a1", "--run", str(run)], env={"COLUMNS": "300"}).output
    head = text.splitlines()[0]
    assert "started at once; sent back to the queue 1 time(s), waiting 20.0 min in all" in head
    assert "waiting 0 s" not in text


def test_reasons_name_the_runs_policy_and_the_step_that_gave_them(tmp_path):
    """Under tenancy-easy the quota admitter held a1 back; the log tags it [quota], which explain
    tells as the tenancy-easy policy's admit step."""
    run = reclaim_run(tmp_path)
    text = runner.invoke(app, ["explain", "a1", "--run", str(run)], env={"COLUMNS": "300"}).output
    assert "NOT_ADMITTED [tenancy-easy, admit step: quota]" in text
    assert "[quota]" not in text


def test_event_times_read_as_run_clock_times_and_durations(tmp_path):
    """The eviction at 630 s is day 0 00:10:30; 'lost 630s of work' reads 10.5 min."""
    run = reclaim_run(tmp_path)
    text = runner.invoke(app, ["explain", "a1", "--run", str(run)], env={"COLUMNS": "300"}).output
    assert "day 0 00:10:30 preempt: lost 10.5 min of work" in text
    assert "t=" not in text and "630s" not in text


def test_a_placer_shared_by_two_policies_is_told_as_the_step_of_the_run_being_explained():
    """gang-easy places with the gang-bestfit placer: its tag is not the gang-bestfit policy."""
    steps = steps_of("gang-easy")
    assert attribute("UNSCHEDULABLE [gang-bestfit]: needs 2×8 GPUs", "gang-easy", steps) == \
        "UNSCHEDULABLE [gang-easy, place step: gang-bestfit]: needs 2×8 GPUs"
    assert attribute("UNSCHEDULABLE [gang-bestfit]: x", "gang-bestfit", steps_of("gang-bestfit")) == \
        "UNSCHEDULABLE [gang-bestfit]: x"
    assert attribute("WAIT [mystery]: x", "slurm", steps_of("slurm")) == "WAIT [slurm: mystery]: x"


def test_the_run_clock_counts_days_from_zero():
    """90061 s = 1 d + 1 h + 1 min + 1 s."""
    assert clock(0) == "day 0 00:00:00" and clock(90061) == "day 1 01:01:01"
