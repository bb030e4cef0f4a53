"""The scenario's ``reliability:`` section: failures, recovery, spares (validated with pydantic)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gpufleet.model.driver_compat import kernel_ok, version
from gpufleet.model.health import StepDurations
from gpufleet.sim.fleet_events.failures import RECOVERIES, FailureConfig, SpotConfig, ZoneRates
from gpufleet.sim.fleet_events.upgrade import NodeStart, UpgradeConfig


def _driver_version(cls: type, v: str | None) -> str | None:
    """A driver or Fabric Manager version ("570.86.15"), or a ValueError naming it."""
    if v is not None:
        version(v)
    return v


def _kernel_version(cls: type, v: str | None) -> str | None:
    """A Linux kernel release ("5.15.0-91"): its numeric part must read as a version."""
    if v is not None:
        version(v.split("-")[0], "kernel", "5.15.0")
    return v


class NodeStartSpec(BaseModel):
    """``reliability.upgrade.nodes[]``: where the nodes named like ``match`` start (a mixed fleet)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    match: str = Field(min_length=1, max_length=200)
    driver: str | None = None
    fabric_manager: str | None = None
    kernel: str | None = None

    _driver = field_validator("driver", "fabric_manager")(classmethod(_driver_version))
    _kernel = field_validator("kernel")(classmethod(_kernel_version))


class UpgradeSpec(BaseModel):
    """``reliability.upgrade``: a driver-upgrade rollout during the run (fleet_events/upgrade.py)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    wave: int = Field(ge=1, le=1_000_000)
    canary: int = Field(default=0, ge=0, le=1_000_000)
    start_hours: float = Field(default=1.0, ge=0, le=24 * 3650)
    node_minutes: float = Field(default=8.0, ge=0, le=7 * 24 * 60)
    drain_timeout_s: float = Field(default=300.0, ge=0, le=7 * 86_400)
    soak_minutes: float = Field(default=60.0, ge=0, le=30 * 24 * 60)
    node_fail_p: float = Field(default=0.01, ge=0, le=1)
    bad_driver_p: float = Field(default=0.0, ge=0, le=1)
    bad_fail_p: float = Field(default=0.5, ge=0, le=1)
    rollback_share: float = Field(default=0.25, ge=0, le=1)
    #: The driver before and after ("550.54.14" → "580.65.06"): with both, a job's ``cuda``
    #: image goes only to nodes whose driver runs it (fleet_events/upgrade_compat.py).
    from_driver: str | None = None
    to_driver: str | None = None
    forward_compat: bool = False
    #: The Fabric Manager the rollout installs (default: the new driver's), the minutes its step
    #: takes after the driver's (0: one step), and whether the nodes have NVSwitches.
    fabric_manager: str | None = None
    fm_minutes: float = Field(default=0.0, ge=0, le=24 * 60)
    nvswitch: bool = True
    #: Every node's kernel (None: not checked); per-node starting stacks, matched by node name.
    kernel: str | None = None
    nodes: list[NodeStartSpec] = Field(default_factory=list, max_length=100_000)

    _driver = field_validator("from_driver", "to_driver", "fabric_manager")(classmethod(_driver_version))
    _kernel = field_validator("kernel")(classmethod(_kernel_version))

    @model_validator(mode="after")
    def _consistent(self) -> UpgradeSpec:
        for i, ns in enumerate(self.nodes):
            d, k = ns.driver or self.from_driver, ns.kernel or self.kernel
            if ns.driver is not None and self.to_driver is None:
                raise ValueError(f"nodes[{i}].driver needs to_driver (the driver the rollout installs)")
            if ns.fabric_manager is not None and d is None:
                raise ValueError(f"nodes[{i}].fabric_manager needs a driver to match: give nodes[{i}].driver "
                                 "or from_driver")
            if d is not None and k is not None and not kernel_ok(d, k)[0]:
                raise ValueError(f"nodes[{i}]: {kernel_ok(d, k)[1]}")
        if self.from_driver and self.kernel and not kernel_ok(self.from_driver, self.kernel)[0]:
            raise ValueError(kernel_ok(self.from_driver, self.kernel)[1])
        return self

    def build(self) -> UpgradeConfig:
        return UpgradeConfig(wave=self.wave, canary=self.canary, start_s=self.start_hours * 3600.0,
                             node_s=self.node_minutes * 60.0, drain_timeout_s=self.drain_timeout_s,
                             soak_s=self.soak_minutes * 60.0, node_fail_p=self.node_fail_p,
                             bad_driver_p=self.bad_driver_p, bad_fail_p=self.bad_fail_p,
                             rollback_share=self.rollback_share, from_driver=self.from_driver,
                             to_driver=self.to_driver, forward_compat=self.forward_compat,
                             fabric_manager=self.fabric_manager, fm_s=self.fm_minutes * 60.0,
                             nvswitch=self.nvswitch, kernel=self.kernel,
                             nodes=tuple(NodeStart(n.match, n.driver, n.fabric_manager, n.kernel)
                                         for n in self.nodes))


class ZoneSpotSpec(BaseModel):
    """``reliability.spot.zones.<zone>``: that zone's own reclaim rates (omitted: the defaults)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    reclaims_per_node_day: float | None = Field(default=None, ge=0, le=1000)
    events_per_day: float | None = Field(default=None, ge=0, le=1000)
    fraction: float | None = Field(default=None, gt=0, le=1)


