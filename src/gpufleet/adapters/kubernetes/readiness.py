"""The four layers between ``nvidia.com/gpu: 4`` in a pod and a container that runs CUDA.

driver → container toolkit → device plugin → allocatable, read from what a Node object shows:

1. **driver**: GFD writes ``nvidia.com/cuda.driver-version.*`` (or the older
   ``cuda.driver.major``) only when it could load NVML, so their absence beside GFD's other labels
   means no working driver; with no GFD label at all GFD is not deployed, which says nothing about
   the driver (unknown, not down; a registered device plugin shows it is loaded); the GPU
   Operator's ``nvidia.com/gpu.deploy.driver`` paused for an upgrade or
   ``nvidia.com/gpu-driver-upgrade-state=upgrade-failed`` name the operator's view.
2. **container toolkit**: ``nvidia.com/gpu.deploy.container-toolkit`` set to ``false`` or a
   ``paused-*`` value means the operator is not running the toolkit there.
3. **device plugin**: the plugin registers ``nvidia.com/gpu`` (or ``nvidia.com/mig-*``) in
   ``status.capacity``; none on a GPU node means it never registered. ``deploy.device-plugin``
   ``paused-for-mig-change`` and ``nvidia.com/mig.config.state`` ≠ ``success`` name a MIG change.
4. **allocatable**: ``allocatable < capacity`` counts GPUs the plugin marked unhealthy.

Before those, the node itself: ``Ready`` must be ``True`` and ``spec.unschedulable`` false. The
first failing layer is the one to fix; each carries its own one-line reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.adapters.kubernetes.gpu_labels import GpuFacts

#: Labels GPU Feature Discovery writes whether or not NVML loaded: one of them shows GFD ran here,
#: so missing driver-version labels beside it mean NVML failed; with none, GFD is not deployed.
GFD_LABELS = ("nvidia.com/gfd.timestamp", "nvidia.com/gpu.product", "nvidia.com/gpu.count",
              "nvidia.com/gpu.memory", "nvidia.com/gpu.family", "nvidia.com/gpu.machine")
DRIVER_LABELS = ("nvidia.com/cuda.driver-version.full", "nvidia.com/cuda.driver-version.major",
                 "nvidia.com/cuda.driver.major")


@dataclass(frozen=True, slots=True)
class Layer:
    name: str
    ok: bool
    detail: str


def _paused(value: str | None) -> bool:
    return bool(value) and value.startswith("paused")


def readiness(labels: dict[str, str], conditions: list[dict], unschedulable: bool,
              gpu: GpuFacts, dra_gpus: int = 0) -> tuple[Layer, ...]:
    """One ``Layer`` per step, in order; a GPU-less node reports the node layer only.

    ``dra_gpus``: GPU devices the node's DRA driver publishes in ResourceSlices; on a DRA node
    the driver's kubelet plugin plays the device plugin's part and nothing is in capacity."""
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    if ready is None:
        node = Layer("node", False, "no Ready condition reported")
    elif ready.get("status") != "True":
        why = ready.get("reason") or ready.get("message") or ""
        state = "Unknown (kubelet stopped heartbeating)" if ready.get("status") == "Unknown" else "False"
        node = Layer("node", False, f"Ready={state}" + (f": {why}" if why else ""))
    elif unschedulable:
        node = Layer("node", False, "cordoned (spec.unschedulable=true)")
    else:
        node = Layer("node", True, "Ready")
    if not gpu.is_gpu_node and not dra_gpus:
        return (node,)
    layers = [node]

    deploy = labels.get("nvidia.com/gpu.deploy.driver")
    upgrade = labels.get("nvidia.com/gpu-driver-upgrade-state", "")
    version = next((labels[k] for k in DRIVER_LABELS if labels.get(k)), "")
    if _paused(deploy):
        layers.append(Layer("driver", False, f"nvidia.com/gpu.deploy.driver={deploy}"))
    elif upgrade == "upgrade-failed":
        layers.append(Layer("driver", False, "nvidia.com/gpu-driver-upgrade-state=upgrade-failed"))
    elif not version and not any(k in labels for k in GFD_LABELS):
        # no GFD on this node: absent labels are no evidence either way; a registered device
        # plugin is (it enumerates GPUs through NVML, so the driver is loaded)
        registered_now = gpu.capacity + sum(c for c, _ in gpu.mig.values())
        layers.append(Layer("driver", True, f"driver not reported (no GPU Feature Discovery labels); the "
                            f"device plugin registered {registered_now} GPU(s), which needs a loaded driver"
                            if registered_now else "unknown: no GPU Feature Discovery labels on this node"))
    elif not version:
        layers.append(Layer("driver", False, "no nvidia.com/cuda.driver-version labels: GPU feature "
                            "discovery could not load the driver (NVML)"))
    else:
        how = " (pre-installed on the host)" if deploy == "pre-installed" else ""
        layers.append(Layer("driver", True, f"driver {version}{how}"))

    toolkit = labels.get("nvidia.com/gpu.deploy.container-toolkit")
    if toolkit == "false" or _paused(toolkit):
        layers.append(Layer("container-toolkit", False,
                            f"nvidia.com/gpu.deploy.container-toolkit={toolkit}"))
    else:
        seen = "deployed by the GPU Operator" if toolkit == "true" else "not managed by the GPU Operator"
        layers.append(Layer("container-toolkit", True, seen))

    plugin = labels.get("nvidia.com/gpu.deploy.device-plugin")
    mig_state = labels.get("nvidia.com/mig.config.state", "")
    registered = gpu.capacity + sum(c for c, _ in gpu.mig.values())
    if _paused(plugin):
        layers.append(Layer("device-plugin", False, f"nvidia.com/gpu.deploy.device-plugin={plugin}"
                            + (f" (mig.config.state={mig_state})" if mig_state else "")))
    elif mig_state and mig_state != "success":
        layers.append(Layer("device-plugin", False,
                            f"MIG reconfiguration: nvidia.com/mig.config.state={mig_state}"))
    elif plugin == "false":
        layers.append(Layer("device-plugin", False, "nvidia.com/gpu.deploy.device-plugin=false"))
    elif registered == 0 and dra_gpus:
        layers.append(Layer("device-plugin", True, f"{dra_gpus} GPU device(s) published in ResourceSlices "
                            "by the DRA driver"))
        layers.append(Layer("allocatable", True, f"{dra_gpus} allocatable through DRA claims"))
        return tuple(layers)
    elif registered == 0:
        layers.append(Layer("device-plugin", False, "no nvidia.com/gpu in status.capacity: the device "
                            "plugin has not registered any GPU"))
    else:
        layers.append(Layer("device-plugin", True, f"{registered} device(s) registered"))

    allocatable = gpu.allocatable + sum(a for _, a in gpu.mig.values())
    if registered and allocatable < registered:
        layers.append(Layer("allocatable", False, f"{registered - allocatable} of {registered} device(s) "
                            "unhealthy (allocatable < capacity)"))
    elif registered:
        layers.append(Layer("allocatable", True, f"{allocatable} allocatable"))
    else:
        layers.append(Layer("allocatable", False, "0 allocatable"))
    return tuple(layers)


def first_failure(layers: tuple[Layer, ...]) -> Layer | None:
    return next((la for la in layers if not la.ok), None)
