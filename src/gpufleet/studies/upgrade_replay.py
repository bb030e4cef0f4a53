"""Replay an upgrade plan (studies/upgrade_plan.py) in the simulator, with failures on the way.

On a scenario (fleet + trace) or, without one, on a fleet of ``nodes`` each busy with a 1-node job
that checkpoints every τ', their phases spread evenly, and the rollout visits the nodes in a seeded
random order, so that a wave meets jobs at independent points of their checkpoint interval, as the
plan's arithmetic assumes. Llama 3's failure rates run
throughout (the 3-minute recovery, no spares): the rollout meets failures, as it would.

With ``drivers`` (old, new) the rollout restricts placement by the compatibility matrix
(fleet_events/upgrade_compat.py): the busy jobs carry the ``images`` (CUDA versions) in turn, job i the
image i mod len(images); a trace's jobs carry their own ``cuda`` labels.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from gpufleet.policies.registry import profile
from gpufleet.sim.fleet_events.failures import FAST, FailureConfig
from gpufleet.sim.fleet_events.upgrade import UpgradeConfig
from gpufleet.sim.fleet_events.upgrade_compat import CUDA_LABEL, NCCL_LABEL
from gpufleet.sim.runner import simulate
from gpufleet.studies.upgrade_plan import RESTART_S, UpgradePlan
from gpufleet.testing.builders import fleet as fleet_builder
from gpufleet.testing.builders import job

DAY = 86400.0


def replay(scn: Any, nodes: int, gpus_per_node: int, plan: UpgradePlan, node_s: float, timeout_s: float,
           interval_wall_s: float, soak_s: float, fail_p: float, bad_fail_p: float, rollback_share: float,
           seed: int, drivers: tuple[str, str] | None = None, images: tuple[str, ...] = (),
           nccls: tuple[str, ...] = (), kernel: str | None = None) -> dict[str, Any]:
    start = max(3600.0, interval_wall_s)
    n = len(scn.fleet.nodes) if scn is not None else nodes
    # nodes in a random order: a wave meets jobs at independent points of their intervals (jobs
    # that arrive in phase order fill the nodes in index order)
    order = tuple(int(i) for i in np.random.default_rng([seed, 0x0DE5]).permutation(n))
    up = UpgradeConfig(order=order, wave=plan.wave, canary=plan.canary, start_s=start, node_s=node_s,
                       drain_timeout_s=timeout_s, soak_s=soak_s, node_fail_p=fail_p,
                       bad_fail_p=bad_fail_p, rollback_share=rollback_share,
                       from_driver=drivers[0] if drivers else None, to_driver=drivers[1] if drivers else None,
                       kernel=kernel)
    until = start + 1.5 * plan.rollout_s + DAY
    cfg = FailureConfig(recovery=FAST, upgrade=up, seed=seed)
    if scn is not None:
        fl, jobs, pol = scn.fleet, scn.jobs(seed), profile("gang-bestfit", scn.fleet.fabric)
    else:
        fl = fleet_builder().leaves(1, nodes=nodes, gpus=gpus_per_node).build()
        phase = np.random.default_rng([seed, 0x06DA]).permutation(nodes) * (interval_wall_s or 1.0) / nodes
        ck = (interval_wall_s, 0.0, RESTART_S) if interval_wall_s > 0 else None
        jobs = []
        for i in range(nodes if interval_wall_s > 0 else 0):
            b = job(f"j{i}").gpus(gpus_per_node).at(float(phase[i])).runs(until)
            j = (b.checkpoints(*ck) if ck else b).build()
            if images:
                k = i % len(images)
                nccl = ((NCCL_LABEL, nccls[k]),) if nccls else ()
                j = replace(j, labels=((CUDA_LABEL, images[k]), *nccl))
            jobs.append(j)
        pol = profile("gang-bestfit")
    r = simulate(fl, jobs, pol, failures=cfg, failures_until=until, horizon=until, decision_log=False,
                 stranded_every_s=1e12)
    led = r.failures
    assert led is not None and led.upgrade is not None
    u = led.upgrade
    done = u.finished_s if u.finished_s is not None else until
    return {"sim_rollout_hours": (done - start) / 3600.0,
            "sim_capacity_gpu_hours_out": u.node_out_s * gpus_per_node / 3600.0,
            "sim_job_gpu_hours_lost": led.lost_gpu_s.get("upgrade", 0.0) / 3600.0,
            "sim_failed_nodes": u.nodes_failed, "sim_jobs_drained": u.jobs_drained,
            "sim_rolled_back": u.rolled_back, "sim_node_failures_during": led.node_failures - u.nodes_failed,
            "sim_finished": u.finished_s is not None,
            "sim_jobs_waiting_at_end": _waiting(r.recorder.log, [j.id for j in jobs]),
            "sim_driver_held_jobs": u.driver_held_jobs,
            "sim_driver_wait_gpu_hours": u.driver_wait_gpu_s / 3600.0,
            "sim_driver_blocked_gpu_hours": u.driver_blocked_gpu_s / 3600.0}


def _waiting(log: list[tuple[float, str, str, str]], ids: list[str]) -> int:
    """Jobs not running at the end: never started, or stopped (drained, failed) and not restarted
    — with drivers given, those whose image runs on no node in service."""
    last = {jid: "" for jid in ids}
    for _, kind, jid, _ in log:
        if kind in ("start", "stopped", "finish") and jid in last:
            last[jid] = kind
    return sum(1 for k in last.values() if k in ("", "stopped"))
