"""Rules as data: a line pattern → (layer, failure, action, confirming command).

Adding a failure mode is one row in ``RULES``; adding an Xid is one row in ``xid.XID``. The strings are the
literal ones the components print (ops-reference §1.3, §2, §7.2), so a rule is only as good as its
pattern: keep them anchored on the component's own words, never on our paraphrase.

``normal=True`` rows recognise messages that look alarming and are not faults (the operator must
not drain a node because the fabric manager says "nothing to do" on a machine with no NVSwitch).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpufleet.ops.layers import Action, Layer


@dataclass(frozen=True)
class Rule:
    id: str
    pattern: re.Pattern[str]
    layer: Layer
    failure: str
    action: Action
    confirm: str
    kinds: frozenset[str] | None = None  # None: any text source
    normal: bool = False


def _r(
    id: str,
    pattern: str,
    layer: Layer,
    failure: str,
    action: Action,
    confirm: str,
    kinds: tuple[str, ...] | None = None,
    normal: bool = False,
) -> Rule:
    return Rule(
        id, re.compile(pattern), layer, failure, action, confirm, frozenset(kinds) if kinds else None, normal
    )


RULES: tuple[Rule, ...] = (
    # --- 1. PCI / hardware present -------------------------------------------------------------
    _r(
        "fallen-off-bus",
        r"fallen off the bus|GPU has fallen off",
        "hardware_pci",
        "GPU fell off the PCIe bus",
        "reboot",
        "lspci -nn | grep -i 10de; nvidia-smi -L  (if it repeats after reboot: power/riser/SBIOS, then RMA)",
    ),
    _r(
        "gpu-lost",
        r"GPU is lost",
        "hardware_pci",
        "GPU is lost to the driver (off the bus)",
        "reboot",
        "lspci -nn | grep -i 10de; dmesg | grep -i 'fallen off'",
    ),
    _r(
        "rminit-failed",
        r"RmInitAdapter failed|rm_init_adapter failed",
        "hardware_pci",
        "the driver could not initialise the GPU (RmInitAdapter failed)",
        "reboot",
        "dmesg | grep -i RmInitAdapter; lspci -vvv -d 10de: | grep LnkSta",
    ),
    _r(
        "aux-power",
        r"Xid.*\b54,|auxiliary power",
        "hardware_pci",
        "GPU auxiliary power not connected",
        "reseat_or_replace_cable",
        "check the GPU's power cables",
    ),
    # --- 2. kernel module loaded and matching --------------------------------------------------
    _r(
        "api-mismatch",
        r"NVRM: API mismatch",
        "kernel_driver",
        "kernel module and userspace driver libraries differ (upgrade without reboot or reload)",
        "reboot",
        "cat /proc/driver/nvidia/version; modinfo -F version nvidia",
    ),
    _r(
        "nvml-mismatch",
        r"Driver/library version mismatch|driver/library version mismatch",
        "kernel_driver",
        "kernel module and userspace driver libraries differ (upgrade without reboot or reload)",
        "reboot",
        "cat /proc/driver/nvidia/version; modinfo -F version nvidia",
    ),
    _r(
        "smi-no-driver",
        r"couldn't communicate with the NVIDIA driver",
        "kernel_driver",
        "the NVIDIA kernel module is not loaded or failed to initialise",
        "reinstall_driver",
        "lsmod | grep nvidia; dkms status; mokutil --sb-state; dmesg | grep -i nvrm",
    ),
    _r(
        "nvml-driver-not-loaded",
        r"nvml error: driver not loaded|ERROR_DRIVER_NOT_LOADED",
        "kernel_driver",
        "the NVIDIA kernel module is not loaded",
        "reinstall_driver",
        "lsmod | grep nvidia; modprobe nvidia; dkms status",
    ),
    _r(
        "probe-not-called",
        r"probe routine was not called|No NVIDIA graphics adapter probed|"
        r"already bound to NovaCore",
        "kernel_driver",
        "another driver (nouveau / nova_core) owns the GPU",
        "reinstall_driver",
        "lsmod | grep -e nouveau -e nova; cat /etc/modprobe.d/*nouveau*",
    ),
    _r(
        # kmod (2011+) prints "modprobe: FATAL: Module nvidia not found in directory /lib/modules/<kver>";
        # module-init-tools before it printed just "FATAL: Module nvidia not found." (Bumblebee #71)
        "module-missing",
        r"FATAL: Module nvidia[\w-]* not found",
        "kernel_driver",
        "the NVIDIA module is not built for the running kernel",
        "reinstall_driver",
        "uname -r; dkms status",
    ),
    _r(
        "key-rejected",
        r"could not insert 'nvidia': Key was rejected",
        "kernel_driver",
        "Secure Boot rejected the unsigned NVIDIA module",
        "reinstall_driver",
        "mokutil --sb-state",
    ),
    _r(
        "open-modules-required",
        r"requires use of the NVIDIA open kernel modules",
        "kernel_driver",
        "this GPU needs the open kernel modules, the proprietary flavour is installed",
        "reinstall_driver",
        "modinfo nvidia | grep license",
    ),
    _r(
        "gpu-unsupported",
        r"is not supported by the\s*(NVRM: )?NVIDIA [0-9.]+ driver release|"
        r"installed in this system is not supported by the",
        "kernel_driver",
        "the installed driver release does not support this GPU",
        "reinstall_driver",
        "nvidia-smi -L; modinfo -F version nvidia",
    ),
    _r(
        "no-devices",
        r"^No devices were found",
        "kernel_driver",
        "the driver is loaded but sees no usable GPU",
        "reboot",
        "lspci -nn | grep -i 10de; dmesg | grep -i nvrm",
        kinds=("nvidia-smi", "nvidia-smi-L"),
    ),
    # --- 4. NVLink / NVSwitch / fabric manager -------------------------------------------------
    _r(
        "fm-version",
        r"fabric manager NVIDIA GPU driver interface version .* match",
        "nvlink_fabric",
        "fabric manager version differs from the driver version (they must be equal)",
        "reinstall_driver",
        "nvidia-smi | head -4; nv-fabricmanager --version; systemctl status nvidia-fabricmanager",
    ),
    _r(
        "fm-topology",
        r"detected number of NVSwitches don't match",
        "nvlink_fabric",
        "an NVSwitch is missing or failed; fabric manager aborted",
        "drain_and_rma",
        "lspci -nn | grep -i 10de; journalctl -u nvidia-fabricmanager",
    ),
    _r(
        "fm-nothing-to-do",
        r"NV_WARN_NOTHING_TO_DO",
        "nvlink_fabric",
        "fabric manager found no NVSwitch: not needed on this machine",
        "none",
        "lspci -nn | grep -i nvswitch",
        normal=True,
    ),
    _r(
        "fm-not-installed",
        r"Unit nvidia-fabricmanager\.service could not be found",
        "nvlink_fabric",
        "fabric manager is not installed (needed only on NVSwitch systems)",
        "none",
        "lspci -nn | grep -i nvswitch",
        normal=True,
    ),
    _r(
        "cuda-802",
        r"Error 802|system not yet initialized|cudaErrorSystemNotReady",
        "nvlink_fabric",
        "CUDA reports the system not initialised (NVSwitch fabric not up: fabric manager down)",
        "restart_fabricmanager",
        "systemctl status nvidia-fabricmanager; nvidia-smi -q | grep -A2 Fabric",
    ),
    # kernel SXid lines are read by scan.SXID_RE (code and severity); these are fabric manager's words
    _r(
        "fm-sxid-fatal",
        r"detected NVSwitch fatal error",
        "nvlink_fabric",
        "fatal NVSwitch error reported by fabric manager (SXid)",
        "reboot",
        "journalctl -u nvidia-fabricmanager; nvidia-smi nvlink -e",
    ),
    _r(
        "fm-sxid-nonfatal",
        r"detected NVSwitch non-fatal error",
        "nvlink_fabric",
        "non-fatal NVSwitch error reported by fabric manager (SXid)",
        "none",
        "nvidia-smi nvlink -e",
        normal=True,
    ),
    _r(
        # `nvidia-smi nvlink -s` on a GPU whose links never trained (gpud #1085, B200): no Link rows
        "nvlink-all-inactive",
        r"Unable to retrieve NVLink information as all links are inActive",
        "nvlink_fabric",
        "every NVLink of a GPU is inactive (NVLink discovery failed)",
        "reboot",
        "nvidia-smi nvlink -s; nvidia-smi -q | grep -A3 Fabric; dmesg | grep -i -e nvlink -e xid",
    ),
    # --- 3. GPU state: MIG mode changes that wait for a reset --------------------------------------
    _r(
        # `nvidia-smi -mig 1` when the reset it needs is refused (gpu-operator #1845), and mig-manager's
        # own debug line for the same state (gpu-operator #668)
        "mig-pending-log",
        r"MIG mode is in pending (enable|disable) state|Mode change pending: true",
        "gpu_xid",
        "MIG mode change pending: it takes effect only after a GPU reset (or a reboot)",
        "reset_gpu",
        "nvidia-smi -q | grep -A2 'MIG Mode'  (Current differs from Pending); "
        "nvidia-smi --gpu-reset -i <gpu>",
    ),
    # --- 5. container toolkit / runtime --------------------------------------------------------
    _r(
        "no-gpu-driver-docker",
        r'could not select device driver "[^"]*" with capabilities: \[\[gpu\]\]',
        "container_toolkit",
        "Docker has no NVIDIA runtime: the container toolkit is not installed or configured",
        "fix_runtime_config",
        "nvidia-ctk runtime configure --runtime=docker && systemctl restart docker",
    ),
    _r(
        "no-nvidia-runtime",
        r'no runtime for "nvidia" is configured',
        "container_toolkit",
        "RuntimeClass nvidia exists but the container runtime has no nvidia handler",
        "fix_runtime_config",
        "nvidia-ctk runtime configure --runtime=containerd; grep -n nvidia /etc/containerd/config.toml",
    ),
    _r(
        "cdi-unresolvable",
        r"unresolvable CDI devices",
        "container_toolkit",
        "CDI spec missing or stale (after a driver upgrade?)",
        "fix_runtime_config",
        "nvidia-ctk cdi list; nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml",
    ),
    _r(
        "ncc-libnvml-missing",
        r"load library failed: libnvidia-ml\.so\.1",
        "container_toolkit",
        "the toolkit cannot find the driver's userspace libraries (wrong driver root?)",
        "fix_runtime_config",
        "nvidia-container-cli -k -d /dev/tty info; grep root /etc/nvidia-container-runtime/config.toml",
    ),
    _r(
        "ncc-requirement",
        r"requirement error: unsatisfied condition",
        "container_toolkit",
        "the image needs a newer CUDA than the host driver supports",
        "none",
        "nvidia-smi | head -4  (or set NVIDIA_DISABLE_REQUIRES=true)",
    ),
    _r(
        "ncc-failed-request",
        r"nvidia-container-cli: initialization error: driver error",
        "container_toolkit",
        "nvidia-container-cli failed to talk to the driver",
        "fix_runtime_config",
        "nvidia-container-cli -k -d /dev/tty info",
    ),
    _r(
        "plugin-nvml-load",
        r"could not load NVML library|ERROR_LIBRARY_NOT_FOUND",
        "container_toolkit",
        "the device plugin cannot load NVML: the runtime did not inject the driver (nvidia not the default "
        "runtime, or no RuntimeClass)",
        "fix_runtime_config",
        "kubectl get runtimeclass; grep default_runtime_name /etc/containerd/config.toml",
    ),
    _r(
        "plugin-strategy",
        r"Incompatible strategy detected",
        "container_toolkit",
        "the device plugin found neither NVML nor Tegra: the toolkit is not configured",
        "fix_runtime_config",
        "kubectl get runtimeclass; grep default_runtime_name /etc/containerd/config.toml",
    ),
    # --- 6. device plugin ------------------------------------------------------------------------
    _r(
        "plugin-unhealthy",
        r"device marked unhealthy|marking device as unhealthy|the device will go unhealthy",
        "device_plugin",
        "the device plugin marked a GPU unhealthy; it stays so until the plugin restarts",
        "restart_device_plugin",
        "kubectl -n gpu-operator logs ds/nvidia-device-plugin-daemonset | grep -i unhealthy",
    ),
    _r(
        "plugin-no-devices",
        r"No devices found\. Waiting indefinitely",
        "device_plugin",
        "the device plugin sees no GPU",
        "restart_device_plugin",
        "kubectl logs <device-plugin pod>",
    ),
    _r(
        "plugin-register",
        r"Could not register device plugin|Failed to start one or more plugins|"
        r"has repeatedly crashed recently",
        "device_plugin",
        "the device plugin cannot register with the kubelet",
        "restart_device_plugin",
        "ls -l /var/lib/kubelet/device-plugins/; journalctl -u kubelet | grep -i device",
    ),
    _r(
        "plugin-kubelet-restart",
        r"inotify: .*kubelet\.sock created, restarting",
        "device_plugin",
        "kubelet restarted; the plugin re-registered (normal)",
        "none",
        "",
        normal=True,
    ),
    _r(
        "mig-invalid",
        r"Invalid configuration detected for mig-strategy|MIG-INVALID|invalid MIG configuration|"
        r"device with migEnabled=true was not configured correctly",
        "device_plugin",
        "the MIG layout does not fit the device plugin's MIG strategy",
        "restart_device_plugin",
        "nvidia-smi mig -lgi; kubectl get node -o jsonpath='{.metadata.labels}' | tr , '\\n' | grep mig",
    ),
    # --- 7. kubernetes ---------------------------------------------------------------------------
    _r(
        "admission-unhealthy",
        r"no healthy devices present; cannot allocate unhealthy devices",
        "kubernetes",
        "kubelet rejected the pod: no healthy GPUs registered (plugin not registered or devices unhealthy)",
        "restart_device_plugin",
        "kubectl get node -o json | jq '.items[].status.allocatable'",
    ),
    _r(
        "admission-unregistered",
        r"cannot allocate unregistered device",
        "kubernetes",
        "kubelet rejected the pod: the GPU resource is not registered",
        "restart_device_plugin",
        "kubectl get node -o json | jq '.items[].status.capacity'",
    ),
    # --- 9. NIC / RDMA ---------------------------------------------------------------------------
    _r(
        "nccl-no-ib",
        r"NET/IB : No device found",
        "network_rdma",
        "NCCL found no active IB/RoCE port and fell back to sockets",
        "reseat_or_replace_cable",
        "ibstat; cat /sys/class/infiniband/*/ports/*/state",
    ),
    _r(
        "nccl-socket",
        r"Using network Socket",
        "network_rdma",
        "NCCL is using the Socket transport, not IB",
        "reseat_or_replace_cable",
        "ibstat; lsmod | grep -e mlx5 -e ib_",
    ),
    _r(
        "nccl-ib-fatal",
        r"NET/IB : .* async fatal event",
        "network_rdma",
        "HCA fatal async event during NCCL run",
        "reseat_or_replace_cable",
        "ibstat; dmesg | grep mlx5",
    ),
    _r(
        "mlx5-cable",
        r"Port module event\[error\]|Cable error|insufficient power on the PCIe slot",
        "network_rdma",
        "NIC cable/module or slot power error",
        "reseat_or_replace_cable",
        "mlxlink -d <dev> ; dmesg | grep mlx5",
    ),
    _r(
        "mlx5-noise",
        r"ACCESS_REG\(0x805\).*failed",
        "network_rdma",
        "mlx5 ACCESS_REG noise from counter reads on restricted PFs (harmless)",
        "none",
        "",
        normal=True,
    ),
    _r(
        "peermem-noise",
        r"nvidia-peermem nv_get_p2p_free_callback.*invalid context",
        "network_rdma",
        "nvidia-peermem free-callback message (seen on healthy GDR nodes)",
        "none",
        "",
        normal=True,
    ),
    # --- 10. thermal / power ----------------------------------------------------------------------
    _r(
        # DCGM's health watch (nv-hostengine.log): DCGM_FR_CLOCKS_EVENT_THERMAL "Detected clocks event
        # due to thermal violation in GPU %u." (DCGM #270); before NVML renamed throttle reasons to
        # clock-event reasons it was DCGM_FR_CLOCK_THROTTLE_THERMAL "Detected clock throttling due to
        # thermal violation in GPU %u." (NVIDIA/DCGM dcgmlib/dcgm_errors.h) — power likewise
        "dcgm-clocks-event",
        r"clocks? (event|throttling) due to (thermal|power) violation",
        "thermal_power",
        "DCGM saw the clocks held down by a thermal or power violation",
        "none",
        "dcgmi health -c; nvidia-smi -q -d PERFORMANCE,TEMPERATURE  (check airflow, PSU)",
    ),
    # --- harmless kernel chatter -----------------------------------------------------------------
    _r(
        "taint-noise",
        r"loading out-of-tree module taints kernel|module license .* taints kernel|"
        r"module verification failed",
        "kernel_driver",
        "kernel taint notice for the NVIDIA module (harmless)",
        "none",
        "",
        normal=True,
    ),
)

# Cross-line context: findings of these rules in an NCCL log whose run is one host over loopback only
# (``nccl_env.single_node_loopback``) are normal — the network transport is not used inside a node.
NCCL_LOOPBACK_EXPLAINS = frozenset({"nccl-no-ib", "nccl-socket"})
NCCL_LOOPBACK_NOTE = (
    "single-node NCCL run over loopback (lo): its GPUs talk over NVLink/PCIe/shared memory and the "
    "network transport is unused — not a fabric fault"
)

# Lines that mark a restart of the component that wrote the file: what came before is history.
RESTART_MARKERS: dict[str, re.Pattern[str]] = {
    "dmesg": re.compile(r"Linux version \d|NVRM: loading NVIDIA UNIX|^-- Boot [0-9a-f]+ --$|^-- Reboot --$"),
    "device-plugin": re.compile(
        r"Starting NVIDIA Device Plugin|Starting FS watcher|Starting Plugins\.|^\S+ \S+ Loading NVML$"
    ),
    "fabricmanager": re.compile(r"Fabric Manager version|Starting NVIDIA fabric manager"),
    "systemctl-fabricmanager": re.compile(r"Started NVIDIA fabric manager"),
    "nv-hostengine": re.compile(r"Started host engine|nv-hostengine version"),
}
# A kernel *boot* clears everything before it; a driver reload clears it only if a live check agrees.
BOOT_MARKER = re.compile(r"Linux version \d|^-- Boot [0-9a-f]+ --$|^-- Reboot --$")
