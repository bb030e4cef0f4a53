"""The defrag plan as a mixed-integer program (``scipy.optimize.milp``, HiGHS): the set of
moves that starts the most waiting GPU-equivalents, and among those the one that moves the
fewest GPU-hours — an optimum the solver proves, where the greedy of defrag.py takes the
cheapest gang per GPU step by step and can end up starting less, or moving more.

Binary variables (all 0/1):

* ``s_w``: waiting gang w starts (its ``minMember`` pods);
* ``a_pn``: waiting pod p goes to node n (n passes p's node filters and can ever hold it);
* ``m_r``: running gang r moves (every pod movable: no DRA claim);
* ``b_qn``: pod q of a moving gang goes to node n (not the node it is on now).

Constraints: ``Σ_n a_pn = s_w`` for every pod p of w (a gang starts whole or not at all);
``Σ_n b_qn = m_r`` for every pod q of r (a moved gang is re-created whole); per node n and
resource k (GPUs, CPU, memory, each MIG profile),

    Σ_p d_pk·a_pn + Σ_q d_qk·b_qn − Σ_{q on n now} d_qk·m_r(q) ≤ free_k(n).

Objective (minimised): ``−B·Σ_w G_w·s_w + Σ_r c_r·m_r`` with G_w the gang's GPU-equivalents
(whole GPUs, MIG instances G/7), c_r = GPU-equivalents × hours run (the GPU-hours lost when r
restarts), and B = 7·(Σ_r c_r + 1): any 1/7 GPU more started outweighs every possible move, so
the optimum is lexicographic — most GPU-equivalents started, then least GPU-hours moved.

The waiting gangs in the model are the greedy's (``defrag.held_by_room``): one that fits with
no move is held back by a reservation or priority, not by fragmentation, so it is neither
started nor kept room for. A plan is returned only when it moves something. The greedy's
plan (its started gangs and moves) is a feasible point of this model, so the optimum starts
at least as many GPU-equivalents, and for as many moves no more GPU-hours. A moved pod never
returns to its own node, and each gang moves at most once.
The solver gets ``TIME_LIMIT_S``; if it proves nothing optimal in time its best plan is taken
(``optimal`` False) — unless the greedy's plan is better, which is then returned with a note, so
the result is never worse than the greedy's. Above ``MAX_VARIABLES`` (about 100 nodes with a
few running gangs each: HiGHS rarely closes such a model in the time limit), or when the solver
finds no plan, the greedy plan is returned with a note.
"""

from __future__ import annotations

import numpy as np

from gpufleet.adapters.kubernetes.defrag import (
    EPS,
    DefragPlan,
    Move,
    Step,
    _movable,
    _State,
    candidates,
    demand,
    free_vectors,
    gang_equivalents,
    greedy,
    held_by_room,
)
from gpufleet.adapters.kubernetes.jobs import Gang
from gpufleet.adapters.kubernetes.nodes import KubeNode

TIME_LIMIT_S = 10.0
MAX_VARIABLES = 20_000


def _could_hold(node_cap: dict[str, float], d: dict[str, float]) -> bool:
    return all(v <= node_cap.get(k, 0.0) + EPS for k, v in d.items() if v and k not in ("cpu", "mem"))


