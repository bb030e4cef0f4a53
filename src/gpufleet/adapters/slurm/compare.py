"""How close a simulated schedule is to what a real Slurm did with the same jobs: the arithmetic.

Inputs are two maps job → start time (seconds after the first submission) and the submit times.
Start times from ``sacct`` have one-second resolution, so ties are common; every measure below
says what it does with them.

* **Kendall's tau-b** over the start times: for each pair (i, j), s = sign(a_i − a_j) ·
  sign(b_i − b_j); tau_b = Σ s / sqrt((P − T_a) · (P − T_b)), with P the number of pairs and
  T_a, T_b the pairs tied in a, in b. 1 = same order, 0 = unrelated, −1 = reversed.
* **Pair agreement**: of the pairs that Slurm started at different times, the fraction our
  schedule starts in the same order; a pair we start at the same second counts one half.
  The easier number to read: 0.9 = nine pairs in ten come out in Slurm's order.
* **Wait differences**: per job |wait_sim − wait_slurm| = |start_sim − start_slurm| (same
  submit time on both sides), reported as median, p95 and max; and the signed mean (positive:
  we start later than Slurm).
* **Disagreements**: the jobs with the largest |difference|, each with the likeliest cause found
  in its numbers (``explain``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np


def _pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sign(a_i − a_j), sign(b_i − b_j) over the pairs i < j."""
    i, j = np.triu_indices(len(a), k=1)
    return np.sign(a[i] - a[j]), np.sign(b[i] - b[j])


def kendall_tau_b(a: Sequence[float], b: Sequence[float]) -> float:
    """Kendall's tau-b of two rankings given as values (ties allowed); nan below two items or
    when one side is all ties."""
    x, y = np.asarray(a, float), np.asarray(b, float)
    if len(x) != len(y):
        raise ValueError("kendall_tau_b: the two sequences differ in length")
    if len(x) < 2:
        return float("nan")
    sa, sb = _pairs(x, y)
    pairs = len(sa)
    untied_a, untied_b = np.count_nonzero(sa), np.count_nonzero(sb)
    if untied_a == 0 or untied_b == 0:
        return float("nan")
    return float((sa * sb).sum() / np.sqrt(float(untied_a) * float(untied_b))) if pairs else float("nan")


def pair_agreement(reference: Sequence[float], other: Sequence[float]) -> float:
    """Of the pairs ordered in ``reference``, the fraction ``other`` orders the same way
    (a tie in ``other`` counts one half); nan when ``reference`` orders no pair."""
    sa, sb = _pairs(np.asarray(reference, float), np.asarray(other, float))
    ordered = sa != 0
    if not ordered.any():
        return float("nan")
    same = (sa[ordered] == sb[ordered]).sum() + 0.5 * (sb[ordered] == 0).sum()
    return float(same / ordered.sum())


@dataclass(frozen=True)
class WaitDiffs:
    median_abs: float
    p95_abs: float
    max_abs: float
    mean_signed: float

    @classmethod
    def of(cls, diffs: Sequence[float]) -> WaitDiffs:
        d = np.asarray(diffs, float)
        if not len(d):
            return cls(float("nan"), float("nan"), float("nan"), float("nan"))
        a = np.abs(d)
        return cls(float(np.median(a)), float(np.percentile(a, 95)), float(a.max()), float(d.mean()))


@dataclass(frozen=True)
class JobFacts:
    """What ``explain`` needs to know about one job (all times in seconds after the origin)."""

    job_id: str
    slurm_id: str
    nodes: int
    gpus_per_node: int
    submit: float
    slurm_start: float
    sim_start: float
    run_s: float
    limit_s: float

    @property
    def diff(self) -> float:
        return self.sim_start - self.slurm_start


@dataclass(frozen=True)
class Agreement:
    jobs: int
    kendall_tau_b: float
    pair_agreement: float
    waits: WaitDiffs
    within_1s: float
    within_5s: float
    disagreements: tuple[tuple[JobFacts, str], ...] = field(default=())

    def as_dict(self) -> dict[str, object]:
        return {
            "jobs": self.jobs, "kendall_tau_b": round(self.kendall_tau_b, 4),
            "pair_agreement": round(self.pair_agreement, 4),
            "wait_diff_median_s": round(self.waits.median_abs, 2),
            "wait_diff_p95_s": round(self.waits.p95_abs, 2),
            "wait_diff_max_s": round(self.waits.max_abs, 2),
            "wait_diff_mean_signed_s": round(self.waits.mean_signed, 2),
            "within_1s": round(self.within_1s, 4), "within_5s": round(self.within_5s, 4),
            "disagreements": [{"job": f.job_id, "slurm_id": f.slurm_id,
                               "shape": f"{f.nodes}x{f.gpus_per_node}", "submit": f.submit,
                               "slurm_start": f.slurm_start, "sim_start": f.sim_start,
                               "diff_s": round(f.diff, 2), "why": why} for f, why in self.disagreements],
        }


