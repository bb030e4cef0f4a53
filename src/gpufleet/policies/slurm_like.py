"""A Slurm-like policy: multifactor priority order, one task per node, conservative backfill.

What Slurm 22.05 (``priority/multifactor``, ``select/cons_tres``, ``sched/backfill``) does, and
what this module copies:

* **Priority** (``SlurmPriority``). Per job, with the weights of slurm.conf::

      prio = int( W_part · 1                                   (one partition: factor 1)
                + W_size · ((nodes / N + cpus / C) / 2)        (1 − that with PriorityFavorSmall)
                + W_age  · min(age / PriorityMaxAge, 1) )

  where N, C are the cluster's nodes and CPUs, ``cpus`` the job's *requested* CPUs (tasks ×
  CPUs per task, at least one per task: DefCpuPerGPU only applies at allocation) and ``age`` the
  time since submission. Slurm computes ``InitPrio`` at submit (age 0) and recomputes every pending
  job only every ``PriorityCalcPeriod`` (the decay thread, ≥ 1 minute): between two recalculations
  a job's age does not grow. ``age_ticks`` copies that: age is measured at the last tick
  ``phase + k · period`` at or before ``now``. Fair share and QOS are left out: with one account
  and one QOS they add the same amount to every job. Ties: Slurm sorts by job id, i.e. submission
  order — here submit time, then the job id read as Slurm's number (``slurm_id_key``: ``5`` before
  ``10``; array task ``123_4`` and het-job component ``123+1`` after ``123``, by task/offset).
  (Checked against real ``InitPrio``: 2 nodes, 2 tasks on 8 nodes of 64 CPUs, W_size = W_part
  = 1000 → 1000 + int(1000 · (2/8 + 2/512) / 2) = 1126.)

* **Placement** (``OneTaskPerNode``). ``sbatch --nodes=R --ntasks-per-node=1 --gres=gpu:G`` puts
  its R tasks on R *different* nodes, G GPUs on each. Our gang placer would stack two 2-GPU pods
  on one node. This placer is the gang best fit with at most one pod of each pod set per node.

* **Backfill**. Slurm's backfill scheduler walks the queue in priority order and gives *every*
  job it cannot start a planned start that later jobs must not delay (``bf_max_job_test`` of
  them): conservative backfill, not EASY. Running jobs end, in its plan, at start + time limit.
  ``slurm_like_profile`` therefore defaults to the conservative mode; EASY is kept for comparison.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from gpufleet.engine.phases.place import PlaceOutcome
from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.profile import Profile
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status
from gpufleet.engine.types import CycleContext, PendingJob
from gpufleet.model.job import Job, PodSet
from gpufleet.policies.backfill import ReservationBackfill, ShadowReserver
from gpufleet.policies.gang import best_fit_leaf, fit_gang, gang_feasible, place_in_order, whole_gpus_only
from gpufleet.policies.gang_search import Short, gang_search
from gpufleet.policies.scorers import tightest


@dataclass(frozen=True)
class SlurmPriority:
    """Slurm's multifactor priority for one-partition, one-account workloads (see module doc)."""

    nodes: int
    cpus: int
    weight_size: float = 0.0
    weight_age: float = 0.0
    weight_partition: float = 0.0
    max_age_s: float = 7 * 86400.0
    calc_period_s: float = 300.0
    #: Sim time of one recalculation tick (Slurm's decay thread runs from slurmctld's start).
    phase_s: float = 0.0
    favor_small: bool = False

    def size_factor(self, job: Job) -> float:
        """Requested nodes and CPUs: the ``slurm.req_nodes`` / ``slurm.req_cpus`` labels of a job
        read from sacct (ReqTRES), else one node per task and at least one CPU per task."""
        labels = dict(job.labels)
        tasks = job.total_pods
        cpus = sum(ps.replicas * max(1, math.ceil(ps.request.cpus)) for ps in job.pod_sets)
        nodes = tasks  # one task per node (``--ntasks-per-node=1``)
        if labels.get("slurm.req_cpus", "").isdigit():
            cpus = int(labels["slurm.req_cpus"])
        if labels.get("slurm.req_nodes", "").isdigit():
            nodes = int(labels["slurm.req_nodes"])
        factor = (nodes / self.nodes + cpus / self.cpus) / 2
        return 1.0 - factor if self.favor_small else factor

    def age_at(self, job: Job, now: float) -> float:
        """Age as Slurm last computed it: at the latest recalculation tick ≤ ``now``, 0 before."""
        if self.calc_period_s <= 0:
            return max(0.0, now - job.submit_time)
        tick = self.phase_s + math.floor((now - self.phase_s) / self.calc_period_s) * self.calc_period_s
        return max(0.0, tick - job.submit_time)

    def priority(self, job: Job, now: float) -> int:
        age = min(self.age_at(job, now) / self.max_age_s, 1.0) if self.max_age_s > 0 else 1.0
        return int(self.weight_partition + self.weight_size * self.size_factor(job) + self.weight_age * age)


