"""Structured checks: what parsed tool outputs say beyond single log lines.

Each check returns findings and the layers it can vouch for *now* (a point-in-time tool such as
``nvidia-smi`` listing every GPU healthy says the PCI, driver and GPU-state layers work at the time
of collection; a log can only say what happened). ``diagnose`` uses the second to tell an error burst
that a restart cleared from one that is still there.
"""

from __future__ import annotations

import re

from gpufleet.ops.bundle import Bundle, Source
from gpufleet.ops.checks_node import check_ib, check_k8s
from gpufleet.ops.layers import Evidence, Finding
from gpufleet.ops.parse_smi import (
    parse_mig_lgi,
    parse_nvlink_status,
    parse_smi_L,
    parse_smi_q,
    parse_smi_table,
)
from gpufleet.ops.parse_sys import (
    parse_describe_node,
    parse_ibstat,
    parse_lsmod,
    parse_lspci,
    parse_node_json,
    parse_sysfs_ib,
)


def _ev(src: Source, line: int) -> Evidence:
    text = src.lines[line - 1] if 0 < line <= len(src.lines) else ""
    return Evidence(src.name, line, text)


def check_smi_table(src: Source, out: list[Finding], now: set[str]) -> None:
    t = parse_smi_table(src.lines)
    if not t.gpus:
        return
    now.update({"hardware_pci", "kernel_driver"})
    bad = [g for g in t.gpus if g.ecc_uncorrected.isdigit() and int(g.ecc_uncorrected) > 0]
    for g in bad:
        out.append(
            Finding(
                "gpu_xid",
                f"GPU {g.index} has {g.ecc_uncorrected} volatile uncorrectable ECC errors",
                "reset_gpu",
                "nvidia-smi -q -d ECC,ROW_REMAPPER",
                [_ev(src, g.line)],
                "smi-ecc",
            )
        )
    for ln in t.err_lines:
        out.append(
            Finding(
                "gpu_xid",
                "nvidia-smi shows ERR! for a GPU field",
                "reboot",
                "nvidia-smi -q; dmesg | grep -i xid",
                [_ev(src, ln)],
                "smi-err",
            )
        )
    if not bad and not t.err_lines:
        now.add("gpu_xid")


