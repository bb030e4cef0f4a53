"""Fleet files: the compact YAML form, validated with pydantic.

```yaml
fleet:
  name: demo
  fabric: {nic_gbps: 400, leaf_oversubscription: 2.0}
  groups:
    - {nodes: 64, gpu: H100-80GB, gpus_per_node: 8, leaf_size: 16}
    - {nodes: 18, gpu: GB200, gpus_per_node: 4, nvlink_domain_nodes: 18}
```

or, instead of ``groups``, the per-node form (what ``gpufleet slurm import-conf`` writes: node
names, leaves and NVLink domains of a real cluster rarely fit the compact form):

```yaml
fleet:
  nodes:
    - {id: gpu001, gpu: H100-80GB, gpus: 8, cpus: 64, memory_gb: 500, zone: z0, spine: s0,
       leaf: leaf1, nvlink_domain: gpu001, health: healthy}   # health optional
```
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gpufleet.model.catalog import canonical_gpu_name, gpu_model
from gpufleet.model.errors import InputError, from_validation_error
from gpufleet.model.fleet import Fabric, Fleet, Node, NodeGroup, NodeHealth, build_fleet
from gpufleet.model.health import HealthState, fleet_label
from gpufleet.model.ids import NodeId

#: Sizes beyond these are typos (``nodes: 1e8``), not fleets: the largest GPU clusters built hold
#: about 100,000 GPUs, i.e. 12,500 eight-GPU nodes; the limits leave room and keep a run finite.
MAX_NODES = 50_000
MAX_GPUS_PER_NODE = 128
MAX_CPUS_PER_NODE = 100_000
MAX_MEMORY_GB_PER_NODE = 1_000_000


class _Strict(BaseModel):
    #: ``allow_inf_nan=False``: NaN and ±Infinity (YAML ``.nan``/``.inf``) are rejected at load.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class NodeGroupSpec(_Strict):
    nodes: int = Field(gt=0, le=MAX_NODES)
    gpu: str
    gpus_per_node: int = Field(default=8, gt=0, le=MAX_GPUS_PER_NODE)
    cpus: int = Field(default=224, gt=0, le=MAX_CPUS_PER_NODE)
    memory_gb: int = Field(default=2048, gt=0, le=MAX_MEMORY_GB_PER_NODE)
    leaf_size: int = Field(default=32, gt=0)
    leaves_per_spine: int = Field(default=8, gt=0)
    nvlink_domain_nodes: int = Field(default=1, gt=0)
    zone: str = "z0"
    prefix: str | None = None

    @field_validator("gpu")
    @classmethod
    def _known_gpu(cls, v: str) -> str:
        return canonical_gpu_name(v)


class NodeSpec(_Strict):
    """One node of the per-node form: every place in the topology tree is named explicitly."""

    id: str = Field(min_length=1)
    gpu: str
    gpus: int = Field(ge=0, le=MAX_GPUS_PER_NODE)
    cpus: int = Field(gt=0, le=MAX_CPUS_PER_NODE)
    memory_gb: int = Field(gt=0, le=MAX_MEMORY_GB_PER_NODE)
    zone: str
    spine: str
    leaf: str
    nvlink_domain: str
    #: A fleet label (healthy, degraded, draining, down) or a health-machine state (suspect,
    #: quarantined, diagnosing, repaired, rma, preflight), stored as that state's label
    #: (model/health.py: one vocabulary, two grains).
    health: NodeHealth = NodeHealth.HEALTHY
    #: Slurm's node Weight (uint32, at most 2^32 - 2: 2^32 - 1 is Slurm's INFINITE).
    weight: int = Field(default=1, ge=0, le=2**32 - 2)

    @field_validator("gpu")
    @classmethod
    def _known_gpu(cls, v: str) -> str:
        return canonical_gpu_name(v)

    @field_validator("health", mode="before")
    @classmethod
    def _health(cls, v: Any) -> Any:
        if isinstance(v, str) and v not in NodeHealth._value2member_map_:
            if v in HealthState._value2member_map_:
                return fleet_label(HealthState(v))
            raise ValueError(f"expected one of {', '.join(NodeHealth)} or a health-machine state "
                             f"({', '.join(HealthState)}), got {v!r}")
        return v

    def build(self) -> Node:
        return Node(id=NodeId(self.id), gpu=self.gpu, gpus=self.gpus, cpus=self.cpus,
                    memory_gb=self.memory_gb, zone=self.zone, spine=self.spine, leaf=self.leaf,
                    nvlink_domain=self.nvlink_domain, health=self.health, weight=self.weight)


class FabricSpec(_Strict):
    nic_gbps: float = Field(default=400.0, gt=0, le=100_000)
    leaf_oversubscription: float = Field(default=1.0, ge=1.0, le=1000)
    spine_oversubscription: float = Field(default=1.0, ge=1.0, le=1000)


class FleetSpec(_Strict):
    name: str = "fleet"
    fabric: FabricSpec = FabricSpec()
    groups: list[NodeGroupSpec] | None = Field(default=None, min_length=1)
    nodes: list[NodeSpec] | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one_form(self) -> FleetSpec:
        if self.groups is not None and self.nodes is not None:
            raise ValueError("expected either 'groups' (compact form) or 'nodes' (per-node form), not both")
        if self.groups is None and self.nodes is None:
            raise ValueError("missing 'groups' (compact form) or 'nodes' (per-node form)")
        count = sum(g.nodes for g in self.groups) if self.groups else len(self.nodes or ())
        if count > MAX_NODES:
            raise ValueError(f"{count:,} nodes in all; at most {MAX_NODES:,} are supported")
        gpus = (sum(g.nodes * g.gpus_per_node for g in self.groups) if self.groups
                else sum(n.gpus for n in self.nodes or ()))
        if gpus == 0:
            raise ValueError("the fleet has no GPUs (every node has gpus: 0); give at least one GPU node")
        return self

    @field_validator("groups")
    @classmethod
    def _unique_prefixes(cls, v: list[NodeGroupSpec] | None) -> list[NodeGroupSpec] | None:
        """Two groups with one name prefix would make the same node names twice (two jobs bound to
        "one" node): an error, not a silent merge."""
        seen: dict[str, int] = {}
        for i, g in enumerate(v or []):
            prefix = group_prefix(g.gpu, g.prefix, i)
            if prefix in seen:
                raise ValueError(f"groups[{seen[prefix]}] and groups[{i}] both name their nodes "
                                 f"{prefix!r}-n…; give each group its own prefix")
            seen[prefix] = i
        return v

    @field_validator("nodes")
    @classmethod
    def _unique_ids(cls, v: list[NodeSpec] | None) -> list[NodeSpec] | None:
        seen: set[str] = set()
        for n in v or []:
            if n.id in seen:
                raise ValueError(f"node id {n.id!r} appears twice")
            seen.add(n.id)
        return v

    def build(self) -> Fleet:
        fabric = Fabric(**self.fabric.model_dump())
        if self.nodes is not None:
            return Fleet(tuple(n.build() for n in self.nodes), fabric, self.name)
        groups = [NodeGroup(**g.model_dump()) for g in self.groups or []]
        return build_fleet(groups, fabric, self.name)


def group_prefix(gpu: str, prefix: str | None, index: int) -> str:
    """The node-name prefix of group ``index`` (what build_fleet uses)."""
    return prefix or f"{gpu_model(gpu).name.split('-')[0].lower()}-g{index}"


def read_text(path: Path) -> str:
    """A text file's content; a missing, unreadable, binary or non-UTF-8 file is one InputError
    naming the file."""
    try:
        raw = path.read_bytes()
    except IsADirectoryError:
        raise InputError(str(path), "", "is a directory, expected a file") from None
    except OSError as e:
        raise InputError(str(path), "", f"cannot read file ({e.strerror})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(str(path), "", f"not a UTF-8 text file (byte {e.start} is "
                                        f"{raw[e.start]:#04x}); expected YAML or JSON text") from None
    if "\x00" in text:
        raise InputError(str(path), "", "a binary file (it contains NUL bytes); expected text")
    return text


def read_yaml(path: Path) -> Any:
    text = read_text(path)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "YAML"
        problem = getattr(e, "problem", None) or "invalid YAML"
        raise InputError(str(path), where, f"YAML syntax error: {problem}") from None


def parse_fleet(data: Any, source: str, prefix: str = "fleet") -> Fleet:
    try:
        return FleetSpec.model_validate(data).build()
    except ValidationError as e:
        raise from_validation_error(source, e, prefix) from None


def load_fleet(path: str | Path) -> Fleet:
    path = Path(path)
    data = read_yaml(path)
    if not isinstance(data, dict) or "fleet" not in data:
        raise InputError(str(path), "fleet", "missing required field (a mapping with 'groups' or 'nodes')")
    return parse_fleet(data["fleet"], str(path))