class SpotSpec(BaseModel):
    """``reliability.spot``: the first ``nodes`` nodes are spot, reclaimed with a notice
    (spot.py): independently per node, and by zone capacity events, each zone at its own rates."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    nodes: int = Field(ge=1, le=1_000_000)
    reclaims_per_node_day: float = Field(ge=0, le=1000)
    #: AWS gives 120 s, GCP and Azure 30 s (reliability reference §7).
    notice_s: float = Field(default=120.0, ge=0, le=86_400)
    away_hours: float = Field(default=1.0, ge=0, le=24 * 365)
    zone_events_per_day: float = Field(default=0.0, ge=0, le=1000)
    zone_fraction: float = Field(default=0.5, gt=0, le=1)
    zones: dict[str, ZoneSpotSpec] = Field(default_factory=dict, max_length=10_000)

    def build(self) -> SpotConfig:
        return SpotConfig(nodes=self.nodes, reclaims_per_node_day=self.reclaims_per_node_day,
                          notice_s=self.notice_s, away_s=self.away_hours * 3600.0,
                          zone_events_per_day=self.zone_events_per_day, zone_fraction=self.zone_fraction,
                          zones=tuple(ZoneRates(z, r.reclaims_per_node_day, r.events_per_day, r.fraction)
                                      for z, r in sorted(self.zones.items())))


class ReliabilitySpec(BaseModel):
    """``reliability: {failure_scale: 1, recovery: 3-minute, spares: 16, repair_hours: 4}``.

    Rates are Llama 3's (fleet_events/failures.py) × ``failure_scale``; the failure stream has its own
    ``seed`` so every policy meets the same failures.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    failure_scale: float = Field(default=1.0, ge=0, le=10_000)
    recovery: Literal["30-minute", "3-minute"] = "3-minute"
    spares: int = Field(default=0, ge=0, le=100_000)
    detect_s: float = Field(default=30.0, ge=0, le=86_400)
    diagnose_s: float = Field(default=900.0, ge=0, le=30 * 86_400)
    repair_hours: float = Field(default=4.0, ge=0, le=24 * 365)
    rma_days: float = Field(default=14.0, ge=0, le=365)
    preflight_s: float = Field(default=120.0, ge=0, le=86_400)
    seed: int = Field(default=0, ge=0)
    #: Length of the failure stream; default: the workload's horizon, or 30 days without one.
    days: float | None = Field(default=None, gt=0, le=3650)
    #: A driver-upgrade rollout during the run; None: no upgrade.
    upgrade: UpgradeSpec | None = None
    #: Spot nodes reclaimed with a notice; None: no spot capacity.
    spot: SpotSpec | None = None

    def until_s(self, horizon_s: float | None) -> float:
        if self.days is not None:
            return self.days * 86400.0
        return horizon_s if horizon_s else 30 * 86400.0

    def build(self) -> FailureConfig:
        steps = StepDurations(detect_s=self.detect_s, diagnose_s=self.diagnose_s,
                              repair_s=self.repair_hours * 3600.0, rma_s=self.rma_days * 86400.0,
                              preflight_s=self.preflight_s)
        return FailureConfig(scale=self.failure_scale, recovery=RECOVERIES[self.recovery], steps=steps,
                             spares=self.spares, seed=self.seed,
                             spot=self.spot.build() if self.spot is not None else None,
                             upgrade=self.upgrade.build() if self.upgrade is not None else None)
