"""The ``virtual`` source: the simulator's cluster model (sim/cluster.py) driven by the wall clock.

A submitted job runs for its stated ``run_time`` from the instant it starts; a preempted job gets
its grace period and keeps what it checkpointed (engine/checkpoints.py, the same arithmetic the
simulator charges); a drained or cordoned node takes no new work, a failed node loses its jobs
(they requeue) and returns when told. Time is the caller's: ``advance(now)`` settles everything
due by ``now`` in time order, so the same calls give the same world, whatever the wall clock did.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from gpufleet.engine.checkpoints import eviction_cost, remaining_run_s
from gpufleet.engine.fit import node_need
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.profile import Profile
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import AdmissionState, CycleInput, CycleResult, Reservation, RunningJob
from gpufleet.live.source import LiveEvent, SourceHealth
from gpufleet.model.fleet import Fleet
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Tenancy
from gpufleet.sim.accuracy import AccuracyTracker
from gpufleet.sim.cluster import SimulatedCluster, set_schedulable
from gpufleet.sim.usage import UsageTracker


@dataclass
class VirtualSource:
    fleet_: Fleet
    profile: Profile
    tenancy: Tenancy | None = None
    name: str = "virtual"
    cluster: SimulatedCluster = field(init=False)
    tracker: UsageTracker = field(init=False)
    accuracy: AccuracyTracker = field(default_factory=AccuracyTracker)
    reservations: tuple[Reservation, ...] = ()
    admission: AdmissionState = field(default_factory=AdmissionState)
    #: (time, seq, kind, job id, run generation): run ends and eviction deadlines, earliest first.
    _due: list[tuple[float, int, str, str, int]] = field(default_factory=list)
    _seq: int = 0
    _gen: dict[str, int] = field(default_factory=dict)
    #: Nodes out of service and why ("drain", "cordon", "fail").
    out_of_service: dict[str, str] = field(default_factory=dict)
    preemptions: int = 0
    lost_gpu_s: float = 0.0
    #: The last failed node's running jobs and the GPU-seconds each lost.
    failed_lost: dict[str, float] = field(default_factory=dict)
    #: Runs that ended since ``take_ended`` was last called.
    _ended: list[RunningJob] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.cluster = SimulatedCluster(self.fleet_)
        half = self.tenancy.half_life_s if self.tenancy is not None else 7 * 86400.0
        self.tracker = UsageTracker(half)
        self._index = {n: i for i, n in enumerate(self.cluster.table.names)}

    @property
    def fleet(self) -> Fleet:
        return self.fleet_

    @property
    def table(self) -> NodeTable:
        return self.cluster.table

    def pending(self) -> dict[str, Job]:
        return self.cluster.pending

    def running(self) -> dict[str, RunningJob]:
        return self.cluster.running

    def usage(self, now: float) -> dict[str, float]:
        return self.tracker.snapshot(now)

    def health(self) -> SourceHealth:
        return SourceHealth(True, "virtual fleet (simulated on the wall clock)")

    def node_index(self, node: str) -> int:
        try:
            return self._index[node]
        except KeyError:
            raise KeyError(f"no node {node!r}") from None

    def _push(self, t: float, kind: str, jid: str) -> None:
        self._seq += 1
        heapq.heappush(self._due, (t, self._seq, kind, jid, self._gen.get(jid, 0)))

    def advance(self, now: float) -> list[LiveEvent]:
        out: list[LiveEvent] = []
        while self._due and self._due[0][0] <= now:
            t, _, kind, jid, gen = heapq.heappop(self._due)
            if gen != self._gen.get(jid, 0) or jid not in self.cluster.running:
                continue  # the run this deadline was for ended otherwise (cancel, eviction)
            rj = self.cluster.running[jid]
            self.tracker.add_job(rj.job, rj.job.total_gpus * (t - rj.start_time), t)
            if kind == "finish":
                self.cluster.finish(jid)
                self.accuracy.finished(rj.job)
                self._ended.append(rj)
                out.append(LiveEvent(t, "finish", jid))
            else:
                cost = eviction_cost(rj, rj.evict_at - self._grace(), self._grace())
                self.cluster.evict(jid, cost.saved_s)
                self._gen[jid] = gen + 1
                self.preemptions += 1
                self.lost_gpu_s += cost.lost_gpu_s
                out.append(LiveEvent(t, "preempt", jid, detail=f"lost {cost.lost_s:.0f}s of work",
                                     lost_gpu_s=cost.lost_gpu_s))
        return out

    def take_ended(self) -> list[RunningJob]:
        ended, self._ended = self._ended, []
        return ended

    def _grace(self) -> float:
        return self.tenancy.grace_s if self.tenancy is not None else 0.0

    def submit(self, job: Job, now: float) -> None:
        if job.id in self.cluster.pending or job.id in self.cluster.running:
            raise ValueError(f"job {job.id} is already in the fleet")
        self.cluster.submit(job)

    def adopt(self, job: Job, start_time: float, placement: list, now: float) -> bool:
        """A job a previous leader started, put back running where it ran: ``placement`` holds
        [pod set, replica, node] per pod. False (and the world unchanged) when it no longer fits
        there (a node gone from the fleet file, a pod missing): the caller queues it again."""
        c = self.cluster
        by_name = {ps.name: ps for ps in job.pod_sets}
        try:
            binds = [PodBinding(job.id, ps, int(rep), self.node_index(node), by_name[ps].request)
                     for ps, rep, node in placement]
        except (KeyError, TypeError, ValueError):
            return False
        if len(binds) != job.total_pods:
            return False
        need = node_need(binds)
        t = c.table
        if any(g > t.gpu_free[i] or cpu > t.cpu_free[i] or mem > t.mem_free[i]
               for i, (g, cpu, mem) in need.items()):
            return False
        c.submit(job)
        for b in binds:
            c.bind(b)
        rj = c.start(job.id, start_time)
        self._push(start_time + remaining_run_s(rj), "finish", job.id)
        return True

    def withdraw(self, job_id: str, now: float) -> Job | None:
        c = self.cluster
        if job_id in c.running:
            rj = c.running[job_id]
            self.tracker.add_job(rj.job, rj.job.total_gpus * max(0.0, now - rj.start_time), now)
            c.finish(job_id)
            self._gen[job_id] = self._gen.get(job_id, 0) + 1
            return rj.job
        job = c.withdraw(job_id)
        for b in c.partial.pop(job_id, []):
            c.table.give(b.node, b.request, slot=b.slot)
        return job

    def replace(self, job: Job) -> None:
        self.cluster.replace_pending(job)

    def set_schedulable(self, node: str, ok: bool) -> None:
        set_schedulable(self.cluster.table, self.node_index(node), ok)

    def cycle_input(self, now: float, seed: int) -> CycleInput:
        c = self.cluster
        return CycleInput(now=now, nodes=c.table, pending=c.pending_view(), profile=self.profile,
                          running=c.running_view(), seed=seed, tenancy=self.tenancy,
                          usage=self.tracker.snapshot(now), reservations=self.reservations,
                          estimate_accuracy=self.accuracy.medians(), admission=self.admission,
                          running_columns=c.running.columns)

    def apply(self, result: CycleResult, now: float) -> list[LiveEvent]:
        c = self.cluster
        out: list[LiveEvent] = []
        self.reservations = result.reservations
        self.admission = result.admission
        for p in result.preemptions:
            if p.job in c.running and not c.running[p.job].evicting:
                c.mark_evicting(p.job, now + p.grace_s)
                self._push(now + p.grace_s, "evict", p.job)
                out.append(LiveEvent(now, "preempt-notice", p.job, detail=f"for {p.for_job}: {p.reason}"))
        for b in result.bindings:
            c.bind(b)
        for jid in result.started:
            rj = c.start(jid, now)
            self._push(now + remaining_run_s(rj), "finish", jid)
            nodes = sorted({c.table.names[b.node] for b in rj.bindings})
            out.append(LiveEvent(now, "start", jid, detail=",".join(nodes)))
        return out

    def fail_node(self, node: str, now: float) -> list[str]:
        """A node fails: its running jobs requeue (keeping their checkpoints), its partial pods
        go back; the jobs that were hit."""
        i = self.node_index(node)
        self.set_schedulable(node, False)
        hit = []
        self.failed_lost = {}
        for jid, rj in list(self.cluster.running.items()):
            if any(b.node == i for b in rj.bindings):
                cost = eviction_cost(rj, now, 0.0)
                self.tracker.add_job(rj.job, rj.job.total_gpus * (now - rj.start_time), now)
                self.cluster.evict(jid, cost.saved_s)
                self._gen[jid] = self._gen.get(jid, 0) + 1
                self.lost_gpu_s += cost.lost_gpu_s
                self.failed_lost[jid] = cost.lost_gpu_s
                hit.append(jid)
        hit += self.cluster.unbind_on(i)
        return hit
