"""Scenario files: a fleet, a workload (generated or listed), the policies to compare.

```yaml
name: default
fleet:
  groups: [{nodes: 64, gpu: H100-80GB, gpus_per_node: 8, leaf_size: 16}]
workload:
  generator: {days: 14, offered_load: 0.9, max_gpus: 256, seed: 7}
  # or: jobs: [{id: a, tenant: t1, submit: 0, run_time: 3600, replicas: 8, gpus: 8}]
policies: [gang-bestfit, per-pod]
```
Validated at load: a bad file gets one line naming the file, the field and what was expected.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gpufleet.model.catalog import canonical_gpu_name
from gpufleet.model.errors import InputError, from_validation_error
from gpufleet.model.fleet import Fleet
from gpufleet.model.fleet_config import FleetSpec, read_yaml
from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.job import Job, JobKind, PodRequest, PodSet
from gpufleet.policies.registry import PROFILES
from gpufleet.sim.workload import TenantMix, WorkloadSpec, generate


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TenantSpec(_Strict):
    name: str
    weight: float = Field(gt=0)


class GeneratorSpec(_Strict):
    days: float = Field(default=14.0, gt=0)
    offered_load: float = Field(default=0.9, gt=0, le=5)
    max_gpus: int = Field(default=512, ge=1)
    seed: int = 7
    tenants: list[TenantSpec] | None = None

    def spec(self, gpus_per_node: int) -> WorkloadSpec:
        base = WorkloadSpec(days=self.days, offered_load=self.offered_load, max_gpus=self.max_gpus,
                            gpus_per_node=gpus_per_node)
        if self.tenants:
            base = WorkloadSpec(**{**base.__dict__,
                                   "tenants": tuple(TenantMix(t.name, t.weight) for t in self.tenants)})
        return base


class JobSpec(_Strict):
    id: str
    tenant: str = "default"
    submit: float = Field(default=0.0, ge=0)
    run_time: float = Field(gt=0)
    estimate: float | None = Field(default=None, gt=0)
    replicas: int = Field(default=1, ge=1)
    gpus: int = Field(default=1, ge=0)
    cpus: float = Field(default=0.0, ge=0)
    memory_gb: float = Field(default=0.0, ge=0)
    gpu_models: list[str] = []
    priority: int = 0
    kind: JobKind = JobKind.BATCH

    @field_validator("gpu_models")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        return [canonical_gpu_name(m) for m in v]

    def build(self) -> Job:
        req = PodRequest(self.gpus, self.cpus, self.memory_gb, tuple(self.gpu_models))
        return Job(JobId(self.id), TenantId(self.tenant), (PodSet("worker", self.replicas, req),),
                   self.submit, self.run_time, self.priority, self.kind, self.estimate)


class WorkloadSection(_Strict):
    generator: GeneratorSpec | None = None
    jobs: list[JobSpec] | None = None

    @model_validator(mode="after")
    def _one_source(self) -> WorkloadSection:
        if (self.generator is None) == (self.jobs is None):
            raise ValueError("give exactly one of 'generator' or 'jobs'")
        return self


class ScenarioSpec(_Strict):
    name: str = "scenario"
    description: str = ""
    fleet: FleetSpec
    workload: WorkloadSection
    policies: list[str] = Field(default_factory=lambda: ["gang-bestfit", "per-pod"], min_length=1)
    cycle_interval_s: float = Field(default=0.0, ge=0)

    @field_validator("policies")
    @classmethod
    def _known_policies(cls, v: list[str]) -> list[str]:
        for p in v:
            if p not in PROFILES:
                raise ValueError(f"unknown policy {p!r}; expected one of {', '.join(PROFILES)}")
        return v


class Scenario:
    def __init__(self, spec: ScenarioSpec, source: str) -> None:
        self.spec = spec
        self.source = source
        self.fleet: Fleet = spec.fleet.build()

    @property
    def name(self) -> str:
        return self.spec.name

    def jobs(self, seed: int | None = None) -> list[Job]:
        w = self.spec.workload
        if w.jobs is not None:
            return [j.build() for j in w.jobs]
        assert w.generator is not None
        gpn = max(n.gpus for n in self.fleet.nodes)
        return generate(w.generator.spec(gpn), self.fleet.total_gpus,
                        w.generator.seed if seed is None else seed)

    @property
    def horizon(self) -> float | None:
        g = self.spec.workload.generator
        return g.days * 86400.0 if g is not None else None


def parse_scenario(data: Any, source: str) -> Scenario:
    if not isinstance(data, dict):
        raise InputError(source, "", "expected a mapping with 'fleet' and 'workload'")
    try:
        return Scenario(ScenarioSpec.model_validate(data), source)
    except ValidationError as e:
        raise from_validation_error(source, e) from None


def load_scenario(path: str | Path) -> Scenario:
    return parse_scenario(read_yaml(Path(path)), str(path))


def bundled(name: str) -> Scenario:
    """A scenario shipped with gpufleet (``default``, ``deadlock``, ...)."""
    ref = resources.files("gpufleet.scenarios").joinpath(f"{name}.yaml")
    return parse_scenario(read_yaml(Path(str(ref))), f"<bundled {name}.yaml>")


def bundled_names() -> list[str]:
    return sorted(p.name.removesuffix(".yaml") for p in resources.files("gpufleet.scenarios").iterdir()
                  if p.name.endswith(".yaml"))
