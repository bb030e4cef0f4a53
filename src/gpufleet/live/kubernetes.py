"""The ``kubernetes`` source: the API server's objects through the scheduler's own watch reader.

Every ``poll_s`` of wall time the source brings its stores up to date through the same list +
watch code ``gpufleet k8s scheduler`` runs (live/k8s_scheduler.py: a 410 Gone re-lists), then
publishes the cluster as the engine saw it in ``k8s analyze`` (adapters/kubernetes/analyze.py
keeps its engine input: nodes with what bound pods hold, running gangs on their nodes, pending
gangs with their eligible nodes), so ``/api/v1/jobs/{namespace/gang}/explain`` gives the same
chain and estimate as ``k8s analyze``.

Two modes:

- ``observer``: read only. Every pending pod is explained, whichever scheduler it names;
  nothing is written to the cluster.
- ``scheduler``: each read is one ``KubeScheduler.tick`` (the Lease, binding gangs whole or not
  at all, FailedScheduling events and conditions), so the service is the secondary scheduler
  ``schedulerName: gpufleet`` pods ask for; a bound gang is a ``start`` event.

Jobs come from the API server (Deployments, JobSets, PodGroups …): a submission through our API
is refused with a 422 that says to create the pods with kubectl. An API server that cannot be
reached (any of live/health.py's transient errors) leaves the last world in place, makes
``health()`` say so with since when and the error, drops the watches (the next good read lists
afresh) and is tried again every read; the first good read catches up.

Tested against tests/unit/live/api_double.py, a test double built from recorded objects: no API
server runs in this project's tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from gpufleet.adapters.kubernetes.analyze import Analysis, analyze
from gpufleet.engine.profile import Profile
from gpufleet.engine.snapshot import NodeTable
from gpufleet.live.health import TRANSIENT
from gpufleet.live.k8s_scheduler import KubeScheduler, SchedulerConfig
from gpufleet.live.kube_api import KINDS, KubeApi
from gpufleet.live.source import LiveEvent, PolledSource, SourceRefused
from gpufleet.model.fleet import Fabric, Fleet
from gpufleet.model.job import Job
from gpufleet.policies.registry import profile as named_profile

MODES = ("observer", "scheduler")


@dataclass
class KubernetesSource(PolledSource):
    api: KubeApi
    mode: str = "observer"
    config: SchedulerConfig = field(default_factory=SchedulerConfig)
    poll_s: float = 2.0
    wall: Callable[[], float] = time.time
    name: str = "kubernetes"
    #: Cordon and drain are kubectl's: the service does not take nodes out of service here.
    node_actions: bool = False
    analysis: Analysis | None = None
    scheduler: KubeScheduler = field(init=False)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode {self.mode!r}: expected one of {', '.join(MODES)}")
        self.scheduler = KubeScheduler(self.api, self.config, clock=self.wall)
        self._fleet = Fleet((), Fabric(), "kubernetes")
        self._table = NodeTable.from_fleet(self._fleet)

    def about(self) -> dict[str, object]:
        a = self.analysis
        return {"mode": self.mode, "polls": self.polls, "failures": self.failures,
                "notes": list(a.notes) if a is not None else [],
                "stranded_gpus": sum(s.gpus for s in a.stranded) if a is not None else 0}

    def label(self) -> str:
        return f"API server ({self.mode})"

    def read_summary(self) -> str:
        return (f"{len(self._fleet.nodes)} nodes, {len(self._pending)} pending gangs, "
                f"{len(self._running)} running")

    def poll(self, now: float) -> list[LiveEvent]:
        self.polls += 1
        events: list[LiveEvent] = []
        try:
            if self.mode == "scheduler":
                report = self.scheduler.tick()
                analysis = self.scheduler.last_analysis if report.leader else None
                events += [LiveEvent(now, "bind", pod, node) for pod, node in report.bound]
            else:
                for kind in KINDS:
                    self.scheduler.refresh(kind)
                analysis = analyze(self.scheduler.snapshot(), now=self.wall(), defrag=False,
                                   profile=self.scheduler.cfg.profile)
        except TRANSIENT as e:
            for kind in KINDS:
                self.scheduler.rv[kind] = None  # list afresh when it answers again
            return self._failed(now, f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}")
        events = self._answered(now, self.mode) + events
        if analysis is not None:
            events += self._rebuild(analysis, now)
        return events

    def _rebuild(self, analysis: Analysis, now: float) -> list[LiveEvent]:
        self.analysis = analysis
        self._fleet = Fleet(tuple(n.node for n in analysis.nodes), Fabric(), "kubernetes")
        inp = analysis.engine_input
        self._inp = inp
        self._table = inp.nodes.copy() if inp is not None else NodeTable.from_fleet(self._fleet)
        self._pending = {str(p.job.id): p.job for p in inp.pending} if inp is not None else {}
        self._running = {str(r.job.id): r for r in inp.running} if inp is not None else {}
        self.out_of_service = {n.name: str(n.node.health).lower()
                               for n in analysis.nodes if not n.node.health.schedulable}
        state = {**dict.fromkeys(self._pending, "pending"), **dict.fromkeys(self._running, "running")}
        return self._changes(state, now, "the API server", lambda jid: LiveEvent(now, "start", jid),
                             lambda jid: LiveEvent(now, "finish", jid, detail="no longer in the API server"))

    def default_profile(self) -> Profile:
        return named_profile(self.scheduler.cfg.profile)

    def send(self, job: Job) -> str:
        raise SourceRefused("jobs come from the API server here: create the pods (or a JobSet/PodGroup) "
                            "with kubectl, schedulerName gpufleet for the scheduler mode")

    def control(self, action: str, job_id: str, priority: int | None = None) -> None:
        raise SourceRefused(f"{action}: change {job_id} through the API server (kubectl)")

    def submit(self, job: Job, now: float) -> None:
        """Nothing to do: jobs are the API server's."""

    def withdraw(self, job_id: str, now: float) -> Job | None:
        return None

    def replace(self, job: Job) -> None:
        """Priorities are the API server's (PriorityClass)."""

    def set_schedulable(self, node: str, ok: bool) -> None:
        """Cordoning is the API server's (kubectl cordon); the next read shows it."""


def kubernetes_source(api: KubeApi, *, mode: str = "observer", poll_s: float = 2.0,
                      config: SchedulerConfig | None = None) -> KubernetesSource:
    return KubernetesSource(api, mode, config or SchedulerConfig(), poll_s)
