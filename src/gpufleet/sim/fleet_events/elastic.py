"""Elastic gangs in the simulator: shrink on a failure, grow back a gang delta at a time.

A job with ``Job.elastic`` (model/job.py) may run its first pod set with any replica count k from
``min_replicas`` to its ``replicas`` (K, the max) in multiples of ``step``. The model, as
TorchElastic does it (a membership change restarts the worker group from its last checkpoint):

1. A rank fails at t_f: every rank stops computing (progress freezes). After detection + teardown
   (the rendezvous notices the dead member) the survivors restart at size k' — the pods left on
   healthy nodes, rounded down to ``min + j·step`` — from the last checkpoint, paying the
   checkpoint load. No wait for a replacement. If k' < min the job stops like a rigid gang and
   requeues at full size (fleet_events/failure_events.py ``on_stop``).
2. Throughput at size k is k/K of full speed (data parallelism: per-replica batch fixed, samples
   per step ∝ DP width). A run at size k is kept as a ``Job`` of k replicas whose run time is
   T·K/k: its progress (in seconds at size k) and its checkpoints (every τ of its own compute)
   use the rigid arithmetic unchanged; full-size progress = progress_k · k/K. With an Amdahl
   serial fraction s (``Elastic.serial_fraction``, model/job.py) the ratio K/k becomes
   speed(K)/speed(k), speed(n) = 1/(s + (1 − s)/n): a size-k run loses less than k/K of its speed
   (the all-reduce share does not shrink) — e.g. s = 0.1, 3 of 4 replicas: 2.5/3.08 = 0.8125 of
   full speed, not 0.75.
3. The missing replicas are asked back as gang deltas: one pending job of ``step`` pods per missing
   DP replica (id ``<job>~grow<n>``), placed by the engine like any gang (all-or-nothing for the
   added pods). When deltas are placed the job writes a checkpoint (δ) and restarts at the larger
   size (load R): a grow costs δ + R of the whole job's time and loses no work. A job draining for
   a driver upgrade (fleet_events/upgrade.py) that grows leaves the nodes being upgraded at once, from the
   checkpoint it just wrote.

Cost by cause in the ledger: the failure kind (lost work since the last save, the pause to the
restart, the load) and ``elastic-grow`` (δ + R at each grow).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from gpufleet.engine.types import RunningJob
from gpufleet.model.health import HealthState
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job
from gpufleet.sim.fleet_events.failure_events import on_stop
from gpufleet.sim.fleet_events.failures import FailureState, checkpoint_stretch, run_wall_s, work_done_s
from gpufleet.sim.handlers import on_finish
from gpufleet.sim.kernel import Event, EventKind, Outcome

GROW = "~grow"


@dataclass
class ElasticRun:
    """One elastic job's life: its full-size job, its size now, its pending deltas, its ledger."""

    job: Job
    size: int
    seg_start: float
    deltas: set[str] = field(default_factory=set)
    held_gpu_s: float = 0.0
    reduced_s: float = 0.0

    @property
    def max(self) -> int:
        return self.job.pod_sets[0].replicas

    def close_segment(self, gpus_per_pod: int, t: float) -> None:
        """The size changes at ``t``: account GPU-time held and time below full size."""
        if self.size > 0:
            self.held_gpu_s += self.size * gpus_per_pod * (t - self.seg_start)
            if self.size < self.max:
                self.reduced_s += t - self.seg_start
        self.seg_start = t


def _speed(s: float, n: int) -> float:
    """Amdahl: the speed of n replicas relative to one, 1 / (s + (1 − s)/n)."""
    return 1.0 / (s + (1.0 - s) / n)


def stretch(job: Job, x: float, k: int) -> float:
    """``x`` seconds at full size (K replicas) as seconds at size k: x·K/k (linear), or
    x·speed(K)/speed(k) with an Amdahl serial fraction."""
    K = job.pod_sets[0].replicas
    s = job.elastic.serial_fraction if job.elastic is not None else 0.0
    return x * K / k if s == 0.0 else x * _speed(s, K) / _speed(s, k)


def to_full(job: Job, x: float, k: int) -> float:
    """Seconds of work at size k as full-size seconds: the inverse of ``stretch``."""
    K = job.pod_sets[0].replicas
    s = job.elastic.serial_fraction if job.elastic is not None else 0.0
    return x * k / K if s == 0.0 else x * _speed(s, k) / _speed(s, K)


def sized(job: Job, k: int) -> Job:
    """The job at k replicas of its first pod set: K/k times as long (throughput ∝ k; Amdahl:
    speed(K)/speed(k))."""
    K = job.pod_sets[0].replicas
    if k == K:
        return job
    ps = (dataclasses.replace(job.pod_sets[0], replicas=k), *job.pod_sets[1:])
    est = stretch(job, job.run_time_estimate, k) if job.run_time_estimate is not None else None
    return dataclasses.replace(job, pod_sets=ps, run_time=stretch(job, job.run_time, k),
                               run_time_estimate=est)


