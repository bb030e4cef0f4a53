"""The live Slurm queue in our terms, and the answer to "why does my job wait, and until when?".

A ``QueueSnapshot`` holds jobs and nodes as plain records (times are epoch seconds, reasons are
already mapped to ``WaitReason``). ``explain`` combines three readings: Slurm's own reason and
planned start (``squeue --start``), what holds the capacity the job needs (running jobs on the
nodes, unavailable nodes, free vs needed GPUs), and our own estimate of the start, from a small
timeline in which running jobs end at their time limits and the pending jobs ahead of this one
(higher priority, eligible) are placed first. The estimate is deliberately simple (whole-node
GPU counts, no CPU or memory, no topology); where Slurm gives a plan, Slurm's plan is the answer
and ours is the cross-check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

from gpufleet.adapters.slurm.hostlist import compress
from gpufleet.adapters.slurm.reasons import WaitReason, map_reason, reason_detail

UNSCHEDULABLE_NODE_STATES = ("DOWN", "DRAIN", "FAIL", "MAINT", "FUTURE", "POWERED_DOWN", "NOT_RESPONDING",
                             "INVAL", "REBOOT")
SELF_CLEARING = (WaitReason.RESOURCES, WaitReason.PRIORITY, WaitReason.SCHEDULER)


@dataclass(frozen=True, slots=True)
class QueuedJob:
    job_id: str
    name: str
    state: str
    reason: str
    nodes: int
    gpus_per_node: int
    submit: float
    priority: int = 0
    account: str = ""
    qos: str = ""
    partition: str = ""
    time_limit_s: float | None = None
    start: float | None = None
    end: float | None = None
    node_list: tuple[str, ...] = ()
    planned_nodes: tuple[str, ...] = ()
    dependency: str = ""
    switches: str = ""
    required_nodes: tuple[str, ...] = ()

    @property
    def wait_reason(self) -> WaitReason:
        return map_reason(self.reason)

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def pending(self) -> bool:
        return self.state == "PENDING"

    @property
    def running(self) -> bool:
        return self.state in ("RUNNING", "COMPLETING", "SUSPENDED")


@dataclass(frozen=True, slots=True)
class NodeState:
    name: str
    state: str
    gpus: int
    gpus_alloc: int = 0
    reason: str = ""
    partitions: tuple[str, ...] = ()

    @property
    def schedulable(self) -> bool:
        return not any(flag in self.state.upper() for flag in UNSCHEDULABLE_NODE_STATES)

    @property
    def gpus_free(self) -> int:
        return max(self.gpus - self.gpus_alloc, 0) if self.schedulable else 0


@dataclass(frozen=True, slots=True)
class QueueSnapshot:
    taken_at: float
    jobs: tuple[QueuedJob, ...]
    nodes: tuple[NodeState, ...]

    def job(self, job_id: str) -> QueuedJob | None:
        return next((j for j in self.jobs if j.job_id == job_id), None)


@dataclass(frozen=True, slots=True)
class Explanation:
    job: QueuedJob
    reason: WaitReason | None
    lines: tuple[str, ...]
    slurm_start: float | None = None
    our_start: float | None = None
    blockers: tuple[str, ...] = field(default=())

    def text(self) -> str:
        return "\n".join(self.lines)


class _Timeline:
    """Per node: GPU capacity and the (start, end, gpus) holds placed on it."""

    def __init__(self, nodes: tuple[NodeState, ...], now: float) -> None:
        self.now = now
        self.capacity = {n.name: n.gpus for n in nodes if n.schedulable}
        self.holds: dict[str, list[tuple[float, float, int]]] = {name: [] for name in self.capacity}

    def hold(self, node: str, start: float, end: float, gpus: int) -> None:
        if node in self.holds:
            self.holds[node].append((start, end, gpus))

    def free_during(self, node: str, start: float, end: float) -> int:
        holds = self.holds[node]
        points = [start] + [s for s, _, _ in holds if start < s < end]
        used = max(sum(g for s, e, g in holds if s <= p < e) for p in points)
        return self.capacity[node] - used

    def earliest(self, nodes: int, gpus_per_node: int, duration: float,
                 only: tuple[str, ...] = ()) -> tuple[float, tuple[str, ...]] | None:
        if any(n not in self.capacity for n in only):
            return None
        candidates = list(only) or list(self.capacity)
        times = sorted({self.now} | {e for hs in self.holds.values() for _, e, _ in hs
                                      if self.now < e < math.inf})
        for t in times:
            fits = [n for n in candidates if self.free_during(n, t, t + duration) >= gpus_per_node]
            if len(fits) >= nodes:
                return t, tuple(fits[:nodes])
        return None


def _duration(job: QueuedJob) -> float:
    return job.time_limit_s if job.time_limit_s is not None else math.inf


def _expected_end(job: QueuedJob) -> float:
    if job.end:
        return job.end
    if job.start is not None and job.time_limit_s is not None:
        return job.start + job.time_limit_s
    return math.inf


def jobs_ahead(snap: QueueSnapshot, job: QueuedJob) -> list[QueuedJob]:
    """Eligible pending jobs Slurm would try first: same partition, higher priority (then older)."""
    return sorted(
        (j for j in snap.jobs
         if j.pending and j.job_id != job.job_id and j.wait_reason in SELF_CLEARING
         and (not job.partition or j.partition == job.partition)
         and (j.priority, -j.submit) > (job.priority, -job.submit)),
        key=lambda j: (-j.priority, j.submit, j.job_id),
    )


def estimate_start(snap: QueueSnapshot, job: QueuedJob, *, with_jobs_ahead: bool = True
                   ) -> tuple[float, tuple[str, ...]] | None:
    """Our earliest start: running jobs end at their limits, jobs ahead are placed first."""
    line = _Timeline(snap.nodes, snap.taken_at)
    for run in (j for j in snap.jobs if j.running):
        for name in run.node_list:
            line.hold(name, snap.taken_at, _expected_end(run), run.gpus_per_node)
    if with_jobs_ahead:
        for ahead in jobs_ahead(snap, job):
            slot = line.earliest(ahead.nodes, ahead.gpus_per_node, _duration(ahead), ahead.required_nodes)
            if slot is not None:
                for name in slot[1]:
                    line.hold(name, slot[0], slot[0] + _duration(ahead), ahead.gpus_per_node)
    return line.earliest(job.nodes, job.gpus_per_node, _duration(job), job.required_nodes)


def _when(t: float | None) -> str:
    if t is None or math.isinf(t):
        return "unknown"
    return datetime.fromtimestamp(t).isoformat(sep=" ", timespec="seconds")


def _gpus_text(job: QueuedJob) -> str:
    return f"{job.nodes} node(s) x {job.gpus_per_node} GPU(s) ({job.gpus} GPUs)"


def explain(snap: QueueSnapshot, job_id: str) -> Explanation:
    job = snap.job(job_id)
    if job is None:
        raise KeyError(job_id)
    head = f"job {job.job_id} ({job.name}, account {job.account or '-'}, qos {job.qos or '-'})"
    limit = f"{job.time_limit_s / 60:.0f} min" if job.time_limit_s is not None else "no limit"
    lines = [f"{head}: {job.state}", f"asks for {_gpus_text(job)}, time limit {limit}"]
    if not job.pending:
        where = compress(job.node_list) if job.node_list else "-"
        lines.append(f"not waiting: started {_when(job.start)} on {where}")
        return Explanation(job, None, tuple(lines))
    reason = job.wait_reason
    lines.append(f"Slurm reason: {job.reason} -> {reason}: {reason.explanation}")
    lines += _specifics(snap, job, reason)
    blockers = _blockers(snap, job, show_holders=reason in SELF_CLEARING)
    lines += blockers
    ahead = jobs_ahead(snap, job)
    if ahead:
        shown = ", ".join(f"{j.job_id} ({j.gpus} GPUs, prio {j.priority})" for j in ahead[:5])
        more = f" and {len(ahead) - 5} more" if len(ahead) > 5 else ""
        lines.append(f"{len(ahead)} eligible job(s) ahead of it: {shown}{more}")
    slurm_start = job.start if job.start else None
    plan = f" on {compress(job.planned_nodes)}" if job.planned_nodes else ""
    lines.append(f"Slurm's planned start: {_when(slurm_start)}{plan}" if slurm_start
                 else "Slurm's planned start: none yet (not planned by the backfill scheduler)")
    ours = estimate_start(snap, job) if reason in SELF_CLEARING or reason is WaitReason.NODES_UNAVAILABLE \
        else None
    if reason not in SELF_CLEARING and reason is not WaitReason.NODES_UNAVAILABLE:
        lines.append(f"our reading: no start estimate while the job waits for {reason} (not for capacity)")
    elif ours is None:
        only = f" among its required nodes {compress(job.required_nodes)}" if job.required_nodes else ""
        lines.append(f"our reading: it cannot start on the schedulable nodes{only} as they are "
                     f"(needs {job.nodes} node(s) with {job.gpus_per_node} free GPUs each)")
    else:
        first = f", placed first: {', '.join(j.job_id for j in ahead)}" if ahead else ""
        lines.append(f"our reading: {_when(ours[0])} on {compress(ours[1])} "
                     f"(running jobs end at their time limits{first})")
    return Explanation(job, reason, tuple(lines), slurm_start, ours[0] if ours else None, tuple(blockers))


def _specifics(snap: QueueSnapshot, job: QueuedJob, reason: WaitReason) -> list[str]:
    detail = reason_detail(job.reason)
    if reason is WaitReason.NODES_UNAVAILABLE:
        down = [n for n in snap.nodes if not n.schedulable]
        text = ", ".join(f"{n.name} ({n.state.lower()}{': ' + n.reason if n.reason else ''})" for n in down)
        required = f"; it requires {compress(job.required_nodes)}" if job.required_nodes else ""
        return [f"unavailable: {detail or '-'}{required}; not schedulable now: {text or 'none'}"]
    if reason is WaitReason.DEPENDENCY:
        return [f"depends on: {job.dependency or detail or '(not shown by Slurm)'}"]
    if reason is WaitReason.BEGIN_TIME:
        return [f"eligible from: {_when(job.start)}"]
    if reason is WaitReason.HELD:
        return [f"release it with: scontrol release {job.job_id}"]
    if reason is WaitReason.QUOTA:
        return [f"limit hit: {job.reason} (qos {job.qos or '-'}, account {job.account or '-'})"]
    if job.switches:
        return [f"topology: asks for at most {job.switches} (switches@max-wait)"]
    return []


def _blockers(snap: QueueSnapshot, job: QueuedJob, show_holders: bool) -> list[str]:
    """Free vs needed GPUs; when capacity is what it waits for, the running jobs that hold it."""
    usable = [n for n in snap.nodes if n.schedulable and (not job.partition or not n.partitions
                                                            or job.partition in n.partitions)]
    free_gpus = sum(n.gpus_free for n in usable)
    fitting = [n.name for n in usable if n.gpus_free >= job.gpus_per_node]
    lines = [f"free now: {free_gpus} GPUs on {sum(1 for n in usable if n.gpus_free)} node(s); "
             f"needs {job.nodes} node(s) with {job.gpus_per_node} free GPUs, "
             f"{len(fitting)} such node(s) now" + (f" ({compress(fitting)})" if fitting else "")]
    if not show_holders or len(fitting) >= job.nodes:
        return lines
    running = sorted((j for j in snap.jobs if j.running and j.node_list), key=_expected_end)
    for run in running[:8]:
        lines.append(f"  held by job {run.job_id} ({run.name}, {run.account or '-'}): "
                     f"{compress(run.node_list)}, {run.gpus} GPUs, until ~{_when(_expected_end(run))}")
    if len(running) > 8:
        lines.append(f"  ... and {len(running) - 8} more running jobs")
    return lines
