"""The arithmetic of `gpufleet slurm compare`: order agreement, wait differences, explanations."""

import math

import pytest

from gpufleet.adapters.slurm.compare import (
    JobFacts,
    WaitDiffs,
    agreement,
    explain,
    kendall_tau_b,
    pair_agreement,
)
from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.policies.slurm_like import SlurmPriority


@pytest.mark.parametrize(
    ("a", "b", "tau"),
    [([1, 2, 3, 4], [10, 20, 30, 40], 1.0), ([1, 2, 3, 4], [4, 3, 2, 1], -1.0),
     ([1, 2, 3], [1, 3, 2], 1 / 3), ([1, 1, 2], [1, 2, 3], 2 / math.sqrt(2 * 3))],
    ids=["the same order is one", "the reverse order is minus one", "one swapped pair of three",
         "a tie on one side uses tau-b's denominator"],
)
def test_kendall_tau_b(a, b, tau) -> None:
    assert kendall_tau_b(a, b) == pytest.approx(tau)


def test_pair_agreement_counts_only_pairs_slurm_ordered_and_a_tie_of_ours_as_half() -> None:
    slurm = [0, 0, 5, 9]   # the first pair is tied in Slurm: not counted
    ours = [3, 1, 5, 5]    # (0,2) (0,3) (1,2) (1,3) agree, (2,3) tied = half; 5 pairs ordered
    assert pair_agreement(slurm, ours) == pytest.approx(4.5 / 5)


def test_wait_differences_are_absolute_for_the_spread_and_signed_for_the_mean() -> None:
    w = WaitDiffs.of([-4, 2, 0, 10])
    assert (w.median_abs, w.max_abs, w.mean_signed) == (3.0, 10.0, 2.0)


def facts(job: str, slurm: float, sim: float, nodes: int = 1, gpus: int = 1, submit: float = 0.0) -> JobFacts:
    return JobFacts(job, job, nodes, gpus, submit, slurm, sim, 3.0, 60.0)


def test_the_biggest_disagreements_come_first_with_a_cause() -> None:
    a = agreement([facts("a", 5, 5), facts("b", 40, 10), facts("c", 10, 12)], top=2)
    assert [f.job_id for f, _ in a.disagreements] == ["b", "c"]
    assert all(why for _, why in a.disagreements)
    assert a.within_1s == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    ("f", "cause"),
    [(facts("x", 10, 10.5), "within the 1 s resolution"),
     (facts("x", 2, 0), "launch throughput"),
     (facts("x", 45, 5), "1-min limits"),
     (facts("x", 5, 25, nodes=4), "wide job")],
    ids=["half a second is resolution", "two seconds after submission is launch",
         "Slurm much later is its plan", "we later on a wide job is a hole Slurm found"],
)
def test_each_disagreement_gets_the_likeliest_cause(f, cause) -> None:
    assert cause in explain(f, launch_rate=45)


def gang(nodes: int, submit: float = 0.0) -> Job:
    return Job(JobId("j"), TenantId("t"), (PodSet("main", nodes, PodRequest(gpus=8)),), submit, 1.0)


def test_slurm_priority_matches_the_init_prio_slurm_printed() -> None:
    # real: 2 nodes x 8 GPUs, one task per node, on 8 nodes of 64 CPUs -> InitPrio=1126
    prio = SlurmPriority(nodes=8, cpus=512, weight_size=1000, weight_partition=1000)
    assert prio.priority(gang(2), now=0.0) == 1126


def test_age_counts_only_at_the_recalculation_ticks() -> None:
    prio = SlurmPriority(nodes=8, cpus=512, weight_age=1000, max_age_s=600, calc_period_s=60)
    assert prio.priority(gang(1), now=59.0) == 0
    assert prio.priority(gang(1), now=61.0) == 100


def _fact(jid: str, nodes: int, gpus: int, slurm: float, sim: float) -> JobFacts:
    return JobFacts(jid, jid, nodes, gpus, 0.0, slurm, sim, 1.0, 60.0)


def test_job_kinds_are_ranked_by_how_far_their_starts_are_from_slurms() -> None:
    """The 3-node gang is 20 s early (−20), the 2-node gang 10 s late (+10), the two 1-GPU jobs
    0 and +2 s off (median 1, mean +1, none > 5 s): ranked by median |diff|, 20 > 10 > 1."""
    from gpufleet.adapters.slurm.compare import by_kind

    kinds = by_kind([_fact("a", 2, 8, 0, 10), _fact("b", 3, 8, 30, 10), _fact("c", 1, 1, 5, 5),
                     _fact("d", 1, 1, 5, 7)])
    assert [(k.kind, k.jobs) for k in kinds] == [("3-node gang", 1), ("2-node gang", 1),
                                                 ("1 node x 1 GPU", 2)]
    assert (kinds[0].median_abs_s, kinds[0].mean_signed_s, kinds[0].off_by_5s) == (20.0, -20.0, 1.0)
    assert (kinds[1].median_abs_s, kinds[1].mean_signed_s) == (10.0, 10.0)
    assert (kinds[2].median_abs_s, kinds[2].mean_signed_s, kinds[2].off_by_5s) == (1.0, 1.0, 0.0)