def solve(nodes: list[KubeNode], free: dict, running: list[Gang], waiting: list[Gang],
          now: float) -> DefragPlan | None:
    from scipy.optimize import Bounds, LinearConstraint, milp

    state = _State(nodes, free, running, now)
    waiting_gpus = round(sum(gang_equivalents(g) for g in candidates(waiting)), 4)
    pods = sum(len(g.pods) for g in candidates(waiting)) + sum(len(g.pods) for g in running)
    if pods * len(state.nodes) > MAX_VARIABLES:   # at most this many variables: decide before building
        return _fallback(nodes, free, running, waiting, now,
                         f"up to {pods * len(state.nodes)} variables is over {MAX_VARIABLES}")
    todo = held_by_room(state, candidates(waiting))
    if not todo:
        return None
    caps = {n.name: {"gpu": float(n.node.gpus), **{f"mig:{k}": float(a) for k, (_, a) in n.gpu.mig.items()}}
            for n in state.nodes}
    free_v = free_vectors(nodes, free, running)
    by_name = {n.name: n for n in state.nodes}
    movable = [g for g in running if g.pods and all(_movable(p) for p in g.pods)
               and any(p.node_name in by_name for p in g.pods) and gang_equivalents(g) > 0]
    cols: list[tuple] = []          # (kind, ...) per variable
    cost: list[float] = []
    big = 7.0 * (sum(state.cost[g.key] for g in movable) + 1.0)
    for g in todo:
        cols.append(("s", g.key))
        cost.append(-big * gang_equivalents(g))
    for r in movable:
        cols.append(("m", r.key))
        cost.append(state.cost[r.key])
    assign: list[tuple[int, str, dict, int]] = []   # (column, node, demand, row of its "exactly one")
    eq_rows: list[tuple[int, int]] = []             # the s/m column each equality row is tied to
    col_of = {c[1]: i for i, c in enumerate(cols)}
    for g in todo:
        for p in g.pods:
            d, row = demand(p), len(eq_rows)
            eq_rows.append((col_of[g.key], row))
            for n in state.nodes:
                if state.allowed(p, n) and _could_hold(caps[n.name], d):
                    assign.append((len(cols), n.name, d, row))
                    cols.append(("a", g.key, p.key, n.name))
                    cost.append(0.0)
    for r in movable:
        for q in r.pods:
            d, row = demand(q), len(eq_rows)
            eq_rows.append((col_of[r.key], row))
            for n in state.nodes:
                if n.name != q.node_name and state.allowed(q, n) and _could_hold(caps[n.name], d):
                    assign.append((len(cols), n.name, d, row))
                    cols.append(("b", r.key, q.key, n.name))
                    cost.append(0.0)
    if len(cols) > MAX_VARIABLES:
        return _fallback(nodes, free, running, waiting, now,
                         f"{len(cols)} variables is over {MAX_VARIABLES}")
    # equalities: Σ assignments − s (or m) = 0
    eq = [(row, col, -1.0) for col, row in eq_rows] + [(row, col, 1.0) for col, _, _, row in assign]
    n_eq = len(eq_rows)
    # capacities: one row per (node, resource) that anyone asks for
    res_row: dict[tuple[str, str], int] = {}
    rhs: list[float] = []
    cap: list[tuple[int, int, float]] = []

    def row_of(node: str, k: str) -> int:
        if (node, k) not in res_row:
            res_row[(node, k)] = len(rhs)
            rhs.append(free_v.get(node, {}).get(k, 0.0))
        return res_row[(node, k)]

    for col, node, d, _ in assign:
        for k, v in d.items():
            if v:
                cap.append((row_of(node, k), col, v))
    for r in movable:
        for q in r.pods:
            if q.node_name not in by_name:
                continue
            for k, v in demand(q).items():
                if v and (q.node_name, k) in res_row:
                    cap.append((res_row[(q.node_name, k)], col_of[r.key], -v))
    nv = len(cols)
    a_eq = _matrix(eq, n_eq, nv)
    constraints = [LinearConstraint(a_eq, 0.0, 0.0)]
    if rhs:
        a_cap = _matrix(cap, len(rhs), nv)
        constraints.append(LinearConstraint(a_cap, -np.inf, np.array(rhs) + EPS))
    res = milp(np.array(cost), constraints=constraints, integrality=np.ones(nv), bounds=Bounds(0, 1),
               options={"time_limit": TIME_LIMIT_S, "disp": False, "mip_rel_gap": 0.0})
    if res.x is None:
        return _fallback(nodes, free, running, waiting, now, f"the solver found no plan ({res.message})")
    x = np.round(res.x).astype(int)
    out = _plan(cols, x, todo, movable, state, waiting_gpus, optimal=res.status == 0)
    if res.status != 0:
        alt = greedy(nodes, free, running, waiting, now)
        if alt is not None and (out is None or (alt.started_gpus, -alt.displaced_gpu_h)
                                > (out.started_gpus, -out.displaced_gpu_h)):
            alt.notes.append("the MILP stopped at its time limit with a worse plan than the greedy's; "
                             "greedy plan")
            return alt
    dual = getattr(res, "mip_dual_bound", None)
    if out is not None and dual is not None and np.isfinite(dual):
        # every plan has −B·G + cost ≥ dual with cost ≤ Σ c_r: G ≤ (Σ c_r − dual) / B
        total = sum(state.cost[g.key] for g in movable)
        out.bound_gpus = max(out.started_gpus, round((total - dual) / big, 4))
    return out


