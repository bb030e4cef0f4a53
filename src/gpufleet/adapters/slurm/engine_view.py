"""Slurm's live state as one engine cycle: what ``gpufleet slurm explain`` asks instead of keeping a
scheduler of its own.

From a ``QueueSnapshot`` (squeue + scontrol) and the fleet of slurm.conf:

* **nodes**: the fleet's NodeTable; a node that scontrol reports DOWN, DRAIN, FAIL, … is not
  schedulable (``NodeHealth.DOWN``); a node slurm.conf lacks but scontrol lists is added with its
  GPU count (model unknown to squeue: counts only);
* **running**: each running job holds ``gpus_per_node`` GPUs on each node of its ``NodeList``
  from its start, and ends (for planning) at start + time limit, as Slurm's backfill plans;
* **pending**: the jobs that wait for capacity or priority (Slurm's ``Resources``, ``Priority``,
  ``None``; also ``ReqNodeNotAvail``, which capacity can resolve) as one pod per node, with
  Slurm's own current priority, ordered as Slurm orders them (priority, then job id); a job
  pinned to nodes by ``--nodelist`` may use only those, and a job submitted to a partition only
  that partition's nodes (scontrol's ``Partitions=`` per node) (``Job.eligible_nodes``);
* **--switches**: a job held to one switch (``Switches=1@WAIT``) that no leaf can hold whole is
  left unplanned until its wait runs out, as Slurm leaves it (captured: job 18, 9 nodes on leaves
  of 8, Reason=Resources and no planned start; the job behind it got the slot);
* **profile**: the Slurm-like profile (one task per node, conservative backfill, ``bf_max_job_test``
  / ``bf_window`` from slurm.conf when one is given).

``run_cycle`` then returns each job's ``Status``: its code, the chain of reasons that held it,
and (for a job the backfill plan reached) its estimated start and planned nodes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

import numpy as np

from gpufleet.adapters.slurm.conf import SlurmConf
from gpufleet.adapters.slurm.queue import SELF_CLEARING, QueuedJob, QueueSnapshot
from gpufleet.adapters.slurm.reasons import WaitReason
from gpufleet.adapters.slurm.settings import BackfillSettings
from gpufleet.engine.capacity import Releases
from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status
from gpufleet.engine.types import CycleContext, CycleInput, PendingJob, RunningJob
from gpufleet.model.fleet import Fabric, Fleet, Node, NodeHealth
from gpufleet.model.ids import JobId, NodeId, TenantId
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.policies.slurm_like import SlurmObservedPriority, slurm_like_profile
from gpufleet.traces.slurm_sacct import parse_duration

#: A job without a time limit (UNLIMITED) is planned as running this long: beyond any bf_window.
NO_LIMIT_S = 365 * 86400.0
#: squeue does not say which GPU model a node has; a fleet built from the snapshot alone counts GPUs.
COUNT_ONLY_MODEL = "H100-80GB"
WAITS_FOR_CAPACITY = (*SELF_CLEARING, WaitReason.NODES_UNAVAILABLE)


@dataclass(frozen=True, slots=True)
class EngineReading:
    """The engine's answer for one job."""

    status: Status | None
    starts_now: bool
    planned_nodes: tuple[str, ...] = ()
    #: Left unplanned: its ``--switches=1`` cannot be met yet (``held_to_one_switch``).
    held_to_switch: bool = False

    @property
    def estimated_start(self) -> float | None:
        return self.status.estimated_start if self.status is not None else None


def fleet_from_snapshot(snap: QueueSnapshot, fleet: Fleet | None) -> Fleet:
    """``fleet`` with scontrol's node states applied (nodes only scontrol lists are added)."""
    known = {str(n.id) for n in fleet.nodes} if fleet is not None else set()
    states = {n.name: n for n in snap.nodes}
    nodes = []
    for node in fleet.nodes if fleet is not None else ():
        st = states.get(str(node.id))
        if st is not None and not st.schedulable:
            node = replace(node, health=NodeHealth.DOWN)
        nodes.append(node)
    for st in snap.nodes:
        if st.name not in known and st.gpus > 0:
            nodes.append(Node(NodeId(st.name), COUNT_ONLY_MODEL, st.gpus, 1, 1, "z0", "spine0", "leaf0",
                              st.name, NodeHealth.HEALTHY if st.schedulable else NodeHealth.DOWN))
    return Fleet(tuple(nodes), fleet.fabric if fleet is not None else Fabric(),
                 fleet.name if fleet is not None else "slurm")


def partition_nodes(snap: QueueSnapshot) -> dict[str, frozenset[str]]:
    """Each partition's nodes, from scontrol's per-node ``Partitions=`` (the same lists
    ``scontrol show partition`` gives as ``Nodes=``)."""
    out: dict[str, set[str]] = {}
    for n in snap.nodes:
        for p in n.partitions:
            out.setdefault(p, set()).add(n.name)
    return {p: frozenset(names) for p, names in out.items()}


def _partition_filter(q: QueuedJob, partitions: dict[str, frozenset[str]],
                      every: frozenset[str]) -> frozenset[str] | None:
    """The nodes a pending job may use by its partition(s) (``-p a,b``: any of them), or None
    when that is every node, or when scontrol named none of its partitions' nodes (nothing known:
    no filter is invented)."""
    if not q.partition or not partitions:
        return None
    allowed = frozenset().union(*(partitions.get(p, frozenset()) for p in q.partition.split(",")))
    if not allowed or every <= allowed:
        return None
    return allowed


