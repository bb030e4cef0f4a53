"""Metrics over a simulation: time-weighted fleet state and job-level percentiles.

Time weighting: the recorder holds piecewise-constant samples (value from t_i until t_{i+1}); an
average over [a, b] is Σ value_i × overlap(segment_i, [a, b]) / (b − a). GPU allocation is taken
over the arrival window [0, horizon] — the steady state a platform team plans for, without the
drain tail after the last arrival.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from gpufleet.model.tenancy import Tenancy
from gpufleet.sim.feasibility import Unschedulable
from gpufleet.sim.runner import SimResult

SIZE_BUCKETS = ((1, 1, "1"), (2, 8, "2-8"), (9, 64, "9-64"), (65, 10**9, "65+"))
#: Jobs of MIG slices or GPU shares ask for 0 whole GPUs; they get their own bucket (listed first,
#: only when a run has such jobs) instead of dropping out of the by-size table.
FRACTIONAL_BUCKET = (0, 0, "<1")


def time_weighted_mean(t: list[float], v: list[int], start: float, end: float) -> float:
    if end <= start or not t:
        return 0.0
    times = np.asarray(t, float)
    vals = np.asarray(v, float)
    seg_end = np.append(times[1:], max(end, times[-1]))
    lo = np.clip(times, start, end)
    hi = np.clip(seg_end, start, end)
    return float((vals * (hi - lo)).sum() / (end - start))


def _pct(values: np.ndarray, q: float) -> float | None:
    """The q-th percentile, or None for an empty set: a wait p95 over no jobs is not 0 s. Every
    wait percentile in a summary sits next to the count of jobs it covers."""
    return float(np.percentile(values, q)) if values.size else None


def tenant_gpu_seconds(r: SimResult, start: float, end: float) -> dict[str, float]:
    """GPU-seconds each tenant held within [start, end], from the event log's start/finish/preempt
    events (lost work included: a preempted run held its GPUs until its eviction)."""
    out: dict[str, float] = {}
    began: dict[str, float] = {}
    for t, kind, jid, _ in r.recorder.log:
        if kind == "start":
            began[jid] = t
        elif kind in ("finish", "preempt") and jid in began:
            job = r.jobs[jid]
            lo, hi = max(began.pop(jid), start), min(t, end)
            if hi > lo:
                out[job.tenant] = out.get(job.tenant, 0.0) + job.total_gpus * (hi - lo)
    for jid, t0 in began.items():  # still running at the end of the simulation
        lo, hi = max(t0, start), end
        if hi > lo:
            job = r.jobs[jid]
            out[job.tenant] = out.get(job.tenant, 0.0) + job.total_gpus * (hi - lo)
    return out


def tenant_metrics(r: SimResult, window: float, tenancy: Tenancy | None = None) -> dict[str, dict]:
    """Per tenant: waits (first start − submit, started jobs), GPU-hours over the whole run, share
    of the fleet's GPU-time over [0, window] and, with a tenancy, the nominal entitlement."""
    names = sorted({j.tenant for j in r.jobs.values()} | (
        {t.name for t in tenancy.tenants} if tenancy is not None else set()))
    total = tenant_gpu_seconds(r, 0.0, max(r.end_time, window))
    in_window = tenant_gpu_seconds(r, 0.0, window)
    out: dict[str, dict] = {}
    for name in names:
        waits = np.array([r.starts[j] - job.submit_time for j, job in r.jobs.items()
                          if job.tenant == name and j in r.starts])
        submitted = sum(1 for job in r.jobs.values() if job.tenant == name)
        out[name] = {
            "jobs": submitted,
            "jobs_never_started": submitted - int(waits.size),
            "wait_jobs": int(waits.size),
            "wait_p50_s": _pct(waits, 50),
            "wait_p95_s": _pct(waits, 95),
            "gpu_hours": total.get(name, 0.0) / 3600.0,
            "share_of_fleet_pct": 100.0 * in_window.get(name, 0.0) / (r.fleet_gpus * window)
            if window > 0 and r.fleet_gpus else 0.0,
            "entitlement_pct": tenancy.entitlement_pct(name) if tenancy is not None else 0.0,
        }
    return out


