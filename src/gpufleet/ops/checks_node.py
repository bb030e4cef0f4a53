"""Checks of the node's RDMA ports and of its Kubernetes object (capacity vs allocatable, cordon,
taints). Separate from the GPU checks in ``checks``; ``checks.run_checks`` calls both."""

from __future__ import annotations

import re

from gpufleet.ops.bundle import Source
from gpufleet.ops.layers import Evidence, Finding
from gpufleet.ops.parse_sys import IbPort, K8sNode

GPU_RESOURCE = "nvidia.com/gpu"
#: the resource name kubelet's built-in GPU support (the Accelerators feature gate, Kubernetes
#: ≤ 1.10) advertised before device plugins: a node that shows it has no device plugin registered,
#: and pods that request nvidia.com/gpu never fit (k8s-device-plugin #68)
ALPHA_RESOURCE = "alpha.kubernetes.io/nvidia-gpu"
# Taints that say the node itself is in trouble (kubelet / node lifecycle controller).
TROUBLE_TAINTS = (
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/unschedulable",
    "node.kubernetes.io/network-unavailable",
    "node.kubernetes.io/memory-pressure",
    "node.kubernetes.io/disk-pressure",
)


def _ev(src: Source, line: int) -> Evidence:
    text = src.lines[line - 1] if 0 < line <= len(src.lines) else ""
    return Evidence(src.name, line, text)


def check_ib(src: Source, ports: list[IbPort], out: list[Finding], now: set[str]) -> None:
    if not ports:
        return
    # "Physical state: Disabled" is a port switched off on purpose (ibportstate disable, a spare
    # HCA port left unused): the link is not trying to train, so it is a state, not a fault.
    # "Polling" is the opposite — the port wants a link and finds no partner (cable, switch port).
    disabled = [p for p in ports if not p.active and "DISABLED" in p.phys_state.upper()]
    for p in disabled:
        out.append(
            Finding(
                "network_rdma",
                f"{p.device} port {p.port} is {p.state or '?'} / {p.phys_state}: disabled on purpose, "
                "not a fault (enable it with ibportstate if it should carry traffic)",
                "none",
                "",
                [_ev(src, p.phys_line or p.line)],
                "ib-disabled",
                normal=True,
            )
        )
    down = [p for p in ports if not p.active and p not in disabled]
    for p in down:
        out.append(
            Finding(
                "network_rdma",
                f"{p.device} port {p.port} is {p.state or '?'} / {p.phys_state or '?'}",
                "reseat_or_replace_cable",
                f"ibstat {p.device}; mlxlink -d {p.device} -p {p.port}",
                [_ev(src, p.line)],
                "ib-down",
            )
        )
    by_layer: dict[str, list[IbPort]] = {}
    for p in ports:
        if p.active and p.rate_gbps:
            by_layer.setdefault(p.link_layer, []).append(p)
    slow = []
    for same in by_layer.values():
        top = max(p.rate_gbps or 0 for p in same)
        slow += [p for p in same if (p.rate_gbps or 0) < top]
    for p in slow:
        out.append(
            Finding(
                "network_rdma",
                f"{p.device} port {p.port} at {p.rate_gbps:g} Gb/s, below its peers "
                "(half-width or half-rate link)",
                "reseat_or_replace_cable",
                f"mlxlink -d {p.device} -p {p.port}; ibstat {p.device}",
                [_ev(src, p.line)],
                "ib-slow",
            )
        )
    if not down and not slow and len(disabled) < len(ports):
        now.add("network_rdma")


