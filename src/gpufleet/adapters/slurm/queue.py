"""The live Slurm queue in our terms: jobs and nodes as plain records.

A ``QueueSnapshot`` holds jobs and nodes as read from squeue and scontrol (times are epoch
seconds, reasons are mapped to ``WaitReason`` on demand). ``explain.py`` answers "why does my job
wait, and until when?" from it, asking the engine (``engine_view.py``) for our own reading: when
running jobs end and what they free is the engine's capacity timeline, not a reckoning kept here.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.adapters.slurm.reasons import WaitReason, map_reason

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


def jobs_ahead(snap: QueueSnapshot, job: QueuedJob) -> list[QueuedJob]:
    """Eligible pending jobs Slurm would try first: same partition, higher priority (then older)."""
    return sorted(
        (j for j in snap.jobs
         if j.pending and j.job_id != job.job_id and j.wait_reason in SELF_CLEARING
         and (not job.partition or j.partition == job.partition)
         and (j.priority, -j.submit) > (job.priority, -job.submit)),
        key=lambda j: (-j.priority, j.submit, j.job_id),
    )
