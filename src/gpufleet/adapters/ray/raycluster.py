"""Two schedulers, one set of GPUs: a RayCluster's autoscaler over the cluster scheduler below it.

On Kubernetes (KubeRay) a placement group is placed twice. Ray places its bundles inside the Ray
worker *pods* it has; when it has too few, its autoscaler asks Kubernetes for more worker pods of
the worker group's template size, **one pod at a time**, and Kubernetes binds each pod on its own.
Neither level sees the other's gang: pods that arrived are held while the rest of the group waits,
and a worker larger than a bundle holds GPUs no bundle uses.

**Worked example** (``tests/unit/adapters/ray/test_raycluster.py`` asserts it):
4 nodes × 8 GPUs = 32 GPUs. RayClusters A and B each want a STRICT_SPREAD group of 3 bundles × 8
GPUs; the worker template is 8 GPUs. Uncoordinated, the two autoscalers' requests interleave:
A1 → n0, B1 → n1, A2 → n2, B2 → n3, then A3 and B3 find no node with 8 free GPUs and wait. Held:
4 workers × 8 = 32 GPUs; groups created: none; **idle held GPUs 32 of 32** — and neither group can
ever start while the other holds its two workers (a deadlock only a timeout breaks).
Coordinated (gang-admit the worker group a placement group needs): A's three workers are bound as
one gang (24 GPUs, all used by bundles); B's three do not fit in the 8 left and bind nothing.
**Idle held GPUs 0**; 8 GPUs stay free for other work, and B starts when A ends.

**Worker size.** A STRICT_SPREAD group of 4 bundles × 2 GPUs on an 8-GPU worker template takes 4
workers × 8 = 32 GPUs for 8 used: **24 idle (75%)**. Sized to the bundles (2-GPU workers) it holds 8.

The rules (``coordinated``): gang-admit each RayCluster's head and workers as one gang; size worker
pods to bundles; scale idle workers down when their group ends (the simulated comparison,
``simulate_pair``, charges the uncoordinated side KubeRay's ``idleTimeoutSeconds``, 60 s by
default); reserve the head's CPUs inside the gang, so a cluster never holds workers without the
head that drives them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpufleet.adapters.ray.mapping import PlacementGroupSpec, Strategy
from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.profile import Profile
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleInput, PendingJob
from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.policies.gang import GangBestFit


@dataclass(frozen=True)
class RayClusterSpec:
    """One RayCluster: its head pod, its worker group's pod template, the placement group it runs."""

    name: str
    pg: PlacementGroupSpec
    worker_gpus: int  # the worker group template's GPUs per pod
    head_cpus: float = 0.0

    def workers_needed(self, worker_gpus: int | None = None) -> int:
        """Worker pods the autoscaler asks for: one per bundle under (STRICT_)SPREAD; under
        (STRICT_)PACK the bundles first-fit-decreasing into workers of ``worker_gpus``."""
        w = worker_gpus or self.worker_gpus
        gpus = sorted((b.gpus for b in self.pg.bundles), reverse=True)
        if any(g > w for g in gpus):
            raise ValueError(f"{self.name}: a bundle of {gpus[0]} GPUs cannot fit a {w}-GPU worker")
        if self.pg.strategy in (Strategy.SPREAD, Strategy.STRICT_SPREAD):
            return len(gpus)
        if self.pg.strategy is Strategy.STRICT_PACK and sum(gpus) > w:
            raise ValueError(f"{self.name}: STRICT_PACK of {sum(gpus)} GPUs cannot fit a {w}-GPU worker")
        bins: list[int] = []
        for g in gpus:
            for i, free in enumerate(bins):
                if free >= g:
                    bins[i] -= g
                    break
            else:
                bins.append(w - g)
        return len(bins)


@dataclass(frozen=True)
class Outcome:
    name: str
    workers: int  # worker pods bound
    held_gpus: int  # GPUs those workers hold
    used_gpus: int  # GPUs the placement group's bundles use (0 if the group is not created)

    @property
    def created(self) -> bool:
        return self.used_gpus > 0

    @property
    def idle_gpus(self) -> int:
        return self.held_gpus - self.used_gpus


def _bind_one(table: NodeTable, job: Job) -> bool:
    """The layer below binds one pod, as the kube-scheduler would (best fit), through the engine."""
    result = run_cycle(CycleInput(now=0.0, nodes=table, pending=[PendingJob(job)],
                                  profile=Profile("kube-pod", placer=GangBestFit())))
    for b in result.bindings:
        table.take(b.node, b.request)
    return bool(result.started)


def uncoordinated(table: NodeTable, clusters: Sequence[RayClusterSpec]) -> list[Outcome]:
    """Autoscalers ask one worker pod at a time, round robin over clusters; each pod is bound alone
    if some node has room. A group is created only if its cluster got every worker it needs."""
    table = table.copy()
    want = {c.name: c.workers_needed() for c in clusters}
    got = dict.fromkeys(want, 0)
    stuck: set[str] = set()
    while any(got[c.name] < want[c.name] and c.name not in stuck for c in clusters):
        for c in clusters:
            if got[c.name] >= want[c.name] or c.name in stuck:
                continue
            pod = Job(JobId(f"{c.name}-w{got[c.name]}"), TenantId(c.name),
                      (PodSet("worker", 1, PodRequest(c.worker_gpus)),), 0.0, 1.0)
            if _bind_one(table, pod):
                got[c.name] += 1
            else:
                stuck.add(c.name)  # its pod waits; the autoscaler keeps what it has
    return [Outcome(c.name, got[c.name], got[c.name] * c.worker_gpus,
                    c.pg.gpus if got[c.name] == want[c.name] else 0) for c in clusters]


def gang_job(c: RayClusterSpec, run_time: float = 3600.0, submit: float = 0.0,
             worker_gpus: int | None = None, with_head: bool = True) -> Job:
    """The RayCluster as one gang: head (CPUs only) and workers sized to ``worker_gpus`` (default:
    one worker per bundle, sized to it; the 'size worker pods to bundles' rule)."""
    sets = [PodSet("head", 1, PodRequest(0, c.head_cpus))] if with_head and c.head_cpus > 0 else []
    if worker_gpus is None:
        gpus = [b.gpus for b in c.pg.bundles]
        for g in sorted(set(gpus), reverse=True):
            sets.append(PodSet(f"worker-{g}", gpus.count(g), PodRequest(g)))
    else:
        sets.append(PodSet("worker", c.workers_needed(worker_gpus), PodRequest(worker_gpus)))
    return Job(JobId(c.name), TenantId(c.name), tuple(sets), submit, run_time)


def coordinated(table: NodeTable, clusters: Sequence[RayClusterSpec]) -> list[Outcome]:
    """Each cluster's head and bundle-sized workers are admitted as one gang, in order, or not at all."""
    table = table.copy()
    out = []
    for c in clusters:
        job = gang_job(c)
        result = run_cycle(CycleInput(now=0.0, nodes=table, pending=[PendingJob(job)],
                                      profile=Profile("ray-coordinated", placer=GangBestFit())))
        if job.id in result.started:
            for b in result.bindings:
                table.take(b.node, b.request)
            out.append(Outcome(c.name, len(c.pg.bundles), c.pg.gpus, c.pg.gpus))
        else:
            out.append(Outcome(c.name, 0, 0, 0))
    return out
