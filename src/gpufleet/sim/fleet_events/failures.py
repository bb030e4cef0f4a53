"""Failures in the simulator: a seeded failure stream, node health steps, gang stop and restart.

Failure model (Meta, "The Llama 3 Herd of Models", arXiv 2407.21783, §3.3.4 Table 5): 419
unexpected interruptions in 54 days on 2,048 8-GPU hosts (110,592 node-days, 884,736 GPU-days),
grouped here by kind. GPU kinds scale with GPUs per node (per-GPU rate × GPUs); the others are per
node. ``scale`` multiplies every rate (to study a worse fleet, or to get enough events in a test).

What a failure does (the event handlers are in fleet_events/failure_events.py, one per event kind):
1. FAILURE at t on node n: n goes healthy → suspect (out of service at once). Each gang running on
   n has stopped computing: its progress freezes at t; its GPUs stay held, idle, until detection.
   With a spare in the pool, a spare is brought in: in service after detection + teardown +
   ``replace_s`` (the steps are sequential, as the recovery budget counts them).
2. STOP at t + detect + teardown: the gang is released and requeued; it keeps its last periodic
   checkpoint and pays ``load_s`` (checkpoint load) when it restarts on healthy nodes. Recovery time
   (failure → useful work again) = detection + teardown + wait for a replacement and a cycle +
   checkpoint load; it is measured at the restart.
3. HEALTH: the node walks model/health.py's machine with its step durations; repaired or RMA'd
   (drawn from the failure stream), then pre-flight, then healthy — back to the pool if the pool is
   short, else into service.

Same seed → same failures whatever the policy: the stream is drawn up front from its own generator
(``default_rng([seed, STREAM])``), and node health never depends on scheduling.
Checkpoints cost δ: a run with checkpointing computes τ of work per τ + δ of wall time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from gpufleet.engine.types import RunningJob
from gpufleet.model.health import NodeHealthBook, StepDurations

LLAMA3_NODE_DAYS = 2048 * 54
LLAMA3_GPU_DAYS = 16_384 * 54
STREAM = 0xFA11


@dataclass(frozen=True, slots=True)
class FailureKind:
    """A failure family: its Llama 3 count (Table 5 rows it sums), per GPU or per node, and the share
    of diagnoses that end in an RMA rather than a fix in place (an assumption)."""

    name: str
    count: int
    per_gpu: bool
    rma_share: float
    rows: str

    def rate_per_node_s(self, gpus_per_node: int) -> float:
        if self.per_gpu:
            return self.count / LLAMA3_GPU_DAYS * gpus_per_node / 86400.0
        return self.count / LLAMA3_NODE_DAYS / 86400.0


#: Llama 3 Table 5 (419 unexpected interruptions) by kind; the rows sum to 419.
LLAMA3_KINDS: tuple[FailureKind, ...] = (
    FailureKind("gpu-xid", 190, True, 0.3, "faulty GPU incl. NVLink 148, SRAM 19, GSP 17, thermal 6"),
    FailureKind("gpu-hbm", 72, True, 0.5, "HBM3 memory 72"),
    FailureKind("gpu-sdc", 6, True, 0.5, "silent data corruption 6"),
    FailureKind("fabric", 42, False, 0.0, "network switch/cable 35, NCCL watchdog 7"),
    FailureKind("nic", 7, False, 0.5, "NIC 7"),
    FailureKind("host", 46, False, 0.2, "host maintenance 32, SSD 3, PSU 3, chassis 2, IO board 2, "
                                        "CPU 2, system memory 2"),
    FailureKind("software", 56, False, 0.0, "software bug 54, dependency 2"),
)


@dataclass(frozen=True, slots=True)
class Recovery:
    """How a stopped gang gets back: detection, teardown, hot-spare swap-in, checkpoint load."""

    name: str
    detect_s: float
    teardown_s: float
    replace_s: float
    load_s: float

    @property
    def total_s(self) -> float:
        return self.detect_s + self.teardown_s + self.replace_s + self.load_s


#: 30 minutes: a hang caught by PyTorch's 10-min NCCL timeout, 5-min teardown, a cold node
#: brought in (5 min: boot and GPU stack, GPU Operator ≈ 3–5 min), 10-min load from shared storage.
SLOW = Recovery("30-minute", 600.0, 300.0, 300.0, 600.0)
#: 3 minutes: DCGM health watch (30 s), 30-s teardown, a hot spare already gated (60 s to join),
#: in-memory / peer checkpoint load 60 s (GEMINI, ByteRobust-style warm standby).
FAST = Recovery("3-minute", 30.0, 30.0, 60.0, 60.0)
RECOVERIES = {"30-minute": SLOW, "3-minute": FAST}

#: A node admitted bad after repair: it fails under its first load (kind index -1).
BAD_NODE = FailureKind("bad-node", 0, False, 0.0, "admitted bad after repair, failed under load")
#: A node whose driver upgrade failed validation (kind index -2, fleet_events/upgrade.py).
UPGRADE_FAILED = FailureKind("upgrade-failed", 0, False, 0.0, "driver upgrade failed validation")
UPGRADE_KIND = -2
#: Upgrades that failed for the stack itself (fleet_events/upgrade.py): FM ≠ driver; kernel too old.
FM_MISMATCH = FailureKind("fm-mismatch", 0, False, 0.0, "Fabric Manager version differs from the driver")
FM_MISMATCH_KIND = -3
KERNEL_TOO_OLD = FailureKind("kernel-too-old", 0, False, 0.0, "kernel older than the driver module supports")
KERNEL_KIND = -4
#: Kind index (< 0) → the special kind it names.
SPECIAL_KINDS = {-1: BAD_NODE, UPGRADE_KIND: UPGRADE_FAILED, FM_MISMATCH_KIND: FM_MISMATCH,
                 KERNEL_KIND: KERNEL_TOO_OLD}


@dataclass(frozen=True, slots=True)
class ZoneRates:
    """One zone's own spot reclaim rates (None: the ``SpotConfig`` default): independent reclaims
    per node-day, capacity events per day, and the share of the zone's spot nodes an event takes."""

    zone: str
    reclaims_per_node_day: float | None = None
    events_per_day: float | None = None
    fraction: float | None = None