def check_k8s(src: Source, node: K8sNode, out: list[Finding], now: set[str], has_gpus: bool) -> None:
    cap, alloc = node.capacity.get(GPU_RESOURCE), node.allocatable.get(GPU_RESOURCE)
    gpu_lines = [
        i for i, ln in enumerate(src.lines, 1) if GPU_RESOURCE + ":" in ln or f'"{GPU_RESOURCE}"' in ln
    ]
    cap_lines = _capacity_lines(src.lines, GPU_RESOURCE)
    line = cap_lines[0] if cap_lines else (gpu_lines[0] if gpu_lines else _section_line(src.lines))
    if cap is None and ALPHA_RESOURCE in node.capacity:
        alpha = _capacity_lines(src.lines, ALPHA_RESOURCE)
        out.append(
            Finding(
                "device_plugin",
                f"the node advertises {ALPHA_RESOURCE} (kubelet's pre-device-plugin GPU support), not "
                f"{GPU_RESOURCE}: no device plugin is registered, and pods asking for {GPU_RESOURCE} "
                "never fit",
                "restart_device_plugin",
                "kubectl -n kube-system get ds | grep -i nvidia; kubelet --feature-gates (drop Accelerators)",
                [_ev(src, ln) for ln in alpha[:2]] or [_ev(src, _section_line(src.lines))],
                "alpha-resource",
            )
        )
    if cap is not None and alloc is not None and cap.isdigit() and alloc.isdigit():
        c, a = int(cap), int(alloc)
        if c > 0 and a == 0:
            out.append(
                Finding(
                    "device_plugin",
                    f"capacity {c} GPUs but allocatable 0: the device plugin died "
                    "recently or marked every GPU unhealthy",
                    "restart_device_plugin",
                    "kubectl -n gpu-operator get pods -o wide | grep device-plugin",
                    [_ev(src, ln) for ln in gpu_lines[:4]],
                    "alloc-zero",
                )
            )
        elif a < c:
            out.append(
                Finding(
                    "device_plugin",
                    f"{c - a} of {c} GPUs marked unhealthy by the device plugin",
                    "restart_device_plugin",
                    "kubectl logs <device-plugin pod> | grep -i unhealthy",
                    [_ev(src, ln) for ln in gpu_lines[:4]],
                    "alloc-short",
                )
            )
        elif c == 0 and has_gpus:
            out.append(
                Finding(
                    "device_plugin",
                    "capacity 0 GPUs: the device plugin has been gone for over 5 minutes",
                    "restart_device_plugin",
                    "kubectl -n gpu-operator get pods | grep plugin",
                    [_ev(src, line)],
                    "cap-zero",
                )
            )
    elif cap is None and has_gpus and node.capacity and ALPHA_RESOURCE not in node.capacity:
        out.append(
            Finding(
                "device_plugin",
                "the node has GPUs but no nvidia.com/gpu resource: the device plugin never registered",
                "restart_device_plugin",
                "kubectl -n gpu-operator get pods -o wide",
                [_ev(src, _section_line(src.lines))],  # the capacity list that lacks it
                "no-resource",
            )
        )
    if node.unschedulable:
        out.append(
            Finding(
                "kubernetes",
                "node is cordoned (spec.unschedulable)",
                "remove_taint",
                f"kubectl uncordon {node.name or '<node>'}  (after the cause is fixed)",
                [_ev(src, node.unschedulable_line)],
                "cordon",
            )
        )
    for taint, ln in node.taints:
        if taint.startswith(TROUBLE_TAINTS):
            if taint.startswith("node.kubernetes.io/unschedulable") and node.unschedulable:
                continue
            out.append(
                Finding(
                    "kubernetes",
                    f"taint {taint}",
                    "remove_taint",
                    "kubectl describe node | grep -A3 Taints",
                    [_ev(src, ln)],
                    "taint",
                )
            )
        elif taint.startswith(GPU_RESOURCE):
            out.append(
                Finding(
                    "kubernetes",
                    f"taint {taint}: the usual GPU-node taint (GPU pods tolerate it)",
                    "none",
                    "",
                    [_ev(src, ln)],
                    "gpu-taint",
                    normal=True,
                )
            )
        else:
            out.append(
                Finding(
                    "kubernetes",
                    f"taint {taint}: a deliberate dedication, not a fault",
                    "none",
                    "",
                    [_ev(src, ln)],
                    "other-taint",
                    normal=True,
                )
            )


_CAPACITY_HEAD = re.compile(r'^\s*"?(capacity|Capacity)"?\s*:')


def _section_line(lines: list[str]) -> int:
    """The line that opens the node's capacity (``Capacity:``, ``capacity:``, ``"capacity": {``), the
    list a missing resource is missing from; 1 if the text has none."""
    return next((i for i, ln in enumerate(lines, 1) if _CAPACITY_HEAD.match(ln)), 1)


def _capacity_lines(lines: list[str], resource: str) -> list[int]:
    """Lines naming ``resource`` inside the capacity and allocatable lists, in file order — the two
    numbers a capacity/allocatable verdict rests on, not the first mention of the name (a label or
    an annotation can carry it too)."""
    out: list[int] = []
    section = ""
    for i, ln in enumerate(lines, 1):
        head = re.match(r'^\s*"?(capacity|allocatable|Capacity|Allocatable)"?\s*:', ln)
        if head:
            section = head.group(1).lower()
            continue
        if re.match(r"^\S", ln) and not ln.startswith(("{", "}", '"')):
            section = ""  # a new top-level describe section (System Info: …)
        if section and (f"{resource}:" in ln or f'"{resource}"' in ln):
            out.append(i)
    return out
