"""What if: the simulator forked from the live snapshot and run forward.

The fork holds the live world as it is: every running job on its own nodes with the work it has
left, every pending job queued now, nodes out of service kept out; then the change asked about
(nodes drained, a quota, another policy) and the probe job (a shape: "when would 64 H100s
start?"). The simulator (sim/handlers.py, sim/step.py: the same engine cycles the live loop runs)
plays it forward until the probe starts or the horizon ends.

The spread over seeds: seed 0 takes every run time as stated; seed k > 0 draws each job's
remaining run time as stated × U(1 − jitter, 1), since jobs often end before their stated
time (the bundled workload's estimates are 1–3× the true run time, sim/workload.py) and a start
estimate inherits that error. The answer is the probe's start per seed, and its spread.
"""

from __future__ import annotations

import os
import pickle
import time
from dataclasses import dataclass, replace

import numpy as np

from gpufleet.engine.checkpoints import remaining_run_s
from gpufleet.engine.incremental import CycleMemo
from gpufleet.engine.profile import Profile
from gpufleet.engine.snapshot import NodeTable
from gpufleet.live.snapshot import LiveSnapshot
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Tenancy
from gpufleet.policies.filters import for_job
from gpufleet.sim.cluster import SimulatedCluster, set_schedulable
from gpufleet.sim.fragmentation import FragmentationSamples
from gpufleet.sim.handlers import HANDLERS
from gpufleet.sim.kernel import EventKind, Outcome
from gpufleet.sim.recorder import Recorder
from gpufleet.sim.runner import batch_gc
from gpufleet.sim.state import SimConfig, SimState
from gpufleet.sim.step import after_instant
from gpufleet.sim.usage import UsageTracker

#: CPU seconds a seed's run may take by default (the API and the dashboard): seed 0 at 2,000 nodes
#: and 100,000 pending finishes a week in ~4.4 s; a jittered seed there would take many minutes.
DEFAULT_BUDGET_S = 10.0


@dataclass(frozen=True)
class Change:
    drain: tuple[str, ...] = ()
    tenancy: Tenancy | None = None
    profile: Profile | None = None


@dataclass(frozen=True)
class Fork:
    seed: int
    #: The probe's start (source time), None when it did not start within the horizon.
    probe_start: float | None
    #: Of the jobs pending now: how many started within the horizon (or by the probe's start, where
    #: the run stopped there), and their mean wait from now.
    started: int
    mean_wait_s: float | None
    events: int
    #: Source time the run reached: ``now + horizon_s``, or the probe's start (the early stop),
    #: or less where the CPU budget ran out first (``complete`` False: the probe did not start
    #: by then, and what happens later is not known).
    simulated_to: float
    complete: bool


def _scaled(job: Job, remaining: float, factor: float, done: float) -> Job:
    if factor == 1.0 and done + remaining == job.run_time:
        return job  # seed 0: as stated (a copy of each of 100,000 jobs cost 0.6 s)
    return replace(job, run_time=done + remaining * factor)


def never_fits(table: NodeTable, probe: Job) -> tuple[int, str] | None:
    """(pod set index, why) when ``probe`` could not start on the whole fleet even if every node
    were empty and in service, else None. No fork can start such a probe, on any seed (nodes
    do not grow), so a what-if for it is answered at once rather than simulated a week ahead."""
    every = table.copy()
    every.schedulable[:] = True
    every = for_job(every, probe)
    for k, ps in enumerate(probe.pod_sets):
        cap = int(np.minimum(every.slots(ps.request, empty=True), ps.replicas).sum())
        if cap < ps.replicas:
            return k, (f"pod set {ps.name!r} needs {ps.replicas} pod(s) of this shape; the whole fleet, "
                       f"empty, holds {cap}")
    return None


