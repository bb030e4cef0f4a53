"""A defrag plan for the whole cluster: which running gangs to move (evict, and re-create their
pods on free room elsewhere at once) so that the most waiting GPU demand can start, ranked by
displacement — GPU-hours of other work moved (a moved gang restarts: its GPUs × hours run are
lost without a checkpoint, the same cost as fixes.py uses).

Greedy, one step at a time, on the cluster's free capacity (trials undone from a journal):

1. for every waiting gang not yet placed, find its cheapest placement: each pod of the gang's
   minimum (``minMember``) takes the node where making room costs least; room on a node is made
   by moving running gangs with pods there, cheapest GPU-hours per freed GPU first, and a move
   counts only if *every* pod of the moved gang fits on other nodes (first-fit decreasing over
   free GPUs, CPU, memory and the pod's node filters) — a move, never a preemption; a gang is
   moved at most once in a plan;
2. take the gang with the least displacement per GPU started (ties: more GPUs, then key),
   commit its moves and placement, and repeat until no waiting gang can be placed.

A gang that fits with no move at all is not part of the plan (``held_by_room``: fragmentation
does not hold it back, a reservation or priority does). The plan is returned only when it
starts something.

Limits, said in the report: whole-GPU count requests only (DRA-claim and MIG pods are neither
placed nor moved); the greedy is not optimal (choosing moves is a bin-packing problem); a moved
pod's new node is this plan's choice, the real scheduler may pick another.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

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


def displaced_gpu_h(g: Gang, now: float) -> float:
    """What moving or evicting running gang ``g`` costs: its GPU-equivalents × the hours it has
    run (restarted without a checkpoint, that work is lost). The one cost of the greedy plan,
    the MILP (defrag_milp.py) and the fixes (fixes.py)."""
    return (sum(gpu_equivalents(p) for p in g.pods)
            * max(0.0, now - min((p.started or p.created or now) for p in g.pods)) / 3600)


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
    """Free capacity per node and where each running gang's pods are, for trial and commit.

    Trials write into the one state and are undone from a journal (``mark`` / ``rollback``):
    the earlier version copied every node's free vector and every gang's pod list per trial,
    which is O(nodes + gangs) per trial and made a 4,000-node plan take hours (bench/README.md,
    "k8s analyze at 4,000 nodes"). Restoring recorded values (not adding back) keeps the floats
    bit for bit, so a rolled-back trial leaves the state exactly as it was.

    Indexes kept beside it: the nodes' free GPUs as one array (first fit scans only the nodes
    with enough, in node order), the gangs that have had pods on each node (a superset; the
    positions in ``where`` decide), a version per node that every change bumps (cached lower
    bounds are valid while it holds), and node-filter answers per (pod shape, node).
    """

    def __init__(self, nodes: list[KubeNode], free: dict, running: list[Gang], now: float) -> None:
        self.nodes = [n for n in nodes if n.node.health.schedulable]
        self.index = {n.name: i for i, n in enumerate(self.nodes)}
        self.free = free_vectors(nodes, free, running)
        self.gpu = np.array([self.free[n.name]["gpu"] for n in self.nodes], dtype=float)
        self.size = np.array([n.node.gpus for n in self.nodes], dtype=float)
        self.where = {g.key: [(p, p.node_name) for p in g.pods] for g in running}
        self.gangs = {g.key: g for g in running}
        self.at: dict[str, set[str]] = {}
        for g in running:
            for p in g.pods:
                self.at.setdefault(p.node_name, set()).add(g.key)
        self.moved: set[str] = set()   # a gang moves at most once in a plan
        self.eligible: dict[tuple[tuple, str], bool] = {}   # (pod shape, node) -> node filters pass
        self.version = dict.fromkeys(self.index, 0)
        self.journal: list[tuple] = []
        self._memo: dict[int, tuple[KubePod, dict[str, float], tuple]] = {}   # id -> (pod, demand, shape)
        self.cost = {g.key: displaced_gpu_h(g, now) for g in running}

    def _of(self, p: KubePod) -> tuple[KubePod, dict[str, float], tuple]:
        m = self._memo.get(id(p))
        if m is None or m[0] is not p:   # the pod is kept in the entry, so its id stays its own
            m = self._memo[id(p)] = (p, demand(p), _shape(p))
        return m

    def demand(self, p: KubePod) -> dict[str, float]:
        """``demand(p)``, computed once per pod (the hot loops ask it millions of times)."""
        return self._of(p)[1]

    def shape(self, p: KubePod) -> tuple:
        return self._of(p)[2]

    def mark(self) -> int:
        return len(self.journal)

    def rollback(self, mark: int) -> None:
        while len(self.journal) > mark:
            entry = self.journal.pop()
            if entry[0] == "free":
                _, name, old = entry
                self.free[name] = old
                if name in self.index:
                    self.gpu[self.index[name]] = old.get("gpu", 0.0)
                    self.version[name] += 1
            elif entry[0] == "where":
                self.where[entry[1]] = entry[2]
            else:
                self.moved.discard(entry[1])

    def allowed(self, p: KubePod, n: KubeNode) -> bool:
        k = (self.shape(p), n.name)
        if k not in self.eligible:
            self.eligible[k] = static_reason(p, n) is None
        return self.eligible[k]

    def fits(self, p: KubePod, n: KubeNode) -> bool:
        f = self.free[n.name]
        return all(v <= f.get(k, 0.0) + EPS for k, v in self.demand(p).items() if v) and self.allowed(p, n)

    def first_fit(self, p: KubePod, skip: tuple[str, ...] = ()) -> KubeNode | None:
        """The first node (in node order) that ``p`` fits, not one named in ``skip``."""
        for i in np.flatnonzero(self.gpu + EPS >= p.gpus):
            n = self.nodes[i]
            if n.name not in skip and self.fits(p, n):
                return n
        return None

    def take(self, p: KubePod, name: str, sign: float = 1.0) -> None:
        f = self.free.get(name)
        if f is None:   # a node the plan does not use (cordoned, not ready): its room is not free
            return
        self.journal.append(("free", name, dict(f)))
        for k, v in self.demand(p).items():
            f[k] = f.get(k, 0.0) - sign * v
        if name in self.index:
            self.gpu[self.index[name]] = f.get("gpu", 0.0)
            self.version[name] += 1

    def _place_at(self, key: str, placed: list[tuple[KubePod, str]]) -> None:
        self.journal.append(("where", key, self.where[key]))
        self.where[key] = placed
        for _, at in placed:
            self.at.setdefault(at, set()).add(key)

    def move(self, key: str, keep_off: str) -> Move | None:
        """Move every pod of running gang ``key`` off its nodes onto others (not ``keep_off``).
        On None the state is part-changed: the caller rolls back to its mark."""
        pods = self.where[key]
        if not pods or key in self.moved or not all(_movable(p) for p, _ in pods):
            return None
        self.moved.add(key)
        self.journal.append(("moved", key))
        for p, at in pods:
            self.take(p, at, -1.0)
        placed = []
        for p, at in sorted(pods, key=lambda x: (-gpu_equivalents(x[0]), x[0].key)):
            n = self.first_fit(p, (keep_off, at))
            if n is None:
                return None
            self.take(p, n.name)
            placed.append((p, n.name))
        self._place_at(key, placed)
        return Move(key, round(sum(gpu_equivalents(p) for p, _ in pods), 4),
                    tuple(sorted({a for _, a in pods})), tuple(sorted({a for _, a in placed})),
                    round(self.cost[key], 2))

    def here(self, name: str) -> dict[str, list[KubePod]]:
        """Per gang not moved yet, its pods on node ``name`` (gangs holding no GPU there left out)."""
        out = {}
        for k in sorted(self.at.get(name, ())):
            if k in self.moved:
                continue
            qs = [q for q, a in self.where[k] if a == name]
            if any(gpu_equivalents(q) for q in qs):
                out[k] = qs
        return out

    def lower_bound(self, p: KubePod, n: KubeNode) -> float | None:
        """A cost no room-making on ``n`` can beat (its cheapest movable gang), or None when even
        moving every movable gang there would not free enough GPUs."""
        d = self.demand(p)
        if n.node.gpus < p.gpus or not self.allowed(p, n) or any(
                v > n.gpu.mig.get(k[4:], (0, 0))[1] for k, v in d.items() if k.startswith("mig:")):
            return None
        here = self.here(n.name)
        for r, need in self.demand(p).items():
            if r in ("cpu", "mem") or not need:
                continue
            held = sum(self.demand(q).get(r, 0.0) for qs in here.values() for q in qs)
            if self.free[n.name].get(r, 0.0) + held + EPS < need:
                return None
        # The moves that free the ``short`` GPUs missing here are a set S of the movable gangs on
        # the node with Σ_S h ≥ short (h: a gang's GPU-equivalents here, c: its cost). The
        # cheapest such set costs at least the LP relaxation of that covering problem: gangs
        # taken whole by cost per GPU, the last one in part — and at least the cheapest gang.
        # Moves' costs are rounded to 0.01 GPU-h, so the bound gives up 0.005 per gang that
        # could be in S. (The cheapest gang alone was the bound before: valid, but so loose at
        # 4,000 nodes that nearly every node was tried.)
        cheapest = round(min((self.cost[k] for k in here), default=0.0), 2)
        short = self.demand(p).get("gpu", 0.0) - self.free[n.name].get("gpu", 0.0)
        if short <= EPS or not here:
            return cheapest
        items = sorted((self.cost[k] / h, h) for k, qs in here.items()
                       if all(_movable(q) for q, _ in self.where[k])
                       and (h := sum(gpu_equivalents(q) for q in qs)) > 0)
        relaxed, left = 0.0, short
        for ratio, h in items:
            take = min(h, left)
            relaxed += ratio * take
            left -= take
            if left <= EPS:
                break
        if left > EPS:
            return None   # the movable gangs here hold too few GPUs: no room can be made
        return max(cheapest, relaxed - 0.005 * len(items))

    def bounds(self, p: KubePod, cache: dict) -> list[tuple[float, str, KubeNode]]:
        """(lower bound, name, node) for every node where room can be made, cheapest first;
        ``cache`` keeps each node's bound while the node's version holds."""
        shape = self.shape(p)
        out = []
        for i in np.flatnonzero(self.size >= p.gpus):
            n = self.nodes[i]
            k = (shape, n.name)
            hit = cache.get(k)
            if hit is None or hit[0] != self.version[n.name]:
                hit = (self.version[n.name], self.lower_bound(p, n))
                cache[k] = hit
            if hit[1] is not None:
                out.append((hit[1], n.name, n))
        out.sort(key=lambda x: x[:2])
        return out

    def make_room(self, p: KubePod, n: KubeNode) -> list[Move] | None:
        """The cheapest moves that let ``p`` onto ``n`` (none when it fits), applied to the
        state; None (and the state as it was) when they cannot."""
        start, moves = self.mark(), []

        def per_gpu(k: str) -> tuple[float, str]:
            held = sum(gpu_equivalents(q) for q, a in self.where[k] if a == n.name)
            return self.cost[k] / max(1e-9, held), k

        here = sorted({k for k in self.at.get(n.name, ()) for q, a in self.where[k]
                       if a == n.name and gpu_equivalents(q)}, key=per_gpu)
        for key in here:
            if self.fits(p, n):
                break
            attempt = self.mark()
            mv = self.move(key, n.name)
            if mv is None:
                self.rollback(attempt)
            else:
                moves.append(mv)
        if self.fits(p, n):
            return moves
        self.rollback(start)
        return None


def _shape(p: KubePod) -> tuple:
    return (p.gpus, tuple(sorted(p.mig.items())), p.cpus, p.memory_gb, p.gpu_models,
            tuple(map(str, p.tolerations)), tuple(sorted(p.node_selector.items())), p.affinity, p.namespace)


def _place(state: _State, core: list[KubePod], cache: dict) -> tuple[list[str], list[Move]] | None:
    """Place the pods of ``core`` on ``state`` (applied; the caller marks and rolls back), each
    on the node where making room costs least, or None (the state rolled back to where it was)."""
    start = state.mark()
    nodes: list[str] = []
    moves: list[Move] = []
    for p in sorted(core, key=lambda q: (-gpu_equivalents(q), q.key)):
        direct = state.first_fit(p)
        if direct is not None:   # fits without a move: no cheaper option exists
            state.take(p, direct.name)
            nodes.append(direct.name)
            continue
        best: tuple[float, str] | None = None
        for lb, name, n in state.bounds(p, cache):   # cheapest bound first; stop once none can beat the best
            if best is not None and (lb, name) > best:
                break
            at = state.mark()
            r = state.make_room(p, n)
            if r is not None and (best is None or (sum(m.gpu_h for m in r), name) < best):
                best = (sum(m.gpu_h for m in r), name)
            state.rollback(at)
        if best is None:
            state.rollback(start)
            return None
        n = state.nodes[state.index[best[1]]]
        mv = state.make_room(p, n)   # the same moves again, now kept (the search is deterministic)
        assert mv is not None
        state.take(p, n.name)
        nodes.append(n.name)
        moves += mv
    return nodes, moves


def gang_equivalents(g: Gang) -> float:
    return round(sum(gpu_equivalents(p) for p in g.pods), 4)


def candidates(waiting: list[Gang]) -> list[Gang]:
    """Waiting gangs a plan may start: every pod movable (no DRA claim) and asking GPUs."""
    return [g for g in waiting if g.pods and all(_movable(p) and gpu_equivalents(p) > 0 for p in g.pods)
            ][:MAX_GANGS]


def fits_without_moves(state: _State, g: Gang) -> bool:
    at = state.mark()
    r = _place(state, list(g.pods), {})
    state.rollback(at)
    return r is not None and not r[1]


def held_by_room(state: _State, gangs: list[Gang]) -> list[Gang]:
    """The gangs a plan is for: those that do not fit the cluster as it is. One that fits with no
    move waits for something else (a reservation, quota, priority: analyze passes only gangs
    the engine did not start), so a plan neither starts it nor keeps room for it — the same
    rule for the greedy and the MILP, which once disagreed: the MILP counted such a gang as
    started for free and then dropped a plan that moved nothing, while the greedy started the
    gang a reservation was waiting for."""
    return [g for g in gangs if not fits_without_moves(state, g)]


def greedy(nodes: list[KubeNode], free: dict, running: list[Gang], waiting: list[Gang],
           now: float) -> DefragPlan | None:
    """The greedy plan (module docstring)."""
    state = _State(nodes, free, running, now)
    todo = candidates(waiting)
    out = DefragPlan(waiting_gpus=round(sum(gang_equivalents(g) for g in todo), 4))
    todo = held_by_room(state, todo)
    cache: dict = {}   # lower bounds per (pod shape, node), kept across steps while a node is unchanged
    while todo:
        best = None
        tried: dict[tuple, tuple | None] = {}
        for g in todo:
            shape = tuple(state.shape(p) for p in g.pods)   # gangs of one shape place alike: once per step
            if shape not in tried:
                at = state.mark()
                tried[shape] = _place(state, list(g.pods), cache)
                state.rollback(at)
            r = tried[shape]
            if r is None or not r[1]:
                continue
            cost = sum(m.gpu_h for m in r[1])
            gpus = gang_equivalents(g)
            rank = (cost / gpus, -gpus, g.key)
            if best is None or rank < best[0]:
                best = (rank, g)
        if best is None:
            break
        g = best[1]
        r = _place(state, list(g.pods), cache)   # commit: the same placement as the trial
        assert r is not None
        placed, moves = r
        state.journal.clear()
        out.steps.append(Step(g.key, gang_equivalents(g), tuple(sorted(set(placed))), tuple(moves)))
        todo.remove(g)
    return out if out.steps else None