def check_smi_q(src: Source, out: list[Finding], now: set[str]) -> None:
    _, gpus = parse_smi_q(src.lines)
    if not gpus:
        return
    now.update({"hardware_pci", "kernel_driver"})
    gpu_ok = True
    for g in gpus:

        def f(layer, failure, action, confirm, path, rule, normal=False, g=g):
            out.append(
                Finding(
                    layer,
                    f"GPU {g.bus_id}: {failure}" if g.bus_id != "?"
                    else f"a GPU (no bus id in this excerpt): {failure}",
                    action,
                    confirm,
                    [_ev(src, g.line_of(path))],
                    rule,
                    normal=normal,
                )
            )

        if g.get("Remapped Rows/Remapping Failure Occurred") == "Yes":
            f(
                "gpu_xid",
                "row remapping failed",
                "drain_and_rma",
                "nvidia-smi -q -d ROW_REMAPPER; dcgmi diag -r 3",
                "Remapped Rows/Remapping Failure Occurred",
                "remap-failure",
            )
            gpu_ok = False
        if g.get("Remapped Rows/Pending") == "Yes":
            f(
                "gpu_xid",
                "row remap pending: needs a GPU reset to take effect",
                "reset_gpu",
                "nvidia-smi -q -d ROW_REMAPPER",
                "Remapped Rows/Pending",
                "remap-pending",
            )
            gpu_ok = False
        for key in ("GPU Reset Status/Reset Required", "GPU Reset Status/Drain and Reset Recommended"):
            if g.get(key) == "Yes":
                f(
                    "gpu_xid",
                    f"{key.split('/')[-1].lower()}",
                    "reset_gpu",
                    "nvidia-smi -q | grep -A3 'Reset Status'",
                    key,
                    "reset-required",
                )
                gpu_ok = False
        rec = g.get("GPU Recovery Action")
        if rec and rec not in ("None", "N/A"):
            action = "reboot" if "Reboot" in rec else "reset_gpu"
            f(
                "gpu_xid",
                f"driver asks for recovery action '{rec}'",
                action,
                "nvidia-smi -q | grep 'Recovery Action'",
                "GPU Recovery Action",
                "recovery-action",
            )
            gpu_ok = False
        dram = g.get("ECC Errors/Volatile/DRAM Uncorrectable")
        if dram.isdigit() and int(dram) > 0 and g.get("Remapped Rows/Pending") != "Yes":
            f(
                "gpu_xid",
                f"{dram} volatile uncorrectable DRAM ECC errors",
                "reset_gpu",
                "nvidia-smi -q -d ECC,ROW_REMAPPER",
                "ECC Errors/Volatile/DRAM Uncorrectable",
                "ecc-dram",
            )
            gpu_ok = False
        mig_cur, mig_pend = g.get("MIG Mode/Current"), g.get("MIG Mode/Pending")
        if mig_cur and mig_pend and mig_cur != mig_pend and "N/A" not in (mig_cur, mig_pend):
            f(
                "gpu_xid",
                f"MIG mode change pending ({mig_cur} → {mig_pend}): needs a GPU reset",
                "reset_gpu",
                "nvidia-smi -q | grep -A2 'MIG Mode'",
                "MIG Mode/Pending",
                "mig-pending",
            )
            gpu_ok = False
        _pcie(g, f)
        clocks = "Clocks Event Reasons" if g.get("Clocks Event Reasons/Idle") else "Clocks Throttle Reasons"
        for reason in ("HW Thermal Slowdown", "HW Power Brake Slowdown", "SW Thermal Slowdown"):
            key = f"{clocks}/HW Slowdown/{reason}" if reason.startswith("HW ") else f"{clocks}/{reason}"
            if g.get(key) == "Active":
                f(
                    "thermal_power",
                    f"{reason} active: clocks held down by temperature or power brake",
                    "none",
                    "nvidia-smi -q -d PERFORMANCE,TEMPERATURE  (check airflow, PSU)",
                    key,
                    "hw-slowdown",
                )
        if g.get(f"{clocks}/SW Power Cap") == "Active":
            f(
                "thermal_power",
                "SW power cap active (normal: the driver holds the board at its power limit)",
                "none",
                "",
                f"{clocks}/SW Power Cap",
                "power-cap",
                normal=True,
            )
        fabric = g.get("Fabric/State")
        if fabric and fabric not in ("Completed", "N/A"):
            f(
                "nvlink_fabric",
                f"NVLink fabric registration state '{fabric}' (fabric manager not running?)",
                "restart_fabricmanager",
                "systemctl status nvidia-fabricmanager; nvidia-smi -q | grep -A2 Fabric",
                "Fabric/State",
                "fabric-state",
            )
    if gpu_ok:
        now.add("gpu_xid")


def _pcie(g, f) -> None:
    base = "PCI/GPU Link Info"
    cur, mx = g.get(f"{base}/PCIe Generation/Current"), g.get(f"{base}/PCIe Generation/Max")
    wcur, wmax = g.get(f"{base}/Link Width/Current"), g.get(f"{base}/Link Width/Max")
    idle = (
        g.get("Clocks Event Reasons/Idle") == "Active"
        or g.get("Clocks Throttle Reasons/Idle") == "Active"
        or g.get("Utilization/Gpu") in ("0 %", "0%")
    )
    if cur.isdigit() and mx.isdigit() and int(cur) < int(mx):
        if idle:
            f(
                "hardware_pci",
                f"PCIe gen {cur} of {mx} while idle (normal: the link trains down to save power)",
                "none",
                "",
                f"{base}/PCIe Generation/Current",
                "pcie-idle",
                normal=True,
            )
        else:
            f(
                "hardware_pci",
                f"PCIe gen {cur} of {mx} while busy",
                "reseat_or_replace_cable",
                "nvidia-smi -q -d PCIE under load; lspci -vvv -d 10de: | grep LnkSta",
                f"{base}/PCIe Generation/Current",
                "pcie-gen",
            )
    w, wm = re.sub(r"\D", "", wcur), re.sub(r"\D", "", wmax)
    if w and wm and int(w) < int(wm):
        f(
            "hardware_pci",
            f"PCIe link width {wcur} of {wmax}",
            "reseat_or_replace_cable",
            "lspci -vvv -d 10de: | grep LnkSta",
            f"{base}/Link Width/Current",
            "pcie-width",
        )