def _job(q: QueuedJob, partition: frozenset[str] | None = None) -> Job:
    """The job in engine terms. A job whose ``--nodelist`` (``ReqNodeList``) names at least as
    many nodes as it asks for runs on exactly those nodes (Slurm raises the node count to the
    list's length): they are its eligible nodes (``Job.eligible_nodes``), one task on each. A
    shorter list only says which nodes must be among its own, which a node filter cannot say:
    such a job is left free. ``partition``: the nodes of the partition(s) it was submitted to
    (``_partition_filter``); the eligible nodes are never outside them."""
    limit = q.time_limit_s if q.time_limit_s is not None else NO_LIMIT_S
    pinned = q.pending and bool(q.required_nodes) and len(q.required_nodes) >= max(q.nodes, 1)
    tasks = len(q.required_nodes) if pinned else max(q.nodes, 1)
    eligible = frozenset(q.required_nodes) if pinned else None
    if partition is not None:
        eligible = partition if eligible is None else eligible & partition
    return Job(id=JobId(q.job_id), tenant=TenantId(q.account or "default"),
               pod_sets=(PodSet("main", tasks, PodRequest(gpus=q.gpus_per_node)),),
               submit_time=q.submit, run_time=limit, priority=q.priority, run_time_estimate=limit,
               labels=(("slurm.job_id", q.job_id),), eligible_nodes=eligible)


def held_to_one_switch(q: QueuedJob, table: NodeTable, now: float, default_wait_s: float = 300.0) -> bool:
    """True while ``--switches=1@WAIT`` binds and no leaf has as many usable nodes as the job needs."""
    m = re.fullmatch(r"\s*(\d+)(?:@(\S+))?\s*", q.switches or "")
    if m is None or int(m.group(1)) != 1 or q.nodes <= 1:
        return False
    wait = parse_duration(m.group(2)) if m.group(2) else default_wait_s
    if wait is not None and q.submit + wait <= now:
        return False
    usable = np.bincount(table.leaf_idx[table.schedulable], minlength=1)
    return q.nodes > int(usable.max(initial=0))


def cycle_input(snap: QueueSnapshot, fleet: Fleet, conf: SlurmConf | None = None) -> CycleInput:
    """The engine's input for the snapshot (see the module docstring)."""
    table = NodeTable.from_fleet(fleet)
    index = {name: i for i, name in enumerate(table.names)}
    running = []
    for q in (j for j in snap.jobs if j.running):
        job = _job(q)
        req = job.pod_sets[0].request
        bindings = []
        for k, name in enumerate(q.node_list):
            i = index.get(name)
            if i is None:
                continue
            take = min(req.gpus, int(table.gpu_free[i]))
            if take > 0:
                table.take(i, PodRequest(gpus=take))
            bindings.append(PodBinding(job.id, "main", k, i, PodRequest(gpus=take)))
        start = q.start if q.start is not None else snap.taken_at
        running.append(RunningJob(job, start, tuple(bindings)))
    partitions, every = partition_nodes(snap), frozenset(str(n) for n in table.names)
    pending = [PendingJob(_job(q, _partition_filter(q, partitions, every))) for q in snap.jobs
               if q.pending and q.wait_reason in WAITS_FOR_CAPACITY
               and not held_to_one_switch(q, table, snap.taken_at)]
    bf = BackfillSettings.from_conf(conf) if conf is not None else BackfillSettings()
    # Times here are epoch seconds (snapshot time), so bf_resolution's grid needs no offset.
    profile = slurm_like_profile(None, depth=bf.max_job_test, window_s=bf.window_s,
                                 orderer=SlurmObservedPriority(), resolution_s=bf.resolution_s)
    return CycleInput(now=snap.taken_at, nodes=table, pending=pending, profile=profile, running=running)


def release_schedule(snap: QueueSnapshot, fleet: Fleet | None = None,
                     conf: SlurmConf | None = None) -> list[tuple[str, float]]:
    """(job id, expected end) of every running job, in the order the engine expects them to end:
    the capacity timeline's releases (engine/capacity.py) over the snapshot's cycle input — the
    same ranking reservation and backfill plan with, never a second reckoning of Slurm's."""
    inp = cycle_input(snap, fleet_from_snapshot(snap, fleet), conf)
    ctx = CycleContext(inp.now, inp.profile, np.random.default_rng(inp.seed), inp.running)
    releases = Releases.build(inp.running, ctx.expected_end, ctx.expected_ends(inp.running))
    return [(str(j), float(t)) for j, t in zip(releases.jobs, releases.ends.tolist(), strict=True)]


def engine_reading(snap: QueueSnapshot, job_id: str, fleet: Fleet | None = None,
                   conf: SlurmConf | None = None) -> EngineReading:
    """One engine cycle over the snapshot; the explained job's Status, and whether it starts now."""
    inp = cycle_input(snap, fleet_from_snapshot(snap, fleet), conf)
    if not any(p.job.id == job_id for p in inp.pending):
        q = snap.job(job_id)
        held = q is not None and q.pending and held_to_one_switch(q, inp.nodes, snap.taken_at)
        return EngineReading(None, False, held_to_switch=held)
    result = run_cycle(inp)
    if job_id in result.started:
        return EngineReading(None, True)
    names = inp.nodes.names
    res = next((r for r in result.reservations if r.job == job_id), None)
    planned = tuple(sorted({str(names[i]) for i in res.nodes})) if res is not None else ()
    status = result.statuses.get(JobId(job_id))
    if status is not None and status.estimated_start is not None and math.isinf(status.estimated_start):
        status = replace(status, estimated_start=None)
    return EngineReading(status, False, planned)
