"""A defrag plan for the whole cluster: which running gangs to move (evict, and re-create their
pods on free room elsewhere at once) so that the most waiting GPU demand can start, ranked by
displacement — GPU-hours of other work moved (a moved gang restarts: its GPUs × hours run are
lost without a checkpoint, the same cost as fixes.py uses).

Greedy, one step at a time, on a working copy of the cluster's free capacity:

1. for every waiting gang not yet placed, find its cheapest placement: each pod of the gang's
   minimum (``minMember``) takes the node where making room costs least; room on a node is made
   by moving running gangs with pods there, cheapest GPU-hours per freed GPU first, and a move
   counts only if *every* pod of the moved gang fits on other nodes (first-fit decreasing over
   free GPUs, CPU, memory and the pod's node filters) — a move, never a preemption; a gang is
   moved at most once in a plan;
2. take the gang with the least displacement per GPU started (ties: more GPUs, then key),
   commit its moves and placement, and repeat until no waiting gang can be placed.

A gang that fits with no move at all is not part of the plan (fragmentation does not hold it
back: a reservation or priority does). The plan is returned only when it starts something.

Limits, said in the report: whole-GPU count requests only (DRA-claim and MIG pods are neither
placed nor moved); the greedy is not optimal (choosing moves is a bin-packing problem); a moved
pod's new node is this plan's choice, the real scheduler may pick another.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpufleet.adapters.kubernetes.filters import static_reason
from gpufleet.adapters.kubernetes.jobs import Gang
from gpufleet.adapters.kubernetes.nodes import KubeNode
from gpufleet.adapters.kubernetes.pods import KubePod

EPS = 1e-9
MAX_GANGS = 64   # waiting gangs considered; each step tries each of them


@dataclass(frozen=True, slots=True)
class Move:
    gang: str
    gpus: float          # GPU-equivalents (MIG instances count G/7)
    from_nodes: tuple[str, ...]
    to_nodes: tuple[str, ...]
    gpu_h: float


@dataclass(frozen=True, slots=True)
class Step:
    gang: str
    gpus: float
    nodes: tuple[str, ...]
    moves: tuple[Move, ...]

    @property
    def displaced_gpu_h(self) -> float:
        return round(sum(m.gpu_h for m in self.moves), 2)


@dataclass
class DefragPlan:
    steps: list[Step] = field(default_factory=list)
    waiting_gpus: float = 0
    #: "greedy" or "milp"; for milp, whether the solver proved the plan optimal
    method: str = "greedy"
    optimal: bool = False
    #: milp: the solver's proven upper bound on the GPU-equivalents any plan can start
    bound_gpus: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def started_gpus(self) -> float:
        return round(sum(s.gpus for s in self.steps), 4)

    @property
    def gpu_h_per_gpu(self) -> float:
        return round(self.displaced_gpu_h / self.started_gpus, 3) if self.started_gpus else 0.0

    @property
    def displaced_gpu_h(self) -> float:
        return round(sum(s.displaced_gpu_h for s in self.steps), 2)


def _movable(p: KubePod) -> bool:
    """DRA-claim pods are neither placed nor moved (their devices are the allocator's)."""
    return not p.claims


def mig_slices(profile: str) -> int:
    """Compute slices of a MIG profile ``<G>g.<M>gb`` (G of the GPU's 7)."""
    try:
        return int(profile.split("g.", 1)[0])
    except ValueError:
        return 7


def demand(p: KubePod) -> dict[str, float]:
    """What a pod takes on a node: GPUs, CPU, memory, and one entry per MIG profile (mixed
    strategy: ``nvidia.com/mig-<profile>`` is its own resource)."""
    out = {"gpu": float(p.gpus), "cpu": p.cpus, "mem": p.memory_gb}
    out.update({f"mig:{k}": float(v) for k, v in p.mig.items()})
    return out


def gpu_equivalents(p: KubePod) -> float:
    """Whole GPUs plus MIG instances as the share of a GPU they hold (G/7 each): the unit
    started and moved GPU-hours are counted in."""
    return p.gpus + sum(n * mig_slices(k) / 7 for k, n in p.mig.items())


def free_vectors(nodes: list[KubeNode], free: dict, running: list[Gang]) -> dict[str, dict[str, float]]:
    """Per schedulable node: free GPUs, CPU, memory (``free``) and free MIG instances per
    profile (allocatable minus what running pods there hold)."""
    out = {}
    for n in nodes:
        if not n.node.health.schedulable:
            continue
        g, c, m = free[n.name]
        out[n.name] = {"gpu": g, "cpu": c, "mem": m,
                       **{f"mig:{k}": float(a) for k, (_, a) in n.gpu.mig.items()}}
    for g in running:
        for p in g.pods:
            for k, v in p.mig.items():
                if p.node_name in out:
                    out[p.node_name][f"mig:{k}"] = out[p.node_name].get(f"mig:{k}", 0.0) - v
    return out


class _State:
    """Free capacity per node and where each running gang's pods are, for trial and commit."""

    def __init__(self, nodes: list[KubeNode], free: dict, running: list[Gang], now: float) -> None:
        self.nodes = [n for n in nodes if n.node.health.schedulable]
        self.free = free_vectors(nodes, free, running)
        self.where = {g.key: [(p, p.node_name) for p in g.pods] for g in running}
        self.gangs = {g.key: g for g in running}
        self.moved: set[str] = set()   # a gang moves at most once in a plan
        self.eligible: dict[tuple[str, str], bool] = {}   # (pod, node) -> node filters pass; shared
        self.cost = {g.key: sum(gpu_equivalents(p) for p in g.pods)
                     * max(0.0, now - min((p.started or p.created or now) for p in g.pods)) / 3600
                     for g in running}

    def copy(self) -> _State:
        c = object.__new__(_State)
        c.nodes, c.gangs, c.cost = self.nodes, self.gangs, self.cost
        c.moved = set(self.moved)
        c.eligible = self.eligible
        c.free = {k: dict(v) for k, v in self.free.items()}
        c.where = {k: list(v) for k, v in self.where.items()}
        return c

    def allowed(self, p: KubePod, n: KubeNode) -> bool:
        k = (p.key, n.name)
        if k not in self.eligible:
            self.eligible[k] = static_reason(p, n) is None
        return self.eligible[k]

    def fits(self, p: KubePod, n: KubeNode) -> bool:
        f = self.free[n.name]
        return all(v <= f.get(k, 0.0) + EPS for k, v in demand(p).items() if v) and self.allowed(p, n)

    def take(self, p: KubePod, name: str, sign: float = 1.0) -> None:
        f = self.free[name]
        for k, v in demand(p).items():
            f[k] = f.get(k, 0.0) - sign * v

    def move(self, key: str, keep_off: str) -> Move | None:
        """Move every pod of running gang ``key`` off its nodes onto others (not ``keep_off``)."""
        pods = self.where[key]
        if not pods or key in self.moved or not all(_movable(p) for p, _ in pods):
            return None
        self.moved.add(key)
        for p, at in pods:
            self.take(p, at, -1.0)
        placed = []
        for p, at in sorted(pods, key=lambda x: (-gpu_equivalents(x[0]), x[0].key)):
            n = next((n for n in self.nodes if n.name not in (keep_off, at) and self.fits(p, n)), None)
            if n is None:
                return None   # the caller drops this trial state
            self.take(p, n.name)
            placed.append((p, n.name))
        self.where[key] = placed
        return Move(key, round(sum(gpu_equivalents(p) for p, _ in pods), 4),
                    tuple(sorted({a for _, a in pods})), tuple(sorted({a for _, a in placed})),
                    round(self.cost[key], 2))

    def lower_bound(self, p: KubePod, n: KubeNode) -> float | None:
        """A cost no room-making on ``n`` can beat (its cheapest movable gang), or None when even
        moving every movable gang there would not free enough GPUs."""
        if n.node.gpus < p.gpus or not self.allowed(p, n) or any(
                v > n.gpu.mig.get(k[4:], (0, 0))[1] for k, v in demand(p).items() if k.startswith("mig:")):
            return None
        here = {k: [q for q, a in ps if a == n.name] for k, ps in self.where.items() if k not in self.moved}
        here = {k: qs for k, qs in here.items() if any(gpu_equivalents(q) for q in qs)}
        for r, need in demand(p).items():
            if r in ("cpu", "mem") or not need:
                continue
            held = sum(demand(q).get(r, 0.0) for qs in here.values() for q in qs)
            if self.free[n.name].get(r, 0.0) + held + EPS < need:
                return None
        return round(min((self.cost[k] for k in here), default=0.0), 2)

    def make_room(self, p: KubePod, n: KubeNode) -> tuple[_State, list[Move]] | None:
        """The cheapest moves that let ``p`` onto ``n`` (none when it fits), on a copy."""
        trial, moves = self.copy(), []
        def per_gpu(k: str) -> tuple[float, str]:
            held = sum(gpu_equivalents(q) for q, a in trial.where[k] if a == n.name)
            return trial.cost[k] / max(1e-9, held), k

        here = sorted({k for k, ps in trial.where.items() for q, a in ps
                       if a == n.name and gpu_equivalents(q)}, key=per_gpu)
        for key in here:
            if trial.fits(p, n):
                break
            attempt = trial.copy()
            mv = attempt.move(key, n.name)
            if mv is not None:
                trial = attempt
                moves.append(mv)
        return (trial, moves) if trial.fits(p, n) else None


def _shape(p: KubePod) -> tuple:
    return (p.gpus, tuple(sorted(p.mig.items())), p.cpus, p.memory_gb, p.gpu_models,
            tuple(map(str, p.tolerations)), tuple(sorted(p.node_selector.items())), p.affinity, p.namespace)


def _place(state: _State, core: list[KubePod]) -> tuple[_State, list[str], list[Move]] | None:
    nodes: list[str] = []
    moves: list[Move] = []
    for p in sorted(core, key=lambda q: (-gpu_equivalents(q), q.key)):
        direct = next((n for n in state.nodes if state.fits(p, n)), None)
        if direct is not None:   # fits without a move: no cheaper option exists
            state = state.copy()
            state.take(p, direct.name)
            nodes.append(direct.name)
            continue
        bounds = sorted((lb, n.name, n) for n in state.nodes
                        if (lb := state.lower_bound(p, n)) is not None)
        best: tuple | None = None
        for lb, name, n in bounds:   # cheapest bound first; stop once no node can beat the best
            if best is not None and (lb, name) > best[:2]:
                break
            r = state.make_room(p, n)
            if r is not None and (best is None or (sum(m.gpu_h for m in r[1]), name) < best[:2]):
                best = (sum(m.gpu_h for m in r[1]), name, r[0], r[1])
        if best is None:
            return None
        _, name, state, mv = best
        state.take(p, name)
        nodes.append(name)
        moves += mv
    return state, nodes, moves


def gang_equivalents(g: Gang) -> float:
    return round(sum(gpu_equivalents(p) for p in g.pods), 4)


def candidates(waiting: list[Gang]) -> list[Gang]:
    """Waiting gangs a plan may start: every pod movable (no DRA claim) and asking GPUs."""
    return [g for g in waiting if g.pods and all(_movable(p) and gpu_equivalents(p) > 0 for p in g.pods)
            ][:MAX_GANGS]


def fits_without_moves(state: _State, g: Gang) -> bool:
    r = _place(state, list(g.pods))
    return r is not None and not r[2]


def greedy(nodes: list[KubeNode], free: dict, running: list[Gang], waiting: list[Gang],
           now: float) -> DefragPlan | None:
    """The greedy plan (module docstring)."""
    todo = candidates(waiting)
    out = DefragPlan(waiting_gpus=round(sum(gang_equivalents(g) for g in todo), 4))
    state = _State(nodes, free, running, now)
    while todo:
        best = None
        tried: dict[tuple, tuple | None] = {}
        for g in todo:
            shape = tuple(_shape(p) for p in g.pods)   # gangs of one shape place alike: once per step
            if shape not in tried:
                tried[shape] = _place(state, list(g.pods))
            r = tried[shape]
            if r is None or not r[2]:
                continue
            cost = sum(m.gpu_h for m in r[2])
            gpus = gang_equivalents(g)
            rank = (cost / gpus, -gpus, g.key)
            if best is None or rank < best[0]:
                best = (rank, g, r)
        if best is None:
            break
        _, g, (state, placed, moves) = best
        out.steps.append(Step(g.key, gang_equivalents(g), tuple(sorted(set(placed))), tuple(moves)))
        todo.remove(g)
    return out if out.steps else None