def check_nvlink(src: Source, out: list[Finding], now: set[str]) -> None:
    gpus = parse_nvlink_status(src.lines)
    if not gpus:
        return
    bad = [g for g in gpus if g.inactive]
    for g in bad:
        out.append(
            Finding(
                "nvlink_fabric",
                f"GPU {g.index}: {len(g.inactive)} of {len(g.links)} NVLinks inactive",
                "reboot",
                "nvidia-smi nvlink -s; nvidia-smi nvlink -e",
                [_ev(src, g.links[i][1]) for i in g.inactive],  # every down link, not just the first
                "nvlink-down",
            )
        )
    # a GPU listed with no Link rows vouches for nothing ("all links are inActive" is a rule)
    if not bad and all(g.links for g in gpus):
        now.add("nvlink_fabric")


def check_lspci(src: Source, out: list[Finding], now: set[str], smi_gpu_count: int | None) -> None:
    devs = parse_lspci(src.lines)
    for d in devs:
        if not (d.is_gpu or d.is_nic) or not d.lnksta:
            continue
        layer = "hardware_pci" if d.is_gpu else "network_rdma"
        what = "GPU" if d.is_gpu else "NIC"
        if d.width_downgraded:
            out.append(
                Finding(
                    layer,
                    f"{what} {d.addr} PCIe link width downgraded (half-bandwidth link)",
                    "reseat_or_replace_cable",
                    f"lspci -vvv -s {d.addr} | grep -e LnkCap -e LnkSta",
                    [_ev(src, d.line), _ev(src, d.lnksta_line)],
                    "lspci-width",
                )
            )
        elif d.speed_downgraded:
            out.append(
                Finding(
                    layer,
                    f"{what} {d.addr} PCIe speed below capability (normal when idle: ASPM)",
                    "none",
                    "",
                    [_ev(src, d.lnksta_line)],
                    "lspci-speed",
                    normal=True,
                )
            )
    gpus = [d for d in devs if d.is_gpu]
    if gpus and smi_gpu_count is not None and smi_gpu_count < len(gpus):
        out.append(
            Finding(
                "hardware_pci",
                f"{len(gpus)} NVIDIA GPUs on the PCI bus but the driver lists {smi_gpu_count}",
                "reboot",
                "nvidia-smi -L; dmesg | grep -i -e 'fallen off' -e RmInit",
                [_ev(src, g.line) for g in gpus[:3]],
                "pci-vs-smi",
            )
        )


def check_lsmod(src: Source, out: list[Finding], now: set[str]) -> None:
    mods = parse_lsmod(src.lines)
    if mods and "nvidia" not in mods:
        out.append(
            Finding(
                "kernel_driver",
                "the nvidia kernel module is not loaded",
                "reinstall_driver",
                "modprobe nvidia; dmesg | tail; dkms status",
                [_ev(src, 1)],
                "lsmod",
            )
        )
    elif "nvidia" in mods:
        now.add("kernel_driver")


def check_smi_L(src: Source, out: list[Finding], now: set[str]) -> int:
    """``nvidia-smi -L`` listing GPUs: PCI and driver work now. Returns the GPU count."""
    gpus = parse_smi_L(src.lines)
    if gpus:
        now.update({"hardware_pci", "kernel_driver"})
    return len(gpus)


REGISTERED = re.compile(r"Registered device plugin for '[^']+' with Kubelet")
UNHEALTHY = re.compile(r"device marked unhealthy|the device will go unhealthy|Failed to initialize NVML")