def slowdown_metrics(r: SimResult) -> dict[str, Any]:
    """Placement slowdown over the jobs whose slowdown is modelled (a parallel layout and a training
    profile); empty when the run used no runtime model. A job's last start counts (a restart after
    preemption is placed anew)."""
    if r.slowdowns is None:
        return {}
    sd = np.array([f for j, f in sorted(r.slowdowns.items())
                   if r.jobs[j].parallelism is not None and r.jobs[j].training is not None])
    return {"slowdown_jobs": int(sd.size),
            "slowdown_mean": float(sd.mean()) if sd.size else 1.0,
            "slowdown_p95": _pct(sd, 95) if sd.size else 1.0,
            "slowdown_jobs_over_1_1": int((sd > 1.1).sum())}


def estimate_metrics(r: SimResult) -> dict[str, Any]:
    """How good were the start-time estimates? For each job that got one (from the reservation
    schedule, the first time it was seen waiting) and later started: error = actual − estimated
    start, in seconds; positive means later than promised. Empty when no estimate was made."""
    if not r.estimates:
        return {}
    err = np.array([r.starts[j] - t for j, t in sorted(r.estimates.items()) if j in r.starts])
    if not err.size:
        return {}
    absolute = np.abs(err)
    return {"estimates": int(err.size),
            "estimate_error_p50_s": _pct(absolute, 50),
            "estimate_error_p90_s": _pct(absolute, 90),
            "estimate_late_pct": float(100.0 * (err > 1.0).mean()),
            "estimate_bias_s": float(err.mean())}


#: A "big gang" for the defrag comparison: at least this many GPUs.
BIG_GANG_GPUS = 8
#: A gang counts as unblocked by defrag when it starts within this long of its first move notice.
UNBLOCKED_WITHIN_S = 900.0


def fragmentation_metrics(r: SimResult, window: float) -> dict[str, Any]:
    """Fragmentation ratio and per-shape schedulability (time-weighted over [0, window]; defined in
    sim/fragmentation.py), MIG reconfigurations, and the defrag ledger: moves, GPU-equivalents
    moved, gangs unblocked (started within ``UNBLOCKED_WITHIN_S`` of their first move notice) and
    their GPUs ("recovered"), cost paid (lost work + restarts, GPU-equivalent-hours), and the waits
    of big gangs (≥ ``BIG_GANG_GPUS`` GPUs)."""
    f = r.fragmentation
    if f is None:
        return {}
    first_move: dict[str, float] = {}
    for m in f.moves:
        first_move.setdefault(m.for_job, m.t)
    unblocked = [j for j, t0 in sorted(first_move.items())
                 if j in r.starts and 0 <= r.starts[j] - t0 <= UNBLOCKED_WITHIN_S]
    big = np.array([r.starts[j] - job.submit_time for j, job in sorted(r.jobs.items())
                    if j in r.starts and job.total_gpu_equivalents >= BIG_GANG_GPUS])
    big_total = sum(1 for job in r.jobs.values() if job.total_gpu_equivalents >= BIG_GANG_GPUS)
    return {
        "fragmentation_ratio_avg": time_weighted_mean(f.t, f.ratio, 0.0, window),  # type: ignore[arg-type]
        "schedulable_by_shape_avg": {str(g): time_weighted_mean(f.t, v, 0.0, window)
                                     for g, v in f.schedulable.items()},
        "mig_reconfigurations": f.reconfigurations,
        "defrag_moves": len(f.moves),
        "defrag_gpus_moved": float(sum(m.gpu_equivalents for m in f.moves)),
        "defrag_gangs_unblocked": len(unblocked),
        "defrag_gpus_recovered": float(sum(r.jobs[j].total_gpu_equivalents for j in unblocked)),
        "eviction_cost_gpu_hours": f.lost_gpu_equiv_s / 3600.0,
        "big_gang_jobs": big_total,
        "big_gang_never_started": big_total - int(big.size),
        "big_gang_wait_p50_s": _pct(big, 50),
        "big_gang_wait_p95_s": _pct(big, 95),
        "big_gang_wait_max_s": float(big.max()) if big.size else None,
    }


