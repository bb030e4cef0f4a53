"""What the loop publishes after each tick: an immutable picture of the live world.

Readers (the API, the dashboard, metrics) use it from any thread while the loop moves on; it
shares nothing mutable with the source (node columns copied, job maps copied; jobs and statuses
are frozen). Derived figures that cost a pass over the queue (stranded GPUs, pending by reason)
are computed once per snapshot, on first use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from gpufleet.engine.profile import Profile
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status
from gpufleet.engine.types import Reservation, RunningJob
from gpufleet.live.source import PolledSource, SourceHealth
from gpufleet.model.fleet import Fleet
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Tenancy

if TYPE_CHECKING:
    from gpufleet.live.loop import CycleRecord
    from gpufleet.live.source import Source


@dataclass(frozen=True)
class LiveSnapshot:
    now: float
    source: str
    health: SourceHealth
    fleet: Fleet
    table: NodeTable
    pending: dict[str, Job]
    running: dict[str, RunningJob]
    statuses: Mapping[str, Status]
    reservations: tuple[Reservation, ...]
    tenancy: Tenancy | None
    usage: dict[str, float]
    out_of_service: dict[str, str]
    cycles: int
    last_cycle: CycleRecord
    preemptions: int = 0
    lost_gpu_s: float = 0.0
    extra: dict[str, object] = field(default_factory=dict)
    #: Answers readers derive from this picture and share (explain's per-shape parts, keyed by
    #: what they depend on); fresh on every snapshot, ``replace`` included (not an init field).
    derived: dict[object, object] = field(default_factory=dict, init=False, repr=False, compare=False)

    @cached_property
    def shapes(self) -> list[Job]:
        """One pending job per distinct pod shape and node filter (what stranding counts)."""
        seen: dict[tuple, Job] = {}
        for job in self.pending.values():
            key = (tuple(ps.request.shape for ps in job.pod_sets), job.eligible_nodes)
            seen.setdefault(key, job)
        return list(seen.values())

    @cached_property
    def node_jobs(self) -> dict[int, tuple[str, ...]]:
        """Running job ids per node index."""
        out: dict[int, list[str]] = {}
        for jid, rj in self.running.items():
            for n in sorted({b.node for b in rj.bindings}):
                out.setdefault(n, []).append(jid)
        return {n: tuple(js) for n, js in out.items()}


def take_snapshot(source: Source, now: float, statuses: Mapping[str, Status], last: CycleRecord,
                  cycles: int) -> LiveSnapshot:
    return LiveSnapshot(
        now=now, source=source.name, health=source.health(), fleet=source.fleet,
        table=source.table.copy(), pending=dict(source.pending()), running=dict(source.running()),
        statuses=statuses, reservations=source.reservations, tenancy=source.tenancy,
        usage=source.usage(now), out_of_service=dict(source.out_of_service),
        cycles=cycles, last_cycle=last, preemptions=source.preemptions, lost_gpu_s=source.lost_gpu_s,
        extra=_extra(source))


def _extra(source: Source) -> dict[str, object]:
    """What a real source knows beside its queue: ``waiting`` maps the jobs it holds back for a
    reason of its own (a Slurm hold, a dependency) to that reason in its words and in plain ones;
    ``about`` is what it read beside (Slurm's partitions, reservations, accounts, fair share);
    ``queue_facts`` what it says of its queues beside the tenancy (live/source.py ``QueueFacts``);
    ``profile`` the name of the engine profile the loop runs (what explain names as the policy:
    a status names only the placer step, e.g. gang-bestfit under gang-easy)."""
    out: dict[str, object] = {"profile": _profile_name(source)}
    for name in ("waiting", "about", "queue_facts"):
        fn = getattr(source, name, None)
        if callable(fn):
            out[name] = fn()
    return out


def _profile_name(source: Source) -> str | None:
    """The running profile's name: the one the source decides with (a Slurm source's, once read),
    else its default; None for a source that names none."""
    prof = getattr(source, "profile", None)
    if isinstance(prof, Profile):
        return prof.name
    return source.engine_profile().name if isinstance(source, PolledSource) else None
