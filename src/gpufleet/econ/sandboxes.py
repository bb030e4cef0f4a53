"""Sandbox tiers for untrusted sessions: which boundary each session class gets, and the hosts.

Hosts for N sessions of one class in one tier (reference §4.3):

    hosts = max(⌈N·(m + o) / (R·f)⌉, ⌈N·v / (C·f)⌉, ⌈N·g / G⌉)

m = session memory, o = the tier's overhead per sandbox, v = vCPUs, g = GPU units (a whole GPU,
one MIG slice = 1/7 of a GPU when the host has 7 slices per GPU, or one time-slice replica =
1/r of a GPU when the device plugin advertises r replicas per GPU), R/C/G = host RAM, vCPUs and
GPU units, f = the usable fraction after the host's own reserve. A time-sliced session is not a
whole GPU: with r = 4, 2,000 sessions need ⌈2,000 / (8 × 4)⌉ = 63 hosts, not 250.

**Tiered design.** Each class goes to the tier that costs least per session among those that
isolate it enough (shared kernel 1 < user-space kernel 2 < VM 3) and offer its GPU mode (gVisor
has no MIG; MIG inside a strong boundary needs MIG-backed vGPU in a full VM). Each (tier, host
type) is one node pool, so the pools are packed separately. The alternatives priced next to it:
every class in full VMs, and every class in the strongest boundary that offers its GPU mode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpufleet.econ.inputs import HostSpec, SandboxInputs, SessionClass, TierSpec

MIB_PER_GIB = 1024.0


def gpu_units(cls: SessionClass, host: HostSpec, slices_per_gpu: int,
              timeslice_replicas: int = 1) -> tuple[float, float]:
    """(units a session takes, units a host has): MIG counts slices, time-slicing counts the
    device plugin's replicas per GPU, whole GPUs (and a vGPU profile of one) count GPUs."""
    if cls.gpu == "mig":
        return 1.0, float(host.gpus * slices_per_gpu)
    if cls.gpu == "timeslice":
        return 1.0, float(host.gpus * timeslice_replicas)
    if cls.gpu in ("whole", "vgpu"):
        return 1.0, float(host.gpus)
    return 0.0, 0.0


def hosts_needed(n: int, cls: SessionClass, tier: TierSpec, host: HostSpec, f: float,
                 slices_per_gpu: int, timeslice_replicas: int = 1) -> tuple[int, str]:
    """The host count and which resource binds it (ram, cpu, gpu)."""
    if n <= 0:
        return 0, "none"
    over_mib = tier.overhead_mib + (tier.gpu_overhead_mib if cls.gpu != "none" else 0.0)
    ram = n * (cls.memory_gib + over_mib / MIB_PER_GIB) / (host.ram_gib * f)
    cpu = n * cls.vcpus / (host.vcpus * f)
    g, units = gpu_units(cls, host, slices_per_gpu, timeslice_replicas)
    gpu = n * g / units if g else 0.0
    need = {"ram": ram, "cpu": cpu, "gpu": gpu}
    bind = max(need, key=lambda k: need[k])
    return math.ceil(need[bind] - 1e-9), bind


def allowed(cls: SessionClass, tier: TierSpec) -> bool:
    return tier.isolation >= cls.isolation and (cls.gpu == "none" or cls.gpu in tier.gpu)


@dataclass(frozen=True)
class Placement:
    cls: str
    sessions: int
    tier: str
    host_type: str
    hosts: int
    binds: str
    cost_per_hr: float
    start_ms: float | None
    gpu: str = "none"


def per_session_cost(cls: SessionClass, tier: TierSpec, host: HostSpec, cfg: SandboxInputs) -> float:
    """Cost of one session's share of a host (fractional hosts: for choosing, not for counting)."""
    over = tier.overhead_mib + (tier.gpu_overhead_mib if cls.gpu != "none" else 0.0)
    f = cfg.usable_fraction
    g, units = gpu_units(cls, host, cfg.mig_slices_per_gpu, cfg.timeslice_replicas_per_gpu)
    share = max((cls.memory_gib + over / MIB_PER_GIB) / (host.ram_gib * f), cls.vcpus / (host.vcpus * f),
                g / units if g else 0.0)
    return share * host.price_per_hr


