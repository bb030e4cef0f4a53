"""`gpufleet slurm compare`: one workload on a real Slurm and in our simulator, side by side.

1. **Workload** (``compare_workload``): short sleep jobs of R nodes × G GPUs (R in 1–4, G in 1, 2,
   4, 8), run times of seconds, time limits of whole minutes (Slurm's floor), all one account.
   Time is compressed, not scaled: a job "runs" ``sleep s``.
2. **Slurm** (``run_on_slurm``): ``sbatch --hold`` each job in order (``--nodes=R
   --ntasks-per-node=1 --gres=gpu:G --time=M``), release them all with one ``scontrol release``
   (which sends one update per job, back to back), then poll ``sacct`` until every job's record
   is complete. The workload's jobs all arrive at t = 0; held and released together they reach
   Slurm's scheduler within a fraction of a second. Submitted one by one, the first few started
   before the rest existed, and how many depended on how fast sbatch ran: 24 runs of the 48-job
   test gave 69-94 % of pairs in Slurm's order, 18 held runs 86-95 % (bench/README.md).
3. **Replay** (``replay``): the same jobs in the simulator on the fleet read from the cluster's
   slurm.conf, gres.conf and topology.conf, with Slurm's submit times and Slurm's observed run
   times (Elapsed) — so the only difference left is the scheduling decision — under the Slurm-like
   profile (policies/slurm_like.py) with the priority weights read from slurm.conf.
4. **Agreement** (compare.py): order and wait differences, and the biggest disagreements.
"""

from __future__ import annotations

import contextlib
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

import numpy as np

from gpufleet.adapters.slurm.compare import Agreement, JobFacts, agreement, facts_from
from gpufleet.adapters.slurm.conf import SlurmConf, read_slurm_conf
from gpufleet.adapters.slurm.fleet_conf import read_fleet
from gpufleet.adapters.slurm.reader import Runner, SlurmReader
from gpufleet.adapters.slurm.settings import profile_from_conf
from gpufleet.adapters.slurm.writer import SlurmWriter
from gpufleet.model.fleet import Fleet
from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.policies.slurm_like import SlurmPriority
from gpufleet.sim.runner import SimResult, simulate
from gpufleet.traces.slurm_sacct import SacctTrace


def compare_workload(n: int, seed: int = 1, account: str = "research", max_nodes: int = 4,
                     run_s: tuple[int, int] = (1, 6), max_gpus: int = 8) -> list[Job]:
    """``n`` jobs ``j0001``… of R nodes × G GPUs: R ≤ ``max_nodes`` (1 most often), G in 1, 2, 4, 8
    up to ``max_gpus`` (a node's GPUs: a larger request could never start).

    Limits: 1 minute for most, 2 for a quarter — different limits are what backfill plans with.
    """
    rng = np.random.default_rng(seed)
    nodes_p = np.array([0.45, 0.25, 0.15, 0.15])[:max_nodes]
    nodes_p = nodes_p / nodes_p.sum()
    sizes = [g for g in (1, 2, 4, 8) if g <= max_gpus] or [1]
    sizes_p = np.array([0.35, 0.2, 0.2, 0.25])[:len(sizes)]
    sizes_p = sizes_p / sizes_p.sum()
    jobs = []
    for i in range(n):
        nodes = int(rng.choice(np.arange(1, len(nodes_p) + 1), p=nodes_p))
        gpus = int(rng.choice(sizes, p=sizes_p))
        run = int(rng.integers(run_s[0], run_s[1] + 1))
        limit = 120.0 if rng.random() < 0.25 else 60.0
        jobs.append(Job(id=JobId(f"j{i + 1:04d}"), tenant=TenantId(account),
                        pod_sets=(PodSet("main", nodes, PodRequest(gpus=gpus)),), submit_time=0.0,
                        run_time=float(run), run_time_estimate=limit))
    return jobs


@dataclass(frozen=True)
class SlurmRun:
    ids: dict[str, str]
    trace: SacctTrace
    submit_s: float
    drain_s: float
    #: Epoch seconds when slurmctld's statistics (and its priority recalculation ticks) began.
    ctld_since: float | None
    #: Epoch seconds at which each sbatch returned (sub-second; sacct's Submit is whole seconds).
    sent: dict[str, float] = field(default_factory=dict)
    #: Seconds between two backfill passes as slurmctld ran them (sdiag; see ``bf_period``).
    bf_period_s: float | None = None
    #: Epoch seconds at which ``scontrol release`` freed the held jobs (all of them at once), or
    #: None when they were submitted unheld: then each job arrives when its sbatch returned.
    released: float | None = None