def reliability_metrics(r: SimResult) -> dict[str, Any]:
    """Failures' cost, when the run had them (fleet_events/failures.py); empty otherwise.

    goodput = Σ GPUs × run time of finished jobs / Σ GPUs × (finish − first start): the share of
    the GPU-time those jobs held from their first start that went into work kept (restarts, lost
    work, checkpoint writes, waits for a replacement are the rest). GPU-hours lost by cause: per
    failure kind, the work since the last checkpoint, the GPUs held idle until the gang was torn
    down, the wait for a replacement, and the checkpoint load at its restart; "checkpointing" is
    δ/τ of the work of jobs that checkpoint.
    """
    led = r.failures
    if led is None:
        return {}
    done = [j for j in r.finishes if j in r.starts]
    work = sum(r.jobs[j].total_gpus * r.jobs[j].run_time for j in done)
    held = sum(r.jobs[j].total_gpus * (r.finishes[j] - r.starts[j]) for j in done)
    rec = np.array(led.recoveries_s)
    lost = {k: v / 3600.0 for k, v in sorted(led.lost_gpu_s.items())}
    ck_s = sum(r.jobs[j].total_gpus * r.jobs[j].run_time * c.cost_s / c.interval_s
               for j in done if (c := r.jobs[j].checkpointing) is not None and c.interval_s > 0)
    if ck_s:
        lost["checkpointing"] = ck_s / 3600.0
    extra: dict[str, Any] = {}
    if led.elastic_shrinks or led.elastic_grows:
        # elastic jobs: how often they shrank and grew back, and how long they ran below full size
        extra = {"elastic_shrinks": led.elastic_shrinks, "elastic_grows": led.elastic_grows,
                 "elastic_hours_below_full_size": led.elastic_reduced_s / 3600.0}
    up = led.upgrade
    if up is not None:  # a driver-upgrade rollout ran (fleet_events/upgrade.py)
        extra |= {"upgrade_rollout_hours": (up.finished_s - up.started_s) / 3600.0
                  if up.finished_s is not None else None,
                  "upgrade_nodes_upgraded": up.nodes_upgraded, "upgrade_nodes_failed": up.nodes_failed,
                  "upgrade_rolled_back": up.rolled_back, "upgrade_jobs_drained": up.jobs_drained,
                  "upgrade_node_hours_out": up.node_out_s / 3600.0,
                  "upgrade_nodes_fm_mismatch": up.nodes_fm_mismatch,
                  "upgrade_nodes_kernel_too_old": up.nodes_kernel_too_old,
                  "upgrade_nodes_held_at_start": up.nodes_held_at_start,
                  # jobs held back by the driver matrix (fleet_events/upgrade_compat.py): how many, and the
                  # GPU-hours they waited restricted to some nodes / with no node for their image
                  "driver_held_jobs": up.driver_held_jobs,
                  "driver_wait_gpu_hours": up.driver_wait_gpu_s / 3600.0,
                  "driver_blocked_gpu_hours": up.driver_blocked_gpu_s / 3600.0}
    return {
        "goodput_pct": 100.0 * work / held if held else 0.0,
        "node_failures": led.node_failures,
        "interruptions": led.interruptions,
        "recovery_p50_s": _pct(rec, 50),
        "recovery_p95_s": _pct(rec, 95),
        "spares_used": led.spares_used,
        "no_spare_when_needed": led.no_spare,
        "lost_gpu_hours_by_cause": lost,
        **extra,
    }