def _usable(fs: FailureState, node: int) -> bool:
    upgrading = fs.upgrade is not None and node in fs.upgrade.out
    return fs.book.states[node] is HealthState.HEALTHY and node not in fs.reclaimed and not upgrading


def _saved_k(rj: RunningJob, progress: float) -> float:
    """Last checkpoint of this run, on its own grid (every τ of compute since it began)."""
    ck = rj.job.checkpointing
    if ck is None or ck.interval_s <= 0:
        return rj.progress_before
    return rj.progress_before + (progress - rj.progress_before) // ck.interval_s * ck.interval_s


def _gpus_per_pod(job: Job) -> int:
    return job.pod_sets[0].request.gpus


def on_elastic_stop(st, ev: Event) -> Outcome:  # noqa: ANN001 (SimState)
    """Detection and teardown are over: shrink to the pods left (or stop below the minimum)."""
    fs: FailureState = st.fail
    jid, gen, t_fail, cause = ev.payload
    if not st.is_current(jid, gen):
        return Outcome.NOTHING
    rj: RunningJob = st.cluster.running[jid]
    e = rj.job.elastic
    if e is None:
        return on_stop(st, ev)
    er = fs.elastic.get(jid)
    if er is None:
        er = fs.elastic[jid] = ElasticRun(rj.job, rj.job.pod_sets[0].replicas, rj.start_time)
    main = rj.job.pod_sets[0].name
    lost = [b for b in rj.bindings if not _usable(fs, b.node)]
    kept = [b for b in rj.bindings if _usable(fs, b.node)]
    k = rj.job.pod_sets[0].replicas
    keep = k - len(lost)
    new_k = e.min_replicas + (keep - e.min_replicas) // e.step * e.step if keep >= e.min_replicas else 0
    if any(b.pod_set != main for b in lost) or new_k < e.min_replicas:
        return _full_stop(st, ev, er)
    ck = rj.job.checkpointing
    load = ck.restart_s if ck else 0.0
    progress = work_done_s(rj, t_fail)
    saved = _saved_k(rj, progress)
    in_notice = fs.spot_saved.pop(jid, None)
    if in_notice is not None:
        saved = max(saved, min(in_notice, progress))
    gpus = rj.job.total_gpus
    fs.ledger.charge(cause, gpus * ((progress - saved) * checkpoint_stretch(rj) + (st.t - t_fail)))
    if st.cfg.usage_tracker is not None:
        st.cfg.usage_tracker.add(rj.job.tenant, gpus * (st.t - rj.start_time), st.t)
    gpp = _gpus_per_pod(er.job)
    er.close_segment(gpp, st.t)
    # drop the pods on failed nodes and, to keep whole DP replicas, the last few healthy ones
    drop = keep - new_k
    main_kept = [b for b in kept if b.pod_set == main]
    extra = main_kept[len(main_kept) - drop:] if drop else []
    for b in lost + extra:
        st.cluster.table.give(b.node, b.request, slot=b.slot)
    bindings = tuple(b for b in kept if b not in extra)
    full = to_full(er.job, saved, k)
    new = RunningJob(sized(er.job, new_k), st.t, bindings, stretch(er.job, full, new_k), resumed=True)
    st.cluster.running[jid] = new
    st.generation[jid] = st.gen(jid) + 1
    er.size = new_k
    fs.stopped.pop(jid, None)
    fs.ledger.interruptions += 1
    fs.ledger.elastic_shrinks += 1
    fs.ledger.recoveries_s.append(st.t - t_fail + load)
    fs.ledger.charge(cause, new.job.total_gpus * load)
    st.q.push(st.t + run_wall_s(new), EventKind.FINISH, (jid, st.gen(jid)))
    _ask_deltas(st, jid, er)
    st.rec.event(st.t, "shrink", jid, f"{cause}: {k} → {new_k} replicas; lost {progress - saved:.0f}s "
                                      f"of work at size {k}; resumes from {full:.0f}s")
    return Outcome.CHANGED


def _full_stop(st, ev: Event, er: ElasticRun) -> Outcome:  # noqa: ANN001
    """Below the minimum: stop like a rigid gang, requeue at full size with full-size progress."""
    jid = ev.payload[0]
    rj: RunningJob = st.cluster.running[jid]
    k = rj.job.pod_sets[0].replicas
    er.close_segment(_gpus_per_pod(er.job), st.t)
    er.size = 0
    out = on_stop(st, ev)
    cl = st.cluster
    cl.progress[jid] = to_full(er.job, cl.progress.get(jid, 0.0), k)
    cl.withdraw(jid)
    cl.submit(er.job)
    withdraw(st, er)
    return out


