"""Policy profiles by name: what `--policy NAME` selects."""

from __future__ import annotations

from collections.abc import Callable

from gpufleet.engine.profile import Profile
from gpufleet.policies.gang import GangBestFit
from gpufleet.policies.per_pod import PerPodLeastAllocated

PROFILES: dict[str, Callable[[], Profile]] = {
    "gang-bestfit": lambda: Profile("gang-bestfit", placer=GangBestFit()),
    "per-pod": lambda: Profile("per-pod", placer=PerPodLeastAllocated(), gang=False),
}


class UnknownPolicy(ValueError):
    pass


def profile(name: str) -> Profile:
    try:
        return PROFILES[name]()
    except KeyError:
        raise UnknownPolicy(f"unknown policy {name!r}; expected one of {', '.join(PROFILES)}") from None
