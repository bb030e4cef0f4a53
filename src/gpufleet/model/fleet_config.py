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

from gpufleet.model.catalog import canonical_gpu_name
from gpufleet.model.errors import InputError, from_validation_error
from gpufleet.model.fleet import Fabric, Fleet, Node, NodeGroup, NodeHealth, build_fleet
from gpufleet.model.ids import NodeId


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NodeGroupSpec(_Strict):
    nodes: int = Field(gt=0)
    gpu: str
    gpus_per_node: int = Field(default=8, gt=0)
    cpus: int = Field(default=224, gt=0)
    memory_gb: int = Field(default=2048, gt=0)
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
    gpus: int = Field(ge=0)
    cpus: int = Field(gt=0)
    memory_gb: int = Field(gt=0)
    zone: str
    spine: str
    leaf: str
    nvlink_domain: str
    health: NodeHealth = NodeHealth.HEALTHY

    @field_validator("gpu")
    @classmethod
    def _known_gpu(cls, v: str) -> str:
        return canonical_gpu_name(v)

    def build(self) -> Node:
        return Node(id=NodeId(self.id), gpu=self.gpu, gpus=self.gpus, cpus=self.cpus,
                    memory_gb=self.memory_gb, zone=self.zone, spine=self.spine, leaf=self.leaf,
                    nvlink_domain=self.nvlink_domain, health=self.health)


class FabricSpec(_Strict):
    nic_gbps: float = Field(default=400.0, gt=0)
    leaf_oversubscription: float = Field(default=1.0, ge=1.0)
    spine_oversubscription: float = Field(default=1.0, ge=1.0)


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
        return self

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


def read_yaml(path: Path) -> Any:
    try:
        text = path.read_text()
    except OSError as e:
        raise InputError(str(path), "", f"cannot read file ({e.strerror})") from None
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
