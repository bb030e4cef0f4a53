"""Topology-aware gang placement: each kind of traffic where its bandwidth is, and wait-or-start.

**The rule** (Megatron-LM's placement advice, Narayanan et al. SC'21; Kueue TAS, Volcano
HyperNodes, Slurm topology/tree for the levels):

- every TP group inside one NVLink domain (its all-reduces are per layer, on the critical path);
- PP stages close: the pods of one pipeline are allocated together, so they share a node or leaf
  before the pipelines of other data-parallel replicas do (``pipeline_order``);
- DP replicas anywhere the job's constraint allows (their all-reduce overlaps the backward pass);
- the whole gang within ``topology_required`` (nvlink, node, leaf or spine) or not at all, and at
  the tightest level that holds it (which meets any ``topology_preferred`` level whenever it can
  be met; topology_search.py has the search).

**Wait or start.** When no placement keeps the TP groups whole now, the best placement now splits
them. With a training profile the two options are priced with the step-time model
(``CommCostModel``): starting now finishes at ``now + S_now * T``; waiting for the TP-intact
placement finishes at ``now + W + S_ok * T``, where ``T`` is the job's run-time estimate at the
ideal placement, ``S`` the modelled slowdowns and ``W`` the expected wait (running jobs release
their pods at their expected ends until the job fits whole). The job waits when
``W < (S_now - S_ok) * T`` and its age plus ``W`` stays within ``max_wait_s``: the engine keeps no
memory between cycles, so age since submission bounds the total time a job can be held for a
better placement (no job waits forever on an overdue estimate). A WAIT status carries both
options and the figures. Without a training profile a split cannot be priced and is never made.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from gpufleet.engine.capacity import CapacityTimeline, Releases, release_schedule
from gpufleet.engine.phases.place import PlaceOutcome
from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import CycleContext, PendingJob, Shape
from gpufleet.model.fleet import Fabric
from gpufleet.model.job import Job, PodSet
from gpufleet.model.units import duration
from gpufleet.policies.gang import fit_gang, gang_feasible, insufficiency_reason, place_in_order
from gpufleet.policies.gang_search import gang_search
from gpufleet.policies.steptime import DEFAULT_KNOBS, CommCostModel, StepKnobs, span_tier
from gpufleet.policies.topology_search import LEVEL_RANK, LEVELS, Placement, largest_group_atoms, search

TIER_WORDS = ("one NVLink domain", "one leaf", "one spine", "several spines")


def _picks(pod_nodes: np.ndarray) -> list[tuple[int, int]]:
    """One (node, 1) pick per pod, in rank order: replica r goes to ``pod_nodes[r]``."""
    return [(n, 1) for n in pod_nodes.tolist()]


@dataclass(frozen=True, slots=True)
class Layout:
    """How a job's pods map onto its parallel layout.

    ``k`` pods make one atom (a TP group kept in one NVLink domain); ``order[s]`` is the atom
    allocated in slot ``s``: pipeline columns first, so a pipeline's stages land together.
    """

    k: int
    order: np.ndarray
    pod_gpus: int


def pipeline_order(atoms: int, atom_ranks: int, tp: int, cp: int, dp: int, pp: int) -> np.ndarray:
    """Atoms sorted by (pipeline column, stage): atom ``a`` holds ranks ``[a*atom_ranks, ...)``.

    A stage is ``tp*cp*dp`` consecutive ranks (Megatron order), so with ``A_s`` atoms per stage atom
    ``a`` is column ``a % A_s`` of stage ``a // A_s``. Layouts where atoms straddle stages keep
    rank order.
    """
    stage_ranks = tp * cp * dp
    if pp == 1 or stage_ranks % atom_ranks:
        return np.arange(atoms)
    per_stage = stage_ranks // atom_ranks
    a = np.arange(atoms)
    return a[np.lexsort((a // per_stage, a % per_stage))]


def layout_of(job: Job, domain_gpus: int) -> Layout:
    """The atoms of a one-pod-set job; plain gangs (no parallelism) have atoms of one pod."""
    ps = job.pod_sets[0]
    g, r = ps.request.gpus, ps.replicas
    par = job.parallelism
    if par is None or g < 1 or par.world_size != r * g:
        return Layout(1, np.arange(r), g)
    k = par.tp // g if (g < par.tp and par.tp % g == 0 and par.tp <= domain_gpus) else 1
    return Layout(k, pipeline_order(r // k, k * g, par.tp, par.cp, par.dp, par.pp), g)


def pods_in_rank_order(placement: Placement, layout: Layout) -> np.ndarray:
    """Node of each pod, indexed by pod (rank-order) number, from a placement in allocation order."""
    i = np.arange(placement.nodes.size)
    pod = layout.order[i // layout.k] * layout.k + i % layout.k
    out = np.empty_like(placement.nodes)
    out[pod] = placement.nodes
    return out


@dataclass(frozen=True, slots=True)
class Option:
    """One way to run the job: where, how slow, and when it would finish (seconds from now)."""

    label: str
    slowdown: float
    wait_s: float
    finish_s: float

    def describe(self) -> str:
        when = "now" if self.wait_s <= 0 else f"in {duration(self.wait_s)}"
        return (f"{self.label}: starts {when}, slowdown {self.slowdown:.2f}x, "
                f"done in {duration(self.finish_s)}")


@dataclass(frozen=True, slots=True)
class Decision:
    """The wait-or-start choice with both options, as the WAIT status shows it."""

    start_now: Option
    wait: Option | None
    choice: str  # "start" or "wait"
    why: str

    def reasons(self) -> tuple[str, ...]:
        opts = [f"start now — {self.start_now.describe()}"]
        if self.wait is not None:
            opts.append(f"wait — {self.wait.describe()}")
        return (*opts, f"choice: {self.choice} ({self.why})")


@dataclass(slots=True)
class TopologyCaches:
    """Per cycle, the topology placer's own memo (``PlaceCaches.owned``)."""

    #: Atoms the roomiest group at a level holds when empty, per (shape, replicas, level, node filter).
    empty_group_room: dict[tuple[Shape, int, str, frozenset[str] | None], int] = field(default_factory=dict)
    #: Wait-or-start: seconds until a TP-intact slot opens (None: not within the horizon), per
    #: (shape, replicas, atom size, level, horizon, ``NodeTable.free_state()``).
    expected_wait: dict[tuple[Shape, int, int, str, float, bytes], float | None] = field(default_factory=dict)
    #: The running jobs' releases (engine/capacity.py), ranked once per cycle for the wait rule.
    running_releases: Releases | None = None


