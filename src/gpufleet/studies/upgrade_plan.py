"""Driver-upgrade plans by arithmetic: rollout time, capacity out, failed nodes, canary odds.

For N nodes, a canary of c, waves of w, t_n per node (upgrade + reboot + validation), drain d
(a busy node waits for its jobs' next checkpoint, at most the timeout D), soak s:

    waves W      = ⌈(N − c)/w⌉ (+ 1 canary wave)
    rollout time = [c > 0] (d_c + t_n + s) + W (d_w + t_n), d_k = the wave's slowest drain
    capacity out = each node once for d + t_n: N (d + t_n) node-seconds; at most max(c, w) at once
    failed nodes = N p (p: validation failure per node) — each then goes through repair

Drain: a job that checkpoints every τ' of wall time is at a uniform point of its interval when the
wave comes, so it waits X ~ U(0, τ') for its next save, stopped at D if later:
E[min(X, D)] = D − D²/(2τ') for D < τ', else τ'/2. Drained at its save it loses only its restart;
stopped at D (when X > D, P = 1 − D/τ') it loses the τ' − X since its last save plus the D it
computed while draining: on average (τ'² − D²)/(2τ') per drained job (``drain_loss_s``).

Canary: the rollout rolls back when more than a share ρ of the c canary nodes fail. With a good
driver each fails with p: P(false rollback) = P(Bin(c, p) > ρc); with a bad one, q: P(caught) =
P(Bin(c, q) > ρc).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def expected_drain_s(interval_wall_s: float, timeout_s: float) -> float:
    """E[min(X, D)], X ~ U(0, τ'): the wait for a job's next checkpoint, capped at the timeout."""
    t, d = interval_wall_s, timeout_s
    if t <= 0:
        return 0.0
    return d - d * d / (2 * t) if d < t else t / 2


def expected_wave_drain_s(interval_wall_s: float, timeout_s: float, jobs: int) -> float:
    """The wave waits for its slowest job: E[max of m draws of min(X, D)], X ~ U(0, τ') i.i.d.:
    ∫_0^D (1 − (x/τ')^m) dx = D − D^{m+1} / ((m+1) τ'^m) for D < τ' (τ' m/(m+1) else)."""
    t, d, m = interval_wall_s, timeout_s, jobs
    if m <= 0 or t <= 0:
        return 0.0
    if d >= t:
        return t * m / (m + 1)
    return d - d * (d / t) ** m / (m + 1)


def drain_loss_s(interval_wall_s: float, timeout_s: float) -> float:
    """Mean wall time of work lost per drained job. Stopped at D when its next save is further
    (X > D), it has computed τ' − X + D since its last save; over X ~ U(D, τ') that is (τ' + D)/2,
    times P(X > D) = (τ' − D)/τ': (τ'² − D²)/(2τ'). No timeout (D = 0): τ'/2; D ≥ τ': 0."""
    t, d = interval_wall_s, timeout_s
    return (t * t - d * d) / (2 * t) if t > 0 and d < t else 0.0


#: Restart of a drained job (reschedule + checkpoint load) in the plans and their replay.
RESTART_S = 60.0


def job_loss_s(busy_nodes: int, interval_wall_s: float, timeout_s: float, node_s: float,
               failed_nodes: float, repair_s: float, restart_s: float = RESTART_S) -> float:
    """Job-seconds lost on a full fleet (every node busy with its own 1-node job): each drained job
    loses (τ'² − D²)/(2τ') of work, waits for its node (t_n: nowhere else is free) and restarts
    (R); a job whose node failed validation waits for its repair, E[T], instead."""
    if busy_nodes <= 0 or interval_wall_s <= 0:
        return 0.0
    return (busy_nodes * (drain_loss_s(interval_wall_s, timeout_s) + node_s + restart_s)
            + failed_nodes * repair_s)


def binomial_tail(n: int, p: float, k: int) -> float:
    """P(Bin(n, p) > k)."""
    if k < 0:
        return 1.0
    return 1.0 - sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(min(k, n) + 1))


@dataclass(frozen=True)
class UpgradePlan:
    wave: int
    waves: int
    canary: int
    rollout_s: float
    node_out_s: float
    max_out: int
    failed_nodes: float
    p_false_rollback: float
    p_bad_caught: float


def plan(nodes: int, wave: int, canary: int, node_s: float, interval_wall_s: float, timeout_s: float,
         soak_s: float, node_fail_p: float, bad_fail_p: float, rollback_share: float) -> UpgradePlan:
    """One plan; every node is busy with its own job checkpointing every ``interval_wall_s``
    (0: an idle fleet, no drain)."""
    c = min(canary, nodes)
    waves = math.ceil((nodes - c) / wave) if nodes > c else 0
    w = min(wave, nodes - c)
    rollout = (expected_wave_drain_s(interval_wall_s, timeout_s, c) + node_s + soak_s if c else 0.0)
    rollout += waves * (expected_wave_drain_s(interval_wall_s, timeout_s, w) + node_s)
    out = nodes * (expected_drain_s(interval_wall_s, timeout_s) + node_s)
    k = math.floor(rollback_share * c)
    return UpgradePlan(wave, waves + (1 if c else 0), c, rollout, out, max(c, w), nodes * node_fail_p,
                       binomial_tail(c, node_fail_p, k) if c else 0.0,
                       binomial_tail(c, bad_fail_p, k) if c else 0.0)
