"""Pods grouped into gangs, and each gang as our ``Job`` (model/job.py).

A gang's pods with equal requests form one pod set. Kubernetes has no run time on a pod, so the
job's ``run_time`` is an assumption passed in by the caller (``assume_runtime_s``) and said in
the report; the engine plans with it like any estimate.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from gpufleet.adapters.kubernetes.pods import K8S_PODGROUP, K8S_WORKLOAD, KubePod, PodGroupInfo
from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.job import Job, PodRequest, PodSet


@dataclass(frozen=True, slots=True)
class Gang:
    key: str
    kind: str                 # "PodGroup", "JobSet", ..., or "Pod" for a gang of one
    pods: tuple[KubePod, ...]
    min_member: int
    #: an upstream PodGroup / Workload pod group the pods name but the snapshot lacks: the
    #: scheduler keeps such pods pending until it exists
    missing_group: str = ""

    @property
    def gpus(self) -> int:
        return sum(p.gpus for p in self.pods)

    @property
    def priority(self) -> int:
        return max((p.priority for p in self.pods), default=0)

    @property
    def submitted(self) -> float:
        return min((p.created for p in self.pods if p.created is not None), default=0.0)


def group(pods: list[KubePod], podgroups: dict[str, PodGroupInfo]) -> list[Gang]:
    """Gangs of these pods, ordered by key (stable for reports and tests)."""
    by_key: dict[tuple[str, str], list[KubePod]] = defaultdict(list)
    for p in pods:
        kind, key = p.gang
        by_key[(kind or "Pod", key or p.key)].append(p)
    out = []
    for (kind, key), members in sorted(by_key.items(), key=lambda kv: kv[0][1]):
        pods = tuple(sorted(members, key=lambda p: p.key))
        if kind in (K8S_PODGROUP, K8S_WORKLOAD):
            # a replica key (namespace/workload/group/replica) shares its group's policy
            pg = podgroups.get(key) or podgroups.get("/".join(key.split("/")[:3]))
            if pg is None:
                out.append(Gang(key, kind, pods, len(pods), missing_group=key))
            elif pg.policy == "basic":
                out += [Gang(p.key, "Pod", (p,), 1) for p in pods]
            else:
                out.append(Gang(key, kind, pods, pg.min_member))
            continue
        pg = podgroups.get(key) if kind in ("PodGroup", "Volcano PodGroup") else None
        out.append(Gang(key, kind, pods, pg.min_member if pg else len(members)))
    return sorted(out, key=lambda g: g.key)


def minimum(g: Gang) -> Gang:
    """The part of a gang that must start together: ``minMember`` pods of a PodGroup (the rest
    may follow one by one), every pod of any other gang."""
    if len(g.pods) > g.min_member:
        return Gang(g.key, g.kind, g.pods[:g.min_member], g.min_member)
    return g


def request_of(pod: KubePod) -> PodRequest:
    """Whole GPUs as counts; a single MIG instance as a MIG request; CPU and memory as asked."""
    if pod.mig and not pod.gpus and sum(pod.mig.values()) == 1:
        return PodRequest(gpus=0, cpus=pod.cpus, memory_gb=pod.memory_gb, mig_profile=next(iter(pod.mig)))
    return PodRequest(gpus=pod.gpus, cpus=pod.cpus, memory_gb=pod.memory_gb, gpu_models=pod.gpu_models)


def to_job(gang: Gang, run_time_s: float) -> Job:
    sets: dict[PodRequest, int] = {}
    for p in gang.pods:
        req = request_of(p)
        sets[req] = sets.get(req, 0) + 1
    pod_sets = tuple(PodSet(f"set{i}", n, req) for i, (req, n) in enumerate(sets.items()))
    tenant = gang.pods[0].namespace if gang.pods else "default"
    return Job(id=JobId(gang.key), tenant=TenantId(tenant), pod_sets=pod_sets, submit_time=gang.submitted,
               run_time=run_time_s, priority=gang.priority, labels=(("k8s.kind", gang.kind),))


def pod_set_members(job: Job, gang: Gang) -> dict[str, list[KubePod]]:
    """Which pods of the gang make up each of the job's pod sets (same order as ``to_job``)."""
    out: dict[str, list[KubePod]] = {ps.name: [] for ps in job.pod_sets}
    by_req = {ps.request: ps.name for ps in job.pod_sets}
    for p in gang.pods:
        out[by_req[request_of(p)]].append(p)
    return out