@dataclass(frozen=True, slots=True)
class SpotConfig:
    """The first ``nodes`` nodes are spot: each is reclaimed at ``reclaims_per_node_day`` (Poisson),
    with ``notice_s`` warning (AWS 120 s, GCP and Azure 30 s), and comes back ``away_s`` later."""

    nodes: int
    reclaims_per_node_day: float
    notice_s: float = 120.0
    away_s: float = 3600.0
    #: Zone-correlated reclaims (fleet_events/spot.py): per zone, capacity events at this rate, each taking
    #: ``zone_fraction`` of the zone's spot nodes at one instant. 0: independent reclaims only.
    zone_events_per_day: float = 0.0
    zone_fraction: float = 0.5
    #: Per-zone rates overriding the three defaults above (a reclaim process per zone).
    zones: tuple[ZoneRates, ...] = ()

    def rates(self, zone: str) -> tuple[float, float, float]:
        """(reclaims per node-day, zone events per day, zone fraction) in ``zone``."""
        for z in self.zones:
            if z.zone == zone:
                own = (z.reclaims_per_node_day, z.events_per_day, z.fraction)
                base = (self.reclaims_per_node_day, self.zone_events_per_day, self.zone_fraction)
                per_node, events, fraction = (b if o is None else o for o, b in zip(own, base, strict=True))
                return per_node, events, fraction
        return self.reclaims_per_node_day, self.zone_events_per_day, self.zone_fraction


@dataclass(frozen=True)
class FailureConfig:
    kinds: tuple[FailureKind, ...] = LLAMA3_KINDS
    scale: float = 1.0
    recovery: Recovery = FAST
    steps: StepDurations = field(default_factory=StepDurations)
    #: Nodes held out of service as hot spares (the highest-numbered nodes of the fleet).
    spares: int = 0
    seed: int = 0
    #: Spot capacity reclaimed with a notice (fleet_events/spot.py); None: no spot nodes.
    spot: SpotConfig | None = None
    #: Pre-flight: share of repaired nodes that come back still bad, the share of those the gate
    #: (``steps.preflight_s`` long) catches, and how soon an admitted bad node fails under load.
    bad_after_repair: float = 0.0
    gate_catch: float = 1.0
    bad_fails_after_s: float = 600.0
    #: Extra failures at fixed times, (t, node), repaired in place: for worked examples and tests.
    scripted: tuple[tuple[float, int], ...] = ()
    #: A driver-upgrade rollout (fleet_events/upgrade.py ``UpgradeConfig``); None: no upgrade.
    upgrade: object = None

    def rate_per_node_s(self, gpus_per_node: int) -> float:
        return self.scale * sum(k.rate_per_node_s(gpus_per_node) for k in self.kinds)


def draw_failures(cfg: FailureConfig, gpus: np.ndarray,
                  horizon_s: float) -> list[tuple[float, int, int, float]]:
    """(time, node, kind index, uniform for the repair outcome), sorted: Poisson per node and kind."""
    rng = np.random.default_rng([cfg.seed, STREAM])
    out: list[tuple[float, int, int, float]] = []
    for k, kind in enumerate(cfg.kinds):
        for node, g in enumerate(gpus):
            lam = cfg.scale * kind.rate_per_node_s(int(g)) * horizon_s
            n = int(rng.poisson(lam))
            for t in rng.uniform(0.0, horizon_s, n):
                out.append((float(t), node, k, float(rng.uniform())))
    out.sort()
    return out


