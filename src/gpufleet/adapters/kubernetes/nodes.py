"""Node objects → our ``Node`` (model/fleet.py), with the facts the report needs beside it.

Topology: zone from ``topology.kubernetes.io/zone`` (or the deprecated
``failure-domain.beta.kubernetes.io/zone``, else the region); block (our spine) and rack (our
leaf) from site-specific labels named in ``TopologyLabels``; NVLink domain from
``nvidia.com/gpu.clique`` (MNNVL) or else the node itself (an HGX node is one NVLink domain).

Capacity: our node gets the **allocatable** GPUs, CPUs and memory (what the scheduler may hand
out); the report keeps the physical and registered counts beside it. A node whose first
readiness layer fails (not Ready, cordoned, no driver, no plugin) is not schedulable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpufleet.adapters.kubernetes.gpu_labels import GpuFacts, gpu_facts
from gpufleet.adapters.kubernetes.quantity import QuantityError, cpu_cores, memory_gb
from gpufleet.adapters.kubernetes.readiness import Layer, first_failure, readiness
from gpufleet.model.errors import InputError
from gpufleet.model.fleet import Node, NodeHealth
from gpufleet.model.ids import NodeId

ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone",
               "topology.kubernetes.io/region")


@dataclass(frozen=True, slots=True)
class TopologyLabels:
    """Which labels name a node's block (spine), rack (leaf) and NVLink domain; first found wins."""

    block: tuple[str, ...] = ("topology.kubernetes.io/block", "cloud.google.com/gce-topology-block")
    rack: tuple[str, ...] = ("topology.kubernetes.io/rack", "cloud.google.com/gce-topology-subblock")
    nvlink: tuple[str, ...] = ("nvidia.com/gpu.clique",)


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class KubeNode:
    name: str
    node: Node
    gpu: GpuFacts
    layers: tuple[Layer, ...]
    taints: tuple[Taint, ...]
    labels: dict[str, str] = field(hash=False)

    @property
    def blocker(self) -> Layer | None:
        return first_failure(self.layers)

    @property
    def has_gpus(self) -> bool:
        return self.gpu.is_gpu_node or len(self.layers) > 1


def _first(labels: dict[str, str], keys: tuple[str, ...]) -> str:
    return next((labels[k] for k in keys if labels.get(k)), "")


def read_node(obj: dict, topo: TopologyLabels, source: str = "snapshot", dra_gpus: int = 0) -> KubeNode:
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(source, "Node.metadata.name", "every Node needs a name")
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    capacity, allocatable = status.get("capacity") or {}, status.get("allocatable") or {}
    where = f"Node {name}"
    try:
        cpus = cpu_cores(allocatable.get("cpu", capacity.get("cpu", 0)))
        mem = memory_gb(allocatable.get("memory", capacity.get("memory", 0)))
    except QuantityError as e:
        raise InputError(source, f"{where}.status.allocatable", str(e)) from None
    try:
        gpu = gpu_facts(labels, capacity, allocatable)
    except QuantityError as e:
        raise InputError(source, f"{where}.status.capacity/allocatable", str(e)) from None
    unschedulable = bool(spec.get("unschedulable"))
    layers = readiness(labels, status.get("conditions") or [], unschedulable, gpu, dra_gpus)
    taints = tuple(Taint(str(t.get("key", "")), str(t.get("value", "") or ""), str(t.get("effect", "")))
                   for t in spec.get("taints") or [] if isinstance(t, dict))
    blocker = first_failure(layers)
    if layers[0].ok is False:
        health = NodeHealth.DRAINING if unschedulable else NodeHealth.DOWN
    else:
        health = NodeHealth.HEALTHY   # a GPU layer down takes the GPUs away (below), not the node
    gpu_down = blocker is not None and blocker.name in ("driver", "container-toolkit", "device-plugin")
    zone = _first(labels, ZONE_LABELS) or "zone-unlabelled"
    block = _first(labels, topo.block) or zone
    rack = _first(labels, topo.rack) or block
    domain = _first(labels, topo.nvlink) or name
    gpus = 0 if gpu_down else gpu.allocatable if gpu.allocatable or not dra_gpus else dra_gpus
    model = gpu.model or ("dra-gpu" if dra_gpus else "none")
    node = Node(id=NodeId(name), gpu=model, gpus=gpus, cpus=int(cpus),
                memory_gb=int(mem), zone=zone, spine=f"{zone}/{block}", leaf=f"{zone}/{block}/{rack}",
                nvlink_domain=domain, health=health)
    return KubeNode(name, node, gpu, layers, taints, labels)
