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

from dataclasses import replace
from fnmatch import fnmatch
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gpufleet.model.catalog import canonical_gpu_name
from gpufleet.model.driver_compat import MIN_DRIVER, nccl_build, version
from gpufleet.model.errors import InputError, from_validation_error
from gpufleet.model.fleet import Fleet
from gpufleet.model.fleet_config import FleetSpec, read_yaml
from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.job import Checkpointing, Elastic, Job, JobKind, PodRequest, PodSet, ShareMode
from gpufleet.model.mig import known_profile, profile_name
from gpufleet.model.parallelism import PROFILES as TRAINING_PROFILES
from gpufleet.model.parallelism import Parallelism, ParallelismMismatch
from gpufleet.model.tenancy import Tenancy
from gpufleet.model.tenancy_config import TenancySpec
from gpufleet.policies.registry import PROFILES
from gpufleet.sim.fleet_events.failures import FailureConfig
from gpufleet.sim.fleet_events.failures_spec import ReliabilitySpec
from gpufleet.sim.fleet_events.upgrade_compat import CUDA_LABEL, NCCL_LABEL
from gpufleet.sim.workload import TenantMix, TrainingMix, WorkloadSpec, generate, mean_gpu_seconds
from gpufleet.traces.jsonl import read_jobs

#: Bounds that keep a run finite and catch typos (``days: 100000``, ``replicas: 1e9``); each is
#: named in the error message.
MAX_DAYS = 365.0
MAX_JOBS_IN_FILE = 1_000_000
MAX_REPLICAS = 100_000
MAX_GPUS_PER_POD = 128
#: Ten years: longer run times, submit times and checkpoint intervals are typos.
MAX_SECONDS = 10 * 365 * 86400.0
MAX_CYCLE_INTERVAL_S = 86400.0
#: A generated workload above this many jobs is refused before it is drawn (memory and hours of
#: simulation); the estimate is the generator's own arrival rate × the horizon.
MAX_GENERATED_JOBS = 2_000_000


def expected_jobs(spec: WorkloadSpec, fleet_gpus: int, seed: int) -> float:
    """The generator's arrival rate × horizon: offered_load × fleet GPUs / mean GPU-seconds per job
    × days × 86,400 s (sim/workload.py draws the same rate with seed + 1)."""
    rate = spec.offered_load * fleet_gpus / mean_gpu_seconds(spec, np.random.default_rng(seed + 1))
    return rate * spec.days * 86400.0


class _Strict(BaseModel):
    #: NaN and ±Infinity (YAML ``.nan``, ``.inf``) are rejected: they would print as ``nan%``.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class TenantSpec(_Strict):
    name: str
    weight: float = Field(gt=0, le=1e6)


class TrainingSpec(_Strict):
    """``generator.training``: turn a share of the gangs into training jobs (workload.TrainingMix)."""

    fraction: float = Field(default=0.8, ge=0, le=1)
    min_gpus: int = Field(default=2, ge=1)
    pod_gpus: dict[Annotated[int, Field(ge=1, le=MAX_GPUS_PER_POD)], Annotated[float, Field(gt=0)]] = Field(
        default_factory=lambda: {8: 0.5, 4: 0.3, 1: 0.2}, min_length=1)

    def mix(self) -> TrainingMix:
        return TrainingMix(self.fraction, self.min_gpus, tuple(sorted(self.pod_gpus.items(), reverse=True)))


class CheckpointMixSpec(_Strict):
    intervals_s: list[Annotated[float, Field(gt=0, le=MAX_SECONDS)]] = Field(min_length=1)
    cost_s: float = Field(default=0.0, ge=0, le=MAX_SECONDS)
    restart_s: float = Field(default=0.0, ge=0, le=MAX_SECONDS)
    min_gpus: int = Field(default=2, ge=1)

    def apply(self, jobs: list[Job], seed: int) -> list[Job]:
        """Seeded: the same jobs and seed give the same checkpoint intervals."""
        rng = np.random.default_rng(seed)
        picks = rng.integers(0, len(self.intervals_s), size=len(jobs))
        return [replace(j, checkpointing=Checkpointing(self.intervals_s[int(k)], self.cost_s, self.restart_s))
                if j.total_gpus >= self.min_gpus else j for j, k in zip(jobs, picks, strict=True)]


