"""The vocabulary of a node diagnosis: layers in isolation order, actions, and one finding.

Why this order: each layer depends on the one before it (ops-reference §0). A GPU that fell off the
PCI bus breaks the driver's view of it, which breaks NVML, which breaks the container toolkit and the
device plugin, which zeroes the node's allocatable GPUs. Walking the layers top-down and stopping at
the first one with a *current* fault names the cause; everything below it is collateral. Thermal and
power come last because they are slow-burning conditions that rarely explain an outage by themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

Layer = Literal[
    "none",
    "hardware_pci",
    "kernel_driver",
    "gpu_xid",
    "nvlink_fabric",
    "container_toolkit",
    "device_plugin",
    "kubernetes",
    "network_rdma",
    "thermal_power",
]

#: Every layer but "none", in isolation order (the order of ``Layer`` itself).
LAYER_ORDER: tuple[Layer, ...] = get_args(Layer)[1:]

Action = Literal[
    "none",
    "reset_gpu",
    "reboot",
    "drain_and_rma",
    "restart_fabricmanager",
    "reinstall_driver",
    "fix_runtime_config",
    "restart_device_plugin",
    "remove_taint",
    "reseat_or_replace_cable",
]

# How severe an action is, for picking the strongest one inside the root-cause layer
# (two findings in one layer: a pending row remap wants a reset, a remap *failure* wants an RMA).
ACTION_WEIGHT: dict[str, int] = {
    "none": 0,
    "remove_taint": 1,
    "restart_device_plugin": 2,
    "fix_runtime_config": 3,
    "restart_fabricmanager": 4,
    "reinstall_driver": 5,
    "reset_gpu": 6,
    "reseat_or_replace_cable": 7,
    "reboot": 8,
    "drain_and_rma": 9,
}

# Which source kinds can speak for each layer: a layer is "checked" only when the bundle holds
# at least one of them, and "healthy" when it is checked and nothing current was found there.
LAYER_SOURCES: dict[str, frozenset[str]] = {
    "hardware_pci": frozenset(
        {"dmesg", "lspci-vvv", "lspci-nn", "nvidia-smi", "nvidia-smi-q", "nvidia-smi-L"}
    ),
    "kernel_driver": frozenset({"dmesg", "lsmod", "modprobe", "nvidia-smi", "nvidia-smi-q", "nvidia-smi-L"}),
    "gpu_xid": frozenset({"dmesg", "nvidia-smi", "nvidia-smi-q", "nv-hostengine", "nvidia-smi-mig"}),
    "nvlink_fabric": frozenset(
        {"nvidia-smi-nvlink-status", "fabricmanager", "systemctl-fabricmanager", "nvidia-smi-q", "dmesg"}
    ),
    "container_toolkit": frozenset(
        {"nvidia-container-cli-info", "docker-run", "device-plugin", "pod-events"}
    ),
    "device_plugin": frozenset({"device-plugin", "node-json", "kubectl-describe-node"}),
    "kubernetes": frozenset({"node-json", "kubectl-describe-node", "pod-events"}),
    "network_rdma": frozenset({"ibstat", "sys-class-infiniband", "nccl-log", "lspci-vvv", "dmesg"}),
    "thermal_power": frozenset({"nvidia-smi-q", "nvidia-smi", "dmesg", "nv-hostengine"}),
}


@dataclass(frozen=True)
class Evidence:
    """One line that made us say something, with where it came from (file and 1-based line)."""

    file: str
    line: int
    text: str

    def render(self) -> str:
        return f"{self.file}:{self.line}: {self.text.strip()}"


@dataclass
class Finding:
    """Something a rule or a parser saw. ``normal`` findings are explained-away observations
    (idle PCIe gen, power cap under load, known noise); ``history`` ones were cleared by a restart."""

    layer: Layer
    failure: str
    action: Action
    confirm: str
    evidence: list[Evidence] = field(default_factory=list)
    rule: str = ""
    normal: bool = False
    history: bool = False
    collateral_of: str = ""
    #: the device a finding is about (a GPU's PCI address "0000:52:00", an NVSwitch's), when the line
    #: names one: a later line about the same device can supersede it (``ops.supersede``)
    subject: str = ""
