"""MIG (Multi-Instance GPU): the real profiles, their placements, and the slice arithmetic.

A MIG-capable GPU of the A100/H100/H200 family has 7 compute slices and 8 memory slices. A GPU
instance of a profile occupies ``size`` consecutive memory slices starting at one of the profile's
valid start positions (``nvidia-smi mig -lgipp``'s ``{starts}:size``). Instances may be mixed on
one GPU when their memory-slice ranges do not overlap (NVML refuses overlapping creation) and the
compute slices in use stay ≤ 7. Source: /work/shared/reference/ops-reference.md §4.1-4.2 (MIG user
guide, real H100 ``-lgip/-lgipp`` output, GPU Operator configmap). The four families share one
geometry (same slice counts and starts); only names and memory differ. H200 placements are the
reference's labelled GUESS (same GH100 layout as H100, supported by identical instance counts).

Representation: the occupied memory slices of one GPU are an 8-bit mask (bit i = slice i). For
every (GPU model, profile) we precompute ``capacity[mask]``: how many more instances of the profile
fit on a GPU whose occupied slices are ``mask`` (256 entries). The engine indexes that table with a
whole (nodes × GPUs) mask array at once, so counting MIG room is vectorised.

The compute limit is implied by the placements: every profile but 3g and 7g uses as many compute as
memory slices, and no 1- or 2-slice profile may start at slice 7, so any non-overlapping set of
placements uses ≤ 7 compute slices (``tests/unit/model/test_mig.py`` checks it by enumeration).
``+me`` (media-extension) profiles are not modelled: they are one per GPU and would need the
profile of each instance, not just the mask.

Reconfiguration: enabling MIG mode or changing the instance layout needs the GPU idle (no
processes), and the GPU Operator's MIG manager applies it by relabelling the node, evicting GPU
clients, running mig-parted and restarting the device plugin. The Operator doc only says "after
several minutes" for the whole stack; ``MIG_RECONFIGURE_S`` is an ASSUMPTION of 2 minutes per
reconfiguration of one idle GPU, charged to the pod that needed it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from gpufleet.model.catalog import CATALOG

COMPUTE_SLICES = 7
MEMORY_SLICES = 8
FULL_MASK = (1 << MEMORY_SLICES) - 1
#: ASSUMPTION (see module docstring): seconds to reconfigure MIG on one idle GPU.
MIG_RECONFIGURE_S = 120.0


@dataclass(frozen=True, slots=True)
class MigProfile:
    """One GPU-instance profile: ``name`` as the device plugin's ``nvidia.com/mig-<name>``."""

    name: str
    compute: int            # compute slices out of 7
    memory_slices: int      # memory slices out of 8 (the placement size)
    memory_gb: float
    starts: tuple[int, ...]  # valid first memory slice of a placement

    def bits(self, start: int) -> int:
        """The memory-slice mask of an instance placed at ``start``."""
        return ((1 << self.memory_slices) - 1) << start


def _family(mem: tuple[str, str, str, str, str, str], gb: tuple[float, ...]) -> dict[str, MigProfile]:
    """One family's profiles; names in the order 1g×1slice, 1g×2, 2g, 3g, 4g, 7g."""
    geometry = ((1, 1, (0, 1, 2, 3, 4, 5, 6)), (1, 2, (0, 2, 4, 6)), (2, 2, (0, 2, 4)),
                (3, 4, (0, 4)), (4, 4, (0,)), (7, 8, (0,)))
    return {name: MigProfile(name, c, s, g, starts)
            for name, g, (c, s, starts) in zip(mem, gb, geometry, strict=True)}


