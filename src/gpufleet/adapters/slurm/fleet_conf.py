"""A gpufleet Fleet from slurm.conf + gres.conf + topology.conf, and those files from a Fleet.

What Slurm cannot hold is stated rather than guessed: the fabric figures (bandwidths,
oversubscription) are not in any Slurm file, so a read fleet gets the ``fabric`` passed in; a
single-node NVLink domain is named after its node (Slurm has no name for it); nodes without a GPU
are left out and listed in ``notes``. Round trip: ``read(write(fleet)) == slurm_view(fleet)``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from gpufleet.adapters.slurm.conf import GresDevice, SlurmConf, SlurmNode, read_slurm_conf, read_text
from gpufleet.adapters.slurm.hostlist import compress, expand
from gpufleet.adapters.slurm.topology_conf import (
    DEFAULT_ZONE,
    Topology,
    block_domains,
    multi_node_domains,
    parse_topology,
    tree_placements,
    write_blocks,
    write_tree,
)
from gpufleet.model.catalog import CATALOG, UnknownGpuModel, canonical_gpu_name
from gpufleet.model.errors import InputError
from gpufleet.model.fleet import Fabric, Fleet, Node, NodeHealth
from gpufleet.model.ids import NodeId

MB_PER_GB = 1024
#: slurm.conf(5) NodeName ``Weight``: "The default value is 1."
DEFAULT_WEIGHT = 1
DEGRADED_FEATURE = "degraded"
DEFAULT_LEAF = "leaf0"
DEFAULT_SPINE = "spine0"


@dataclass(frozen=True, slots=True)
class SlurmFleet:
    fleet: Fleet
    conf: SlurmConf
    topology: Topology
    notes: tuple[str, ...] = ()


def gpu_from_slurm_type(gres_type: str) -> str | None:
    """The catalog model for a Slurm GPU type, or None.

    Tries the type as written, then without a vendor prefix, then its leading ``_``/``-``
    separated words longest first, so AutoDetect names such as ``nvidia_h100_80gb_hbm3`` resolve.
    """
    text = gres_type.strip().lower()
    for prefix in ("nvidia_", "nvidia-", "tesla_", "tesla-"):
        text = text.removeprefix(prefix)
    words = [w for w in re.split(r"[_\-]", text) if w]
    candidates = [gres_type, text] + ["-".join(words[:i]) for i in range(len(words), 0, -1)]
    for candidate in candidates:
        try:
            return canonical_gpu_name(candidate)
        except UnknownGpuModel:
            continue
    return None


def slurm_gpu_type(model: str) -> str:
    """The Slurm GRES type we write for a catalog model: its shortest name, lower-case."""
    m = CATALOG[canonical_gpu_name(model)]
    return min((m.name, *m.aliases), key=lambda s: (len(s), s)).lower()


def _health(node: SlurmNode) -> NodeHealth:
    state = (node.state or "").upper()
    if state.startswith(("DOWN", "FAIL", "FUTURE")) and not state.startswith("FAILING"):
        return NodeHealth.DOWN
    if state.startswith(("DRAIN", "FAILING")):
        return NodeHealth.DRAINING
    if DEGRADED_FEATURE in node.features:
        return NodeHealth.DEGRADED
    return NodeHealth.HEALTHY


def _gpu_of(node: SlurmNode, devices: tuple[GresDevice, ...], default_gpu: str | None,
            source: str) -> tuple[str, int] | None:
    gpus = node.gpus()
    gpu_devices = tuple(d for d in devices if d.name == "gpu")
    declared, files = sum(g.count for g in gpus), sum(d.count for d in gpu_devices)
    if gpus and gpu_devices and declared != files:
        # slurmd registers the devices gres.conf lists; Slurm drains a node that reports fewer
        raise InputError("gres.conf", f"NodeName={node.name}",
                         f"expected {declared} gpu device(s) as slurm.conf's Gres= says, got {files}")
    types = {g.type for g in gpus if g.type} or {d.type for d in gpu_devices if d.type}
    count = sum(g.count for g in gpus) or sum(d.count for d in gpu_devices)
    if count == 0:
        return None
    models = {gpu_from_slurm_type(t) for t in types}
    if not types:
        models = {m for m in (gpu_from_slurm_type(f) for f in node.features) if m}
    if None in models or len(models) > 1 or (not models and default_gpu is None):
        raise InputError(source, f"NodeName={node.name}: Gres",
                         f"expected one GPU type known to the catalog (e.g. gpu:h100:8), "
                         f"got {','.join(str(g) for g in gpus) or 'an untyped gpu'}"
                         + ("" if models else "; or pass a default GPU model"))
    found = models.pop() if models else None
    return found or canonical_gpu_name(default_gpu or ""), count


def fleet_from_conf(conf: SlurmConf, topology: Topology | None = None, *, default_gpu: str | None = None,
                    fabric: Fabric | None = None, name: str | None = None,
                    source: str = "slurm.conf") -> SlurmFleet:
    topology = topology or Topology()
    notes: list[str] = []
    placements, tree_notes = tree_placements(topology)
    notes += tree_notes
    domains = block_domains(topology)
    known = {n.name for n in conf.nodes}
    for where, named in (("SwitchName", placements), ("BlockName", domains)):
        unknown = sorted(set(named) - known)
        if unknown:
            raise InputError("topology.conf", where, f"expected nodes that slurm.conf defines, got "
                             f"{compress(unknown)}")
    nodes: list[Node] = []
    for sn in conf.nodes:
        devices = conf.gres_devices.get(sn.name, ()) + conf.gres_devices.get("*", ())
        gpu = _gpu_of(sn, devices, default_gpu, source)
        if gpu is None:
            notes.append(f"node {sn.name}: no GPU, left out")
            continue
        if topology.switches and sn.name not in placements:
            notes.append(f"node {sn.name}: under no switch in topology.conf")
        place = placements.get(sn.name)
        nodes.append(Node(
            id=NodeId(sn.name), gpu=gpu[0], gpus=gpu[1], cpus=sn.cpus,
            memory_gb=sn.real_memory_mb // MB_PER_GB,
            zone=place.zone if place else DEFAULT_ZONE,
            spine=place.spine if place else DEFAULT_SPINE,
            leaf=place.leaf if place else DEFAULT_LEAF,
            nvlink_domain=domains.get(sn.name, sn.name),
            health=_health(sn),
            weight=DEFAULT_WEIGHT if sn.weight is None else sn.weight,
        ))
    if not nodes:
        raise InputError(source, "NodeName", "expected at least one node with a GPU (Gres=gpu:TYPE:N)")
    fleet = Fleet(tuple(nodes), fabric or Fabric(), name or conf.cluster_name)
    return SlurmFleet(fleet, conf, topology, tuple(notes))


def read_fleet(conf_path: str | Path, gres_path: str | Path | None = None,
               topology_paths: Sequence[str | Path] = (), *,
               default_gpu: str | None = None, fabric: Fabric | None = None) -> SlurmFleet:
    """Read the files from disk; gres.conf next to slurm.conf is used when none is given."""
    conf = read_slurm_conf(conf_path, gres_path)
    topology = Topology()
    for path in topology_paths:
        topology = topology.merged(parse_topology(read_text(path), str(path)))
    return fleet_from_conf(conf, topology, default_gpu=default_gpu, fabric=fabric, source=str(conf_path))


def slurm_view(fleet: Fleet) -> Fleet:
    """``fleet`` as it reads back from Slurm files: single-node NVLink domains named after the node."""
    sizes: dict[str, int] = {}
    for n in fleet.nodes:
        sizes[n.nvlink_domain] = sizes.get(n.nvlink_domain, 0) + 1
    keep_names = any(size > 1 for size in sizes.values())
    nodes = tuple(n if keep_names else replace(n, nvlink_domain=n.id) for n in fleet.nodes)
    return replace(fleet, nodes=nodes)


def _node_attrs(node: Node) -> str:
    parts = [f"CPUs={node.cpus}", f"RealMemory={node.memory_gb * MB_PER_GB}",
             f"Gres=gpu:{slurm_gpu_type(node.gpu)}:{node.gpus}"]
    features = [slurm_gpu_type(node.gpu)]
    if node.health is NodeHealth.DEGRADED:
        features.append(DEGRADED_FEATURE)
    parts.append(f"Feature={','.join(features)}")
    if node.weight != DEFAULT_WEIGHT:
        parts.append(f"Weight={node.weight}")
    if node.health is NodeHealth.DOWN:
        parts.append("State=DOWN")
    elif node.health is NodeHealth.DRAINING:
        parts.append("State=DRAIN")
    return " ".join(parts)


def _runs(items: list[tuple[str, str]]) -> list[tuple[list[str], str]]:
    """Consecutive nodes with equal attributes, split where a hostlist would reorder them."""
    runs: list[tuple[list[str], str]] = []
    for name, attrs in items:
        if runs and runs[-1][1] == attrs:
            runs[-1][0].append(name)
        else:
            runs.append(([name], attrs))
    out: list[tuple[list[str], str]] = []
    for names, attrs in runs:
        if expand(compress(names)) == names:
            out.append((names, attrs))
        else:
            out.extend(([n], attrs) for n in names)
    return out


#: What a name in slurm.conf / topology.conf may be: no blank, '=', '#', ',' or brackets, which
#: Slurm's parser would split on or read as a comment or a hostlist.
_SLURM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")


def check_exportable(fleet: Fleet, **names: str) -> None:
    """One error for the first name Slurm could not read back, or a node name given twice."""
    def check(what: str, value: str) -> None:
        if not _SLURM_NAME.fullmatch(value):
            raise InputError("fleet", what, f"expected a Slurm name (letters, digits, '.', '_', ':', '-'), "
                             f"got {value!r}")

    check("name", fleet.name)
    for key, value in names.items():
        check(key, value)
    seen: set[str] = set()
    for n in fleet.nodes:
        check(f"node {n.id!r}", str(n.id))
        for attr in ("leaf", "spine", "zone", "nvlink_domain"):
            check(f"node {n.id}: {attr}", str(getattr(n, attr)))
        if n.id in seen:
            raise InputError("fleet", f"node {n.id}", "expected unique node names, got this one twice "
                             "(slurm.conf would hold two conflicting NodeName= lines)")
        seen.add(n.id)


def write_slurm_conf(fleet: Fleet, *, controller: str = "slurmctld", partition: str = "gpu",
                     topology_plugin: str = "topology/tree") -> str:
    """A minimal slurm.conf for the fleet: cluster, scheduling plugins, nodes and one partition."""
    check_exportable(fleet, controller=controller, partition=partition)
    lines = [
        f"# generated by gpufleet from fleet {fleet.name!r}",
        f"ClusterName={fleet.name}",
        f"SlurmctldHost={controller}",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        "GresTypes=gpu",
        f"TopologyPlugin={topology_plugin}",
        "SchedulerType=sched/backfill",
        "PriorityType=priority/multifactor",
    ]
    items = [(str(n.id), _node_attrs(n)) for n in fleet.nodes]
    lines += [f"NodeName={compress(names)} {attrs}" for names, attrs in _runs(items)]
    lines.append(f"PartitionName={partition} Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def write_gres_conf(fleet: Fleet, *, device_prefix: str = "/dev/nvidia") -> str:
    lines = ["# generated by gpufleet", "AutoDetect=off"]
    items = [(str(n.id), f"{slurm_gpu_type(n.gpu)}:{n.gpus}") for n in fleet.nodes]
    for names, key in _runs(items):
        gpu_type, count = key.split(":")
        files = f"{device_prefix}[0-{int(count) - 1}]" if int(count) > 1 else f"{device_prefix}0"
        lines.append(f"NodeName={compress(names)} Name=gpu Type={gpu_type} File={files}")
    return "\n".join(lines) + "\n"


def write_fleet(fleet: Fleet, out_dir: str | Path, **conf_options: str) -> list[Path]:
    """slurm.conf, gres.conf, topology.conf and (for multi-node NVLink domains) topology-block.conf."""
    check_exportable(fleet, **conf_options)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "slurm.conf": write_slurm_conf(fleet, **conf_options),
        "gres.conf": write_gres_conf(fleet),
        "topology.conf": write_tree(fleet),
    }
    if multi_node_domains(fleet):
        files["topology-block.conf"] = write_blocks(fleet)
    written = []
    for filename, text in files.items():
        (out / filename).write_text(text)
        written.append(out / filename)
    return written