class _Unrecorded(Recorder):
    """A fork answers from ``SimState.starts``: its event log and fleet timeline go unread
    (146,000 log lines and one sample per instant a week ahead at 100,000 pending)."""

    def event(self, time: float, kind: str, job: str, detail: str = "") -> None:
        pass

    def sample(self, time: float, allocated: int, busy: int, queued: int) -> None:
        pass


def fork(snap: LiveSnapshot, profile: Profile, change: Change, probe: Job | None, *, seed: int = 0,
         horizon_s: float = 7 * 86400.0, jitter: float = 0.5, early_stop: bool = True,
         budget_s: float | None = None) -> Fork:
    """The live world forked into the simulator and run ``horizon_s`` ahead, as ``sim.runner``
    runs a trace: the same handlers, the same after-instant step, the collector batched. EASY
    cycles are not carried on (rule 4 of engine/incremental.py, ``CycleMemo(carry_scans=False)``;
    exact either way): from the live queue few qualify (131 of 2,295 cycles for a jittered seed
    at 3,000 pending) and the checks cost more than they save (a jittered seed at 10,000 pending:
    25.9 s of CPU with them, 21.6 s without; the same answer).

    With ``early_stop`` the run ends at the instant the probe starts: what happens later cannot
    move an instant already past, so the probe's start is the full run's (the pending jobs'
    figures then count up to that instant). Every job pending now joins the queue at ``now``
    straight away, in the order the kernel would pop their arrivals (after the runs that end
    at ``now``: finishes sort first), without 100,000 trips through the event heap.

    ``budget_s``: the CPU seconds the run may take; once spent it stops at the instant it is at
    (``complete`` False, ``simulated_to`` that instant). A jittered seed's runs end at distinct
    instants, a cycle each: at 100,000 pending one had not finished a week in 15 minutes of CPU
    (bench/README.md), so an answer within seconds needs the bound, and says how far it got."""
    now = snap.now
    tenancy = change.tenancy if change.tenancy is not None else snap.tenancy
    prof = change.profile or profile
    cfg = SimConfig(profile=prof, seed=seed, tenancy=tenancy,
                    usage_tracker=UsageTracker(tenancy.half_life_s) if tenancy is not None else None)
    cluster = SimulatedCluster(snap.fleet)
    arrivals = [snap.pending[jid] for jid in sorted(snap.pending)]
    st = SimState(cfg=cfg, cluster=cluster, frag=FragmentationSamples([]), rec=_Unrecorded(),
                  decisions=None)
    st.t = now
    st.next_stranded = float("inf")
    st.memo = CycleMemo(carry_scans=False)
    idx = {n: i for i, n in enumerate(cluster.table.names)}
    for name in sorted(set(snap.out_of_service) | set(change.drain)):
        if name in idx:
            set_schedulable(cluster.table, idx[name], False)
    rng = np.random.default_rng(seed)

    def factor() -> float:
        return 1.0 if seed == 0 else float(rng.uniform(1.0 - jitter, 1.0))

    for jid in sorted(snap.running):
        rj = snap.running[jid]
        left = max(0.0, remaining_run_s(rj) - (now - rj.start_time))
        done = rj.job.run_time - left
        job = _scaled(rj.job, left, factor(), done)
        cluster.submit(job)
        for b in rj.bindings:
            cluster.bind(b)
        started = cluster.start(job.id, now)
        st.q.push(now + max(0.0, job.run_time - done - started.progress_before), EventKind.FINISH,
                  (job.id, st.gen(job.id)))
    arrivals = [_scaled(job, job.run_time, factor(), 0.0) for job in arrivals]
    if probe is not None:
        arrivals.append(replace(probe, submit_time=now))
    for job in arrivals:
        st.submit_times[job.id] = job.submit_time
    with batch_gc():
        complete = _run(st, arrivals, now + horizon_s, probe.id if probe is not None and early_stop else None,
                        None if budget_s is None else time.process_time() + budget_s)
    waits = [st.starts[j] - now for j in snap.pending if j in st.starts]
    start = st.starts.get(probe.id) if probe is not None else None
    return Fork(seed, start, len(waits), sum(waits) / len(waits) if waits else None, st.events,
                st.t if start is not None or not complete else now + horizon_s, complete)


