"""Diagnose a node from a bundle: scan every line against the rules, run the structured checks,
set aside what is normal or history, and name the first layer (in isolation order) with a current
fault as the root cause. Faults in later layers are reported as its collateral.

History: a finding is history when the component that logged it restarted afterwards (a later boot,
driver load, plugin start in the same file) *and* either that restart was a kernel boot or a
point-in-time check (nvidia-smi, ibstat …) shows the layer healthy now — unless the files report two
driver versions (``integrity.mixed_versions``): then the check may be another node's, and only a boot
clears a log line. A driver reload alone does
not clear a GPU that fell off the bus: the load banner right after a fallen-off message is the driver
trying again, not a recovery.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gpufleet.ops import integrity
from gpufleet.ops.bundle import Bundle, load_bundle
from gpufleet.ops.checks import run_checks
from gpufleet.ops.layers import ACTION_WEIGHT, LAYER_ORDER, LAYER_SOURCES, Evidence, Finding
from gpufleet.ops.nccl_env import single_node_loopback
from gpufleet.ops.rules import NCCL_LOOPBACK_EXPLAINS, NCCL_LOOPBACK_NOTE
from gpufleet.ops.scan import restarts as scan_restarts
from gpufleet.ops.scan import scan
from gpufleet.ops.timeline import boot_lines, escalate_recurrent, supersede

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
    #: why the bundle is not one whole capture of one node (``ops.integrity``); when there are any,
    #: the verdict is not ``confident``: read it as "what these files show", not as the node's state
    incomplete: list[str] = field(default_factory=list)
    confident: bool = True

    def to_dict(self) -> dict:
        return asdict(self)


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
    sources = {
        s.name: s.kind + (" (tail only)" if s.truncated else "")
        + (f" (by its content; the name says {s.named})" if s.named else "")
        for s in bundle.sources
    }
    if not bundle.sources:
        cut = list(bundle.incomplete)
        return Diagnosis("none", _incomplete(NOTHING, cut), "none", [], "", [], [], sources=sources,
                         skipped=bundle.skipped, incomplete=cut, confident=not cut)

    structured, healthy_now = run_checks(bundle)
    versions = integrity.mixed_versions(bundle)
    if versions:
        healthy_now = set()  # another node's (or another day's) nvidia-smi cannot clear this log
    findings: list[Finding] = list(structured)
    for src in bundle.sources:
        restarts, boots = scan_restarts(src)
        if src.kind == "dmesg":
            boots = boot_lines(src, boots)
            restarts = sorted(set(restarts) | set(boots))
        loopback = src.kind == "nccl-log" and single_node_loopback(src.lines)
        found = supersede(scan(src))
        for f, line in found:
            if loopback and f.rule in NCCL_LOOPBACK_EXPLAINS:
                f.normal, f.action, f.failure = True, "none", NCCL_LOOPBACK_NOTE
            later = [r for r in restarts if r > line]
            later_boot = any(b > line for b in boots)
            if later and (later_boot or f.layer in healthy_now):
                f.history = True
            findings.append(f)
        escalate_recurrent(found, boots)
    findings = _merge(findings)

    current = [f for f in findings if not f.normal and not f.history]
    notes = [f"normal: {f.failure} [{f.evidence[0].render()}]" for f in findings if f.normal and f.evidence]
    notes += [
        f"history (cleared by a later restart): {f.failure} [{f.evidence[0].render()}]"
        for f in findings
        if f.history and not f.normal
    ]
    found_any = bool(findings)
    cut = integrity.check(bundle, {f.rule for f in findings}, versions)

    root_layer = next((layer for layer in LAYER_ORDER if any(f.layer == layer for f in current)), None)
    if root_layer is None:
        failure = "no fault found" if found_any or checked else NOTHING
        if not checked and bundle.sources:
            failure = f"{NOTHING} (no NVIDIA GPU, driver or RDMA evidence in them)"
        return Diagnosis("none", _incomplete(failure, cut), "none", [], "", checked, [], [], notes, sources,
                         bundle.skipped, cut, not cut)

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
        cut,
        not cut,
    )


def _incomplete(failure: str, cut: list[str]) -> str:
    """A no-fault verdict on a cut or mixed bundle says so first: "no fault" in half the files is not
    "no fault" on the node."""
    if not cut:
        return failure
    below = f"{len(cut)} warning{'s' if len(cut) > 1 else ''} below"
    if failure.startswith(NOTHING):
        return f"incomplete bundle: nothing found in the files that could be read ({below})"
    return f"incomplete bundle: {failure} in what was read ({below})"


def diagnose(path: Path) -> Diagnosis:
    return diagnose_bundle(load_bundle(path))