_SLURM_ID = re.compile(r"(\d+)(?:([_+])(\d+))?")


def slurm_id_key(job: Job) -> tuple[int, int, int, str]:
    """Sort key of a job's Slurm id (label ``slurm.job_id``, else the job id) as Slurm orders it.

    ``5`` < ``10`` < ``10_2`` < ``10_10`` < ``11``; het-job components ``123+0``, ``123+1`` by
    offset. Ids that are not Slurm numbers (``j0001``) sort after all numeric ones, as text.
    """
    text = dict(job.labels).get("slurm.job_id", str(job.id))
    m = _SLURM_ID.fullmatch(text)
    if m is None:
        return (1, 0, 0, text)
    return (0, int(m.group(1)), int(m.group(3)) + 1 if m.group(3) else 0, "")


class SlurmMultifactor:
    """Order by Slurm's multifactor priority (high first), then submit time, then Slurm's job id."""

    name = "slurm-multifactor"

    def __init__(self, priority: SlurmPriority) -> None:
        self.prio = priority

    def order(self, admitted: Sequence[PendingJob], ctx: CycleContext) -> list[PendingJob]:
        prio = self.prio.priority
        return sorted(admitted, key=lambda p: (-prio(p.job, ctx.now), p.job.submit_time, slurm_id_key(p.job)))


class SlurmObservedPriority:
    """Order by the priority Slurm itself computed (``Job.priority``, from squeue), then Slurm's
    job id: what ``slurm explain`` uses, since the live queue carries Slurm's own numbers
    (fair share and QOS included), which no recomputation from the weights could match."""

    name = "slurm-observed-priority"

    def order(self, admitted: Sequence[PendingJob], ctx: CycleContext) -> list[PendingJob]:
        return sorted(admitted, key=lambda p: (-p.job.priority, slurm_id_key(p.job)))


def cons_tres_choice(job: Job, table: NodeTable,
                     weights: np.ndarray | None = None) -> tuple[PodBinding, ...] | None:
    """Nodes as select/cons_tres with topology/tree picks them, for a one-pod-set whole-GPU job.

    slurm.conf(5), NodeName ``Weight``: "All things being equal, jobs will be allocated the nodes
    with the lowest weight which satisfies their requirements"; Slurm's topology guide: the
    lowest-level switch that can satisfy the request, best fit. Slurm's ``_eval_nodes_topo``
    (select/cons_tres job_test.c, 22.05-era source) does it in this order, copied here with
    ``weights`` aligned with the table's rows (None: all equal, Slurm's default of 1):

    1. add weight tiers, lightest first, until the usable nodes number at least R (the tasks);
    2. if one tier was enough: the leaf with the *fewest* usable nodes of it that still holds all
       R (best fit; first on ties), its first R nodes in table (slurm.conf) order; when no leaf
       can, the spine likewise, filling its fullest leaves first;
    3. if heavier tiers were needed: *every* node of the lighter tiers is taken ("all of the lower
       priority nodes should be included in the job's allocation"), then the rest from the last
       tier on those nodes' leaves (leaf order, then node order), then from other leaves, best
       fit first, else the fullest.

    Example: one leaf of ``a`` (Weight=10) and ``b`` (Weight=1), both idle, a one-node job: tier 1
    holds only ``b``, which is enough, so ``b`` — while with equal weights ``a`` (listed first). A
    3-node job on two leaves whose only weight-1 nodes are the first of each: both are taken, and
    the third node is leaf 0's next one (the job spans two leaves to honour the weights).
    It does not look for the node with the fewest free GPUs, which our gang best fit does (the
    issue measured Slurm picking the tightest node for 40-52 % of one-node jobs, best fit 80-84 %).
    None when the job is of another kind or does not fit now (the caller falls back).
    """
    if len(job.pod_sets) != 1:
        return None
    ps = job.pod_sets[0]
    nodes = cons_tres_nodes(table, ps, weights)
    if nodes is None:
        return None
    return tuple(PodBinding(job.id, ps.name, k, n, ps.request) for k, n in enumerate(nodes))


