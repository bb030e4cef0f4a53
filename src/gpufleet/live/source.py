"""A live source of truth: the one small interface every world the service runs over implements.

The loop (live/loop.py) is the only caller and the only thread that changes a source. A source
holds what exists (nodes, pending and running jobs) and causes effects; it never decides: each
cycle the loop asks it for a ``CycleInput``, hands that to the engine (live/decide.py) and gives the
``CycleResult`` back to ``apply``. Three worlds fit it: ``virtual`` (the simulator's cluster model on
the wall clock, live/virtual.py), Slurm (slurmrestd or the CLI tools) and Kubernetes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleInput, CycleResult, Reservation, RunningJob
from gpufleet.model.fleet import Fleet
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Tenancy


@dataclass(frozen=True, slots=True)
class LiveEvent:
    """Something that happened in the world, at source time ``t``: submit, start, finish,
    preempt, cancel, hold, release, drain, cordon, uncordon, fail, return."""

    t: float
    kind: str
    job: str | None = None
    node: str | None = None
    detail: str = ""


@dataclass(frozen=True, slots=True)
class SourceHealth:
    """Whether the source answers. ``since``: wall-clock epoch seconds since when it has been in
    this state (None: since the start); ``last_error``: the last failure, kept after recovery."""

    ok: bool
    detail: str = ""
    since: float | None = None
    last_error: str = ""


class SourceUnavailable(RuntimeError):
    """The source cannot be reached now (a submission is refused with 503, nothing stored)."""


class SourceRefused(ValueError):
    """The source answered and refused (a bad account, a shape it cannot hold): a 422."""


class Source(Protocol):
    #: "virtual", "slurm", "kubernetes".
    name: str
    #: The reservations the last cycle made (a cycle is due when one's start has come).
    reservations: tuple[Reservation, ...]
    tenancy: Tenancy | None
    #: Nodes out of service for new work, and why ("drain", "cordon", "fail").
    out_of_service: dict[str, str]
    #: Evictions completed, and the GPU-seconds of work they lost.
    preemptions: int
    lost_gpu_s: float

    @property
    def fleet(self) -> Fleet: ...

    @property
    def table(self) -> NodeTable:
        """The live node table (free capacity, schedulable column); read by the loop's thread only."""
        ...

    def pending(self) -> dict[str, Job]:
        """The jobs waiting to run, by id."""
        ...

    def running(self) -> dict[str, RunningJob]:
        """The jobs running now, by id."""
        ...

    def advance(self, now: float) -> list[LiveEvent]:
        """Let the world move to source time ``now``: runs end, evictions complete."""
        ...

    def submit(self, job: Job, now: float) -> None: ...

    def withdraw(self, job_id: str, now: float) -> Job | None:
        """Take a job out of the world (cancel, hold): pending or running; the job, or None."""
        ...

    def replace(self, job: Job) -> None:
        """A pending job changed (priority): swap it for the changed copy."""
        ...

    def set_schedulable(self, node: str, ok: bool) -> None:
        """Put a node in or out of service for new work (drain, cordon, uncordon)."""
        ...

    def cycle_input(self, now: float, seed: int) -> CycleInput:
        """What the engine is told at ``now``."""
        ...

    def apply(self, result: CycleResult, now: float) -> list[LiveEvent]:
        """Do what the cycle decided: bind and start, send eviction notices."""
        ...

    def usage(self, now: float) -> dict[str, float]:
        """Decayed GPU-seconds per tenant (what fair share reads)."""
        ...

    def health(self) -> SourceHealth: ...
