"""The planners' inputs: prices and hardware figures, read from YAML and validated with pydantic.

Every figure lives in ``econ/defaults.yaml`` next to the source it came from (a dated price page,
a paper, or the word ASSUMPTION). A user's ``--inputs FILE`` has the same shape and only the keys
it changes; it is merged over the defaults, then validated, so a bad value gets one line naming
the file and the field. No planner holds a price or a timing as a constant.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpufleet.model.errors import InputError, from_validation_error


class _Section(BaseModel):
    """A section of figures plus ``sources``: figure name -> where the number comes from."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    sources: dict[str, str] = {}


class CapacityInputs(_Section):
    od_price_per_gpu_hr: float = Field(gt=0, le=1000)
    committed_ratio: float = Field(gt=0, le=1.5)
    capacity_block_price_per_gpu_hr: float = Field(gt=0, le=1000)
    capacity_block_days: int = Field(ge=1, le=182)
    gpus_per_node: int = Field(ge=1, le=72)
    term_hours: float = Field(gt=0, le=87600)
    spot_eligible_fraction: float = Field(ge=0, le=1)


class SpotInputs(_Section):
    price_ratio: float = Field(gt=0, le=2)
    checkpoint_write_min: float = Field(ge=0, le=1440)
    restart_min: float = Field(ge=0, le=1440)
    node_mtbi_h: float = Field(gt=0, le=100000)
    notice_s: float = Field(ge=0, le=3600)


class ColdstartInputs(_Section):
    model_params_b: float = Field(gt=0, le=10000)
    bytes_per_param: float = Field(gt=0, le=8)
    image_gb: float = Field(ge=0, le=1000)
    image_pull_gb_per_s: float = Field(gt=0, le=1000)
    lazy_pull_speedup: float = Field(gt=0, le=1)
    container_start_s: float = Field(ge=0, le=3600)
    weight_source_gb_per_s: float = Field(gt=0, le=1000)
    local_cache_gb_per_s: float = Field(gt=0, le=1000)
    engine_init_s: float = Field(ge=0, le=36000)
    first_token_cold_s: float = Field(ge=0, le=3600)
    first_token_warm_s: float = Field(ge=0, le=3600)
    snapshot_gb: float = Field(ge=0, le=10000)
    snapshot_restore_gb_per_s: float = Field(gt=0, le=1000)
    arrival_rate_per_s: float = Field(gt=0, le=1000)
    hold_s: float = Field(gt=0, le=86400)
    target_cold_probability: float = Field(gt=0, lt=1)
    gpu_price_per_hr: float = Field(gt=0, le=1000)

    @property
    def figures(self) -> dict[str, float]:
        return self.model_dump(exclude={"sources"})


class HostSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ram_gib: float = Field(gt=0, le=1e6)
    vcpus: float = Field(gt=0, le=1e5)
    gpus: int = Field(ge=0, le=1024)
    price_per_hr: float = Field(gt=0, le=1e5)


class TierSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    isolation: int = Field(ge=1, le=3)
    overhead_mib: float = Field(ge=0, le=1e6)
    start_ms: float | None = Field(default=None, ge=0, le=1e7)
    gpu: tuple[Literal["whole", "mig", "timeslice", "vgpu"], ...] = ()
    gpu_overhead_mib: float = Field(default=0.0, ge=0, le=1e7)


class SessionClass(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    share: float = Field(gt=0, le=1e6)
    memory_gib: float = Field(ge=0, le=1e5)
    vcpus: float = Field(ge=0, le=1e4)
    gpu: Literal["none", "whole", "mig", "timeslice", "vgpu"] = "none"
    isolation: int = Field(ge=1, le=3)


class SandboxInputs(_Section):
    sessions: int = Field(ge=1, le=100_000_000)
    cpu_host: HostSpec
    gpu_host: HostSpec
    usable_fraction: float = Field(gt=0, le=1)
    mig_slices_per_gpu: int = Field(ge=1, le=7)
    timeslice_replicas_per_gpu: int = Field(default=4, ge=1, le=1024)
    tiers: dict[str, TierSpec] = Field(min_length=1)
    mix: list[SessionClass] = Field(min_length=1)


class ServingInputs(_Section):
    trace: str | None = None
    gpu: str = Field(min_length=1)
    gpus_per_node: int = Field(ge=1, le=72)
    days: float = Field(gt=0, le=31)
    start_day: float = Field(ge=0, lt=31)
    headroom_nodes: int = Field(ge=0, le=1000)
    grace_s: float = Field(ge=0, le=86400)
    eviction_s: float = Field(ge=0, le=86400)
    detect_s: float = Field(ge=0, le=86400)
    model_load_s: float = Field(ge=0, le=86400)
    slo_s: float = Field(gt=0, le=86400)
    breach_target: float = Field(ge=0, le=1)
    checkpoint_s: float = Field(ge=0, le=86400)
    checkpoint_interval_s: float = Field(gt=0, le=1e7)
    training_restart_s: float = Field(ge=0, le=86400)
    training_gpus: int = Field(ge=1, le=72)
    training_hours: float = Field(gt=0, le=1000)
    floor_steps: int = Field(ge=2, le=50)


class EconInputs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    capacity: CapacityInputs
    spot: SpotInputs
    coldstart: ColdstartInputs
    sandboxes: SandboxInputs
    serving: ServingInputs


def default_data() -> dict[str, Any]:
    text = resources.files("gpufleet.econ").joinpath("defaults.yaml").read_text()
    return yaml.safe_load(text)


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Deep merge: mappings merge key by key, anything else in ``over`` replaces ``base``."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def load_inputs(path: str | Path | None = None) -> EconInputs:
    """The defaults, with the user's file merged over them; one-line ``InputError`` when bad."""
    data = default_data()
    source = "econ/defaults.yaml"
    if path is not None:
        p = Path(path)
        source = str(p)
        try:
            user = yaml.safe_load(p.read_text())
        except FileNotFoundError:
            raise InputError(source, "", "no such file") from None
        except (UnicodeDecodeError, yaml.YAMLError) as e:
            raise InputError(source, "", f"expected a YAML mapping of inputs ({type(e).__name__})") from None
        if user is None:
            raise InputError(source, "", "empty file; expected a YAML mapping such as 'capacity: {...}'")
        if not isinstance(user, dict):
            raise InputError(source, "", "expected a YAML mapping such as 'capacity: {...}'")
        data = merge(data, user)
    try:
        return EconInputs.model_validate(data)
    except ValidationError as e:
        raise from_validation_error(source, e) from None