class GeneratorSpec(_Strict):
    days: float = Field(default=14.0, gt=0, le=MAX_DAYS)
    offered_load: float = Field(default=0.9, gt=0, le=5)
    max_gpus: int = Field(default=512, ge=1, le=MAX_REPLICAS * MAX_GPUS_PER_POD)
    seed: int = Field(default=7, ge=0, le=2**63 - 1)
    tenants: list[TenantSpec] | None = None
    training: TrainingSpec | None = None
    #: Give generated multi-GPU jobs checkpointing (intervals drawn per job from the list).
    checkpointing: CheckpointMixSpec | None = None

    def spec(self, gpus_per_node: int) -> WorkloadSpec:
        base = WorkloadSpec(days=self.days, offered_load=self.offered_load, max_gpus=self.max_gpus,
                            gpus_per_node=gpus_per_node,
                            training=self.training.mix() if self.training else None)
        if self.tenants:
            base = WorkloadSpec(**{**base.__dict__,
                                   "tenants": tuple(TenantMix(t.name, t.weight) for t in self.tenants)})
        return base


class JobSpec(_Strict):
    id: str
    tenant: str = "default"
    submit: float = Field(default=0.0, ge=0, le=MAX_SECONDS)
    run_time: float = Field(gt=0, le=MAX_SECONDS)
    estimate: float | None = Field(default=None, gt=0, le=MAX_SECONDS)
    replicas: int = Field(default=1, ge=1, le=MAX_REPLICAS)
    gpus: int = Field(default=1, ge=0, le=MAX_GPUS_PER_POD)
    cpus: float = Field(default=0.0, ge=0, le=1e6)
    memory_gb: float = Field(default=0.0, ge=0, le=1e7)
    gpu_models: list[str] = []
    priority: int = 0
    #: A name from tenancy.priority_classes; overrides ``priority`` with the class's value.
    priority_class: str | None = None
    checkpoint_interval_s: float | None = Field(default=None, gt=0, le=MAX_SECONDS)
    checkpoint_cost_s: float = Field(default=0.0, ge=0, le=MAX_SECONDS)
    restart_s: float = Field(default=0.0, ge=0, le=MAX_SECONDS)
    kind: JobKind = JobKind.BATCH
    #: Training layout: tp/pp/dp sizes (their product is the job's GPUs) and the model trained.
    tp: int | None = Field(default=None, ge=1)
    pp: int = Field(default=1, ge=1)
    dp: int = Field(default=1, ge=1)
    model: str | None = None
    topology_required: Literal["nvlink", "node", "leaf", "spine"] | None = None
    topology_preferred: Literal["nvlink", "node", "leaf", "spine"] | None = None
    #: Fractional pods (then ``gpus`` is 0 or omitted): a MIG instance ("3g.40gb" or
    #: "nvidia.com/mig-3g.40gb"), or a soft share of one GPU — milli (1..1000), how it is
    #: enforced, and optionally GPU memory in GB.
    mig_profile: str | None = None
    gpu_milli: int = Field(default=0, ge=0, le=1000)
    share: ShareMode | None = None
    gpu_memory_gb: float = Field(default=0.0, ge=0, le=1e4)
    #: Elastic gang (fleet_events/elastic.py): shrink to ``min_replicas`` on a failure, grow back
    #: ``replica_step`` pods (one DP replica) at a time. None: a rigid gang.
    min_replicas: int | None = Field(default=None, ge=1, le=MAX_REPLICAS)
    replica_step: int = Field(default=1, ge=1, le=MAX_REPLICAS)
    #: Amdahl serial fraction of an elastic gang's step (fleet_events/elastic.py): 0 = speed ∝ replicas.
    elastic_serial_fraction: float = Field(default=0.0, ge=0, lt=1)
    #: The CUDA toolkit its image was built with ("12.8"): a ``cuda`` label that a driver rollout
    #: reads (fleet_events/upgrade_compat.py). None: runs on any driver.
    cuda: str | None = None
    #: The NCCL its image carries ("2.27.3+cuda12.9", or "2.27.3" with ``cuda``): a ``nccl``
    #: label; its build's CUDA must be of the image's major (model/driver_compat.py nccl_build).
    nccl: str | None = None

    @model_validator(mode="after")
    def _known_nccl(self) -> JobSpec:
        if self.nccl is not None:
            nccl_build(self.nccl, self.cuda)  # a ValueError names the field's problem
        return self

    @field_validator("cuda")
    @classmethod
    def _known_cuda(cls, v: str | None) -> str | None:
        if v is not None:
            c = version(v, "cuda", "12.8")
            if len(c) < 2 or f"{c[0]}.{c[1]}" not in MIN_DRIVER:
                raise ValueError(f"cuda: expected a toolkit version among {', '.join(MIN_DRIVER)}, got {v!r}")
        return v

    @model_validator(mode="after")
    def _elastic_range(self) -> JobSpec:
        if self.elastic_serial_fraction and self.min_replicas is None:
            raise ValueError("elastic_serial_fraction needs min_replicas (an elastic gang)")
        if self.min_replicas is not None:
            if self.min_replicas > self.replicas:
                raise ValueError(f"min_replicas ({self.min_replicas}) must be at most "
                                 f"replicas ({self.replicas})")
            if (self.replicas - self.min_replicas) % self.replica_step:
                raise ValueError(f"replicas − min_replicas ({self.replicas - self.min_replicas}) must be a "
                                 f"multiple of replica_step ({self.replica_step})")
        return self

    @field_validator("mig_profile")
    @classmethod
    def _known_mig(cls, v: str | None) -> str | None:
        if v is not None and not known_profile(v):
            raise ValueError(f"unknown MIG profile {v!r}; expected e.g. 1g.10gb, 3g.40gb, 7g.80gb")
        return profile_name(v) if v is not None else None

    @model_validator(mode="after")
    def _one_gpu_request(self) -> JobSpec:
        fractional = self.mig_profile is not None or self.gpu_milli > 0
        if fractional and "gpus" in self.model_fields_set and self.gpus != 0:
            raise ValueError("a MIG or soft-share pod asks no whole GPUs: give gpus: 0 or omit it")
        if self.mig_profile is not None and self.gpu_milli > 0:
            raise ValueError("give either mig_profile or gpu_milli, not both")
        if (self.share is not None or self.gpu_memory_gb > 0) and self.gpu_milli == 0:
            raise ValueError("share and gpu_memory_gb need gpu_milli (the share of one GPU)")
        return self

    @field_validator("gpu_models")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        return [canonical_gpu_name(m) for m in v]

    @field_validator("model")
    @classmethod
    def _known_model(cls, v: str | None) -> str | None:
        if v is not None and v not in TRAINING_PROFILES:
            raise ValueError(f"unknown training model {v!r}; expected one of {', '.join(TRAINING_PROFILES)}")
        return v

    @model_validator(mode="after")
    def _layout_fits(self) -> JobSpec:
        if self.tp is not None:
            try:
                layout = Parallelism(self.tp, self.pp, self.dp)
                layout.check_world(self.replicas * self.gpus, f"job {self.id}")
            except ParallelismMismatch as e:
                raise ValueError(str(e)) from None
        return self

    def build(self) -> Job:
        fractional = self.mig_profile is not None or self.gpu_milli > 0
        req = PodRequest(0 if fractional else self.gpus, self.cpus, self.memory_gb, tuple(self.gpu_models),
                         self.gpu_milli, (self.share or ShareMode.MILLI) if self.gpu_milli else None,
                         self.gpu_memory_gb, self.mig_profile)
        par = Parallelism(self.tp, self.pp, self.dp) if self.tp is not None else None
        return Job(JobId(self.id), TenantId(self.tenant), (PodSet("worker", self.replicas, req),),
                   self.submit, self.run_time, self.priority, self.kind, self.estimate,
                   checkpointing=Checkpointing(self.checkpoint_interval_s, self.checkpoint_cost_s,
                                               self.restart_s) if self.checkpoint_interval_s else None,
                   parallelism=par, training=TRAINING_PROFILES[self.model] if self.model else None,
                   topology_required=self.topology_required, topology_preferred=self.topology_preferred,
                   elastic=Elastic(self.min_replicas, self.replica_step, self.elastic_serial_fraction)
                   if self.min_replicas is not None else None,
                   labels=tuple((k, v) for k, v in ((CUDA_LABEL, self.cuda), (NCCL_LABEL, self.nccl))
                                if v is not None))