#: Launch and accounting granularity: differences this small are noise, not a decision.
NOISE_S = 1.0


def explain(f: JobFacts, launch_rate: float) -> str:
    """The likeliest cause of one job's difference, from its own numbers.

    Rules, first match wins: within ``NOISE_S`` is timestamp resolution; Slurm later than us by
    less than the queue position ÷ launch rate is launch throughput (Slurm allocates ≈ 40–50
    jobs/s on this box, we start any number at once); Slurm later by ≈ a whole time limit is a
    backfill plan built on limits (a job whose predecessor ended early waits for the next
    scheduling pass or the limit); Slurm earlier is backfill we did not allow (our plan is
    stricter, e.g. minute-rounded ``bf_resolution`` or a different node choice left no hole);
    the rest is a different decision order (priority recalculation every PriorityCalcPeriod).
    """
    d = f.diff
    if abs(d) <= NOISE_S:
        return "same start within the 1 s resolution of sacct"
    if d < 0 and -d <= 3.0 and f.slurm_start - f.submit <= 3.0:
        return ("Slurm started it a few seconds after submission: submission and launch throughput "
                f"(≈{launch_rate:.0f} jobs/s here); we start at once")
    if d < 0:
        if abs(-d - f.limit_s) <= 15.0 or -d >= 30.0:
            return ("Slurm held it about one time limit longer: its plan ends running jobs at their "
                    f"{f.limit_s / 60:.0f}-min limits (bf_resolution 60 s) and it waited for that plan or "
                    "for a later scheduling pass (bf_interval, sched_min_interval)")
        return ("Slurm started it later: node choice (cons_tres packing vs our best fit) or a scheduling "
                "pass that had not run yet (bf_interval 1 s)")
    if f.nodes > 1 or f.gpus_per_node >= 8:
        return ("we started it later: Slurm found a hole for this wide job earlier — a different "
                "earlier placement left whole nodes free there")
    return ("we started it later: Slurm backfilled it into a hole our plan kept for a higher-priority "
            "job (different reservation or priority order after a recalculation)")


def agreement(facts: Sequence[JobFacts], top: int = 10, launch_rate: float = 45.0) -> Agreement:
    """All the measures over ``facts`` (jobs that started on both sides)."""
    slurm = [f.slurm_start for f in facts]
    sim = [f.sim_start for f in facts]
    diffs = [f.diff for f in facts]
    waits = WaitDiffs.of(diffs)
    a = np.abs(np.asarray(diffs, float))
    worst = sorted(facts, key=lambda f: (-abs(f.diff), f.slurm_start, f.job_id))[:top]
    return Agreement(
        jobs=len(facts), kendall_tau_b=kendall_tau_b(slurm, sim), pair_agreement=pair_agreement(slurm, sim),
        waits=waits, within_1s=float((a <= 1.0).mean()) if len(a) else float("nan"),
        within_5s=float((a <= 5.0).mean()) if len(a) else float("nan"),
        disagreements=tuple((f, explain(f, launch_rate)) for f in worst),
    )


def facts_from(starts_slurm: Mapping[str, float], starts_sim: Mapping[str, float],
               info: Mapping[str, JobFacts]) -> list[JobFacts]:
    """Join the two schedules on our job id; jobs missing on either side are left out."""
    out = []
    for jid in sorted(starts_slurm):
        if jid in starts_sim and jid in info:
            base = info[jid]
            out.append(JobFacts(base.job_id, base.slurm_id, base.nodes, base.gpus_per_node, base.submit,
                                starts_slurm[jid], starts_sim[jid], base.run_s, base.limit_s))
    return out


def job_kind(f: JobFacts) -> str:
    """The kind a job is compared under: one-node jobs by GPU count (partial or whole node), gangs
    by node count."""
    if f.nodes == 1:
        return f"1 node x {f.gpus_per_node} GPU" + ("s" if f.gpus_per_node > 1 else "")
    return f"{f.nodes}-node gang"


@dataclass(frozen=True)
class KindDisagreement:
    kind: str
    jobs: int
    median_abs_s: float
    mean_signed_s: float
    off_by_5s: float


def by_kind(facts: Sequence[JobFacts]) -> list[KindDisagreement]:
    """Per job kind: how many, median |start difference|, mean signed difference (sim − Slurm) and
    the share of jobs more than 5 s off; the kind that disagrees most first (by median, then share)."""
    groups: dict[str, list[float]] = {}
    for f in facts:
        groups.setdefault(job_kind(f), []).append(f.diff)
    out = []
    for kind, diffs in groups.items():
        d = np.asarray(diffs, float)
        out.append(KindDisagreement(kind, len(d), float(np.median(np.abs(d))), float(d.mean()),
                                    float((np.abs(d) > 5.0).mean())))
    return sorted(out, key=lambda k: (-k.median_abs_s, -k.off_by_5s, k.kind))
