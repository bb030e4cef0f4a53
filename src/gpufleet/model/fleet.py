"""Nodes and the topology tree they sit in: zone > spine > leaf > node > NVLink domain > GPU.

An HGX/DGX node is one 8-GPU NVLink domain. A GB200 NVL72 rack is one 72-GPU NVLink domain that
spans 18 nodes (compute trays) of 4 GPUs: ``NodeGroup(nvlink_domain_nodes=18)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from gpufleet.model.catalog import GpuModel, gpu_model
from gpufleet.model.ids import NodeId


class NodeHealth(StrEnum):
    """The coarse health label of a node (fleet config, adapters, the engine's schedulable column).

    It is a view of model/health.py's state machine, not a second one: ``health.fleet_label(state)``
    gives the label of each machine state and ``health.machine_state(label)`` where a labelled node
    enters the machine (the table is in model/health.py's docstring). ``degraded`` is healthy with a
    condition to watch: schedulable."""

    HEALTHY = "healthy"
    DEGRADED = "degraded"
    DRAINING = "draining"
    DOWN = "down"

    @property
    def schedulable(self) -> bool:
        return self in (NodeHealth.HEALTHY, NodeHealth.DEGRADED)


@dataclass(frozen=True, slots=True)
class Node:
    id: NodeId
    gpu: str
    gpus: int
    cpus: int
    memory_gb: int
    zone: str
    spine: str
    leaf: str
    nvlink_domain: str
    health: NodeHealth = NodeHealth.HEALTHY
    #: Scheduling weight (Slurm's ``NodeName=… Weight=``): of nodes that can all hold a job, the
    #: lower weights are used first. Only the Slurm-like node choice reads it; equal (1, Slurm's
    #: default) unless a fleet says otherwise.
    weight: int = 1

    @property
    def model(self) -> GpuModel:
        return gpu_model(self.gpu)


@dataclass(frozen=True, slots=True)
class Fabric:
    """Scale-out network figures used by the bandwidth model.

    ``nic_gbps`` is per GPU rail (one NIC per GPU, NDR 400 Gb/s by default);
    ``leaf_oversubscription`` is downlink:uplink bandwidth at a leaf switch (1.0 = non-blocking).
    """

    nic_gbps: float = 400.0
    leaf_oversubscription: float = 1.0
    spine_oversubscription: float = 1.0


@dataclass(frozen=True, slots=True)
class Fleet:
    nodes: tuple[Node, ...]
    fabric: Fabric = field(default_factory=Fabric)
    name: str = "fleet"

    @property
    def total_gpus(self) -> int:
        return sum(n.gpus for n in self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """The compact fleet form: ``{nodes: 64, gpu: H100-80GB, gpus_per_node: 8, leaf_size: 16}``."""

    nodes: int
    gpu: str
    gpus_per_node: int = 8
    cpus: int = 224
    memory_gb: int = 2048
    leaf_size: int = 32
    leaves_per_spine: int = 8
    nvlink_domain_nodes: int = 1
    zone: str = "z0"
    prefix: str | None = None


def build_fleet(groups: list[NodeGroup] | tuple[NodeGroup, ...], fabric: Fabric | None = None,
                name: str = "fleet") -> Fleet:
    """Expand node groups into nodes with names, leaves, spines and NVLink domains.

    Leaves and spines are numbered across the whole fleet so that two groups never share a leaf;
    a group's NVLink domains are consecutive runs of ``nvlink_domain_nodes`` nodes.

    An NVLink domain never straddles two leaves (a rack's trays sit under the rack's switches, and
    placement treats a domain as inside one leaf): the leaf size is rounded down to a whole number
    of domains, and up to one domain when it is smaller (``leaf_size: 32`` with NVL72's 18-node
    domains gives leaves of 18 nodes).
    """
    nodes: list[Node] = []
    leaf_base = 0
    spine_base = 0
    for gi, g in enumerate(groups):
        prefix = g.prefix or f"{gpu_model(g.gpu).name.split('-')[0].lower()}-g{gi}"
        dn = max(1, g.nvlink_domain_nodes)
        leaf_size = max(1, g.leaf_size // dn) * dn
        for i in range(g.nodes):
            leaf = leaf_base + i // leaf_size
            spine = spine_base + (i // leaf_size) // g.leaves_per_spine
            domain = i // g.nvlink_domain_nodes
            nodes.append(
                Node(
                    id=NodeId(f"{prefix}-n{i:04d}"),
                    gpu=gpu_model(g.gpu).name,
                    gpus=g.gpus_per_node,
                    cpus=g.cpus,
                    memory_gb=g.memory_gb,
                    zone=g.zone,
                    spine=f"spine{spine}",
                    leaf=f"leaf{leaf}",
                    nvlink_domain=f"{prefix}-nvl{domain}",
                )
            )
        n_leaves = -(-g.nodes // leaf_size)
        leaf_base += n_leaves
        spine_base += -(-n_leaves // g.leaves_per_spine)
    return Fleet(tuple(nodes), fabric or Fabric(), name)
