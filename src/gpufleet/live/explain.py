"""Why is this job pending, when will it start, what would let it start sooner.

Everything comes from the engine: the status chain and the estimated start are the last cycle's
``Status`` for the job (the engine's own diagnosis, never reconstructed), the planned nodes are its
reservation, and the per-node counts ask the engine's fit predicate (``NodeTable.slots``, the
one every placer uses) node by node. The fixes are ranked by displacement, GPU-hours of other
work moved (as ``k8s analyze`` ranks them):

- configuration (0 GPU-h): nodes out of service that would hold a pod (uncordon / undrain), a
  quota that refuses the job (raise it by what the job lacks), a shape the fleet can never hold;
- moving work: the running jobs whose eviction lets the whole gang fit now, cheapest first —
  greedy by GPU-hours run per GPU freed, each job's pods released on a copy of the table until
  every pod set's replicas fit (the count the engine's fit checks first; topology aside), cost =
  Σ GPUs × hours each evicted job has run (the work lost without a checkpoint).
"""

from __future__ import annotations

from typing import cast

import numpy as np
from pydantic import BaseModel

from gpufleet.engine.status import Status, StatusCode
from gpufleet.live.snapshot import LiveSnapshot
from gpufleet.live.views import reason_of
from gpufleet.model.job import Job
from gpufleet.policies.filters import for_job

#: At most this many evictions are tried for the "moving work" fix.
MAX_EVICTIONS = 64


class NodeCount(BaseModel):
    reason: str
    nodes: int


class Fix(BaseModel):
    what: str
    displaced_gpu_h: float


class Explanation(BaseModel):
    job: str
    state: str
    #: One line in plain words.
    summary: str
    code: str | None = None
    reason: str | None = None
    #: The profile the loop runs (policies/registry.py), and the step of it the status names.
    policy: str | None = None
    policy_step: str | None = None
    #: The engine's chain of what held the job back, in phase order.
    chain: list[str] = []
    #: Per pod set, why nodes cannot take one more pod of it now.
    node_counts: dict[str, list[NodeCount]] = {}
    estimated_start: float | None = None
    estimated_wait_s: float | None = None
    estimate_basis: str | None = None
    planned_nodes: list[str] = []
    blockers: list[str] = []
    fixes: list[Fix] = []


def node_counts(snap: LiveSnapshot, job: Job) -> dict[str, list[NodeCount]]:
    """For each pod set: how many nodes fit one more pod, and why the others do not (the first
    reason in the order out of service, not eligible, GPU model, GPUs, CPU, memory)."""
    t = for_job(snap.table, job)
    out: dict[str, list[NodeCount]] = {}
    for ps in job.pod_sets:
        r = ps.request
        left = np.ones(len(t), bool)
        counts: list[NodeCount] = []

        def take(mask: np.ndarray, why: str, left: np.ndarray = left, counts: list = counts) -> None:
            hit = mask & left
            if hit.any():
                counts.append(NodeCount(reason=why, nodes=int(hit.sum())))
            left &= ~hit

        fits = t.slots(r) > 0
        take(fits, "fits one pod now")
        take(~snap.table.schedulable, "out of service")
        take(~t.schedulable, "not in the job's eligible nodes")
        mm = t.model_mask(r.gpu_models)
        if mm is not None:
            take(~mm, f"GPU model is not {'/'.join(r.gpu_models)}")
        if r.gpus > 0:
            take(t.gpu_total < r.gpus, f"fewer than {r.gpus} GPUs in all")
            take(t.gpu_free < r.gpus, f"fewer than {r.gpus} GPUs free")
        if r.cpus > 0:
            take(t.cpu_free < r.cpus - 1e-9, f"fewer than {r.cpus:g} CPUs free")
        if r.memory_gb > 0:
            take(t.mem_free < r.memory_gb - 1e-9, f"less than {r.memory_gb:g} GB memory free")
        take(left.copy(), "no room for this pod's share")
        out[ps.name] = counts
    return out


def _fits(table, job: Job) -> bool:
    return all(int(table.slots(ps.request).sum()) >= ps.replicas for ps in job.pod_sets)


def _eviction_fix(snap: LiveSnapshot, job: Job) -> Fix | None:
    t = for_job(snap.table, job).copy()
    if _fits(t, job):
        return None
    now = snap.now
    cands = []
    for jid, rj in snap.running.items():
        freed = rj.job.total_gpus
        if freed <= 0:
            continue
        cost = freed * max(0.0, now - rj.start_time) / 3600.0
        cands.append((cost / freed, cost, jid, rj))
    cands.sort(key=lambda c: (c[0], c[2]))
    chosen: list[str] = []
    total = 0.0
    for _, cost, jid, rj in cands[:MAX_EVICTIONS]:
        for b in rj.bindings:
            t.give(b.node, b.request, slot=b.slot)
        chosen.append(jid)
        total += cost
        if _fits(t, job):
            shown = ", ".join(chosen[:8]) + ("…" if len(chosen) > 8 else "")
            return Fix(what=f"preempt {len(chosen)} running job(s) ({shown})",
                       displaced_gpu_h=round(total, 3))
    return None


def _oos_fix(snap: LiveSnapshot, job: Job) -> Fix | None:
    if not snap.out_of_service:
        return None
    t = for_job(snap.table, job).copy()
    idx = {n: i for i, n in enumerate(t.names)}
    opened = [n for n in sorted(snap.out_of_service) if n in idx]
    for n in opened:
        t.schedulable[idx[n]] = True
    if not _fits(t, job):
        return None
    usable = [n for n in opened if any(int(t.slots(ps.request)[idx[n]]) > 0 for ps in job.pod_sets)]
    return Fix(what=f"return {len(usable)} node(s) to service ({', '.join(usable[:8])})", displaced_gpu_h=0.0)