def cons_tres_nodes(table: NodeTable, ps: PodSet, weights: np.ndarray | None = None) -> list[int] | None:
    """The chooser behind ``cons_tres_choice``: one node per task of a whole-GPU pod set, in task
    order; None when the pod set is fractional or does not fit this way now."""
    req = ps.request
    if req.gpus < 1 or req.is_fractional:
        return None
    ok = np.minimum(table.slots(req), 1) > 0
    need = ps.replicas
    if int(ok.sum()) < need:
        return None
    w = np.zeros(len(table), np.int64) if weights is None else np.asarray(weights, np.int64)
    best = np.zeros(len(table), bool)
    lighter = np.zeros(len(table), bool)
    for tier in np.unique(w[ok]):
        lighter = best.copy()
        best |= ok & (w == tier)
        if int(best.sum()) >= need:
            break
    if lighter.any():
        return _with_lighter_nodes(lighter, best & ~lighter, need, table)
    return _lowest_switch(best, need, table)


def _lowest_switch(usable: np.ndarray, need: int, table: NodeTable) -> list[int] | None:
    """``need`` usable nodes under the lowest switch that holds them (see ``cons_tres_choice``)."""
    for level in (table.leaf_idx, table.spine_idx):
        counts = np.bincount(level[usable], minlength=int(level.max()) + 1 if len(level) else 0)
        group = tightest(counts, need)  # best fit: fewest usable nodes, first on ties
        if group is None:
            continue
        members = np.flatnonzero(usable & (level == group))
        if level is table.spine_idx:
            leaf_counts = np.bincount(table.leaf_idx[members], minlength=int(table.leaf_idx.max()) + 1)
            rank = {int(leaf): r for r, leaf in enumerate(np.argsort(-leaf_counts, kind="stable"))}
            return [int(i) for i in sorted(members, key=lambda i: (rank[int(table.leaf_idx[i])], i))[:need]]
        return [int(i) for i in members[:need]]
    return None


def _with_lighter_nodes(lighter: np.ndarray, last: np.ndarray, need: int, table: NodeTable) -> list[int]:
    """Every lighter node, then ``last``-tier nodes on their leaves, then on the best other leaves."""
    nodes = [int(i) for i in np.flatnonzero(lighter)]
    leaf = table.leaf_idx
    used = set(int(x) for x in np.unique(leaf[lighter]))
    for i in np.flatnonzero(last & np.isin(leaf, list(used))):
        if len(nodes) == need:
            return nodes
        nodes.append(int(i))
    rest = last & ~np.isin(leaf, list(used))
    while len(nodes) < need and rest.any():
        counts = np.bincount(leaf[rest], minlength=int(leaf.max()) + 1)
        short = need - len(nodes)
        tight = tightest(counts, short)
        pick = int(np.argmax(counts)) if tight is None else tight
        members = np.flatnonzero(rest & (leaf == pick))
        nodes.extend(int(i) for i in members[:short])
        rest &= leaf != pick
    return nodes