@dataclass
class FailureLedger:
    """What failures cost, for summary.json and the report."""

    interruptions: int = 0
    node_failures: int = 0
    spares_used: int = 0
    no_spare: int = 0
    #: Failures of in-service nodes while a pool is configured: each wants a spare.
    spare_needed: int = 0
    #: Pre-flight: bad nodes the gate sent back, and bad nodes it let through.
    gate_caught: int = 0
    admitted_bad: int = 0
    recoveries_s: list[float] = field(default_factory=list)
    lost_gpu_s: dict[str, float] = field(default_factory=dict)
    #: (time, nodes away for repair) at every change: the M/G/∞ check.
    away: list[tuple[float, int]] = field(default_factory=list)
    #: Elastic jobs (fleet_events/elastic.py): shrinks instead of stops, grow-backs by gang delta.
    elastic_shrinks: int = 0
    elastic_grows: int = 0
    #: Wall seconds elastic jobs ran below full size, and the GPU-seconds they held, once finished.
    elastic_reduced_s: float = 0.0
    elastic_held_gpu_s: float = 0.0
    #: The driver-upgrade rollout's own ledger (fleet_events/upgrade.py UpgradeLedger), when there is one.
    upgrade: object = None

    def charge(self, cause: str, gpu_s: float) -> None:
        self.lost_gpu_s[cause] = self.lost_gpu_s.get(cause, 0.0) + gpu_s


@dataclass
class FailureState:
    cfg: FailureConfig
    book: NodeHealthBook
    pool: list[int]
    ledger: FailureLedger = field(default_factory=FailureLedger)
    #: Job id → (failure time, cause) for gangs stopped and not yet restarted.
    stopped: dict[str, tuple[float, str]] = field(default_factory=dict)
    #: In-service nodes lost with no spare to replace them: the first nodes back fill these slots.
    short: int = 0
    #: Pre-flight visits per node (seeds the bad/caught draws: policy-independent).
    gate_visits: dict[int, int] = field(default_factory=dict)
    bad: set[int] = field(default_factory=set)
    #: Spot nodes taken back and not yet returned; per stopped job, work saved in the notice.
    reclaimed: set[int] = field(default_factory=set)
    spot_saved: dict[str, float | None] = field(default_factory=dict)
    away: int = 0
    #: Elastic jobs seen failing (job id → fleet_events/elastic.py ElasticRun), and pending deltas → job.
    elastic: dict = field(default_factory=dict)
    deltas: dict[str, str] = field(default_factory=dict)
    delta_seq: int = 0
    #: The driver-upgrade rollout in progress (fleet_events/upgrade.py UpgradeState), if any.
    upgrade: object = None


def checkpoint_stretch(rj: RunningJob) -> float:
    """Wall seconds per second of work: (τ + δ) / τ with checkpointing, else 1."""
    ck = rj.job.checkpointing
    return (ck.interval_s + ck.cost_s) / ck.interval_s if ck and ck.interval_s > 0 else 1.0


def work_done_s(rj: RunningJob, t: float) -> float:
    """Progress by ``t`` (restart first, then work at τ per τ + δ of wall time), capped at the job."""
    ck = rj.job.checkpointing
    restart = ck.restart_s if (ck and rj.resumed) else 0.0
    done = rj.progress_before + max(0.0, t - rj.start_time - restart) / checkpoint_stretch(rj)
    return min(done, rj.job.run_time)


def saved_s(rj: RunningJob, progress: float) -> float:
    ck = rj.job.checkpointing
    if ck is None or ck.interval_s <= 0:
        return 0.0
    return max(math.floor(progress / ck.interval_s) * ck.interval_s, rj.progress_before)


def run_wall_s(rj: RunningJob) -> float:
    """Wall time of a run with failures on: restart + work left × (τ + δ)/τ."""
    ck = rj.job.checkpointing
    restart = ck.restart_s if (ck and rj.resumed) else 0.0
    return restart + (rj.job.run_time - rj.progress_before) * checkpoint_stretch(rj)


def mean_out_of_service_s(cfg: FailureConfig, gpus_per_node: int) -> float:
    """E[T] of a failed node, over kinds weighted by rate: detect + drain + quarantine + diagnose
    + (repair in place or, with the kind's RMA share, RMA) + pre-flight."""
    rates = [k.rate_per_node_s(gpus_per_node) for k in cfg.kinds]
    total = sum(rates)
    if total <= 0:
        return 0.0
    s = cfg.steps
    fix, rma = s.out_of_service_s(), s.out_of_service_s(rma=True)
    return sum(r / total * ((1 - k.rma_share) * fix + k.rma_share * rma)
               for r, k in zip(rates, cfg.kinds, strict=True))