def _quota_fix(snap: LiveSnapshot, job: Job) -> Fix | None:
    ten = snap.tenancy
    q = ten.tenant(job.tenant) if ten is not None else None
    if q is None:
        return Fix(what=f"give tenant {job.tenant!r} a queue with quota", displaced_gpu_h=0.0)
    used = sum(rj.job.total_gpus for rj in snap.running.values() if rj.job.tenant == job.tenant)
    lack = max(0, used + job.total_gpus - q.nominal_gpus)
    return Fix(what=f"raise tenant {job.tenant!r}'s nominal quota by {lack} GPUs "
                    f"(it runs {used} of {q.nominal_gpus}; this job needs {job.total_gpus})",
               displaced_gpu_h=0.0)


def _shape_fix(snap: LiveSnapshot, job: Job) -> Fix:
    t = snap.table
    biggest = int(t.gpu_total.max()) if len(t) else 0
    wants = max((ps.request.gpus for ps in job.pod_sets), default=0)
    models = sorted(set(t.gpu_models))
    return Fix(what=f"change the request: at most {biggest} GPUs per pod on models {', '.join(models)} "
                    f"(a pod asks {wants})", displaced_gpu_h=0.0)


def _per_shape(snap: LiveSnapshot, job: Job) -> tuple[dict[str, list[NodeCount]], list[Fix]]:
    """The node counts and the capacity fixes (return nodes to service, evict running work):
    they read the job's shape alone (pod sets, node filter; ``Job.shape_key``) and the snapshot,
    so they are computed once per shape and snapshot (100,000 pending jobs come in a few dozen
    shapes). Two dict operations, each atomic under the GIL: two readers at once at worst both
    compute the same answer."""
    key = ("explain", job.shape_key, tuple(ps.name for ps in job.pod_sets))
    hit = snap.derived.get(key)
    if hit is None:
        fixes = [fx for fx in (_oos_fix(snap, job), _eviction_fix(snap, job)) if fx is not None]
        hit = snap.derived.setdefault(key, (node_counts(snap, job), fixes))
    return cast(tuple[dict[str, list[NodeCount]], list[Fix]], hit)


def _when(snap: LiveSnapshot, t: float) -> str:
    return f"t={t:.0f}s (in {max(0.0, t - snap.now):.0f}s)"


def _profile(snap: LiveSnapshot, st: Status | None) -> str | None:
    name = snap.extra.get("profile")
    return name if isinstance(name, str) else (st.policy if st else None)


def explain(snap: LiveSnapshot, job_id: str) -> Explanation | None:
    """The explanation of one live job; None when the live world does not hold it."""
    rj = snap.running.get(job_id)
    if rj is not None:
        nodes = sorted({snap.table.names[b.node] for b in rj.bindings})
        return Explanation(job=job_id, state="running", summary=f"running since t={rj.start_time:.0f}s "
                           f"on {len(nodes)} node(s)", planned_nodes=nodes)
    job = snap.pending.get(job_id)
    if job is None:
        held = snap.extra.get("waiting", {})
        if isinstance(held, dict) and job_id in held:
            # the source holds it for a reason of its own (a Slurm hold, a dependency): no
            # capacity would start it, so the engine does not plan it
            theirs, words = held[job_id]
            return Explanation(job=job_id, state="pending", reason="held", chain=[f"{theirs}: {words}"],
                               summary=f"waiting in {snap.source} ({theirs}): {words}")
        return None
    st = snap.statuses.get(job_id)
    counts, capacity_fixes = _per_shape(snap, job)
    res = next((r for r in snap.reservations if r.job == job_id), None)
    planned = sorted({snap.table.names[i] for i in res.nodes}) if res is not None else []
    blockers = sorted({jid for i in (res.nodes if res is not None else ())
                       for jid in snap.node_jobs.get(i, ())})
    fixes: list[Fix] = []
    if st is not None and st.code is StatusCode.UNRESOLVABLE:
        fixes.append(_shape_fix(snap, job))
    elif st is not None and st.code is StatusCode.NOT_ADMITTED:
        fixes.append(_quota_fix(snap, job))
    else:
        fixes += capacity_fixes
    fixes.sort(key=lambda f: (f.displaced_gpu_h, f.what))
    est = st.estimated_start if st is not None and st.estimated_start is not None \
        and np.isfinite(st.estimated_start) else None
    if res is not None:
        basis = (f"{'a protected' if res.protected else 'an estimated'} reservation on "
                 f"{len(planned)} node(s), from the engine's release schedule (running jobs end by "
                 "their estimates)")
    elif est is not None:
        basis = "the engine's schedule: running jobs end by their estimates, jobs ahead take their slots"
    else:
        basis = None
    if st is None:
        summary = "waiting: submitted after the last cycle; the next one examines it"
    else:
        first = st.reasons[0] if st.reasons else str(st.code)
        summary = f"waiting ({reason_of(st)}): {first}"
        if est is not None:
            summary += f"; estimated start {_when(snap, est)}"
    return Explanation(
        job=job_id, state="pending", summary=summary, code=str(st.code) if st else None,
        reason=reason_of(st), policy=_profile(snap, st), policy_step=st.policy if st else None,
        chain=list(st.reasons) if st else [],
        node_counts=counts, estimated_start=est,
        estimated_wait_s=max(0.0, est - snap.now) if est is not None else None,
        estimate_basis=basis, planned_nodes=planned, blockers=blockers, fixes=fixes)
