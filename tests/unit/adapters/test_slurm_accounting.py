"""Slurm's finished jobs from sacct (adapters/slurm/accounting.py), over real output of the
emulated cluster (tests/data/slurm/sacct-runs.txt: ``sacct -X -a -P -o
JobID,Account,Submit,Start,End,State,AllocTRES``): job 1 (prod, 2 GPUs) ran 06:34:52–06:34:55,
job 2 (research, 2 nodes × 8 = 16 GPUs) 06:34:52–06:34:56, job 3 (nlp) was cancelled.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gpufleet.adapters.slurm.accounting import SACCT_FORMAT, parse_runs, read_runs
from gpufleet.model.errors import InputError

DATA = Path(__file__).resolve().parents[2] / "data" / "slurm"


def test_finished_jobs_are_read_with_their_account_gpus_and_times_and_cancelled_ones_left_out():
    runs = {r.id: r for r in parse_runs((DATA / "sacct-runs.txt").read_text())}
    assert sorted(runs) == ["1", "2"]
    prod, research = runs["1"], runs["2"]
    assert (prod.tenant, prod.gpus, prod.end_time - prod.start_time, prod.state) == \
        ("prod", 2, 3.0, "COMPLETED")
    assert (research.tenant, research.gpus, research.end_time - research.start_time) == ("research", 16, 4.0)
    assert research.start_time - research.submit_time == 0.0 and not research.preempted


def test_a_preempted_job_counts_and_steps_running_jobs_and_bad_counts_are_handled():
    text = ("JobID|Account|Submit|Start|End|State|AllocTRES\n"
            "7|lab|2026-12-03T06:00:00|2026-12-03T06:01:00|2026-12-03T06:11:00|PREEMPTED|gres/gpu=8,node=1\n"
            "7.batch||2026-12-03T06:01:00|2026-12-03T06:01:00|2026-12-03T06:11:00|PREEMPTED|cpu=1\n"
            "8|lab|2026-12-03T06:00:00|2026-12-03T06:01:00|Unknown|RUNNING|gres/gpu=8\n"
            "9|lab|2026-12-03T06:00:00|None|2026-12-03T06:02:00|CANCELLED by 0|\n")
    (run,) = parse_runs(text)
    assert run.id == "7" and run.preempted and run.gpus == 8 and run.end_time - run.start_time == 600.0
    with pytest.raises(InputError, match="JobID=5"):
        parse_runs("JobID|Account|Submit|Start|End|State|AllocTRES\n"
                   "5|lab|2026-12-03T06:00:00|2026-12-03T06:01:00|2026-12-03T06:02:00|COMPLETED|gres/gpu=x\n")


def test_sacct_is_asked_for_allocations_since_the_window_start_in_local_time():
    asked: list[list[str]] = []

    def sacct(argv):  # noqa: ANN001, ANN202 (a Runner)
        asked.append(list(argv))
        return (DATA / "sacct-runs.txt").read_text()
    since = time.mktime(time.strptime("2026-12-03T06:34:55", "%Y-%m-%dT%H:%M:%S"))
    runs = read_runs(sacct, since)
    assert asked == [["sacct", "-X", "-a", "-P", "-S", "2026-12-03T06:34:55", "-E", "now", "-o",
                      SACCT_FORMAT]]
    assert [r.id for r in runs] == ["1", "2"]     # both ended at or after 06:34:55
    assert [r.id for r in read_runs(sacct, since + 1)] == ["2"]
