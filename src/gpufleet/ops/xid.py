"""The Xid catalog: code → (mnemonic, layer, action, meaning), one row per Xid.

Source: NVIDIA's Xid catalog (analyzing-xid-catalog.html) through gpud's generated copy, summarised in
ops-reference §1.2. Application-level Xids are "normal" for the node: the device plugin itself ignores
13, 31, 43, 45, 68, 109 (k8s-device-plugin internal/rm/health.go).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpufleet.ops.layers import Action, Layer


@dataclass(frozen=True)
class XidInfo:
    mnemonic: str
    layer: Layer
    action: Action
    meaning: str
    app_level: bool = False


XID: dict[int, XidInfo] = {
    8: XidInfo("FIFO_IDLE_TIMEOUT", "gpu_xid", "none", "GPU stopped processing (application timeout)", True),
    13: XidInfo(
        "GR_EXCEPTION", "gpu_xid", "none", "graphics engine exception (usually an application bug)", True
    ),
    31: XidInfo("MMU_ERR_FLT", "gpu_xid", "none", "GPU memory page fault (usually an application bug)", True),
    32: XidInfo("PBDMA_ERROR", "gpu_xid", "reboot", "invalid or corrupted push buffer stream"),
    43: XidInfo(
        "RESETCHANNEL_VERIF_ERROR", "gpu_xid", "none", "channel reset after an application fault", True
    ),
    45: XidInfo("PREEMPTIVE_REMOVAL", "gpu_xid", "none", "preemptive cleanup after an earlier error", True),
    46: XidInfo("GPU_TIMEOUT_ERROR", "gpu_xid", "reset_gpu", "GPU stopped processing"),
    48: XidInfo("GPU_ECC_DBE", "gpu_xid", "reset_gpu", "uncorrectable double-bit ECC error"),
    54: XidInfo("AUX_POWER", "hardware_pci", "reseat_or_replace_cable", "auxiliary power not connected"),
    61: XidInfo("PMU_BREAKPOINT", "gpu_xid", "reboot", "internal micro-controller breakpoint"),
    62: XidInfo("PMU_HALT_ERROR", "gpu_xid", "reset_gpu", "internal micro-controller halt"),
    63: XidInfo(
        "DRAM_RETIREMENT_EVENT",
        "gpu_xid",
        "reset_gpu",
        "row remap pending: takes effect at the next GPU reset",
    ),
    64: XidInfo(
        "DRAM_RETIREMENT_FAILURE", "gpu_xid", "drain_and_rma", "row remapping failed (RMA candidate)"
    ),
    68: XidInfo("NVDEC0_ERROR", "gpu_xid", "none", "video decoder exception", True),
    74: XidInfo("NVLINK_ERROR", "nvlink_fabric", "reboot", "NVLink error"),
    79: XidInfo("FALLEN_OFF_THE_BUS", "hardware_pci", "reboot", "GPU has fallen off the bus"),
    92: XidInfo("EXCESSIVE_SBE_INTERRUPTS", "gpu_xid", "none", "high single-bit ECC rate (trend it)", True),
    94: XidInfo(
        "CONTAINED_ERROR", "gpu_xid", "none", "contained memory error: only the faulting app is hit", True
    ),
    95: XidInfo(
        "UNCONTAINED_ERROR", "gpu_xid", "reset_gpu", "uncontained memory error: all work on the GPU hit"
    ),
    109: XidInfo(
        "CTXSW_TIMEOUT_ERROR", "gpu_xid", "none", "context switch timeout (application-level)", True
    ),
    119: XidInfo("GSP_RPC_TIMEOUT", "gpu_xid", "reset_gpu", "GSP firmware RPC timeout (GSP hang)"),
    120: XidInfo("GSP_ERROR", "gpu_xid", "reset_gpu", "GSP firmware error"),
    121: XidInfo("C2C_ERROR", "gpu_xid", "reboot", "C2C link error (Grace–Hopper/Blackwell)"),
    136: XidInfo("ALI_TRAINING_FAIL", "nvlink_fabric", "reset_gpu", "link training failed"),
    140: XidInfo("ECC_ERROR_ESCAPE", "gpu_xid", "reset_gpu", "unrecovered ECC error"),
    143: XidInfo("GPU_INIT_ERROR", "gpu_xid", "reset_gpu", "GPU initialisation error"),
    154: XidInfo(
        "RECOVERY_ACTION_CHANGED", "gpu_xid", "none", "driver's summary of the required action", True
    ),
    155: XidInfo("NVLINK_SW_DEFINED_ERROR", "nvlink_fabric", "reset_gpu", "NVLink software-defined error"),
    158: XidInfo("GPU_FATAL_TIMEOUT", "gpu_xid", "reset_gpu", "GPU fatal timeout"),
}
for _code in range(144, 151):
    XID[_code] = XidInfo("NVLINK5_UNIT_ERROR", "nvlink_fabric", "reboot", "NVLink5 unit error (Blackwell)")

# gpud's regex shape (ops-reference §1.3): the code is the number after "): ", not the PCI domain.
XID_RE = re.compile(r"NVRM: Xid \(((?:PCI:)?[0-9a-fA-F:.]+)(?: GPU-I:\d+)?\).*?: (\d+),")
# NVSwitch errors in the kernel log: "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 …"
# (gpud sxid/kmsg.go). The severity word follows the code on most lines; some drivers print the code
# with a data dump instead ("SXid (PCI:0000:84:00.0): 12028, Data {0x000001c0, …}", gpud PR #338).
SXID_RE = re.compile(r"SXid \((?:PCI:)?([0-9a-fA-F:.]+)\): (\d+)(?:, (Fatal|Non-fatal))?")
RECOVERY_RE = re.compile(r"GPU recovery action changed from .* to (0x[0-9a-f]+) \(([^)]+)\)")
RECOVERY_ACTION: dict[str, Action] = {
    "0x0": "none",
    "0x1": "reset_gpu",
    "0x2": "reboot",
    "0x4": "reset_gpu",
}


def xid_layer(code: int) -> XidInfo:
    """Catalog entry, or a conservative default for an Xid we have no row for."""
    return XID.get(
        code,
        XidInfo(
            f"XID_{code}",
            "gpu_xid",
            "reset_gpu",
            f"Xid {code} (not in our catalog; see NVIDIA's Xid catalog)",
        ),
    )
