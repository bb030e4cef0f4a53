"""The GPU catalog: what each accelerator model brings to a scheduling decision.

Figures are vendor data-sheet numbers (NVIDIA H100, H200, A100, B200, GB200 and L40S product
briefs). ``nvlink_gbps`` is the *bidirectional* NVLink bandwidth per GPU in GB/s as NVIDIA quotes
it (900 GB/s on H100 = 450 GB/s per direction); 0 means no NVLink (PCIe only). ``bf16_tflops`` is
dense (no sparsity) BF16 tensor throughput, used by the step-time model.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GpuModel:
    name: str
    memory_gb: int
    nvlink_gbps: float
    mig_capable: bool
    bf16_tflops: float
    aliases: tuple[str, ...] = ()

    @property
    def nvlink_gbps_per_direction(self) -> float:
        return self.nvlink_gbps / 2


CATALOG: dict[str, GpuModel] = {
    m.name: m
    for m in (
        GpuModel("H100-80GB", 80, 900.0, True, 989.0, ("H100", "H100-SXM", "H100-80GB-SXM")),
        GpuModel("H200-141GB", 141, 900.0, True, 989.0, ("H200", "H200-SXM")),
        GpuModel("A100-80GB", 80, 600.0, True, 312.0, ("A100", "A100-SXM", "A100-80GB-SXM")),
        GpuModel("A100-40GB", 40, 600.0, True, 312.0, ("A100-SXM4-40GB",)),
        GpuModel("B200", 180, 1800.0, True, 2250.0, ("B200-180GB",)),
        GpuModel("GB200", 186, 1800.0, True, 2500.0, ("GB200-NVL72",)),
        GpuModel("L40S", 48, 0.0, False, 362.0, ("L40S-48GB",)),
    )
}

_BY_ALIAS: dict[str, str] = {
    key.lower(): m.name for m in CATALOG.values() for key in (m.name, *m.aliases)
}


class UnknownGpuModel(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(f"unknown GPU model {name!r}; expected one of {', '.join(sorted(CATALOG))}")
        self.name = name


def canonical_gpu_name(name: str) -> str:
    """The catalog name for ``name`` or one of its aliases (case-insensitive)."""
    try:
        return _BY_ALIAS[name.strip().lower()]
    except KeyError:
        raise UnknownGpuModel(name) from None


def gpu_model(name: str) -> GpuModel:
    return CATALOG[canonical_gpu_name(name)]
