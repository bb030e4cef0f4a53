"""The cluster's DRA state for the analysis: devices per node, what is allocated, and per pod
and node whether its claims can be allocated (ever, and now).

A pod's claims resolve to ResourceClaims in the snapshot (by name, or the one generated from a
template, from ``status.resourceClaimStatuses``) or, for a pod not yet scheduled, to its
ResourceClaimTemplates. Devices held by allocated claims are taken (``used``), and so are the
counters they consume. For the engine, a claim's whole-GPU requests (class ``gpu.nvidia.com``,
``ExactCount``) count as GPUs, and a node's GPU devices as its GPUs when the device plugin
advertises none (a DRA-only node).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from gpufleet.adapters.kubernetes.allocator import allocate, counters_after
from gpufleet.adapters.kubernetes.dra import Claim, Device, read_claim, read_classes, read_slices
from gpufleet.adapters.kubernetes.pods import KubePod
from gpufleet.adapters.kubernetes.snapshot import Snapshot

GPU_CLASS = "gpu.nvidia.com"
GPU_TYPE = "gpu.nvidia.com/type"


@dataclass
class DraState:
    devices: dict[str, list[Device]] = field(default_factory=dict)      # node -> devices
    classes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    counters: dict = field(default_factory=dict)                        # remaining after `used`
    all_counters: dict = field(default_factory=dict)                    # as published
    used: set[tuple[str, str, str]] = field(default_factory=set)
    claims: dict[str, Claim] = field(default_factory=dict)
    templates: dict[str, Claim] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return bool(self.devices or self.claims or self.templates)

    def gpu_devices(self, node: str) -> int:
        return sum(1 for d in self.devices.get(node, ()) if d.attributes.get(GPU_TYPE) == "gpu")

    def pod_claims(self, pod: KubePod) -> tuple[list[Claim], list[str]]:
        """The pod's claims, and the names that resolve to nothing in the snapshot."""
        found, missing = [], []
        for kind, name in pod.claims:
            table = self.claims if kind == "claim" else self.templates
            c = table.get(f"{pod.namespace}/{name}")
            (found.append(c) if c is not None else missing.append(f"{kind} {name}"))
        return found, missing

    def gpus_of(self, pod: KubePod) -> int:
        claims, _ = self.pod_claims(pod)
        return sum(r.count for c in claims for r in c.requests
                   if r.device_class == GPU_CLASS and r.mode == "ExactCount")

    def reason(self, pod: KubePod, node: str, now: bool) -> str | None:
        """Why the pod's claims cannot be allocated on ``node`` (None: they can). ``now`` counts
        devices already allocated; otherwise the question is "on this node when it is empty"."""
        claims, missing = self.pod_claims(pod)
        if missing:
            return f"DRA claim not found: {missing[0]}"
        devices = self.devices.get(node, [])
        used = set(self.used) if now else set()
        counters = self.counters if now else self.all_counters
        for c in claims:
            if c.allocated:
                if c.node and c.node != node:
                    return f"DRA claim {c.name} is allocated on node {c.node}"
                continue
            out = allocate(c, devices, self.classes, used, counters)
            if not out.ok:
                return f"DRA claim {c.name}: {out.reason}"
            for ds in out.devices.values():
                used.update(d.key for d in ds)
            counters = counters_after(devices, self.all_counters, used)
        return None


def read_dra(snap: Snapshot) -> DraState:
    state = DraState()
    devices, counters, notes = read_slices(snap.of("ResourceSlice"))
    by_node: dict[str, list[Device]] = defaultdict(list)
    for d in devices:
        by_node[d.node].append(d)
    state.devices = dict(by_node)
    state.classes = read_classes(snap.of("DeviceClass"))
    state.claims = {c.key: c for c in (read_claim(o) for o in snap.of("ResourceClaim"))}
    state.templates = {c.key: c for c in (read_claim(o) for o in snap.of("ResourceClaimTemplate"))}
    state.used = {k for c in state.claims.values() for k in c.allocated}
    state.all_counters = counters
    state.counters = counters_after(devices, counters, state.used)
    state.notes = notes
    return state