def summarize(r: SimResult, tenancy: Tenancy | None = None,
              unschedulable: Sequence[Unschedulable] = (), window: float | None = None) -> dict[str, Any]:
    """The run's summary. Wait statistics cover started jobs only (``wait_jobs`` of them; None
    when there are none); ``unschedulable`` lists jobs that can never run on the fleet (found at
    load time, sim/feasibility.py), which also stay in ``jobs_pending_at_end``.

    ``window``: the span time-weighted means are taken over; default the arrival horizon, else the
    run's end. Policies compared side by side must share one window: a deadlocked run "ends" at
    its last event (t = 0 in the two-job deadlock), and a mean over [0, 0] would print 0 %
    allocation next to a plot of every GPU held. With no window at all, the means are None.
    Makespan and JCT are None when no job finished (not 0 s)."""
    rec = r.recorder
    if window is None:
        window = r.horizon if r.horizon > 0 else r.end_time
    started = sorted(r.starts)
    waits = np.array([r.starts[j] - r.jobs[j].submit_time for j in started])
    sizes = np.array([r.jobs[j].total_gpus for j in started])
    all_sizes = np.array([j.total_gpus for j in r.jobs.values()])
    done = [j for j in r.finishes]
    jct = np.array([r.finishes[j] - r.jobs[j].submit_time for j in done])
    first = min((j.submit_time for j in r.jobs.values()), default=0.0)
    last = max(r.finishes.values(), default=first)
    by_size = {}
    buckets = ((FRACTIONAL_BUCKET,) if (all_sizes == 0).any() else ()) + SIZE_BUCKETS
    for lo, hi, label in buckets:
        m = (sizes >= lo) & (sizes <= hi)
        submitted = int(((all_sizes >= lo) & (all_sizes <= hi)).sum()) if all_sizes.size else 0
        by_size[label] = {"jobs": int(m.sum()), "submitted": submitted, "wait_p50_s": _pct(waits[m], 50),
                          "wait_p95_s": _pct(waits[m], 95)}
    total = r.fleet_gpus
    return {
        "jobs_submitted": len(r.jobs),
        "jobs_started": len(r.starts),
        "jobs_finished": len(r.finishes),
        "jobs_pending_at_end": len(r.jobs) - len(r.starts),
        "jobs_unschedulable": len(unschedulable),
        "unschedulable_jobs": [{"id": u.job, "reason": u.reason} for u in unschedulable],
        "wait_jobs": int(waits.size),
        "window_s": window,
        "gpu_allocation_pct": 100 * time_weighted_mean(rec.t, rec.allocated, 0.0, window) / total
        if window > 0 else None,
        "gpu_busy_pct": 100 * time_weighted_mean(rec.t, rec.busy, 0.0, window) / total
        if window > 0 else None,
        "stranded_gpus_avg": time_weighted_mean(rec.stranded_t, rec.stranded, 0.0, window)
        if window > 0 else None,
        "queue_len_avg": time_weighted_mean(rec.t, rec.queued, 0.0, window) if window > 0 else None,
        "wait_p50_s": _pct(waits, 50),
        "wait_p95_s": _pct(waits, 95),
        "wait_p99_s": _pct(waits, 99),
        "wait_by_size": by_size,
        "jct_mean_s": float(jct.mean()) if jct.size else None,
        "makespan_s": float(last - first) if r.finishes else None,
        "makespan_complete": len(r.finishes) == len(r.jobs),
        "deadlocked": r.deadlocked,
        "deadlock_detail": r.deadlock_detail,
        "gpus_held_by_partial_gangs_at_end": r.held_by_partial_gangs,
        "cycles": r.cycles,
        "events": r.events,
        "sim_wall_s": round(r.wall_s, 3),
        **slowdown_metrics(r),
        **estimate_metrics(r),
        "preemptions": r.preemptions,
        "lost_gpu_hours": r.lost_gpu_s / 3600.0,
        "tenants": tenant_metrics(r, window, tenancy),
        **fragmentation_metrics(r, window),
        **reliability_metrics(r),
    }
