"""`gpufleet slurm explain JOB`: why a Slurm job waits, what holds it, and when it would start.

Three readings side by side: Slurm's own reason and planned start (``squeue --start``); what holds
the capacity the job needs (running jobs on the nodes, nodes down or drained, free vs needed
GPUs); and the engine's reading: one ``run_cycle`` over Slurm's state (engine_view.py) gives the
job's Status — its code, the chain of reasons that held it back, its estimated start and planned
nodes. Where Slurm gives a plan, Slurm's plan is the answer and the engine's is the cross-check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

from gpufleet.adapters.slurm.conf import SlurmConf
from gpufleet.adapters.slurm.engine_view import (
    WAITS_FOR_CAPACITY,
    EngineReading,
    engine_reading,
    release_schedule,
)
from gpufleet.adapters.slurm.hostlist import compress
from gpufleet.adapters.slurm.queue import SELF_CLEARING, QueuedJob, QueueSnapshot, jobs_ahead
from gpufleet.adapters.slurm.reasons import WaitReason, reason_detail, slurm_reason_code
from gpufleet.model.fleet import Fleet


@dataclass(frozen=True, slots=True)
class Explanation:
    job: QueuedJob
    reason: WaitReason | None
    lines: tuple[str, ...]
    slurm_start: float | None = None
    our_start: float | None = None
    blockers: tuple[str, ...] = field(default=())
    engine: EngineReading | None = None

    def text(self) -> str:
        return "\n".join(self.lines)


def when(t: float | None) -> str:
    if t is None or math.isinf(t):
        return "unknown"
    return datetime.fromtimestamp(t).isoformat(sep=" ", timespec="seconds")


def _gpus_text(job: QueuedJob) -> str:
    return f"{job.nodes} node(s) x {job.gpus_per_node} GPU(s) ({job.gpus} GPUs)"


def _unique(reasons: tuple[str, ...]) -> list[str]:
    """The reason chain without repeats (a reason written by two phases is shown once)."""
    return list(dict.fromkeys(reasons))


def explain(snap: QueueSnapshot, job_id: str, fleet: Fleet | None = None,
            conf: SlurmConf | None = None) -> Explanation:
    """The explanation of ``job_id``; ``fleet``/``conf`` from slurm.conf make the engine's reading
    use the real topology and backfill settings (without them: GPU counts from scontrol)."""
    job = snap.job(job_id)
    if job is None:
        raise KeyError(job_id)
    head = f"job {job.job_id} ({job.name}, account {job.account or '-'}, qos {job.qos or '-'})"
    limit = f"{job.time_limit_s / 60:.0f} min" if job.time_limit_s is not None else "no limit"
    lines = [f"{head}: {job.state}", f"asks for {_gpus_text(job)}, time limit {limit}"]
    down = [n for n in snap.nodes if not n.schedulable]
    if not job.pending:
        where = compress(job.node_list) if job.node_list else "-"
        lines.append(_ending(job, where) if job.state == "COMPLETING"
                     else f"not waiting: started {when(job.start)} on {where}")
        hit = sorted(set(job.node_list) & {n.name for n in down})
        if hit:
            lines.append(f"warning: its node(s) {compress(hit)} are "
                         + ", ".join(f"{n.state.lower()}" for n in down if n.name in hit)
                         + ": Slurm ends or requeues the job (NODE_FAIL) once it gives up on them")
        return Explanation(job, None, tuple(lines))
    reason = job.wait_reason
    lines.append(f"Slurm reason: {job.reason} -> {reason}: {reason.explanation}")
    lines += _specifics(snap, job, reason)
    blockers = _blockers(snap, job, show_holders=reason in SELF_CLEARING, fleet=fleet, conf=conf)
    lines += blockers
    if down and reason is not WaitReason.NODES_UNAVAILABLE:
        lines.append("not schedulable now: " + ", ".join(
            f"{n.name} ({n.state.lower()}{': ' + n.reason if n.reason else ''})" for n in down))
    ahead = jobs_ahead(snap, job)
    if ahead:
        shown = ", ".join(f"{j.job_id} ({j.gpus} GPUs, prio {j.priority})" for j in ahead[:5])
        more = f" and {len(ahead) - 5} more" if len(ahead) > 5 else ""
        lines.append(f"{len(ahead)} eligible job(s) ahead of it: {shown}{more}")
    slurm_start = job.start if job.start else None
    plan = f" on {compress(job.planned_nodes)}" if job.planned_nodes else ""
    lines.append(f"Slurm's planned start: {when(slurm_start)}{plan}" if slurm_start
                 else "Slurm's planned start: none yet (not planned by the backfill scheduler)")
    reading, line = _engine_line(snap, job, reason, fleet, conf)
    lines.append(line)
    our = reading.estimated_start if reading is not None else None
    return Explanation(job, reason, tuple(lines), slurm_start, our, tuple(blockers), reading)


#: Slurm reasons a job carries when it ended because a node under it failed.
NODE_FAILURE_REASONS = ("NodeDown", "NodeFail", "NODE_FAIL")


def _ending(job: QueuedJob, where: str) -> str:
    """A COMPLETING job has ended: Slurm is still cleaning up (epilogs; after a node failure,
    the dead node's part) and holds its nodes until then. Captured: a gang whose node was killed
    is listed COMPLETING with Reason=NodeDown and its live nodes for a few seconds
    (tests/data/slurm/completing/)."""
    cause = f" (reason {job.reason})" if job.reason and job.reason != "None" else ""
    text = (f"ending: Slurm lists it COMPLETING{cause}: it ran from {when(job.start)}"
            f" to {when(job.end)}; Slurm is cleaning up on {where}, which stay allocated until it "
            "leaves the queue")
    if slurm_reason_code(job.reason) in NODE_FAILURE_REASONS:
        text += ("; a node under it failed: Slurm ends it NODE_FAIL, or requeues it if it may be "
                 "requeued (sacct shows which)")
    return text


def _engine_line(snap: QueueSnapshot, job: QueuedJob, reason: WaitReason, fleet: Fleet | None,
                 conf: SlurmConf | None) -> tuple[EngineReading | None, str]:
    if reason not in WAITS_FOR_CAPACITY:
        return None, f"engine: no start estimate while the job waits for {reason} (not for capacity)"
    unavailable = sorted(set(job.required_nodes) & {n.name for n in snap.nodes if not n.schedulable})
    if unavailable:
        return None, (f"engine: it cannot start until its required node(s) {compress(unavailable)} "
                      "return to service")
    reading = engine_reading(snap, job.job_id, fleet, conf)
    if reading.held_to_switch:
        return reading, (f"engine: not planned while --switches={job.switches} binds: no leaf switch has "
                         f"{job.nodes} usable nodes (Slurm relaxes it when the wait runs out)")
    if reading.starts_now:
        return reading, ("engine: it fits now; Slurm's next scheduling pass (or bf_interval) should "
                         "start it")
    status = reading.status
    if status is None:
        return reading, "engine: no reading (the job is not in the engine's queue)"
    chain = "; ".join(_unique(status.reasons)) or "no reason given"
    start = (f"; estimated start {when(status.estimated_start)}"
             + (f" on {compress(list(reading.planned_nodes))}" if reading.planned_nodes else "")
             if status.estimated_start is not None else "; no start within the backfill window")
    return reading, f"engine ({status.policy}): {status.code}: {chain}{start}"


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
        return [f"eligible from: {when(job.start)}"]
    if reason is WaitReason.HELD:
        return [f"release it with: scontrol release {job.job_id}"]
    if reason is WaitReason.QUOTA:
        return [f"limit hit: {job.reason} (qos {job.qos or '-'}, account {job.account or '-'})"]
    if job.switches:
        return [f"topology: asks for at most {job.switches} (switches@max-wait)"]
    return []


def _blockers(snap: QueueSnapshot, job: QueuedJob, show_holders: bool, fleet: Fleet | None = None,
              conf: SlurmConf | None = None) -> list[str]:
    """Free vs needed GPUs; when capacity is what it waits for, the running jobs that hold it,
    in the order the engine's capacity timeline expects them to end (``release_schedule``)."""
    usable = [n for n in snap.nodes if n.schedulable and (not job.partition or not n.partitions
                                                            or job.partition in n.partitions)]
    free_gpus = sum(n.gpus_free for n in usable)
    fitting = [n.name for n in usable if n.gpus_free >= job.gpus_per_node]
    lines = [f"free now: {free_gpus} GPUs on {sum(1 for n in usable if n.gpus_free)} node(s); "
             f"needs {job.nodes} node(s) with {job.gpus_per_node} free GPUs, "
             f"{len(fitting)} such node(s) now" + (f" ({compress(fitting)})" if fitting else "")]
    if not show_holders or len(fitting) >= job.nodes:
        return lines
    by_id = {j.job_id: j for j in snap.jobs if j.running and j.node_list}
    running = [(by_id[jid], end) for jid, end in release_schedule(snap, fleet, conf) if jid in by_id]
    for run, end in running[:8]:
        lines.append(f"  held by job {run.job_id} ({run.name}, {run.account or '-'}): "
                     f"{compress(run.node_list)}, {run.gpus} GPUs, until ~{when(end)}")
    if len(running) > 8:
        lines.append(f"  ... and {len(running) - 8} more running jobs")
    return lines
