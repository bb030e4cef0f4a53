"""Metrics over a simulation: time-weighted fleet state and job-level percentiles.

Time weighting: the recorder holds piecewise-constant samples (value from t_i until t_{i+1}); an
average over [a, b] is Σ value_i × overlap(segment_i, [a, b]) / (b − a). GPU allocation is taken
over the arrival window [0, horizon] — the steady state a platform team plans for, without the
drain tail after the last arrival.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpufleet.sim.runner import SimResult

SIZE_BUCKETS = ((1, 1, "1"), (2, 8, "2-8"), (9, 64, "9-64"), (65, 10**9, "65+"))


def time_weighted_mean(t: list[float], v: list[int], start: float, end: float) -> float:
    if end <= start or not t:
        return 0.0
    times = np.asarray(t, float)
    vals = np.asarray(v, float)
    seg_end = np.append(times[1:], max(end, times[-1]))
    lo = np.clip(times, start, end)
    hi = np.clip(seg_end, start, end)
    return float((vals * (hi - lo)).sum() / (end - start))


def _pct(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if values.size else 0.0


def summarize(r: SimResult) -> dict[str, Any]:
    rec = r.recorder
    window = r.horizon if r.horizon > 0 else r.end_time
    started = sorted(r.starts)
    waits = np.array([r.starts[j] - r.jobs[j].submit_time for j in started])
    sizes = np.array([r.jobs[j].total_gpus for j in started])
    done = [j for j in r.finishes]
    jct = np.array([r.finishes[j] - r.jobs[j].submit_time for j in done])
    first = min((j.submit_time for j in r.jobs.values()), default=0.0)
    last = max(r.finishes.values(), default=first)
    by_size = {}
    for lo, hi, label in SIZE_BUCKETS:
        m = (sizes >= lo) & (sizes <= hi)
        by_size[label] = {"jobs": int(m.sum()), "wait_p50_s": _pct(waits[m], 50),
                          "wait_p95_s": _pct(waits[m], 95)}
    total = r.fleet_gpus
    return {
        "jobs_submitted": len(r.jobs),
        "jobs_started": len(r.starts),
        "jobs_finished": len(r.finishes),
        "jobs_pending_at_end": len(r.jobs) - len(r.starts),
        "gpu_allocation_pct": 100 * time_weighted_mean(rec.t, rec.allocated, 0.0, window) / total,
        "gpu_busy_pct": 100 * time_weighted_mean(rec.t, rec.busy, 0.0, window) / total,
        "stranded_gpus_avg": time_weighted_mean(rec.stranded_t, rec.stranded, 0.0, window),
        "queue_len_avg": time_weighted_mean(rec.t, rec.queued, 0.0, window),
        "wait_p50_s": _pct(waits, 50),
        "wait_p95_s": _pct(waits, 95),
        "wait_p99_s": _pct(waits, 99),
        "wait_by_size": by_size,
        "jct_mean_s": float(jct.mean()) if jct.size else 0.0,
        "makespan_s": float(last - first),
        "deadlocked": r.deadlocked,
        "deadlock_detail": r.deadlock_detail,
        "gpus_held_by_partial_gangs_at_end": r.held_by_partial_gangs,
        "cycles": r.cycles,
        "events": r.events,
        "sim_wall_s": round(r.wall_s, 3),
    }