def _matrix(entries: list[tuple[int, int, float]], n_rows: int, n_cols: int):
    from scipy.sparse import coo_matrix
    r, c, v = zip(*entries, strict=True) if entries else ((), (), ())
    return coo_matrix((list(v), (list(r), list(c))), shape=(n_rows, n_cols))


def _fallback(nodes, free, running, waiting, now, why: str) -> DefragPlan | None:
    out = greedy(nodes, free, running, waiting, now)
    if out is not None:
        out.notes.append(f"MILP not used: {why}; greedy plan")
    return out


def _plan(cols: list[tuple], x: np.ndarray, todo: list[Gang], movable: list[Gang], state: _State,
          waiting_gpus: float, optimal: bool) -> DefragPlan | None:
    on = [c for c, v in zip(cols, x, strict=True) if v]
    started = {c[1] for c in on if c[0] == "s"}
    moved = {c[1] for c in on if c[0] == "m"}
    dest: dict[str, set[str]] = {}
    for c in on:
        if c[0] == "b" and c[1] in moved:
            dest.setdefault(c[1], set()).add(c[3])
    placed: dict[str, set[str]] = {}
    for c in on:
        if c[0] == "a" and c[1] in started:
            placed.setdefault(c[1], set()).add(c[3])
    gangs = {g.key: g for g in movable}
    moves = {k: Move(k, gang_equivalents(gangs[k]), tuple(sorted({p.node_name for p in gangs[k].pods})),
                     tuple(sorted(dest.get(k, ()))), round(state.cost[k], 2)) for k in sorted(moved)}
    out = DefragPlan(waiting_gpus=waiting_gpus, method="milp", optimal=optimal)
    left = dict(moves)
    order = sorted((g for g in todo if g.key in started), key=lambda g: (-gang_equivalents(g), g.key))
    for g in order:
        mine = [m for k, m in sorted(left.items()) if set(m.from_nodes) & placed[g.key]]
        for m in mine:
            left.pop(m.gang)
        out.steps.append(Step(g.key, gang_equivalents(g), tuple(sorted(placed[g.key])), tuple(mine)))
    if out.steps and left:   # moves that made room for the moved pods themselves
        first = out.steps[0]
        out.steps[0] = Step(first.gang, first.gpus, first.nodes, first.moves + tuple(left.values()))
    return out if any(s.moves for s in out.steps) else None


def plan(nodes: list[KubeNode], free: dict, running: list[Gang], waiting: list[Gang],
         now: float, method: str = "milp") -> DefragPlan | None:
    """``waiting``: the minimum (``minMember``) part of each gang that waits; ``free``: per node
    (GPUs, CPU, memory GB) free now, after what the engine starts this cycle. ``method``:
    ``milp`` (``solve``: the optimum, falling back to the greedy when the solver finds
    nothing in its time limit) or ``greedy`` (adapters/kubernetes/defrag.py)."""
    if method == "milp":
        return solve(nodes, free, running, waiting, now)
    return greedy(nodes, free, running, waiting, now)