def _ask_deltas(st, jid: str, er: ElasticRun) -> None:  # noqa: ANN001
    """One pending gang of ``step`` pods per missing DP replica."""
    fs: FailureState = st.fail
    e = er.job.elastic
    assert e is not None
    want = (er.max - er.size) // e.step - len(er.deltas)
    remaining = run_wall_s(st.cluster.running[jid])
    pods = (dataclasses.replace(er.job.pod_sets[0], replicas=e.step),)
    for _ in range(max(want, 0)):
        fs.delta_seq += 1
        did = JobId(f"{jid}{GROW}{fs.delta_seq}")
        delta = dataclasses.replace(er.job, id=did, pod_sets=pods, submit_time=st.t,
                                    run_time=max(remaining, 1.0), run_time_estimate=None,
                                    checkpointing=None, elastic=None)
        st.cluster.submit(delta)
        st.submit_times[did] = st.t
        er.deltas.add(did)
        fs.deltas[did] = jid


def withdraw(st, er: ElasticRun) -> None:  # noqa: ANN001
    """The job no longer wants its deltas (it finished or stopped): take them out of the queue."""
    fs: FailureState = st.fail
    cl = st.cluster
    for did in sorted(er.deltas):
        cl.withdraw(did)
        for b in cl.partial.pop(did, []):
            cl.table.give(b.node, b.request, slot=b.slot)
        fs.deltas.pop(did, None)
        if st.decisions is not None:
            st.decisions.started(did)
    er.deltas.clear()


def is_delta(st, jid: str) -> bool:  # noqa: ANN001
    return st.fail is not None and jid in st.fail.deltas


def grow(st, dids: list[str]) -> None:  # noqa: ANN001
    """Deltas the engine placed this cycle: merge each into its job, which checkpoints (δ) and
    restarts at the larger size (R). A job that is itself stopped gives its deltas back."""
    fs: FailureState = st.fail
    cl = st.cluster
    by_parent: dict[str, list[str]] = {}
    for did in dids:
        by_parent.setdefault(fs.deltas[did], []).append(did)
    for jid, mine in by_parent.items():
        er = fs.elastic[jid]
        added = []
        for did in mine:
            cl.withdraw(did)
            added.extend(cl.partial.pop(did, []))
            er.deltas.discard(did)
            fs.deltas.pop(did)
            if st.decisions is not None:
                st.decisions.started(did)
        rj: RunningJob | None = cl.running.get(jid)
        draining = jid in fs.stopped and fs.stopped[jid][1] == "upgrade"
        if rj is None or (jid in fs.stopped and not draining):
            for b in added:
                cl.table.give(b.node, b.request, slot=b.slot)
            if rj is not None:
                _ask_deltas(st, jid, er)
            continue
        k = rj.job.pod_sets[0].replicas
        progress = work_done_s(rj, st.t)
        if st.cfg.usage_tracker is not None:
            st.cfg.usage_tracker.add(rj.job.tenant, rj.job.total_gpus * (st.t - rj.start_time), st.t)
        er.close_segment(_gpus_per_pod(er.job), st.t)
        new_k = k + len(added)
        ck = rj.job.checkpointing
        delta_s, load = (ck.cost_s, ck.restart_s) if ck else (0.0, 0.0)
        full = to_full(er.job, progress, k)
        main = rj.job.pod_sets[0].name
        merged = rj.bindings + tuple(dataclasses.replace(b, job=jid, pod_set=main, replica=k + i)
                                     for i, b in enumerate(added))
        new = RunningJob(sized(er.job, new_k), st.t + delta_s, merged, stretch(er.job, full, new_k),
                         resumed=True)
        cl.running[jid] = new
        st.generation[jid] = st.gen(jid) + 1
        er.size = new_k
        fs.ledger.elastic_grows += 1
        fs.ledger.charge("elastic-grow", new.job.total_gpus * (delta_s + load))
        st.q.push(new.start_time + run_wall_s(new), EventKind.FINISH, (jid, st.gen(jid)))
        st.rec.event(st.t, "grow", jid, f"{k} → {new_k} replicas (a gang delta of {len(added)} pods)")
        if draining:  # it just saved to grow: leave the nodes being upgraded now, onto the new pods
            fs.stopped[jid] = (st.t, "upgrade")
            fs.spot_saved[jid] = new.progress_before
            st.q.push(st.t, EventKind.STOP, (jid, st.gen(jid), st.t, "upgrade"))


def on_elastic_finish(st, ev: Event) -> Outcome:  # noqa: ANN001
    """A run completes; an elastic one closes its ledger and withdraws the deltas it still asked."""
    jid, gen = ev.payload
    fs: FailureState = st.fail
    er = fs.elastic.get(jid)
    if er is not None and st.is_current(jid, gen) and jid not in fs.stopped:
        er.close_segment(_gpus_per_pod(er.job), st.t)
        er.size = 0
        withdraw(st, er)
        fs.ledger.elastic_reduced_s += er.reduced_s
        fs.ledger.elastic_held_gpu_s += er.held_gpu_s
    return on_finish(st, ev)


def restarted(st, jid: str) -> None:  # noqa: ANN001
    """An elastic job that stopped below its minimum runs again, at full size."""
    er = st.fail.elastic.get(jid)
    if er is not None:
        er.size = er.max
        er.seg_start = st.t
