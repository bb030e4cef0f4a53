"""The running service: one source, the live loop over it, the store, auth and metrics.

Routes and the dashboard call this object; it is the only one that knows how the parts connect.
"""

from __future__ import annotations

from gpufleet.live.loop import LiveLoop
from gpufleet.live.snapshot import LiveSnapshot
from gpufleet.live.source import Source
from gpufleet.live.virtual import VirtualSource
from gpufleet.model.errors import InputError
from gpufleet.policies.registry import UnknownPolicy, profile
from gpufleet.service.config import ServiceConfig

SOURCES = ("virtual",)


def make_source(config: ServiceConfig) -> Source:
    if config.source != "virtual":
        raise InputError("--source", "", f"unknown source {config.source!r}; expected one of "
                         f"{', '.join(SOURCES)}")
    try:
        prof = profile(config.profile_name, config.fleet.fabric)
    except UnknownPolicy as e:
        raise InputError("--policy", "", str(e)) from None
    return VirtualSource(config.fleet, prof, config.tenancy)


class Service:
    def __init__(self, config: ServiceConfig) -> None:
        self.config = config
        self.source = make_source(config)
        self.loop = LiveLoop(self.source, speed=config.speed, tick_s=config.tick_s, seed=config.seed)

    def snapshot(self) -> LiveSnapshot:
        """The live state the loop published last (immutable; any thread)."""
        return self.loop.snapshot()

    def start(self) -> None:
        if self.config.run_loop:
            self.loop.start()

    def stop(self) -> None:
        self.loop.stop()