def ctld_since(run: Runner) -> float | None:
    """``sdiag``'s "Data since" epoch: slurmctld's start (unless someone ran ``sdiag --reset``)."""
    try:
        m = re.search(r"Data since\s+.*\((\d+)\)", run(["sdiag"]))
    except Exception:  # noqa: BLE001 - a missing sdiag only costs the phase of the age ticks
        return None
    return float(m.group(1)) if m else None


def _bf_stats(sdiag_text: str) -> tuple[int, float] | None:
    """(Total cycles, Last cycle when) of sdiag's "Backfilling stats"."""
    section = sdiag_text.split("Backfilling stats", 1)
    if len(section) < 2:
        return None
    cycles = re.search(r"Total cycles:\s*(\d+)", section[1])
    last = re.search(r"Last cycle when:.*\((\d+)\)", section[1])
    if cycles is None:
        return None
    return int(cycles.group(1)), float(last.group(1)) if last else 0.0


def bf_period(before: str, after: str, since: float) -> float | None:
    """Mean seconds from one backfill pass to the next while our jobs were queued: (time of the
    last pass − ``since``, the first submission) / passes run since, from sdiag's "Backfilling
    stats" taken before and after. With bf_interval=2 on the emulated cluster the captured pair
    (tests/data/slurm/sdiag-*.txt) gives 9 passes in 18 s: 2.0 s, passes of 4-160 ms (docs/slurm.md,
    "Backfill pass period and duration"). None when sdiag says too little.
    """
    b, a = _bf_stats(before), _bf_stats(after)
    if b is None or a is None or a[0] - b[0] < 2:
        return None
    period = (a[1] - since) / (a[0] - b[0])
    return period if period > 0 else None


def _sdiag(run: Runner) -> str:
    try:
        return run(["sdiag"])
    except Exception:  # noqa: BLE001 - without sdiag: no phase for the age ticks, no pass period
        return ""


def run_on_slurm(run: Runner, jobs: Sequence[Job], timeout_s: float = 300.0, poll_s: float = 1.0,
                 hold: bool = True) -> SlurmRun:
    """Submit ``jobs`` held, in order, release them together, then wait until ``sacct`` has a
    complete record of each. ``hold=False`` submits them unheld (bench/slurm_compare.py measures
    both)."""
    before = _sdiag(run)
    since = ctld_since(lambda argv: before)
    t0 = time.monotonic()
    writer = SlurmWriter(run, gpus_per_node=None, extra=("--hold",) if hold else ())
    ids: dict[str, str] = {}
    sent: dict[str, float] = {}
    released: float | None = None
    try:
        for job in jobs:
            ids[str(job.id)] = writer.submit(job)
            sent[str(job.id)] = time.time()
        if ids and hold:
            released = time.time()  # no job can start before the release begins
            run(["scontrol", "release", ",".join(ids.values())])
    except BaseException:
        if hold and ids and released is None:  # never leave held jobs in someone's queue
            _cancel(run, list(ids.values()))
        raise
    submitted = time.monotonic()
    reader = SlurmReader(run)
    deadline = submitted + timeout_s
    while True:
        trace = reader.sacct(list(ids.values()))
        if len(trace.jobs) + len(trace.not_started) >= len(ids):
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"sacct: {len(trace.jobs)} of {len(ids)} jobs complete after "
                               f"{timeout_s:.0f} s ({trace.summary()})")
        time.sleep(poll_s)
    # held jobs give backfill nothing to count, so the period is measured from the release
    since_first = released if released is not None else min(sent.values(), default=None)
    period = bf_period(before, _sdiag(run), since_first) if since_first is not None else None
    return SlurmRun(ids, trace, submitted - t0, time.monotonic() - submitted, since, sent, period,
                    released)


def _cancel(run: Runner, slurm_ids: list[str]) -> None:
    """Best effort: the error that brought us here is the one to report."""
    with contextlib.suppress(Exception):
        run(["scancel", *slurm_ids])


@dataclass(frozen=True)
class Comparison:
    agreement: Agreement
    facts: tuple[JobFacts, ...]
    sim: SimResult
    profile: str
    priority: SlurmPriority
    slurm_makespan_s: float
    sim_makespan_s: float
    left_out: tuple[str, ...] = ()
    #: Jobs Slurm did not end COMPLETED, by state (NODE_FAIL, TIMEOUT, FAILED, ...): our ids.
    slurm_states: dict[str, tuple[str, ...]] = field(default_factory=dict)


#: sacct's Submit is a whole second; the job arrived somewhere in that second. Without our own
#: clock reading, half a second in: a 1 s scheduling cadence takes it at the next whole second,
#: as Slurm's first pass after the submission does (its start is also recorded in whole seconds).
SUBMIT_OFFSET_S = 0.5