def place(cfg: SandboxInputs, choose: str = "cheapest", exclude: frozenset[str] = frozenset()
          ) -> list[Placement]:
    """One placement per class. ``choose``: cheapest allowed tier, ``strongest`` allowed tier
    (highest isolation, then cheapest), or a tier name for every class that tier can take (the
    rest fall back to the cheapest allowed). Tiers in ``exclude`` are not offered; a MIG class
    that then fits no tier takes a whole GPU instead (what losing MIG-backed vGPU costs)."""
    counts = session_counts(cfg)
    out = []
    for cls, n in zip(cfg.mix, counts, strict=True):
        host_type = "gpu_host" if cls.gpu != "none" else "cpu_host"
        host = cfg.gpu_host if cls.gpu != "none" else cfg.cpu_host
        tiers = {name: t for name, t in cfg.tiers.items() if name not in exclude}
        ok = {name: t for name, t in tiers.items() if allowed(cls, t)}
        if not ok and cls.gpu == "mig":
            cls = cls.model_copy(update={"gpu": "whole"})
            ok = {name: t for name, t in tiers.items() if allowed(cls, t)}
        if not ok:
            raise ValueError(f"sandboxes.mix: {cls.name!r} (isolation {cls.isolation}, gpu {cls.gpu}) "
                             "fits no tier")
        cost = {name: per_session_cost(cls, t, host, cfg) for name, t in ok.items()}
        if choose in ok:
            name = choose
        elif choose == "strongest":
            name = min(ok, key=lambda k: (-ok[k].isolation, cost[k], k))
        else:
            name = min(ok, key=lambda k: (cost[k], -ok[k].isolation, k))
        hosts, binds = hosts_needed(n, cls, ok[name], host, cfg.usable_fraction, cfg.mig_slices_per_gpu,
                                    cfg.timeslice_replicas_per_gpu)
        out.append(Placement(cls.name, n, name, host_type, hosts, binds, hosts * host.price_per_hr,
                             ok[name].start_ms, cls.gpu))
    return out


def session_counts(cfg: SandboxInputs) -> list[int]:
    """Sessions per class: shares of the total, rounded so they add up (largest remainder)."""
    total_share = sum(c.share for c in cfg.mix)
    raw = [cfg.sessions * c.share / total_share for c in cfg.mix]
    counts = [math.floor(r) for r in raw]
    for i in sorted(range(len(raw)), key=lambda i: counts[i] - raw[i])[: cfg.sessions - sum(counts)]:
        counts[i] += 1
    return counts


def plan_sandboxes(cfg: SandboxInputs) -> dict:
    designs = {"tiered (cheapest sufficient boundary)": place(cfg, "cheapest"),
               "strongest boundary per class": place(cfg, "strongest"),
               "full VMs for everything": place(cfg, "full-vm"),
               "no full VMs (MIG sessions take whole GPUs)": place(cfg, "cheapest", frozenset({"full-vm"}))}
    tiers = [{"tier": name, "isolation": t.isolation, "overhead_mib": t.overhead_mib, "start_ms": t.start_ms,
              "gpu": list(t.gpu), "gpu_overhead_mib": t.gpu_overhead_mib} for name, t in cfg.tiers.items()]
    return {
        "sessions": cfg.sessions,
        "tiers": tiers,
        "designs": {name: {"placements": [vars(p) for p in ps],
                           "hosts": {ht: sum(p.hosts for p in ps if p.host_type == ht)
                                     for ht in ("cpu_host", "gpu_host")},
                           "cost_per_hr": sum(p.cost_per_hr for p in ps)}
                    for name, ps in designs.items()},
    }
