"""topology.conf in both of Slurm's forms, and where each node sits in our topology tree.

Tree form (topology/tree): ``SwitchName=leaf01 Nodes=gpu[001-008]`` and
``SwitchName=spine Switches=leaf[01-02]``. A node's leaf is the switch that lists it, its spine is
that switch's parent and its zone the root above the spine; a two-level tree therefore has the
default zone ``z0``, and levels between spine and root (a four-level tree) are folded into the
zone, with a note.

Block form (topology/block, Slurm 23.11+): ``BlockName=rack1 Nodes=gb[001-018]`` with
``BlockSizes=18``. A block is an NVLink domain (an NVL72 rack); it says nothing about leaves.

Slurm reads one form per file, so a fleet with multi-node NVLink domains is written as two files:
the tree (usable by any Slurm) and the blocks (for 23.11+, or for gpufleet to read back).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.adapters.slurm.conf import logical_lines, pairs
from gpufleet.adapters.slurm.hostlist import HostlistError, compress, expand
from gpufleet.model.errors import InputError
from gpufleet.model.fleet import Fleet

DEFAULT_ZONE = "z0"


@dataclass(frozen=True, slots=True)
class Switch:
    name: str
    nodes: tuple[str, ...] = ()
    switches: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Block:
    name: str
    nodes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Topology:
    switches: tuple[Switch, ...] = ()
    blocks: tuple[Block, ...] = ()
    block_sizes: tuple[int, ...] = ()

    def merged(self, other: Topology) -> Topology:
        return Topology(self.switches + other.switches, self.blocks + other.blocks,
                        self.block_sizes or other.block_sizes)


@dataclass(frozen=True, slots=True)
class Placement:
    zone: str
    spine: str
    leaf: str


def _names(text: str, source: str, where: str) -> tuple[str, ...]:
    try:
        return tuple(expand(text))
    except HostlistError as e:
        raise InputError(source, where, str(e)) from None


def parse_topology(text: str, source: str = "topology.conf") -> Topology:
    switches: list[Switch] = []
    blocks: list[Block] = []
    sizes: tuple[int, ...] = ()
    for lineno, line in logical_lines(text):
        kv = {k.lower(): v for k, v in pairs(line, source, lineno)}
        where = f"line {lineno}"
        if "switchname" in kv:
            switches.append(Switch(
                kv["switchname"],
                _names(kv.get("nodes", ""), source, where + ": Nodes"),
                _names(kv.get("switches", ""), source, where + ": Switches"),
            ))
        elif "blockname" in kv:
            blocks.append(Block(kv["blockname"], _names(kv.get("nodes", ""), source, where + ": Nodes")))
        elif "blocksizes" in kv:
            try:
                sizes = tuple(int(s) for s in kv["blocksizes"].split(",") if s)
            except ValueError:
                raise InputError(source, where + ": BlockSizes", "expected comma-separated whole "
                                 f"numbers, got {kv['blocksizes']!r}") from None
        else:
            raise InputError(source, where, "expected SwitchName=, BlockName= or BlockSizes=")
    return Topology(tuple(switches), tuple(blocks), sizes)


def tree_placements(topo: Topology, source: str = "topology.conf") -> tuple[dict[str, Placement], list[str]]:
    """Each listed node's (zone, spine, leaf), plus notes about what the model cannot hold."""
    parent: dict[str, str] = {}
    names = {s.name for s in topo.switches}
    for sw in topo.switches:
        for child in sw.switches:
            if child not in names:
                raise InputError(source, f"SwitchName={sw.name}", f"child switch {child} is not defined")
            if child in parent:
                raise InputError(source, f"SwitchName={sw.name}",
                                 f"switch {child} already has parent {parent[child]}")
            parent[child] = sw.name
    notes: list[str] = []
    out: dict[str, Placement] = {}
    for sw in topo.switches:
        chain = [sw.name]
        while chain[-1] in parent:
            chain.append(parent[chain[-1]])
            if len(chain) > len(names):
                raise InputError(source, f"SwitchName={sw.name}", "switches form a cycle")
        if sw.nodes and len(chain) > 3:
            notes.append(f"switch {sw.name}: levels {', '.join(chain[2:-1])} folded into zone {chain[-1]}")
        spine = chain[1] if len(chain) > 1 else chain[0]
        zone = chain[-1] if len(chain) > 2 else DEFAULT_ZONE
        for node in sw.nodes:
            if node in out:
                raise InputError(source, f"SwitchName={sw.name}",
                                 f"node {node} is already under switch {out[node].leaf}")
            out[node] = Placement(zone, spine, sw.name)
    return out, notes


def block_domains(topo: Topology, source: str = "topology.conf") -> dict[str, str]:
    out: dict[str, str] = {}
    for block in topo.blocks:
        for node in block.nodes:
            if node in out:
                raise InputError(source, f"BlockName={block.name}",
                                 f"node {node} is already in block {out[node]}")
            out[node] = block.name
    return out


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def write_tree(fleet: Fleet) -> str:
    """Leaves, spines and (where needed to keep the fleet's zones) zone switches.

    A zone switch is written when the zone is not the default or holds several spines, so that
    reading the file back gives the same zone. A spine named like its only leaf is not written
    (that is how a one-level tree reads).
    """
    leaves: dict[str, list[str]] = {}
    spine_leaves: dict[str, list[str]] = {}
    zone_spines: dict[str, list[str]] = {}
    for node in fleet.nodes:
        leaves.setdefault(node.leaf, []).append(node.id)
        spine_leaves.setdefault(node.spine, []).append(node.leaf)
        zone_spines.setdefault(node.zone, []).append(node.spine)
    lines = ["# generated by gpufleet: leaves, spines, zones (topology/tree)"]
    lines += [f"SwitchName={leaf} Nodes={compress(nodes)}" for leaf, nodes in leaves.items()]
    for spine, members in spine_leaves.items():
        members = _unique(members)
        if members != [spine]:
            lines.append(f"SwitchName={spine} Switches={compress(members)}")
    for zone, spines in zone_spines.items():
        spines = _unique(spines)
        if zone != DEFAULT_ZONE or len(spines) > 1:
            lines.append(f"SwitchName={zone} Switches={compress(spines)}")
    return "\n".join(lines) + "\n"


def multi_node_domains(fleet: Fleet) -> bool:
    seen: set[str] = set()
    for node in fleet.nodes:
        if node.nvlink_domain in seen:
            return True
        seen.add(node.nvlink_domain)
    return False


def write_blocks(fleet: Fleet) -> str:
    """Every NVLink domain as a block; BlockSizes is the domain size when all domains agree."""
    domains: dict[str, list[str]] = {}
    for node in fleet.nodes:
        domains.setdefault(node.nvlink_domain, []).append(node.id)
    lines = ["# generated by gpufleet: NVLink domains as blocks (topology/block, Slurm 23.11+)"]
    lines += [f"BlockName={name} Nodes={compress(nodes)}" for name, nodes in domains.items()]
    sizes = {len(nodes) for nodes in domains.values()}
    if len(sizes) == 1:
        lines.append(f"BlockSizes={sizes.pop()}")
    return "\n".join(lines) + "\n"