def check_plugin_log(src: Source, out: list[Finding], now: set[str]) -> None:
    """The plugin registered with the kubelet after its last failure line: it works now."""
    last_ok = max((i for i, ln in enumerate(src.lines) if REGISTERED.search(ln)), default=-1)
    last_bad = max((i for i, ln in enumerate(src.lines) if UNHEALTHY.search(ln)), default=-1)
    if last_ok > last_bad:
        now.add("device_plugin")


def check_ctk_info(src: Source, out: list[Finding], now: set[str]) -> None:
    """``nvidia-container-cli info`` that lists a device: the toolkit reaches the driver."""
    text = "\n".join(src.lines)
    if re.search(r"^NVRM version:", text, re.M) and re.search(r"^Device Index:", text, re.M):
        now.add("container_toolkit")


def check_mig(src: Source, out: list[Finding], now: set[str]) -> None:
    """The MIG layout, reported as a note: per GPU its instances and compute slices used of 7. Two
    instances sharing memory slices, or more than 7 compute slices, cannot come from a working driver
    (ops-reference §4.2) and mean the file is not one GPU's state."""
    inst = parse_mig_lgi(src.lines)
    by_gpu: dict[int, list] = {}
    for m in inst:
        by_gpu.setdefault(m.gpu, []).append(m)
    for gpu, ms in sorted(by_gpu.items()):
        used = sum(m.compute_slices for m in ms)
        slots = [s for m in ms for s in range(m.start, m.start + m.size)]
        layout = ", ".join(f"{m.profile}@{m.start}:{m.size}" for m in sorted(ms, key=lambda m: m.start))
        ok = used <= 7 and len(slots) == len(set(slots))
        out.append(
            Finding(
                "gpu_xid",
                f"GPU {gpu} MIG layout {layout} ({used}/7 compute slices)"
                + ("" if ok else ": impossible layout (overlapping or > 7 slices)"),
                "none",
                "",
                [_ev(src, ms[0].line)],
                "mig-layout",
                normal=True,
            )
        )


def run_checks(bundle: Bundle) -> tuple[list[Finding], set[str]]:
    out: list[Finding] = []
    now: set[str] = set()
    smi_count: int | None = None
    for src in bundle.of("nvidia-smi"):
        check_smi_table(src, out, now)
        n = len(parse_smi_table(src.lines).gpus)
        smi_count = n if n else smi_count
    for src in bundle.of("nvidia-smi-L"):
        n = check_smi_L(src, out, now)
        smi_count = n if n else smi_count
    for src in bundle.of("nvidia-smi-q"):
        check_smi_q(src, out, now)
    for src in bundle.of("device-plugin"):
        check_plugin_log(src, out, now)
    for src in bundle.of("nvidia-smi-mig"):
        check_mig(src, out, now)
    for src in bundle.of("nvidia-container-cli-info"):
        check_ctk_info(src, out, now)
    for src in bundle.of("nvidia-smi-nvlink-status"):
        check_nvlink(src, out, now)
    for src in bundle.of("lspci-vvv", "lspci-nn"):
        check_lspci(src, out, now, smi_count)
    for src in bundle.of("lsmod"):
        check_lsmod(src, out, now)
    for src in bundle.of("ibstat"):
        check_ib(src, parse_ibstat(src.lines), out, now)
    for src in bundle.of("sys-class-infiniband"):
        check_ib(src, parse_sysfs_ib(src.lines), out, now)
    has_gpus = bool(smi_count) or any(
        d.is_gpu for s in bundle.of("lspci-vvv", "lspci-nn") for d in parse_lspci(s.lines)
    )
    for src in bundle.of("node-json"):
        try:
            nodes = parse_node_json(src.lines)
        except ValueError as e:
            bundle.skipped.append(f"{src.name}: {e}")
            continue
        for node in nodes:
            check_k8s(src, node, out, now, has_gpus or node.labels.get("nvidia.com/gpu.present") == "true")
    for src in bundle.of("kubectl-describe-node"):
        check_k8s(src, parse_describe_node(src.lines), out, now, has_gpus)
    return out, now