class WorkloadSection(_Strict):
    generator: GeneratorSpec | None = None
    jobs: list[JobSpec] | None = Field(default=None, max_length=MAX_JOBS_IN_FILE)
    #: A trace in gpufleet's JSON-lines format (traces/jsonl.py), relative to the scenario file.
    trace: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> WorkloadSection:
        if sum(x is not None for x in (self.generator, self.jobs, self.trace)) != 1:
            raise ValueError("give exactly one of 'generator', 'jobs' or 'trace'")
        return self

    @field_validator("jobs")
    @classmethod
    def _unique_ids(cls, v: list[JobSpec] | None) -> list[JobSpec] | None:
        """A second job with the same id would silently replace the first in every result."""
        first: dict[str, int] = {}
        for i, j in enumerate(v or []):
            if j.id in first:
                raise ValueError(f"job id {j.id!r} appears twice (jobs[{first[j.id]}] and jobs[{i}])")
            first[j.id] = i
        return v


class ScenarioSpec(_Strict):
    name: str = "scenario"
    description: str = ""
    fleet: FleetSpec
    workload: WorkloadSection
    policies: list[str] = Field(default_factory=lambda: ["gang-bestfit", "per-pod"], min_length=1)
    cycle_interval_s: float = Field(default=0.0, ge=0, le=MAX_CYCLE_INTERVAL_S)
    #: "topology": a training job's run time is stretched by its placement's slowdown (sim/runtime.py).
    runtime_model: Literal["none", "topology"] = "none"
    #: Tenant queues, cohorts, quotas, priority classes (model/tenancy_config.py); None: no quotas.
    tenancy: TenancySpec | None = None
    #: Failures, recovery and spares (fleet_events/failures_spec.py); None: the fleet never breaks.
    reliability: ReliabilitySpec | None = None

    def tenancy_problem(self) -> tuple[str, str] | None:
        """(field, expectation) for the first tenancy cross-reference that does not hold, or None."""
        ten, w = self.tenancy, self.workload
        if ten is None:
            if w.jobs and any(j.priority_class for j in w.jobs):
                return "workload.jobs", "priority_class needs a 'tenancy' section"
            return None
        problem = ten.problem()
        if problem is not None:
            return problem
        names = {t.name for t in ten.tenants}
        if w.jobs is not None:
            wanted = [(f"workload.jobs[{i}].tenant", j.tenant) for i, j in enumerate(w.jobs)]
        elif w.trace is not None:
            wanted = []  # a trace's tenants are known once it is read (cli/kueue.py checks them)
        else:
            gen = w.generator.tenants if w.generator and w.generator.tenants else WorkloadSpec().tenants
            wanted = [(f"workload.generator.tenants[{i}]", t.name) for i, t in enumerate(gen)]
        for where, name in wanted:
            if name not in names:
                return where, f"tenant {name!r} has no queue in tenancy.tenants"
        for i, j in enumerate(w.jobs or ()):
            if j.priority_class is not None and ten.class_value(j.priority_class) is None:
                return (f"workload.jobs[{i}].priority_class",
                        f"{j.priority_class!r} is not one of tenancy.priority_classes")
        models = {g.gpu for g in self.fleet.groups or ()} | {n.gpu for n in self.fleet.nodes or ()}
        for i, t in enumerate(ten.tenants):
            for f in t.quotas:
                if f not in models:
                    return (f"tenancy.tenants[{i}].quotas",
                            f"quota for {f}, which the fleet does not have ({', '.join(sorted(models))})")
        return None

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
        problem = spec.tenancy_problem()
        if problem is not None:
            raise InputError(source, *problem)
        self.fleet: Fleet = spec.fleet.build()
        if spec.reliability is not None and spec.reliability.spares >= len(self.fleet.nodes):
            raise InputError(source, "reliability.spares",
                             f"fewer spares than the fleet's {len(self.fleet.nodes)} nodes")
        spot = spec.reliability.spot if spec.reliability is not None else None
        if spot is not None:
            if spot.nodes > len(self.fleet.nodes):
                raise InputError(source, "reliability.spot.nodes",
                                 f"at most the fleet's {len(self.fleet.nodes)} nodes, got {spot.nodes}")
            have = sorted({n.zone for n in self.fleet.nodes[:spot.nodes]})
            for z in spot.zones:
                if z not in have:
                    raise InputError(source, f"reliability.spot.zones.{z}",
                                     f"no spot node in zone {z!r} (spot nodes' zones: {', '.join(have)})")
        up = spec.reliability.upgrade if spec.reliability is not None else None
        for i, ns in enumerate(up.nodes if up is not None else ()):
            if not any(fnmatch(n.id, ns.match) for n in self.fleet.nodes):
                raise InputError(source, f"reliability.upgrade.nodes[{i}].match",
                                 f"{ns.match!r} matches no node (names look like {self.fleet.nodes[0].id})")
        if up is not None and up.from_driver is None and any(ns.driver for ns in up.nodes):
            bare = [n.id for n in self.fleet.nodes
                    if not any(ns.driver and fnmatch(n.id, ns.match) for ns in up.nodes)]
            if bare:
                raise InputError(source, "reliability.upgrade.from_driver",
                                 f"needed: {len(bare)} node(s) ({bare[0]}, …) match no nodes[] entry "
                                 "with a driver")

    @property
    def name(self) -> str:
        return self.spec.name

    def jobs(self, seed: int | None = None) -> list[Job]:
        w = self.spec.workload
        ten = self.spec.tenancy
        if w.trace is not None:
            return read_jobs(self.relative(w.trace))
        if w.jobs is not None:
            return [replace(j.build(), priority=ten.class_value(j.priority_class) or 0)
                    if j.priority_class is not None and ten is not None else j.build() for j in w.jobs]
        assert w.generator is not None
        gpn = max(n.gpus for n in self.fleet.nodes)
        s = w.generator.seed if seed is None else seed
        spec = w.generator.spec(gpn)
        expected = expected_jobs(spec, self.fleet.total_gpus, s)
        if expected > MAX_GENERATED_JOBS:
            raise InputError(self.source, "workload.generator",
                             f"about {expected:,.0f} jobs (days × arrival rate on {self.fleet.total_gpus:,} "
                             f"GPUs); at most {MAX_GENERATED_JOBS:,} are supported: use fewer days, a lower "
                             "offered_load or a smaller fleet")
        jobs = generate(spec, self.fleet.total_gpus, s)
        if w.generator.checkpointing is not None:
            jobs = w.generator.checkpointing.apply(jobs, s + 2)
        return jobs

    def warnings(self) -> list[str]:
        """Things that load but are probably not what was meant: a tenant quota larger than every
        GPU of that model in the fleet never limits anything (Kueue allows it; it is a warning)."""
        out: list[str] = []
        ten = self.spec.tenancy
        if ten is None:
            return out
        have: dict[str, int] = {}
        for n in self.fleet.nodes:
            have[n.gpu] = have.get(n.gpu, 0) + n.gpus
        for i, t in enumerate(ten.tenants):
            for flavor, q in t.quotas.items():
                if flavor in have and q.nominal > have[flavor]:
                    out.append(f"{self.source}: tenancy.tenants[{i}].quotas.{flavor}.nominal: "
                               f"{q.nominal:,} GPUs, but the fleet has {have[flavor]:,} {flavor} GPUs; "
                               f"this quota never limits tenant {t.name!r}")
        return out

    @property
    def tenancy(self) -> Tenancy | None:
        """The scenario's tenancy (quotas, cohorts, classes), or None when it has none."""
        return self.spec.tenancy.build() if self.spec.tenancy is not None else None

    @property
    def failures(self) -> FailureConfig | None:
        """The failure model of a scenario with a ``reliability`` section, else None."""
        return self.spec.reliability.build() if self.spec.reliability is not None else None

    @property
    def horizon(self) -> float | None:
        g = self.spec.workload.generator
        return g.days * 86400.0 if g is not None else None


    def relative(self, name: str) -> Path:
        """A path named in the scenario, resolved against the scenario file's folder."""
        base = Path(self.source).parent if not self.source.startswith("<") else Path.cwd()
        return base / name


def _inline_fleet_file(data: dict, source: str) -> dict:
    """``fleet: {file: fleet.yaml}`` names a fleet file (e.g. from ``slurm import-conf``)."""
    fleet = data.get("fleet")
    if isinstance(fleet, dict) and set(fleet) == {"file"}:
        base = Path(source).parent if not source.startswith("<") else Path.cwd()
        path = base / str(fleet["file"])
        loaded = read_yaml(path)
        if not isinstance(loaded, dict) or "fleet" not in loaded:
            raise InputError(str(path), "fleet",
                             "missing required field (a mapping with 'groups' or 'nodes')")
        try:  # a bad fleet file is named as itself, not as the scenario that points at it
            FleetSpec.model_validate(loaded["fleet"])
        except ValidationError as e:
            raise from_validation_error(str(path), e, "fleet") from None
        return {**data, "fleet": loaded["fleet"]}
    return data


def parse_scenario(data: Any, source: str) -> Scenario:
    if not isinstance(data, dict):
        raise InputError(source, "", "expected a mapping with 'fleet' and 'workload'")
    data = _inline_fleet_file(data, source)
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