#: GPU model (catalog name) -> profile name -> profile. Memory is the profile's nominal GB.
PROFILES: dict[str, dict[str, MigProfile]] = {
    "A100-40GB": _family(("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
                         (5, 10, 10, 20, 20, 40)),
    "A100-80GB": _family(("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
                         (10, 20, 20, 40, 40, 80)),
    "H100-80GB": _family(("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
                         (10, 20, 20, 40, 40, 80)),
    "H200-141GB": _family(("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
                          (18, 35, 35, 71, 71, 141)),
}

RESOURCE_PREFIX = "nvidia.com/mig-"


def profile_name(resource: str) -> str:
    """``nvidia.com/mig-3g.40gb`` or ``mig-3g.40gb`` or ``3g.40gb`` -> ``3g.40gb``."""
    for prefix in (RESOURCE_PREFIX, "mig-"):
        if resource.startswith(prefix):
            return resource[len(prefix):]
    return resource


def profile_for(model: str, name: str) -> MigProfile | None:
    """The profile called ``name`` on GPU model ``model``, or None when that model has none."""
    return PROFILES.get(model, {}).get(profile_name(name))


def known_profile(name: str) -> bool:
    return any(profile_name(name) in fam for fam in PROFILES.values())


@cache
def capacity_table(model: str, name: str) -> tuple[int, ...]:
    """``t[mask]`` = how many more instances of the profile fit beside occupied slices ``mask``.

    Equal-size aligned placements: taking the lowest free start first is optimal (a placement
    never straddles another start of the same profile), so a greedy scan counts the maximum.
    All zeros when the model has no such profile.
    """
    p = profile_for(model, name)
    if p is None:
        return (0,) * (FULL_MASK + 1)
    out = []
    for mask in range(FULL_MASK + 1):
        n, m = 0, mask
        for s in p.starts:
            if not m & p.bits(s):
                m |= p.bits(s)
                n += 1
        out.append(n)
    return tuple(out)


def _room_score(model: str, mask: int) -> int:
    """How much the free slices of ``mask`` can still host: Σ over profiles of (instances that
    still fit × compute slices). Placement picks the start that keeps this largest."""
    return sum(capacity_table(model, name)[mask] * p.compute for name, p in PROFILES[model].items())


def best_start(model: str, name: str, mask: int) -> int | None:
    """Where to place one instance of ``name`` on a GPU with occupied slices ``mask``, or None.

    Among the free valid starts, the one leaving the most room for other profiles
    (``_room_score``), ties to the lowest start: a 1g beside a 3g at 0 goes to slice 6, keeping
    4-5 whole for a 2g.
    """
    p = profile_for(model, name)
    if p is None:
        return None
    free = [s for s in p.starts if not mask & p.bits(s)]
    if not free:
        return None
    return max(free, key=lambda s: (_room_score(model, mask | p.bits(s)), -s))


def fits(model: str, in_use: Sequence[tuple[str, int]], new_profile: str) -> int | None:
    """The start at which ``new_profile`` would be placed beside instances ``in_use`` ((profile,
    start) pairs) on a ``model`` GPU, or None when it does not fit."""
    mask = 0
    for name, start in in_use:
        p = profile_for(model, name)
        if p is None:
            raise ValueError(f"{model} has no MIG profile {name!r}")
        mask |= p.bits(start)
    return best_start(model, new_profile, mask)


@dataclass(frozen=True, slots=True)
class MixWaste:
    """What a mix of instances leaves unused on one GPU."""

    compute_slices: int
    memory_slices: int
    memory_gb: float


def place_mix(model: str, profiles: Sequence[str]) -> tuple[int, ...] | None:
    """Starts for every profile of the mix on one empty GPU (in the given order), or None.

    Exact: backtracking over the valid starts, largest instances first (at most 7 instances of
    ≤ 7 starts: tiny).
    """
    maybe = [profile_for(model, n) for n in profiles]
    specs = [p for p in maybe if p is not None]
    if len(specs) != len(maybe):
        return None
    order = sorted(range(len(specs)), key=lambda i: -specs[i].memory_slices)
    starts = [0] * len(specs)

    def go(k: int, mask: int) -> bool:
        if k == len(order):
            return True
        p = specs[order[k]]
        for s in p.starts:
            if not mask & p.bits(s):
                starts[order[k]] = s
                if go(k + 1, mask | p.bits(s)):
                    return True
        return False

    if sum(p.compute for p in specs) > COMPUTE_SLICES:
        return None
    return tuple(starts) if go(0, 0) else None


def mix_waste(model: str, profiles: Sequence[str]) -> MixWaste:
    """Compute slices, memory slices and GB a fitting mix leaves unused on one GPU."""
    if place_mix(model, profiles) is None:
        raise ValueError(f"{'+'.join(profiles)} does not fit one {model}")
    specs = [PROFILES[model][profile_name(n)] for n in profiles]
    return MixWaste(COMPUTE_SLICES - sum(p.compute for p in specs),
                    MEMORY_SLICES - sum(p.memory_slices for p in specs),
                    CATALOG[model].memory_gb - sum(p.memory_gb for p in specs))


def maximal_mixes(model: str = "H100-80GB") -> list[tuple[tuple[str, ...], MixWaste]]:
    """Every mix of profiles that fits one GPU and to which no further instance can be added,
    with its waste, sorted by (compute waste, memory-slice waste, names).

    This is "which mixes of profiles fit an H100, and what each wastes": e.g. 4g+3g wastes
    nothing, 3g+3g wastes one compute slice, 7×1g.10gb wastes one memory slice (slice 7 can host
    no 1-slice instance).
    """
    names = sorted(PROFILES[model], key=lambda n: (-PROFILES[model][n].memory_slices, n))
    found: set[tuple[str, ...]] = set()
    for size in range(1, COMPUTE_SLICES + 1):
        for combo in itertools.combinations_with_replacement(names, size):
            if place_mix(model, combo) is None:
                continue
            if any(place_mix(model, (*combo, extra)) is not None for extra in names):
                continue
            found.add(combo)
    return sorted(((c, mix_waste(model, c)) for c in found),
                  key=lambda x: (x[1].compute_slices, x[1].memory_slices, x[0]))
