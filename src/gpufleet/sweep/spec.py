"""Sweep files: a grid of scenarios × policies × seeds × parameters, validated with pydantic.

```yaml
name: example
scenarios: [default, my-scenario.yaml, {fleet: fleet.yaml, trace: jobs.jsonl}]
policies: [gang-bestfit, gang-easy, per-pod]
seeds: 5                      # or a list: [1, 2, 3]
parameters:                   # each axis a list; the grid is their Cartesian product
  fleet_scale: [0.5, 1.0]     # multiplies every node group's node count
  offered_load: [0.7, 0.9]    # workload.generator.offered_load
  days: [2]                   # workload.generator.days
  cycle_interval_s: [0, 60]   # scheduling cadence
  quota_scale: [1.0, 1.5]     # multiplies every tenancy quota
  workload.generator.max_gpus: [64]   # any other scenario field, by its dotted path
metrics: [wait_p50_s, gpu_allocation_pct]   # what the report compares (default: a standard set)
```

One *cell* is one (scenario, parameter setting, policy, seed): one simulation. Its id is a hash of
exactly that, so a finished cell is found again on resume however the grid around it changes.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gpufleet.model.errors import InputError, from_validation_error
from gpufleet.model.fleet_config import read_yaml
from gpufleet.policies.registry import PROFILES
from gpufleet.sim.scenario import bundled_names, parse_scenario
from gpufleet.sweep.columns import metric_names

#: Named parameters and the scenario field each one sets (see ``apply_parameters``).
NAMED = {"fleet_scale", "offered_load", "days", "max_gpus", "cycle_interval_s", "quota_scale"}

DEFAULT_METRICS = ["wait_p50_s", "wait_p95_s", "gpu_allocation_pct", "jct_mean_s", "stranded_gpus_avg"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TraceEntry(_Strict):
    """A trace (gpufleet JSON lines) replayed on a fleet file, like ``simulate --fleet --trace``."""

    fleet: str
    trace: str
    name: str | None = None


class SweepSpec(_Strict):
    name: str = "sweep"
    description: str = ""
    scenarios: list[str | TraceEntry] = Field(min_length=1)
    policies: list[str] = Field(min_length=1)
    seeds: int | list[int] = Field(default=3)
    parameters: dict[str, list[float | int | str]] = Field(default_factory=dict)
    metrics: list[str] = Field(default_factory=lambda: list(DEFAULT_METRICS), min_length=1)

    @field_validator("policies")
    @classmethod
    def _known_policies(cls, v: list[str]) -> list[str]:
        for p in v:
            if p not in PROFILES:
                raise ValueError(f"unknown policy {p!r}; expected one of {', '.join(PROFILES)}")
        if len(set(v)) != len(v):
            raise ValueError("a policy is listed twice")
        return v

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, v: int | list[int]) -> int | list[int]:
        if isinstance(v, int) and not 1 <= v <= 10_000:
            raise ValueError("expected a count of seeds from 1 to 10000, or a list of seeds")
        if isinstance(v, list) and (not v or len(set(v)) != len(v)):
            raise ValueError("expected a non-empty list of distinct seeds")
        return v

    @field_validator("parameters")
    @classmethod
    def _axes(cls, v: dict[str, list]) -> dict[str, list]:
        for k, values in v.items():
            if not values:
                raise ValueError(f"parameter {k!r} has no values")
            if k not in NAMED and "." not in k:
                raise ValueError(f"unknown parameter {k!r}; expected one of {', '.join(sorted(NAMED))} "
                                 "or a dotted scenario field such as workload.generator.max_gpus")
            for x in values:
                if isinstance(x, float) and x != x:
                    raise ValueError(f"parameter {k!r} has NaN; expected numbers")
        return v

    @model_validator(mode="after")
    def _grid_size(self) -> SweepSpec:
        n = len(self.scenarios) * len(self.policies) * len(self.seed_list())
        for values in self.parameters.values():
            n *= len(values)
        if n > 1_000_000:
            raise ValueError(f"the grid has {n:,} cells; expected at most 1,000,000")
        return self

    def seed_list(self) -> list[int]:
        return list(range(1, self.seeds + 1)) if isinstance(self.seeds, int) else list(self.seeds)


@dataclass(frozen=True)
class Cell:
    """One simulation of the grid. ``scenario_data`` is the scenario's YAML as data (parameters not
    yet applied); ``source`` resolves relative paths in it. Plain data, so it pickles to any worker."""

    scenario: str
    scenario_data: dict
    source: str
    policy: str
    seed: int
    params: tuple[tuple[str, Any], ...]

    @property
    def key(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "policy": self.policy, "seed": self.seed, **dict(self.params)}

    @property
    def id(self) -> str:
        """Hash of the scenario's content, the parameters, the policy and the seed."""
        blob = json.dumps({"data": self.scenario_data, "source": self.source, **self.key},
                          sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _scenario_data(entry: str | TraceEntry, base: Path, source: str, field: str) -> tuple[str, dict, str]:
    """(label, raw scenario mapping, source) for one ``scenarios`` entry."""
    if isinstance(entry, TraceEntry):
        fleet, trace = (base / entry.fleet).resolve(), (base / entry.trace).resolve()
        for p in (fleet, trace):
            if not p.is_file():
                raise InputError(source, field, f"{p}: no such file")
        label = entry.name or trace.stem
        return label, {"name": label, "fleet": {"file": str(fleet)}, "workload": {"trace": str(trace)},
                       "policies": ["gang-bestfit"]}, str(trace)
    path = base / entry
    if path.is_file() or entry.endswith((".yaml", ".yml")):
        data = read_yaml(path)
        if not isinstance(data, dict):
            raise InputError(str(path), "", "expected a scenario mapping with 'fleet' and 'workload'")
        return str(data.get("name", path.stem)), data, str(path.resolve())
    if entry in bundled_names():
        ref = resources.files("gpufleet.scenarios").joinpath(f"{entry}.yaml")
        return entry, read_yaml(Path(str(ref))), f"<bundled {entry}.yaml>"
    raise InputError(source, field,
                     f"{entry!r}: no such file, and not a bundled scenario ({', '.join(bundled_names())})")


def apply_parameters(data: dict, params: dict[str, Any]) -> dict:
    """The scenario mapping with one parameter setting applied (a deep copy; ``data`` is untouched).

    ``fleet_scale`` s multiplies each node group's ``nodes`` (rounded, at least 1): 64 nodes × 0.5 = 32.
    ``quota_scale`` q multiplies every tenant's quota of every GPU model: 128 GPUs × 1.5 = 192.
    """
    out = copy.deepcopy(data)
    for key, value in params.items():
        if key == "fleet_scale":
            groups = out.get("fleet", {}).get("groups")
            if not groups:
                raise ValueError("fleet_scale needs a fleet given as 'groups'")
            for g in groups:
                g["nodes"] = max(1, round(g["nodes"] * float(value)))
        elif key == "quota_scale":
            tenants = (out.get("tenancy") or {}).get("tenants")
            if not tenants:
                raise ValueError("quota_scale needs a scenario with tenancy.tenants")
            for t in tenants:
                t["quotas"] = {m: q * float(value) for m, q in (t.get("quotas") or {}).items()}
        elif key in ("offered_load", "days", "max_gpus"):
            gen = out.get("workload", {}).get("generator")
            if gen is None:
                raise ValueError(f"{key} needs a scenario whose workload has a 'generator'")
            gen[key] = value
        elif key == "cycle_interval_s":
            out["cycle_interval_s"] = value
        else:
            _set_path(out, key.split("."), value)
    return out


def _set_path(data: Any, path: list[str], value: Any) -> None:
    for i, part in enumerate(path[:-1]):
        if isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        elif isinstance(data, dict) and part in data:
            data = data[part]
        else:
            raise ValueError(f"parameter {'.'.join(path)}: the scenario has no {'.'.join(path[:i + 1])}")
    last = path[-1]
    if isinstance(data, list) and last.isdigit():
        data[int(last)] = value
    elif isinstance(data, dict):
        data[last] = value
    else:
        raise ValueError(f"parameter {'.'.join(path)}: cannot set a field of a {type(data).__name__}")


class Sweep:
    """A validated sweep: its spec, where it came from, and its cells in a stable order."""

    def __init__(self, spec: SweepSpec, source: str, base: Path) -> None:
        self.spec = spec
        self.source = source
        self.scenarios = [_scenario_data(e, base, source, f"scenarios[{i}]")
                          for i, e in enumerate(spec.scenarios)]
        labels = [s[0] for s in self.scenarios]
        if len(set(labels)) != len(labels):
            raise InputError(source, "scenarios", "two scenarios share a name; give each a distinct name")
        self.cells = self._expand()
        self._check_metrics()

    def _check_metrics(self) -> None:
        """Every metric the report compares must be a column a cell writes: checked on an empty
        simulation of the first scenario's fleet (milliseconds), before any cell runs."""
        label, data, source = self.scenarios[0]
        known = metric_names(parse_scenario(data, source).fleet)
        for m in self.spec.metrics:
            if m not in known:
                raise InputError(self.source, "metrics",
                                 f"unknown metric {m!r}; expected one of {', '.join(sorted(known))}")

    def _expand(self) -> list[Cell]:
        axes = list(self.spec.parameters.items())
        settings = [tuple(zip([k for k, _ in axes], combo, strict=True))
                    for combo in itertools.product(*(v for _, v in axes))]
        cells = []
        for label, data, source in self.scenarios:
            for params in settings:
                try:  # validate each setting once, here: a bad setting is one line before any run
                    parse_scenario(apply_parameters(data, dict(params)), source)
                except ValueError as e:
                    raise InputError(self.source, "parameters", f"scenario {label}: {e}") from None
                except InputError as e:
                    raise InputError(self.source, "parameters",
                                     f"scenario {label} with {dict(params)}: {e}") from None
                for policy in self.spec.policies:
                    for seed in self.spec.seed_list():
                        cells.append(Cell(label, data, source, policy, seed, params))
        return cells

    @property
    def parameter_names(self) -> list[str]:
        return list(self.spec.parameters)


def parse_sweep(data: Any, source: str, base: Path | None = None) -> Sweep:
    if not isinstance(data, dict):
        raise InputError(source, "", "expected a mapping with 'scenarios' and 'policies'")
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as e:
        raise from_validation_error(source, e) from None
    return Sweep(spec, source, base if base is not None else Path.cwd())


def load_sweep(path: str | Path) -> Sweep:
    p = Path(path)
    return parse_sweep(read_yaml(p), str(p), p.parent)


def bundled_sweep() -> Sweep:
    """The example sweep shipped with gpufleet: what ``gpufleet sweep`` runs with no SPEC."""
    ref = resources.files("gpufleet.sweep").joinpath("example.yaml")
    return parse_sweep(read_yaml(Path(str(ref))), "<bundled sweep example.yaml>")
