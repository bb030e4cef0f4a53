"""Driver-upgrade waves in the simulator: canary, drain at checkpoints, upgrade, rollback.

A rollout (``UpgradeConfig``) walks the fleet in waves, as the GPU Operator's upgrade controller
does (NVIDIA/k8s-operator-libs ``pkg/upgrade``; reliability reference §6.2):

1. A wave's nodes are cordoned (no new work). A job with a rank there is drained at its next
   checkpoint if that comes within ``drain_timeout_s`` (the operator's pod-deletion / drain
   timeout, 300 s): it loses nothing but its restart; otherwise it is stopped at the timeout and
   loses the work since its last checkpoint. It requeues and restarts elsewhere (or later here).
2. A drained node upgrades for ``node_s`` (driver + Fabric Manager — they must match exactly —
   reboot, validation; ≈ 4 min in the operator's doc example, GPU stack 3–5 min after reboot,
   ≤ ~21 min before the driver pod is restarted; default 8 min). It then fails validation with
   ``node_fail_p`` (an assumption: no published per-node figure; the operator marks
   ``upgrade-failed`` after its 600-s validation timeout) and goes through the node-health machine
   (fleet_events/failures.py); otherwise it is uncordoned.
3. The first ``canary`` nodes go alone and are watched for ``soak_s``. The new driver is bad with
   probability ``bad_driver_p`` (drawn once per seed); a bad driver fails each node with
   ``bad_fail_p``. When more than ``rollback_share`` of the canary failed the rollout stops and the
   canary's healthy nodes are re-imaged to the old driver (another drain-free ``node_s``).
4. Each later wave starts when the previous one is done; ``wave`` nodes at a time (the operator's
   maxUnavailable, 25% by default, caps it).

Every draw comes from its own stream (``default_rng([seed, 0x06DA, node])``): policies meet the
same failed upgrades. Failed and repairing nodes are skipped by their wave (their repair installs
the new driver).

The node's software stack (driver, Fabric Manager, kernel; a mixed fleet) and what a mismatch
does: fleet_events/upgrade_stack.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from gpufleet.model.driver_compat import kernel_ok, version
from gpufleet.model.health import HealthState
from gpufleet.sim.cluster import set_schedulable
from gpufleet.sim.fleet_events.failures import UPGRADE_KIND, FailureState, checkpoint_stretch, work_done_s
from gpufleet.sim.fleet_events.upgrade_compat import CompatFilter
from gpufleet.sim.fleet_events.upgrade_stack import (
    NodeStart,
    driver_installed,
    repair_installs,
    stack_problem,
    stacks,
)
from gpufleet.sim.kernel import Event, EventKind, Outcome

STREAM = 0x06DA


@dataclass(frozen=True, slots=True)
class UpgradeConfig:
    wave: int
    canary: int = 0
    start_s: float = 0.0
    node_s: float = 480.0
    drain_timeout_s: float = 300.0
    soak_s: float = 3600.0
    node_fail_p: float = 0.01
    bad_driver_p: float = 0.0
    bad_fail_p: float = 0.5
    rollback_share: float = 0.25
    #: The order nodes are visited in (node indices); default: index order.
    order: tuple[int, ...] | None = None
    #: The driver the fleet runs before and after (e.g. "550.54.14" → "580.65.06"). With both
    #: given, jobs labelled with their image's CUDA version (``("cuda", "13.0")`` in
    #: ``Job.labels``) go only to nodes whose driver runs it (fleet_events/upgrade_compat.py); None: no
    #: restriction, every job runs on either driver.
    from_driver: str | None = None
    to_driver: str | None = None
    #: ``cuda-compat`` forward-compatibility packages are installed (data-center GPUs).
    forward_compat: bool = False
    #: The Fabric Manager the rollout installs (None: the new driver's, pinned); its own step
    #: after the driver's (seconds, 0: one step); the fleet has NVSwitches (FM needed).
    fabric_manager: str | None = None
    fm_s: float = 0.0
    nvswitch: bool = True
    #: The nodes' kernel (None: not checked) and per-node starting stacks (a mixed fleet).
    kernel: str | None = None
    nodes: tuple[NodeStart, ...] = ()

    def waves(self, nodes: int) -> list[list[int]]:
        """Node indices per wave: the canary first, then ``wave`` at a time."""
        order = [n for n in self.order if n < nodes] if self.order is not None else list(range(nodes))
        nodes = len(order)
        c = min(self.canary, nodes)
        out = [order[:c]] if c else []
        out += [order[i:i + self.wave] for i in range(c, nodes, self.wave)]
        return out


@dataclass
class UpgradeLedger:
    waves_done: int = 0
    nodes_upgraded: int = 0
    nodes_failed: int = 0
    nodes_skipped: int = 0
    jobs_drained: int = 0
    #: Drained at a checkpoint (lost only the restart) vs stopped at the timeout.
    drained_at_checkpoint: int = 0
    rolled_back: bool = False
    bad_driver: bool = False
    #: Nodes that failed validation for a Fabric Manager ≠ driver, or a kernel too old for the
    #: new driver's module; nodes held out of service from the start (FM ≠ driver).
    nodes_fm_mismatch: int = 0
    nodes_kernel_too_old: int = 0
    nodes_held_at_start: int = 0
    #: Jobs held back by the driver matrix, and GPU-seconds they waited so (fleet_events/upgrade_compat.py):
    #: while restricted to some nodes, and while no node at all ran their image.
    driver_held_jobs: int = 0
    driver_wait_gpu_s: float = 0.0
    driver_blocked_gpu_s: float = 0.0
    started_s: float = 0.0
    finished_s: float | None = None
    #: Σ over nodes of cordon → back in service (or → handed to repair), seconds.
    node_out_s: float = 0.0
    max_out: int = 0


@dataclass
class UpgradeState:
    cfg: UpgradeConfig
    waves: list[list[int]]
    ledger: UpgradeLedger = field(default_factory=UpgradeLedger)
    #: Cordoned node → (cordon time, schedulable before).
    out: dict[int, tuple[float, bool]] = field(default_factory=dict)
    left: int = 0
    canary_failed: int = 0
    #: Each node's driver, Fabric Manager and kernel now, and its driver and FM at the start
    #: (a rollback returns to them); ``drivers_seq`` counts driver changes. Without drivers named
    #: every entry is "" and nothing is restricted (``drivers_known`` False).
    driver: list[str] = field(default_factory=list)
    fm: list[str] = field(default_factory=list)
    kernel: list[str | None] = field(default_factory=list)
    start: list[tuple[str, str]] = field(default_factory=list)
    drivers_known: bool = False
    #: Every driver a node may run during the run: the starting ones and the new one.
    drivers_ever: tuple[str, ...] = ()
    drivers_seq: int = 0
    #: Healthy nodes held out of service because their FM ≠ driver (NVSwitch systems).
    held: set[int] = field(default_factory=set)
    compat: CompatFilter = field(default_factory=CompatFilter)

    def target(self, node: int) -> tuple[str, str]:
        """(driver, FM) a node gets now: the new pair, or its starting pair after a rollback."""
        if self.ledger.rolled_back:
            return self.start[node]
        new = self.cfg.to_driver or ""
        return new, self.cfg.fabric_manager or new


def _u(seed: int, node: int, visit: int = 0) -> float:
    return float(np.random.default_rng([seed, STREAM, node, visit]).random())


def install(st, cfg: UpgradeConfig) -> None:  # noqa: ANN001 (SimState)
    fs: FailureState = st.fail
    table = st.cluster.table
    n = len(table)
    for v in (cfg.from_driver, cfg.to_driver, cfg.fabric_manager,
              *(x for ns in cfg.nodes for x in (ns.driver, ns.fabric_manager))):
        if v is not None:
            version(v)  # a bad driver version fails here, not at the first labelled job
    us = UpgradeState(cfg, cfg.waves(n))
    us.driver, us.fm, us.kernel = stacks(cfg, list(table.names))
    for i, (d, k) in enumerate(zip(us.driver, us.kernel, strict=True)):
        if d and k is not None and not kernel_ok(d, k)[0]:
            raise ValueError(f"node {table.names[i]}: {kernel_ok(d, k)[1]}")
    us.start = list(zip(us.driver, us.fm, strict=True))
    if cfg.to_driver is not None and any(us.driver) and not all(us.driver):
        bare = next(table.names[i] for i, d in enumerate(us.driver) if not d)
        raise ValueError(f"upgrade: node {bare} has no driver: give from_driver or a nodes entry for it")
    us.drivers_known = cfg.to_driver is not None and all(us.driver)
    us.drivers_ever = tuple(sorted({*us.driver, cfg.to_driver or ""}))
    us.ledger.bad_driver = bool(np.random.default_rng([fs.cfg.seed, STREAM]).random() < cfg.bad_driver_p)
    us.ledger.started_s = cfg.start_s
    fs.upgrade = us
    fs.ledger.upgrade = us.ledger
    for i in range(n):
        if cfg.nvswitch and us.driver[i] and us.fm[i] != us.driver[i]:  # FM will not start: no CUDA
            us.held.add(i)
            us.ledger.nodes_held_at_start += 1
            set_schedulable(table, i, False)
            st.rec.event(st.t, "fm-mismatch", table.names[i], f"Fabric Manager {us.fm[i]} ≠ driver "
                         f"{us.driver[i]}: nv-fabricmanager exits, CUDA fails with 802; held back")
    st.q.push(cfg.start_s, EventKind.UPGRADE, ("wave", 0))


def _drain(st, node: int) -> float:  # noqa: ANN001
    """Stop the jobs on ``node`` at their next checkpoint or the drain timeout; when it is empty."""
    fs: FailureState = st.fail
    us: UpgradeState = fs.upgrade
    done = st.t
    for jid, rj in list(st.cluster.running.items()):
        if not any(b.node == node for b in rj.bindings):
            continue
        if jid in fs.stopped:  # already stopping (another node of its gang, or a failure)
            done = max(done, fs.stopped[jid][0])
            continue
        ck = rj.job.checkpointing
        stop = st.t + us.cfg.drain_timeout_s
        if ck is not None and ck.interval_s > 0:
            p = work_done_s(rj, st.t)
            nxt = (math.floor(p / ck.interval_s) + 1) * ck.interval_s
            restart = ck.restart_s if rj.resumed else 0.0
            paused = max(0.0, rj.start_time + restart - st.t)  # still loading its checkpoint
            at = st.t + paused + (nxt - p) * checkpoint_stretch(rj)
            if nxt <= rj.job.run_time and at <= stop:
                stop = at
                fs.spot_saved[jid] = nxt  # the checkpoint it drains at keeps its work
                us.ledger.drained_at_checkpoint += 1
        fs.stopped[jid] = (stop, "upgrade")
        st.q.push(stop, EventKind.STOP, (jid, st.gen(jid), stop, "upgrade"))
        st.rec.event(st.t, "upgrade-drain", jid, f"drain for the upgrade of {st.cluster.table.names[node]}; "
                                          f"stops at t={stop:.0f}")
        us.ledger.jobs_drained += 1
        done = max(done, stop)
    return done


def _start_wave(st, w: int) -> Outcome:  # noqa: ANN001
    fs: FailureState = st.fail
    us: UpgradeState = fs.upgrade
    table = st.cluster.table
    us.left = 0
    for node in us.waves[w]:
        if fs.book.states[node] is not HealthState.HEALTHY or node in fs.reclaimed:
            us.ledger.nodes_skipped += 1  # in repair (its repair installs the new driver) or away
            repair_installs(us, node)
            continue
        us.out[node] = (st.t, bool(table.schedulable[node]) or node in us.held)
        set_schedulable(table, node, False)
        for jid in st.cluster.unbind_on(node):
            st.rec.event(st.t, "unbound", jid, f"pods on {table.names[node]} released: upgrade wave")
        drained = _drain(st, node)
        if us.cfg.fm_s > 0:  # the driver first, then the Fabric Manager
            st.q.push(drained + us.cfg.node_s, EventKind.UPGRADE, ("driver", w, node))
        else:
            st.q.push(drained + us.cfg.node_s, EventKind.UPGRADE, ("node", w, node))
        us.left += 1
    us.ledger.max_out = max(us.ledger.max_out, len(us.out))
    st.rec.event(st.t, "upgrade-wave", f"wave{w}", f"{us.left} nodes")
    if us.left == 0:
        _wave_done(st, w)
    return Outcome.CHANGED


def _node_done(st, w: int, node: int) -> Outcome:  # noqa: ANN001
    fs: FailureState = st.fail
    us: UpgradeState = fs.upgrade
    since, was = us.out.pop(node)
    us.ledger.node_out_s += st.t - since
    us.left -= 1
    out = Outcome.NOTHING
    if fs.book.states[node] is HealthState.HEALTHY:
        canary = us.cfg.canary > 0 and w == 0 and not us.ledger.rolled_back
        p = us.cfg.bad_fail_p if (canary and us.ledger.bad_driver) else us.cfg.node_fail_p
        driver_installed(us, node)
        why, kind = stack_problem(us, node)
        if why is None and _u(fs.cfg.seed, node, int(us.ledger.rolled_back)) < p:
            why, kind = "validation failed", UPGRADE_KIND
        if why is not None:
            us.ledger.nodes_failed += 1
            us.canary_failed += canary
            us.held.discard(node)
            st.rec.event(st.t, "upgrade-failed", st.cluster.table.names[node], why)
            st.q.push(st.t, EventKind.FAILURE, (node, kind, 1.0))
            repair_installs(us, node)  # its repair finishes the install
            set_schedulable(st.cluster.table, node, was)  # on_failure takes it out with the fault
        else:
            us.ledger.nodes_upgraded += 1
            us.held.discard(node)
            if was:
                set_schedulable(st.cluster.table, node, True)
                out = Outcome.CHANGED
    else:
        us.ledger.nodes_skipped += 1  # it failed while upgrading: its repair installs the driver
        repair_installs(us, node)
    if us.left == 0:
        _wave_done(st, w)
    return out


def _driver_step(st, w: int, node: int) -> Outcome:  # noqa: ANN001
    """The driver is in, the Fabric Manager not yet: FM ≠ driver, so the (still cordoned) node
    runs no CUDA until the FM step ``fm_s`` later."""
    us: UpgradeState = st.fail.upgrade
    driver_installed(us, node, fm=False)
    if us.cfg.nvswitch and us.fm[node] != us.driver[node]:
        st.rec.event(st.t, "upgrade-driver", st.cluster.table.names[node],
                     f"driver {us.driver[node]} in; Fabric Manager {us.fm[node]} until its step")
    st.q.push(st.t + us.cfg.fm_s, EventKind.UPGRADE, ("node", w, node))
    return Outcome.NOTHING


def _wave_done(st, w: int) -> None:  # noqa: ANN001
    us: UpgradeState = st.fail.upgrade
    us.ledger.waves_done += 1
    if us.ledger.rolled_back:
        us.ledger.finished_s = st.t
        return
    if w == 0 and us.cfg.canary > 0:
        st.q.push(st.t + us.cfg.soak_s, EventKind.UPGRADE, ("soak", 0, -1))
    elif w + 1 < len(us.waves):
        st.q.push(st.t, EventKind.UPGRADE, ("wave", w + 1))
    else:
        us.ledger.finished_s = st.t
        st.rec.event(st.t, "upgrade-done", "fleet", f"{us.ledger.nodes_upgraded} nodes upgraded")


def _soak_over(st) -> Outcome:  # noqa: ANN001
    us: UpgradeState = st.fail.upgrade
    c = len(us.waves[0])
    if c and us.canary_failed > us.cfg.rollback_share * c:
        us.ledger.rolled_back = True
        st.rec.event(st.t, "upgrade-rollback", "fleet", f"{us.canary_failed} of {c} canary nodes failed")
        return _start_wave(st, 0)  # the canary again, back to the old driver
    if len(us.waves) > 1:
        return _start_wave(st, 1)
    us.ledger.finished_s = st.t
    return Outcome.NOTHING


def on_upgrade(st, ev: Event) -> Outcome:  # noqa: ANN001
    what = ev.payload[0]
    if what == "wave":
        return _start_wave(st, ev.payload[1])
    if what == "node":
        return _node_done(st, ev.payload[1], ev.payload[2])
    if what == "driver":
        return _driver_step(st, ev.payload[1], ev.payload[2])
    return _soak_over(st)