@dataclass
class TopologyAware:
    """Gang placement by the rule in the module doc; ``fit`` is what reserve and backfill call."""

    fabric: Fabric = field(default_factory=Fabric)
    knobs: StepKnobs = DEFAULT_KNOBS
    max_wait_s: float = 6 * 3600.0
    stop_at_first_blocked: bool = False
    name: str = "topology-aware"
    defer: ClassVar[bool] = False
    _models: dict[tuple, CommCostModel] = field(default_factory=dict, repr=False)

    # ---- pricing ---------------------------------------------------------------------------------

    def cost_model(self, job: Job, table: NodeTable, node: int) -> CommCostModel | None:
        """The job's 4x4 step-time table on ``node``'s GPU model and domain size, memoised."""
        if job.parallelism is None or job.training is None:
            return None
        gpu = table.gpu_models[int(table.model_idx[node])]
        dom_gpus = int(table.gpu_total[table.domain_idx == table.domain_idx[node]].sum())
        key = (job.training, job.parallelism, gpu, dom_gpus)
        model = self._models.get(key)
        if model is None:
            model = CommCostModel.build(job.training, job.parallelism, gpu, self.fabric, dom_gpus,
                                        self.knobs)
            self._models[key] = model
        return model

    def tiers(self, job: Job, pod_nodes: np.ndarray, table: NodeTable) -> tuple[int, int]:
        """(tier of the worst TP group, tier of the whole job) for pods on ``pod_nodes`` (rank order)."""
        par = job.parallelism
        assert par is not None
        ranks = np.repeat(pod_nodes, job.pod_sets[0].request.gpus)

        def spans(nodes: np.ndarray) -> np.ndarray:
            cols = [np.sort(ix[nodes], axis=-1) for ix in (table.domain_idx, table.leaf_idx, table.spine_idx)]
            counts = [1 + (np.diff(c, axis=-1) != 0).sum(axis=-1) for c in cols]
            return span_tier(*counts)

        tp_tier = int(spans(ranks.reshape(-1, par.tp)).max())
        return tp_tier, max(int(spans(ranks)), tp_tier)

    def slowdown(self, job: Job, pod_nodes: np.ndarray, table: NodeTable) -> float | None:
        model = self.cost_model(job, table, int(pod_nodes[0]))
        if model is None:
            return None
        tp_t, job_t = self.tiers(job, pod_nodes, table)
        return max(model.rows[tp_t][job_t] / model.ideal_s, 1.0)

    # ---- the expected wait -----------------------------------------------------------------------

    def expected_wait(self, job: Job, table: NodeTable, ctx: CycleContext, k: int, level: str,
                      horizon_s: float) -> float | None:
        """Seconds until the job fits in atoms of ``k`` within ``level``, as running jobs end at their
        expected ends (overdue ones now); None if not within ``horizon_s``. Memoised per cycle and
        per table state: the plan changes as jobs bind, and reservation asks about other times."""
        ps = job.pod_sets[0]
        key = (ps.request.shape, ps.replicas, k, level, horizon_s, table.free_state())
        caches = ctx.caches.owned(TopologyCaches)
        cache = caches.expected_wait
        if key in cache:
            return cache[key]
        if caches.running_releases is None:
            caches.running_releases = release_schedule(ctx)
        atoms = ps.replicas // k
        timeline = CapacityTimeline(table, caches.running_releases)
        wait = timeline.first_end_when(
            lambda t: largest_group_atoms(t, ps.request, ps.replicas, k, level) >= atoms,
            ctx.now, horizon_s)
        cache[key] = wait
        return wait

    def decide(self, job: Job, split_nodes: np.ndarray, table: NodeTable, ctx: CycleContext, k: int,
               level: str) -> Decision | None:
        """Price starting now with TP groups split against waiting for them whole; None if unpriced."""
        s_now = self.slowdown(job, split_nodes, table)
        model = self.cost_model(job, table, int(split_nodes[0]))
        if s_now is None or model is None:
            return None
        _, job_t = self.tiers(job, split_nodes, table)
        s_ok = max(model.rows[0][job_t] / model.ideal_s, 1.0)
        t = job.estimate
        now_opt = Option(f"TP groups split across NVLink domains, job within {TIER_WORDS[job_t]}",
                         s_now, 0.0, s_now * t)
        budget = self.max_wait_s - (ctx.now - job.submit_time)
        gain = (s_now - s_ok) * t
        if budget <= 0:
            return Decision(now_opt, None, "start",
                            f"the job has waited {duration(ctx.now - job.submit_time)}, past the "
                            f"{duration(self.max_wait_s)} bound")
        w = self.expected_wait(job, table, ctx, k, level, min(budget, gain))
        if w is None:
            return Decision(now_opt, None, "start",
                            f"no TP-intact placement expected within {duration(min(budget, gain))}: the "
                            f"slowdown costs {duration(gain)}, the bound leaves {duration(budget)}")
        wait_opt = Option("TP groups whole in NVLink domains", s_ok, w, w + s_ok * t)
        if w < gain:
            return Decision(now_opt, wait_opt, "wait",
                            f"waiting {duration(w)} costs less than the slowdown's {duration(gain)}")
        return Decision(now_opt, wait_opt, "start",
                        f"waiting {duration(w)} costs more than the slowdown's {duration(gain)}")

    # ---- fit and place ---------------------------------------------------------------------------

    def _max_level(self, job: Job) -> str | Status:
        level = job.topology_required or "fleet"
        if level not in LEVEL_RANK:
            return Status(StatusCode.UNRESOLVABLE, (
                f"topology_required={level!r} is not a level; expected one of {', '.join(LEVELS[:-1])}",),
                self.name)
        return level

    def feasible(self, job: Job, table: NodeTable, ctx: CycleContext) -> bool | None:
        """False when the pods do not fit even ignoring topology (too few slots in the whole
        fleet: ``fit`` then fails too, whatever its rules); otherwise None, because topology rules
        and the wait-or-start price decide, and only ``fit`` applies them. Reservation's search
        over future capacity probes mostly times at which the job cannot fit."""
        return None if gang_feasible(job, table, ctx) is not False else False

    def fit(self, job: Job, table: NodeTable, ctx: CycleContext) -> tuple[PodBinding, ...] | Status:
        """Where every pod would go (rank order), or a Status: UNRESOLVABLE, UNSCHEDULABLE or WAIT.

        The shared gang search (filters, the empty-fleet test, all or nothing) with the level
        search of topology_search.py and the wait-or-start price as its chooser; jobs of several
        pod sets (or none of whole GPUs) get plain gang best fit."""
        if len(job.pod_sets) != 1 or job.pod_sets[0].request.gpus < 1:
            return fit_gang(job, table, ctx, self.name)  # multi-role jobs: plain gang best fit

        def choose(scratch: NodeTable, ps: PodSet) -> list[tuple[int, int]] | Status:
            return self._choose(job, scratch, ctx)

        return gang_search(job, table, ctx, self.name, choose)

    def _choose(self, job: Job, table: NodeTable, ctx: CycleContext) -> list[tuple[int, int]] | Status:
        """The chooser: the tightest level that keeps TP groups whole, else the priced split;
        one (node, 1) pick per pod in rank order."""
        ps = job.pod_sets[0]
        level = self._max_level(job)
        if isinstance(level, Status):
            return level
        if level != "fleet":
            key = (ps.request.shape, ps.replicas, level, table.eligible)
            rooms = ctx.caches.owned(TopologyCaches).empty_group_room
            if key not in rooms:
                rooms[key] = largest_group_atoms(table, ps.request, ps.replicas, 1, level, empty=True)
            room = rooms[key]
            if room < ps.replicas:
                return Status(StatusCode.UNRESOLVABLE, (
                    f"topology_required={level}: even empty, the roomiest {level} holds {room} of its "
                    f"{ps.replicas} pods",), self.name)
        dom_gpus = int(np.bincount(table.domain_idx, weights=table.gpu_total).max(initial=0))
        layout = layout_of(job, dom_gpus)
        slots = table.slots(ps.request)
        whole = search(table, ps.request, ps.replicas, layout.k, level, slots)
        if whole is not None:
            return _picks(pods_in_rank_order(whole, layout))
        split = search(table, ps.request, ps.replicas, 1, level, slots) if layout.k > 1 else None
        if split is None:
            return Status(StatusCode.UNSCHEDULABLE, self._why_not(job, table, layout.k, level), self.name)
        rank_nodes = pods_in_rank_order(split, Layout(1, np.arange(ps.replicas), ps.request.gpus))
        decision = self.decide(job, rank_nodes, table, ctx, layout.k, level)
        if decision is None:
            return Status(StatusCode.WAIT, (
                f"TP groups of {job.parallelism.tp if job.parallelism else '?'} GPUs cannot stay inside "
                "one NVLink domain now, and without a training profile a split cannot be priced",),
                self.name)
        if decision.choice == "start":
            return _picks(rank_nodes)
        assert decision.wait is not None
        return Status(StatusCode.WAIT, decision.reasons(), self.name,
                      estimated_start=ctx.now + decision.wait.wait_s)

    def _why_not(self, job: Job, table: NodeTable, k: int, level: str) -> tuple[str, ...]:
        ps = job.pod_sets[0]
        reasons = [insufficiency_reason(table, ps)]
        if level != "fleet":
            room = largest_group_atoms(table, ps.request, ps.replicas, k, level) * k
            reasons.append(f"topology_required={level}: the roomiest {level} holds {room} of its "
                           f"{ps.replicas} pods now")
        return tuple(reasons)

    def place(self, ordered: Sequence[PendingJob], plan: Plan, ctx: CycleContext) -> PlaceOutcome:
        """The shared in-order pass (``place_in_order``): a job's shape key carries its topology
        constraint, parallelism and training profile, so a failure generalises only within that
        class, and a WAIT (this job's own wait-or-start pricing) is never generalised."""
        return place_in_order(self, ordered, plan, ctx, self.stop_at_first_blocked)