class OneTaskPerNode:
    """Gang best fit where each pod (Slurm task) of a pod set gets a node of its own; with
    ``slurm_nodes`` the nodes are those select/cons_tres would pick (``cons_tres_choice``), using
    ``node_weights`` (node name → Slurm Weight; missing names weigh 1, Slurm's default)."""

    name = "one-task-per-node"

    def __init__(self, stop_at_first_blocked: bool = False, defer: bool = False,
                 slurm_nodes: bool = False, node_weights: Mapping[str, int] | None = None) -> None:
        self.stop_at_first_blocked = stop_at_first_blocked
        self.defer = defer
        self.slurm_nodes = slurm_nodes
        self.node_weights = dict(node_weights or {})
        self._weights: tuple[tuple[str, ...], np.ndarray | None] | None = None

    def weights_for(self, table: NodeTable) -> np.ndarray | None:
        """The weights in the table's row order (None when all are equal); kept per node list."""
        if self._weights is None or self._weights[0] is not table.names:
            w = np.array([self.node_weights.get(str(n), 1) for n in table.names], np.int64)
            self._weights = (table.names, w if len(w) and int(w.min()) != int(w.max()) else None)
        return self._weights[1]

    def feasible(self, job: Job, table: NodeTable, ctx: CycleContext) -> bool | None:
        if len(job.pod_sets) != 1:
            return None
        return gang_feasible(job, table.one_pod_per_node(), ctx)

    def fit(self, job: Job, table: NodeTable, ctx: CycleContext) -> tuple[PodBinding, ...] | Status:
        """The one gang search on the table with one pod per node; with ``slurm_nodes`` its
        chooser is select/cons_tres's (``cons_tres_nodes``), falling back to gang best fit
        where that has no answer (several pod sets, or no switch that holds the job)."""
        if not self.slurm_nodes:
            return fit_gang(job, table.one_pod_per_node(), ctx, self.name)
        weights = self.weights_for(table)

        def choose(scratch: NodeTable, ps: PodSet) -> list[tuple[int, int]] | Short | None:
            nodes = cons_tres_nodes(scratch, ps, weights) if len(job.pod_sets) == 1 else None
            return best_fit_leaf(scratch, ps) if nodes is None else [(n, 1) for n in nodes]

        return gang_search(job, table.one_pod_per_node(), ctx, self.name, choose,
                           refuse=lambda ps: whole_gpus_only(ps, self.name))

    def place(self, ordered: Sequence[PendingJob], plan: Plan, ctx: CycleContext) -> PlaceOutcome:
        return place_in_order(self, ordered, plan, ctx, self.stop_at_first_blocked, self.defer)


def slurm_like_profile(priority: SlurmPriority | None, backfill: str = "conservative", depth: int = 1000,
                       window_s: float = math.inf,
                       orderer: SlurmMultifactor | SlurmObservedPriority | None = None,
                       slurm_nodes: bool = False,
                       node_weights: Mapping[str, int] | None = None,
                       resolution_s: float = 0.0, epoch_s: float = 0.0) -> Profile:
    """Slurm's order and task placement with ``conservative`` (Slurm's) or ``easy`` backfill.

    The place step is Slurm's main scheduler (priority order, stop at the first job that does not
    fit); reserve + backfill are its backfill scheduler: ``depth`` (``bf_max_job_test``) blocked
    jobs get a planned start, all of them protected with ``conservative``, the first only with
    ``easy``; a later job starts now only if it delays none of them. ``window_s`` (``bf_window``)
    bounds that plan (``ShadowReserver.window_s``). ``node_weights`` (node name → slurm.conf
    ``Weight``) steer the select/cons_tres node choice (``slurm_nodes``). ``resolution_s``
    (``bf_resolution``) rounds each planned job's time on its nodes down to that grid of epoch
    seconds (``epoch_s``: the epoch second of sim time 0), as Slurm's backfill map does
    (``ShadowReserver.resolution_s``); planned starts themselves stay exact, as Slurm reports them.
    """
    if orderer is None:
        if priority is None:
            raise ValueError("slurm_like_profile: give the priority weights or an orderer")
        orderer = SlurmMultifactor(priority)
    if backfill not in ("conservative", "easy"):
        raise ValueError(f"unknown backfill {backfill!r}; expected 'conservative' or 'easy'")
    protect = depth if backfill == "conservative" else 1
    placer = OneTaskPerNode(stop_at_first_blocked=True, slurm_nodes=slurm_nodes, node_weights=node_weights)
    return Profile(f"slurm-like-{backfill}" + ("-cons-tres" if slurm_nodes else ""), placer=placer,
                   orderer=orderer,
                   reserver=ShadowReserver("slurm-backfill-plan", protect=protect, depth=depth,
                                          keep_promises=False, window_s=window_s,
                                          resolution_s=resolution_s, resolution_epoch_s=epoch_s),
                   backfiller=ReservationBackfill(backfill))