def test_the_backfill_pass_period_comes_from_two_sdiag_readings() -> None:
    """Captured 20 s apart (tests/data/slurm/README.md): passes 41 → 50, last pass at 1796062637
    → 1796062655; from the first reading's last pass, (1796062655 − 1796062637) / 9 = 2.0 s."""
    from pathlib import Path

    from gpufleet.adapters.slurm.compare_run import bf_period

    data = Path(__file__).parents[2] / "data" / "slurm"
    before, after = (data / "sdiag-before.txt").read_text(), (data / "sdiag-after.txt").read_text()
    assert bf_period(before, after, since=1796062637.0) == pytest.approx(2.0)
    assert bf_period(before, before, since=1796062637.0) is None
    assert bf_period("", after, since=0.0) is None


def test_the_report_of_a_captured_run_names_the_worst_job_kind_and_how_slurm_ended_jobs(tmp_path) -> None:
    """The captured sacct (tests/data/slurm) replayed against itself: 15 jobs, of which Slurm ended
    5 CANCELLED (12-15 and 5), 1 FAILED (4) and 1 TIMEOUT (7)."""
    import json
    from pathlib import Path

    from gpufleet.adapters.slurm.compare_run import SlurmRun, read_cluster, replay
    from gpufleet.report.slurm_compare import write_report
    from gpufleet.traces.slurm_sacct import read_sacct

    data = Path(__file__).parents[2] / "data" / "slurm"
    fleet, conf = read_cluster(data / "slurm.conf")
    trace = read_sacct(data / "sacct.txt")
    run = SlurmRun({str(j.id): str(j.id) for j in trace.jobs}, trace, 1.0, 60.0, None)
    cmp = replay(fleet, conf, list(trace.jobs), run)
    assert cmp.slurm_states == {"CANCELLED": ("12", "13", "14", "15", "5"), "FAILED": ("4",),
                                "TIMEOUT": ("7",)}
    html, js = write_report(cmp, {"wall_s": 1.0}, tmp_path)
    text = html.read_text()
    assert "Which job kinds disagree most" in text and "4-node gang" in text
    kinds = json.loads(js.read_text())["by_kind"]
    assert sum(k["jobs"] for k in kinds) == 15
    assert {k["kind"] for k in kinds} == {"1 node x 1 GPU", "1 node x 2 GPUs", "1 node x 4 GPUs",
                                          "1 node x 8 GPUs", "2-node gang", "4-node gang"}


def test_jobs_held_until_one_release_arrive_in_the_replay_at_the_release() -> None:
    """Jobs submitted with ``sbatch --hold`` and released together are first schedulable at the
    release. The captured sacct (origin = its first Submit) replayed as if released 4.25 s in:
    job 15 (Submit 4, Start 6) arrives at 4.25 and its wait counts from second 4 (sacct's times are
    whole seconds); job 1 (Submit 0, Start 0 in this capture) also arrives at 4.25, but its wait
    cannot start after its recorded Start, so it counts from 0; job 24 (Submit 12, after the
    release: a requeued job, whose Submit Slurm resets) keeps its own 12."""
    from pathlib import Path

    from gpufleet.adapters.slurm.compare_run import SlurmRun, origin_epoch, replay_jobs
    from gpufleet.traces.slurm_sacct import read_sacct

    trace = read_sacct(Path(__file__).parents[2] / "data" / "slurm" / "sacct.txt")
    origin = origin_epoch(trace)
    assert origin is not None
    run = SlurmRun({str(j.id): str(j.id) for j in trace.jobs}, trace, 1.0, 60.0, None,
                   released=origin + 4.25)
    sim_jobs, facts = replay_jobs(list(trace.jobs), run)
    arrival = {str(j.id): j.submit_time for j in sim_jobs}
    assert len(sim_jobs) == len(trace.jobs)
    assert (arrival["15"], facts["15"].submit) == (4.25, 4.0)
    assert (arrival["1"], facts["1"].submit) == (4.25, 0.0)
    assert (arrival["24"], facts["24"].submit) == (12.0, 12.0)
    assert sum(a == 4.25 for a in arrival.values()) == len(sim_jobs) - 1
