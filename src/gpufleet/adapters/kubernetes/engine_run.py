"""One engine run for a snapshot: pending gangs as jobs that carry their own node filter.

Kubernetes filters our ``NodeTable`` does not model — taints/tolerations, ``nodeSelector``,
required node affinity, a failed GPU layer, DRA claims that cannot be allocated on a node — are
computed per gang (``eligible_nodes``: the nodes on which every pod of the gang passes
``filters.static_reason``) and handed to the engine on the job (``Job.eligible_nodes``), so one
``run_cycle`` on the whole fleet decides every gang, with reservations and backfill that respect
each job's nodes (the engine's property tests hold that no pod is ever bound or reserved outside
its job's set: tests/property/test_eligible_nodes_invariants.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gpufleet.adapters.kubernetes.claims import DraState
from gpufleet.adapters.kubernetes.filters import pod_shape, static_reason
from gpufleet.adapters.kubernetes.jobs import Gang, minimum, pod_set_members, to_job
from gpufleet.adapters.kubernetes.nodes import KubeNode
from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleInput, CycleResult, PendingJob, RunningJob
from gpufleet.model.fleet import Fleet
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job, PodRequest
from gpufleet.policies.registry import profile as named_profile

#: The profile a snapshot is decided with when the user names none (conservative backfill: every
#: waiting gang gets a reservation, so each one is told when it would start).
PROFILE = "gang-conservative"


def eligible_nodes(gang: Gang, nodes: list[KubeNode], dra: DraState | None,
                   cache: dict | None = None) -> frozenset[str]:
    """Names of the nodes every pod of ``gang`` may use (no static filter fails; filters.py).
    ``cache``: answers per pod shape (filters.pod_shape), kept by the caller for one snapshot."""
    out: frozenset[str] | None = None
    for p in gang.pods:
        shape = pod_shape(p) if cache is not None else None
        ok = cache.get(shape) if cache is not None and shape is not None else None
        if ok is None:
            ok = frozenset(n.name for n in nodes if static_reason(p, n, dra) is None)
            if cache is not None and shape is not None:
                cache[shape] = ok
        out = ok if out is None else out & ok
    return out if out is not None else frozenset(n.name for n in nodes)


@dataclass
class EngineRun:
    """Per pending gang key: (Status, reservation or None, running jobs, node names of its
    bindings, table node names, (pod key, node) pairs); plus how it was decided."""

    results: dict[str, tuple] = field(default_factory=dict)
    eligible: dict[str, frozenset[str]] = field(default_factory=dict)
    jobs: dict[str, Job] = field(default_factory=dict)
    runs: int = 0
    notes: list[str] = field(default_factory=list)
    #: The cycle's input (the live service's Kubernetes source reruns it for its statuses).
    input: CycleInput | None = None


def running_jobs(nodes: list[KubeNode], running: list[Gang], now: float, run_s: float) -> list[RunningJob]:
    index = {n.name: i for i, n in enumerate(nodes)}
    out: list[RunningJob] = []
    for g in running:
        job = to_job(g, run_s)
        members = pod_set_members(job, g)
        bindings = tuple(PodBinding(job.id, ps.name, r, index[p.node_name], ps.request)
                         for ps in job.pod_sets for r, p in enumerate(members[ps.name]))
        start = min((p.started or p.created or now for p in g.pods), default=now)
        out.append(RunningJob(job, start, bindings))
    return out


def _table(nodes: list[KubeNode], bindings: list[PodBinding], held: dict[str, int]) -> NodeTable:
    fleet = Fleet(tuple(n.node for n in nodes))
    table = NodeTable.from_fleet(fleet)
    for b in bindings:
        req = b.request
        if (table.gpu_free[b.node] >= req.gpus and table.cpu_free[b.node] >= req.cpus - 1e-9
                and table.mem_free[b.node] >= req.memory_gb - 1e-9):
            table.take(b.node, req)
    for i, n in enumerate(nodes):
        k = held.get(n.name, 0)
        if k and table.gpu_free[i] >= k:
            table.take(i, PodRequest(gpus=k))
    return table


def _collect(out: EngineRun, gangs: list[Gang], jobs: list[PendingJob], result: CycleResult,
             table: NodeTable, running: list[RunningJob]) -> None:
    reservations = {r.job: r for r in result.reservations}
    started = set(result.started)
    by_id = {pj.job.id: pj.job for pj in jobs}
    for g in gangs:
        jid = JobId(g.key)
        mine = [b for b in result.bindings if b.job == jid] if jid in started else []
        members = pod_set_members(by_id[jid], minimum(g))
        pairs = [(members[b.pod_set][b.replica].key, table.names[b.node]) for b in mine]
        out.results[g.key] = (result.statuses.get(jid), reservations.get(jid), running,
                              sorted({n for _, n in pairs}), table.names, pairs)


def run(nodes: list[KubeNode], running: list[Gang], pending: list[Gang], now: float, run_s: float,
        dra: DraState | None, held: dict[str, int], profile: str = PROFILE) -> EngineRun:
    """Decide every pending gang in one ``run_cycle`` (module docstring) of the named
    ``profile`` (policies/registry.py)."""
    out = EngineRun()
    if not nodes:
        return out
    rjobs = running_jobs(nodes, running, now, run_s)
    prof = named_profile(profile)
    cache: dict = {}
    for g in pending:
        out.eligible[g.key] = eligible_nodes(g, nodes, dra, cache)
        out.jobs[g.key] = replace(to_job(minimum(g), run_s), eligible_nodes=out.eligible[g.key])
    jobs = [PendingJob(out.jobs[g.key]) for g in pending]
    table = _table(nodes, [b for rj in rjobs for b in rj.bindings], held)
    inp = CycleInput(now=now, nodes=table, pending=jobs, profile=prof, running=tuple(rjobs), seed=0)
    out.input = replace(inp, nodes=table.copy())
    result = run_cycle(inp)
    out.runs = 1
    _collect(out, pending, jobs, result, table, rjobs)
    return out
