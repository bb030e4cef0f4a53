"""Diagnose a node from a bundle: scan every line against the rules, run the structured checks,
set aside what is normal or history, and name the first layer (in isolation order) with a current
fault as the root cause. Faults in later layers are reported as its collateral.

History: a finding is history when the component that logged it restarted afterwards (a later boot,
driver load, plugin start in the same file) *and* either that restart was a kernel boot or a
point-in-time check (nvidia-smi, ibstat …) shows the layer healthy now. A driver reload alone does
not clear a GPU that fell off the bus: the load banner right after a fallen-off message is the driver
trying again, not a recovery.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gpufleet.ops.bundle import Bundle, Source, load_bundle
from gpufleet.ops.checks import run_checks
from gpufleet.ops.layers import ACTION_WEIGHT, LAYER_ORDER, LAYER_SOURCES, Evidence, Finding
from gpufleet.ops.nccl_env import single_node_loopback
from gpufleet.ops.rules import (
    BOOT_MARKER,
    NCCL_LOOPBACK_EXPLAINS,
    NCCL_LOOPBACK_NOTE,
    RESTART_MARKERS,
    RULES,
)
from gpufleet.ops.xid import RECOVERY_ACTION, RECOVERY_RE, XID_RE, xid_layer

MAX_EVIDENCE = 6
NOTHING = "nothing found in these files"


@dataclass
class Diagnosis:
    layer: str
    failure: str
    action: str
    evidence: list[str]
    confirm: str
    healthy_layers: list[str]
    downstream_layers: list[str]
    collateral: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def _message(src: Source, i: int) -> list[Evidence]:
    """The matched line and, when it continues a multi-line kernel message (indented continuation
    lines, as newer drivers print "fallen off the bus"), the lines back to where the message starts."""
    start = i
    while start > 1 and src.lines[start - 1][:1].isspace() and i - start < 4:
        start -= 1
    return [Evidence(src.name, n, src.lines[n - 1]) for n in range(start, i + 1)]


def _scan_lines(src: Source) -> list[tuple[Finding, int]]:
    """Rule and Xid matches of one file, with the line number each was found on."""
    out: list[tuple[Finding, int]] = []
    for i, line in enumerate(src.lines, 1):
        if not line.strip():
            continue
        for rule in RULES:
            if rule.kinds is not None and src.kind not in rule.kinds:
                continue
            if rule.pattern.search(line):
                out.append(
                    (
                        Finding(
                            rule.layer,
                            rule.failure,
                            rule.action,
                            rule.confirm,
                            _message(src, i),
                            rule.id,
                            normal=rule.normal,
                        ),
                        i,
                    )
                )
        if m := XID_RE.search(line):
            code = int(m.group(2))
            info = xid_layer(code)
            failure = f"Xid {code} ({info.mnemonic}): {info.meaning}"
            if info.app_level:
                failure += " — an application error, not a node fault"
            out.append(
                (
                    Finding(
                        info.layer,
                        failure,
                        info.action,
                        f"dmesg | grep -i xid; nvidia-smi -q -i {m.group(1).removeprefix('PCI:')}",
                        [Evidence(src.name, i, line)],
                        f"xid-{code}",
                        normal=info.app_level,
                    ),
                    i,
                )
            )
        if m := RECOVERY_RE.search(line):
            action = RECOVERY_ACTION.get(m.group(1), "reset_gpu")
            out.append(
                (
                    Finding(
                        "gpu_xid",
                        f"driver recovery action now '{m.group(2)}'",
                        action,
                        "nvidia-smi -q | grep 'Recovery Action'",
                        [Evidence(src.name, i, line)],
                        "xid-154-action",
                        normal=action == "none",
                    ),
                    i,
                )
            )
    return out


def _restarts(src: Source) -> tuple[list[int], list[int]]:
    """Line numbers of restart markers and of kernel boots in one file."""
    marker = RESTART_MARKERS.get(src.kind)
    if marker is None:
        return [], []
    restarts = [i for i, ln in enumerate(src.lines, 1) if marker.search(ln)]
    boots = [i for i, ln in enumerate(src.lines, 1) if BOOT_MARKER.search(ln)] if src.kind == "dmesg" else []
    return restarts, boots


def _merge(findings: list[Finding]) -> list[Finding]:
    """One finding per (rule, history) with its evidence lines joined: a GSP hang repeats every 6 s."""
    merged: dict[tuple[str, str, bool, bool], Finding] = {}
    for f in findings:
        key = (f.rule or f.failure, f.failure, f.history, f.normal)
        if key in merged:
            merged[key].evidence.extend(f.evidence)
        else:
            merged[key] = Finding(
                f.layer, f.failure, f.action, f.confirm, list(f.evidence), f.rule, f.normal, f.history
            )
    return list(merged.values())


def _clip(ev: list[Evidence]) -> list[str]:
    if len(ev) <= MAX_EVIDENCE:
        return [e.render() for e in ev]
    head, tail = ev[: MAX_EVIDENCE - 2], ev[-2:]
    return (
        [e.render() for e in head]
        + [f"… {len(ev) - MAX_EVIDENCE} more matching lines …"]
        + [e.render() for e in tail]
    )


def _speaking_kinds(bundle: Bundle) -> dict[str, set[str]]:
    """Per layer, the source kinds that can vouch for it. A kernel log speaks for the GPU layers only
    if it mentions the NVIDIA driver at all, for RDMA only if it mentions an RDMA driver: a clean
    dmesg from a machine with no GPU proves nothing about GPUs."""
    dmesg = "\n".join("\n".join(s.lines) for s in bundle.of("dmesg"))
    gpu_dmesg = bool(re.search(r"NVRM|nvidia", dmesg))
    rdma_dmesg = bool(re.search(r"mlx5|ib_core|infiniband", dmesg, re.I))
    fm_present = not any(
        "could not be found" in "\n".join(s.lines) for s in bundle.of("systemctl-fabricmanager")
    )
    out: dict[str, set[str]] = {}
    for layer in LAYER_ORDER:
        kinds = set(LAYER_SOURCES[layer] & bundle.kinds)
        if "dmesg" in kinds and not (rdma_dmesg if layer == "network_rdma" else gpu_dmesg):
            kinds.discard("dmesg")
        if "systemctl-fabricmanager" in kinds and not fm_present:
            kinds.discard("systemctl-fabricmanager")
        out[layer] = kinds
    return out


def diagnose_bundle(bundle: Bundle) -> Diagnosis:
    speaking = _speaking_kinds(bundle)
    checked = [layer for layer in LAYER_ORDER if speaking[layer]]
    sources = {s.name: s.kind + (" (tail only)" if s.truncated else "") for s in bundle.sources}
    if not bundle.sources:
        return Diagnosis("none", NOTHING, "none", [], "", [], [], sources=sources, skipped=bundle.skipped)

    structured, healthy_now = run_checks(bundle)
    findings: list[Finding] = list(structured)
    for src in bundle.sources:
        restarts, boots = _restarts(src)
        loopback = src.kind == "nccl-log" and single_node_loopback(src.lines)
        for f, line in _scan_lines(src):
            if loopback and f.rule in NCCL_LOOPBACK_EXPLAINS:
                f.normal, f.action, f.failure = True, "none", NCCL_LOOPBACK_NOTE
            later = [r for r in restarts if r > line]
            later_boot = any(b > line for b in boots)
            if later and (later_boot or f.layer in healthy_now):
                f.history = True
            findings.append(f)
    findings = _merge(findings)

    current = [f for f in findings if not f.normal and not f.history]
    notes = [f"normal: {f.failure} [{f.evidence[0].render()}]" for f in findings if f.normal and f.evidence]
    notes += [
        f"history (cleared by a later restart): {f.failure} [{f.evidence[0].render()}]"
        for f in findings
        if f.history and not f.normal
    ]
    found_any = bool(findings)

    root_layer = next((layer for layer in LAYER_ORDER if any(f.layer == layer for f in current)), None)
    if root_layer is None:
        failure = "no fault found" if found_any or checked else NOTHING
        if not checked and bundle.sources:
            failure = f"{NOTHING} (no NVIDIA GPU, driver or RDMA evidence in them)"
        return Diagnosis("none", failure, "none", [], "", checked, [], [], notes, sources, bundle.skipped)

    in_root = sorted((f for f in current if f.layer == root_layer), key=lambda f: -ACTION_WEIGHT[f.action])
    top = in_root[0]
    evidence = _clip([e for f in in_root for e in f.evidence])
    idx = LAYER_ORDER.index(root_layer)
    healthy = [layer for layer in checked if LAYER_ORDER.index(layer) < idx]
    downstream = [layer for layer in checked if LAYER_ORDER.index(layer) > idx]
    collateral = [
        f"{f.layer}: {f.failure} [{f.evidence[0].render()}]"
        for f in current
        if f.layer != root_layer and f.evidence
    ]
    confirm = top.confirm or next((f.confirm for f in in_root if f.confirm), "")
    return Diagnosis(
        root_layer,
        top.failure,
        top.action,
        evidence,
        confirm,
        healthy,
        downstream,
        collateral,
        notes,
        sources,
        bundle.skipped,
    )


def diagnose(path: Path) -> Diagnosis:
    return diagnose_bundle(load_bundle(path))