def _run(st: SimState, arrivals: list[Job], end: float, stop_at: str | None,
         cpu_deadline: float | None = None) -> bool:
    """The kernel's instant loop up to ``end``, with ``arrivals`` joining at the first instant
    (``st.t``) after the events due then, as their ARRIVAL events would; ends early once
    ``stop_at`` has started. False when it stopped at ``cpu_deadline`` (process CPU time, read
    before each instant: a microsecond, where an instant at 100,000 pending costs milliseconds)."""
    q = st.q
    first = True
    while first or q:
        t = st.t if first else q.peek_time()
        if t > end:
            break
        if cpu_deadline is not None and time.process_time() >= cpu_deadline:
            return False
        st.t = t
        outcome = Outcome.NOTHING
        while q and q.peek_time() == t:
            ev = q.pop()
            st.events += 1
            outcome |= HANDLERS[ev.kind](st, ev)
        if first:
            first = False
            st.cluster.submit_all(arrivals)
            st.arrived_now.extend(arrivals)
            st.events += len(arrivals)
            if arrivals:
                outcome |= Outcome.ARRIVED
            elif outcome == Outcome.NOTHING:
                continue  # nothing happened at the first instant: the kernel would not stop there
        after_instant(st, outcome)
        if stop_at is not None and stop_at in st.starts:
            break
    return True


def fork_seeds(snap: LiveSnapshot, profile: Profile, change: Change, probe: Job | None, seeds: int, *,
               horizon_s: float = 7 * 86400.0, jitter: float = 0.5, budget_s: float | None = None
               ) -> list[Fork]:
    """``fork`` for seeds 0 … seeds − 1, each in a child process (``os.fork``) where there is one.

    A fork over 100,000 pending jobs a week ahead costs seconds of CPU (seed 0: 4.6 s here; a
    jittered seed, whose runs end at distinct instants, many times that). Run on a thread of the
    web server, it holds the interpreter that whole time (every other request waits behind it)
    and shares it with the loop's cycles. A child process has an interpreter of its own, sees
    the snapshot as it was (copy-on-write: nothing is copied up front, and the snapshot is
    immutable anyway), and the seeds run side by side on the machine's cores, one per core at a
    time. The child only simulates, writes its pickled answer to a pipe and leaves
    with ``os._exit`` (none of the parent's clean-up runs in it). Where there is no fork, or a
    child died without an answer, that seed runs here."""
    if not hasattr(os, "fork"):
        return [fork(snap, profile, change, probe, seed=k, horizon_s=horizon_s, jitter=jitter,
                     budget_s=budget_s) for k in range(seeds)]
    def start(k: int) -> tuple[int, int, int]:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child
            code = 1
            try:
                os.close(r)
                data = pickle.dumps(fork(snap, profile, change, probe, seed=k, horizon_s=horizon_s,
                                         jitter=jitter, budget_s=budget_s))
                view = memoryview(data)
                while view:
                    view = view[os.write(w, view):]
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        return k, pid, r

    def collect(k: int, pid: int, r: int) -> Fork:
        chunks = []
        while chunk := os.read(r, 1 << 16):
            chunks.append(chunk)
        os.close(r)
        _, status = os.waitpid(pid, 0)
        if status == 0 and chunks:
            return pickle.loads(b"".join(chunks))
        return fork(snap, profile, change, probe, seed=k, horizon_s=horizon_s, jitter=jitter,
                    budget_s=budget_s)

    # At most one child per core at a time: more would only share the cores (and the loop's and
    # the web server's share with them) and hold more copied pages at once.
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    running: list[tuple[int, int, int]] = []
    out = []
    for k in range(seeds):
        if len(running) >= cores:
            out.append(collect(*running.pop(0)))
        running.append(start(k))
    out += [collect(*child) for child in running]
    return out
