"""The History page's series: waits, JCT and GPU-hours per tenant, preemptions, allocation.

Finished jobs come from the store (``Store.history``: submit, start and end in source seconds) and,
over Slurm, from its accounting as well (service/finished.py: jobs sbatch'ed directly too);
they are put in ``BUCKETS`` equal buckets of their end time over the window, per tenant:
mean wait (start − submit, at least 0: Slurm stamps a start in whole seconds, so a job it started
within the second the service stamped its submission would wait up to −1 s), mean JCT
(end − submit) and GPU-hours (GPUs × (end − start) / 3600).
Preemptions per bucket come from the decision stream (its ``preempt`` events still in the ring).
Allocation over time is sampled by ``AllocationSampler`` on the loop's own thread (a loop sink:
the one place the live node table may be read while the loop runs), at most once per
``every_s`` of source time, the last ``keep`` samples. Utilisation (SM activity) is not known to
the virtual source: the chart says so rather than drawing allocation twice.
"""

from __future__ import annotations

import threading
from collections import defaultdict, deque
from dataclasses import dataclass

from gpufleet.live.source import LiveEvent
from gpufleet.service.finished import finished_jobs
from gpufleet.service.runtime import Service

BUCKETS = 48
WINDOW_S = 7 * 86400.0


class AllocationSampler:
    def __init__(self, svc: Service, every_s: float = 30.0, keep: int = 5000) -> None:
        self.svc, self.every_s = svc, every_s
        self._samples: deque[tuple[float, int, int]] = deque(maxlen=keep)
        self._lock = threading.Lock()

    def observe(self, _events: list[LiveEvent]) -> None:
        t = self.svc.loop.now()
        with self._lock:
            if self._samples and t - self._samples[-1][0] < self.every_s:
                return
        table = self.svc.source.table
        total = int(table.gpu_total.sum())
        sample = (t, total - int(table.gpu_free.sum()), total)
        with self._lock:
            self._samples.append(sample)

    def samples(self) -> list[tuple[float, int, int]]:
        with self._lock:
            return list(self._samples)


@dataclass(frozen=True)
class Series:
    """uPlot's columns: ``x`` (wall-clock seconds of each bucket's start) and one list per line,
    None where a tenant finished nothing in that bucket."""

    x: list[float]
    lines: dict[str, list[float | None]]


@dataclass(frozen=True)
class History:
    finished: int
    waits: Series
    jct: Series
    gpu_hours: Series
    preemptions: Series
    allocation: Series


def history(svc: Service, sampler: AllocationSampler, wall_now: float) -> History:
    snap = svc.snapshot()
    now = snap.now
    recs = finished_jobs(svc, now - WINDOW_S)
    t0 = min((r.end_time for r in recs), default=now - 3600.0)
    width = max(60.0, (now - t0) / BUCKETS)
    n = max(1, int((now - t0) // width) + 1)
    x = [wall_now + (t0 + i * width - now) for i in range(n)]

    def bucket(t: float) -> int:
        return min(n - 1, max(0, int((t - t0) // width)))

    sums: dict[str, dict[str, list[float]]] = {k: defaultdict(lambda: [0.0] * n)
                                               for k in ("wait", "jct", "gh")}
    counts: dict[str, list[int]] = defaultdict(lambda: [0] * n)
    for r in recs:
        b = bucket(r.end_time)
        counts[r.tenant][b] += 1
        sums["wait"][r.tenant][b] += max(0.0, r.start_time - r.submit_time)
        sums["jct"][r.tenant][b] += r.end_time - r.submit_time
        sums["gh"][r.tenant][b] += r.gpus * (r.end_time - r.start_time) / 3600.0
    tenants = sorted(counts)

    def mean(kind: str) -> Series:
        return Series(x, {t: [s / 3600.0 / c if c else None
                              for s, c in zip(sums[kind][t], counts[t], strict=True)] for t in tenants})

    pre = [0.0] * n
    for _, ev in svc.events.after(0, limit=10_000)[0]:
        if ev["kind"] == "preempt" and ev["t"] >= t0:
            pre[bucket(ev["t"])] += 1
    for r in recs:   # jobs the source's accounting says ended preempted (Slurm: PREEMPTED)
        if getattr(r, "preempted", False):
            pre[bucket(r.end_time)] += 1
    samples = sampler.samples()
    ax = [wall_now + (t - now) for t, _, _ in samples]
    return History(
        finished=len(recs), waits=mean("wait"), jct=mean("jct"),
        gpu_hours=Series(x, {t: [v or None for v in sums["gh"][t]] for t in tenants}),
        preemptions=Series(x, {"preemptions": pre}),
        allocation=Series(ax, {"allocated GPUs": [float(a) for _, a, _ in samples],
                               "total GPUs": [float(tot) for _, _, tot in samples]}))

