"""GPU facts from a Node's NFD / GPU Feature Discovery labels and its extended resources.

GFD writes ``nvidia.com/gpu.product`` with spaces turned into dashes, ``-MIG-<profile>`` under
the single MIG strategy, ``-SHARED`` for shared GPUs that are not renamed; ``gpu.count`` (MIG
devices under single), ``gpu.memory`` in MiB. The device plugin advertises ``nvidia.com/gpu``
(or ``nvidia.com/mig-<G>g.<M>gb`` per profile under mixed) in capacity and allocatable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpufleet.adapters.kubernetes.quantity import device_count
from gpufleet.model.catalog import UnknownGpuModel, canonical_gpu_name

GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE = re.compile(r"^nvidia\.com/mig-(\d+g\.\d+gb)$")
GPU_NODE_LABELS = ("feature.node.kubernetes.io/pci-10de.present",
                   "feature.node.kubernetes.io/pci-0302_10de.present",
                   "feature.node.kubernetes.io/pci-0300_10de.present", "nvidia.com/gpu.present")

#: Product-name patterns → catalog names, most specific first. GFD names are NVML's product
#: name with spaces as dashes ("NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-40GB", "Tesla-T4").
_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"GB200", "GB200"), (r"B200", "B200"), (r"H200", "H200-141GB"), (r"H100", "H100-80GB"),
    (r"A100.*40GB", "A100-40GB"), (r"A100", "A100-80GB"), (r"L40S", "L40S"),
)


#: The ``nvidia.com/gpu.product`` value GFD writes on nodes of each catalog model (NVML's
#: product name, spaces as dashes), for selecting them, and whether that value is sourced.
#: H100-80GB: the GFD README's example (docs/gpu-feature-discovery, k8s-reference §1.4).
#: A100-80GB, A100-40GB, H200-141GB, B200, L40S: values seen written by GFD on real nodes in
#: public cluster manifests (the SXM boards; PCIe and NVL boards report other names, e.g.
#: NVIDIA-A100-80GB-PCIe, which one label value cannot also select). GB200: not sourced.
GFD_PRODUCTS: dict[str, tuple[str, bool]] = {
    "H100-80GB": ("NVIDIA-H100-80GB-HBM3", True),
    "A100-80GB": ("NVIDIA-A100-SXM4-80GB", True),
    "A100-40GB": ("NVIDIA-A100-SXM4-40GB", True),
    "H200-141GB": ("NVIDIA-H200", True),
    "B200": ("NVIDIA-B200", True),
    "L40S": ("NVIDIA-L40S", True),
    "GB200": ("NVIDIA-GB200", False),
}


def gfd_product(model: str) -> tuple[str, bool]:
    """(the product label GFD writes for ``model``, whether that value is sourced); a model not
    in the table gets its own name, unsourced."""
    return GFD_PRODUCTS.get(model, (model, False))


def catalog_model(product: str) -> str:
    """Our catalog name for a GFD product, or the product itself (suffixes stripped) if unknown."""
    base = re.sub(r"-(MIG-.*|SHARED)$", "", product)
    try:
        return canonical_gpu_name(base)
    except UnknownGpuModel:
        pass
    for pattern, name in _PATTERNS:
        if re.search(pattern, base, re.IGNORECASE):
            return name
    return base


def _count(resources: dict, name: str) -> int:
    """A node's count of one device resource; a value that is not a whole count raises
    QuantityError (read_node names the node and field), never a silent 0."""
    return device_count(resources.get(name, 0))


@dataclass(frozen=True, slots=True)
class GpuFacts:
    product: str            # as GFD wrote it ("" when no label)
    model: str              # our catalog name, or the stripped product
    physical: int           # gpu.count label (GFD), else capacity
    capacity: int           # nvidia.com/gpu registered by the device plugin
    allocatable: int        # nvidia.com/gpu healthy and allocatable
    memory_mib: int
    mig_strategy: str
    mig: dict[str, tuple[int, int]]  # profile -> (capacity, allocatable) under mixed
    sharing: str
    replicas: int
    present: bool = False    # NFD/operator say an NVIDIA PCI device is there

    @property
    def is_gpu_node(self) -> bool:
        return self.present or bool(self.product) or self.capacity > 0 or bool(self.mig)


def gpu_facts(labels: dict[str, str], capacity: dict, allocatable: dict) -> GpuFacts:
    product = labels.get("nvidia.com/gpu.product", "")
    cap, alloc = _count(capacity, GPU_RESOURCE), _count(allocatable, GPU_RESOURCE)
    try:
        physical = int(labels.get("nvidia.com/gpu.count", "") or cap)
    except ValueError:
        physical = cap
    try:
        memory = int(labels.get("nvidia.com/gpu.memory", "0") or 0)
    except ValueError:
        memory = 0
    try:
        replicas = max(1, int(labels.get("nvidia.com/gpu.replicas", "1") or 1))
    except ValueError:
        replicas = 1
    mig = {}
    for name in sorted(set(capacity) | set(allocatable)):
        m = MIG_RESOURCE.match(name)
        if m:
            mig[m.group(1)] = (_count(capacity, name), _count(allocatable, name))
    present = any(labels.get(k) == "true" for k in GPU_NODE_LABELS)
    return GpuFacts(product=product, model=catalog_model(product) if product else ("unknown-gpu"
                    if present or cap or mig else ""), physical=physical, capacity=cap,
                    allocatable=alloc, memory_mib=memory,
                    mig_strategy=labels.get("nvidia.com/mig.strategy", "none"), mig=mig,
                    sharing=labels.get("nvidia.com/gpu.sharing-strategy", "none"), replicas=replicas,
                    present=present)
