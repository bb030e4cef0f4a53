"""Fleet files: the compact YAML form, validated with pydantic.

```yaml
fleet:
  name: demo
  fabric: {nic_gbps: 400, leaf_oversubscription: 2.0}
  groups:
    - {nodes: 64, gpu: H100-80GB, gpus_per_node: 8, leaf_size: 16}
    - {nodes: 18, gpu: GB200, gpus_per_node: 4, nvlink_domain_nodes: 18}
```
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gpufleet.model.catalog import canonical_gpu_name
from gpufleet.model.errors import InputError, from_validation_error
from gpufleet.model.fleet import Fabric, Fleet, NodeGroup, build_fleet


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


class FabricSpec(_Strict):
    nic_gbps: float = Field(default=400.0, gt=0)
    leaf_oversubscription: float = Field(default=1.0, ge=1.0)
    spine_oversubscription: float = Field(default=1.0, ge=1.0)


class FleetSpec(_Strict):
    name: str = "fleet"
    fabric: FabricSpec = FabricSpec()
    groups: list[NodeGroupSpec] = Field(min_length=1)

    def build(self) -> Fleet:
        groups = [NodeGroup(**g.model_dump()) for g in self.groups]
        return build_fleet(groups, Fabric(**self.fabric.model_dump()), self.name)


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
        raise InputError(str(path), "fleet", "missing required field (a mapping with 'groups')")
    return parse_fleet(data["fleet"], str(path))