def replay_jobs(jobs: Sequence[Job], slurm: SlurmRun) -> tuple[list[Job], dict[str, JobFacts]]:
    """Our jobs with Slurm's submit times, observed run times and limits; facts per job."""
    by_slurm = {str(j.id): (j, r) for j, r in zip(slurm.trace.jobs, slurm.trace.records, strict=True)}
    origin = origin_epoch(slurm.trace)
    out, info = [], {}
    for job in jobs:
        sid = slurm.ids.get(str(job.id))
        if sid is None or sid not in by_slurm:
            continue
        seen, rec = by_slurm[sid]
        assert rec.start is not None and rec.end is not None
        limit = seen.run_time_estimate if seen.run_time_estimate is not None else job.estimate
        submit, recorded = rec.submit + SUBMIT_OFFSET_S, rec.submit
        if origin is not None and slurm.released is not None:
            # held until the release: that is when Slurm could first schedule it (sacct's
            # Submit is the sbatch; its Start is a whole second, hence the floor for the facts)
            submit = max(slurm.released - origin, rec.submit)
            recorded = float(min(math.floor(submit), rec.start))
        elif origin is not None and str(job.id) in slurm.sent:
            # sbatch returned within the second sacct records: keep our sub-second time.
            submit = min(max(slurm.sent[str(job.id)] - origin, rec.submit), rec.submit + 0.999)
        out.append(replace(job, submit_time=submit, run_time=max(rec.end - rec.start, 0.5),
                           run_time_estimate=limit))
        ps = job.pod_sets[0]
        info[str(job.id)] = JobFacts(str(job.id), sid, ps.replicas, ps.request.gpus, recorded, rec.start,
                                     rec.start, rec.end - rec.start, limit)
    return out, info


def replay(fleet: Fleet, conf: SlurmConf, jobs: Sequence[Job], slurm: SlurmRun,
           backfill: str = "conservative", top: int = 12, slurm_nodes: bool = False,
           pass_timing: bool = False) -> Comparison:
    """Simulate ``jobs`` as Slurm saw them and measure the agreement of the two schedules;
    ``pass_timing`` schedules at the pass period slurmctld achieved (``SlurmRun.bf_period_s``)
    instead of exactly every ``bf_interval``."""
    sim_jobs, info = replay_jobs(jobs, slurm)
    origin = slurm.trace.origin
    phase = 0.0
    if slurm.ctld_since is not None and origin is not None:
        phase = slurm.ctld_since - origin.timestamp()
    setup = profile_from_conf(conf, fleet, backfill=backfill, phase_s=phase, slurm_nodes=slurm_nodes,
                              epoch_s=origin.timestamp() if origin is not None else 0.0)
    prio, profile = setup.priority, setup.profile
    interval = setup.cycle_interval_s
    if pass_timing and slurm.bf_period_s is not None:
        interval = max(interval, slurm.bf_period_s)
    result = simulate(fleet, sim_jobs, profile, cycle_interval_s=interval)
    slurm_starts = {j: f.slurm_start for j, f in info.items()}
    facts = facts_from(slurm_starts, result.starts, info)
    rate = len(jobs) / max(slurm.submit_s + slurm.drain_s, 1e-9)
    agree = agreement(facts, top=top, launch_rate=rate)
    left = tuple(sorted(set(str(j.id) for j in jobs) - {f.job_id for f in facts}))
    slurm_end = max((r.end or 0.0) for r in slurm.trace.records) if slurm.trace.records else 0.0
    state_of = {r.job_id: r.state for r in slurm.trace.records}
    states: dict[str, list[str]] = {}
    for ours, sid in sorted(slurm.ids.items()):
        state = state_of.get(sid)
        if state is not None and state != "COMPLETED":
            states.setdefault(state, []).append(ours)
    return Comparison(agree, tuple(facts), result, profile.name, prio, slurm_end,
                      max(result.finishes.values(), default=0.0), left,
                      {k: tuple(v) for k, v in sorted(states.items())})


def cluster_files(slurm_conf: str | Path) -> tuple[Path, Path | None, list[Path]]:
    """slurm.conf and, next to it, gres.conf and topology.conf when they exist."""
    conf = Path(slurm_conf)
    gres = conf.with_name("gres.conf")
    topo = conf.with_name("topology.conf")
    return conf, gres if gres.is_file() else None, [topo] if topo.is_file() else []


def read_cluster(slurm_conf: str | Path) -> tuple[Fleet, SlurmConf]:
    conf_path, gres, topo = cluster_files(slurm_conf)
    return read_fleet(conf_path, gres, topo).fleet, read_slurm_conf(conf_path, gres)


def origin_epoch(trace: SacctTrace) -> float | None:
    return trace.origin.timestamp() if isinstance(trace.origin, datetime) else None
