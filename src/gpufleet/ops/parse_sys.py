"""Parsers for the rest of the node: lspci, lsmod, ibstat, sysfs infiniband, Kubernetes node objects.

Formats follow tests/data/ops (gpud's captured H100 sysfs tree and lspci, ibstat outputs quoted in
gpud and Azure issues, kubectl output quoted in Kubernetes/NVIDIA issues; see PROVENANCE.md).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import yaml


@dataclass
class PciDev:
    addr: str
    desc: str
    line: int
    lnksta: str = ""
    lnksta_line: int = 0

    @property
    def is_gpu(self) -> bool:
        return "NVIDIA" in self.desc and ("3D controller" in self.desc or "VGA" in self.desc)

    @property
    def is_nic(self) -> bool:
        return "Mellanox" in self.desc or "ConnectX" in self.desc

    @property
    def width_downgraded(self) -> bool:
        return bool(re.search(r"Width x\d+ \(downgraded\)", self.lnksta))

    @property
    def speed_downgraded(self) -> bool:
        return bool(re.search(r"Speed [\d.]+GT/s \(downgraded\)", self.lnksta))


_PCI_HDR = re.compile(r"^([0-9a-f]{2,4}:[0-9a-f]{2}[:.][0-9a-f]{1,2}(?:\.\d)?)\s+(.*)$")


def parse_lspci(lines: list[str]) -> list[PciDev]:
    """Both ``lspci -nn`` (one line per device) and ``-vvv`` (blocks with LnkSta)."""
    devs: list[PciDev] = []
    for i, line in enumerate(lines, 1):
        if m := _PCI_HDR.match(line):
            devs.append(PciDev(m.group(1), m.group(2), i))
        elif devs and line.strip().startswith("LnkSta:"):
            devs[-1].lnksta, devs[-1].lnksta_line = line.strip(), i
    return devs


def parse_lsmod(lines: list[str]) -> dict[str, int]:
    """Module name → line."""
    out = {}
    for i, line in enumerate(lines, 1):
        parts = line.split()
        if len(parts) >= 3 and parts[1].isdigit():
            out[parts[0]] = i
    return out


@dataclass
class IbPort:
    device: str
    port: str
    state: str = ""
    phys_state: str = ""
    rate_gbps: float | None = None
    link_layer: str = ""
    line: int = 0
    phys_line: int = 0

    @property
    def active(self) -> bool:
        return "ACTIVE" in self.state.upper() and "LINKUP" in self.phys_state.replace(" ", "").upper()


def parse_ibstat(lines: list[str]) -> list[IbPort]:
    ports: list[IbPort] = []
    dev = ""
    for i, line in enumerate(lines, 1):
        s = line.strip()
        if m := re.match(r"^CA '([^']+)'", s):
            dev = m.group(1)
        elif m := re.match(r"^Port (\d+):$", s):
            ports.append(IbPort(dev, m.group(1), line=i))
        elif ports and ":" in s:
            k, _, v = s.partition(":")
            v = v.strip()
            p = ports[-1]
            if k == "State":
                p.state, p.line = v, i
            elif k == "Physical state":
                p.phys_state, p.phys_line = v, i
            elif k == "Rate":
                p.rate_gbps = _float(v)
            elif k == "Link layer":
                p.link_layer = v
    return ports


_SYSFS = re.compile(r"^/sys/class/infiniband/([^/]+)/ports/(\d+)/(state|phys_state|rate|link_layer):(.*)$")


def parse_sysfs_ib(lines: list[str]) -> list[IbPort]:
    """``grep -H . /sys/class/infiniband/*/ports/*/{state,phys_state,rate,link_layer}`` output."""
    ports: dict[tuple[str, str], IbPort] = {}
    for i, line in enumerate(lines, 1):
        m = _SYSFS.match(line.strip())
        if not m:
            continue
        p = ports.setdefault((m.group(1), m.group(2)), IbPort(m.group(1), m.group(2), line=i))
        key, val = m.group(3), m.group(4).strip()
        if key == "state":
            p.state, p.line = val, i
        elif key == "phys_state":
            p.phys_state, p.phys_line = val, i
        elif key == "rate":
            p.rate_gbps = _float(val.split()[0]) if val else None
        else:
            p.link_layer = val
    return list(ports.values())


def _float(s: str) -> float | None:
    try:
        return float(s.split()[0])
    except (ValueError, IndexError):
        return None


@dataclass
class K8sNode:
    name: str = ""
    capacity: dict[str, str] = field(default_factory=dict)
    allocatable: dict[str, str] = field(default_factory=dict)
    taints: list[tuple[str, int]] = field(default_factory=list)  # "key=value:Effect", line
    unschedulable: bool = False
    unschedulable_line: int = 0
    labels: dict[str, str] = field(default_factory=dict)


def parse_node_json(lines: list[str]) -> list[K8sNode]:
    """``kubectl get node -o json`` or ``-o yaml`` (one Node, a List, or just its ``status:`` part).
    Line numbers are those of the matching text."""
    text = "\n".join(lines)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError:
            raise ValueError(f"neither valid JSON (line {e.lineno}: {e.msg}) nor YAML") from None
    if not isinstance(doc, dict):
        raise ValueError("expected a Kubernetes Node object or List")
    items = _typed(doc.get("items", [doc]), list, "items")
    out = []
    for it in items:
        if not isinstance(it, dict):
            continue
        spec = _typed(it.get("spec") or {}, dict, "spec")
        status = _typed(it.get("status") or {}, dict, "status")
        meta = _typed(it.get("metadata") or {}, dict, "metadata")
        labels = _typed(meta.get("labels") or {}, dict, "metadata.labels")
        n = K8sNode(name=str(meta.get("name", "")), labels={str(k): str(v) for k, v in labels.items()})
        n.capacity = {str(k): str(v) for k, v in _typed(status.get("capacity") or {}, dict,
                                                         "status.capacity").items()}
        n.allocatable = {str(k): str(v) for k, v in _typed(status.get("allocatable") or {}, dict,
                                                            "status.allocatable").items()}
        for t in _typed(spec.get("taints") or [], list, "spec.taints"):
            t = _typed(t, dict, "spec.taints[]")
            key = str(t.get("key", ""))
            rendered = (
                f"{key}={t.get('value', '')}:{t.get('effect', '')}"
                if t.get("value")
                else f"{key}:{t.get('effect', '')}"
            )
            key_line = rf'^\s*(?:-\s*)?"?key"?\s*:\s*"?{re.escape(key)}"?\s*,?\s*$'
            n.taints.append((rendered, _line_in(lines, "taints", key_line)))
        n.unschedulable = spec.get("unschedulable") is True
        n.unschedulable_line = _line_in(lines, "", r'^\s*"?unschedulable"?\s*:\s*true\b')
        out.append(n)
    return out


def _typed(value: object, kind: type, field: str):  # noqa: ANN202 - returns value, narrowed
    """``value`` if it is a ``kind`` (dict or list), else one line naming the field."""
    if not isinstance(value, kind):
        want = "a mapping" if kind is dict else "a list"
        raise ValueError(f"field {field} is {type(value).__name__}, expected {want}")
    return value


def _line_in(lines: list[str], after: str, pattern: str) -> int:
    """The line of a field as JSON (``"key": "nvidia.com/gpu",``) or YAML (``- key: nvidia.com/gpu``)
    writes it, looked for after the first line naming ``after`` (the ``taints`` list) — the line the
    evidence must quote, not the first mention of the word; 0 when absent."""
    start = next((i for i, ln in enumerate(lines) if after in ln), 0) if after else 0
    rx = re.compile(pattern)
    return next((i for i, ln in enumerate(lines[start:], start + 1) if rx.search(ln)), 0)


def parse_describe_node(lines: list[str]) -> K8sNode:
    n = K8sNode()
    section = ""
    for i, line in enumerate(lines, 1):
        if m := re.match(r"^Name:\s+(\S+)", line):
            n.name = m.group(1)
        if m := re.match(
            r"^(Taints|Capacity|Allocatable|Labels|Unschedulable|[A-Z][A-Za-z ]+):\s*(.*)$", line
        ):
            section, rest = m.group(1), m.group(2).strip()
            if section == "Taints" and rest and rest != "<none>":
                n.taints.append((rest, i))
            elif section == "Unschedulable":
                n.unschedulable, n.unschedulable_line = rest == "true", i
            elif section == "Labels" and "=" in rest:
                k, _, v = rest.partition("=")
                n.labels[k] = v
            continue
        s = line.strip()
        if not line.startswith((" ", "\t")) or not s:
            continue
        if section == "Taints":
            n.taints.append((s, i))
        elif section in ("Capacity", "Allocatable") and ":" in s:
            k, _, v = s.partition(":")
            (n.capacity if section == "Capacity" else n.allocatable)[k.strip()] = v.strip()
        elif section == "Labels" and "=" in s:
            k, _, v = s.partition("=")
            n.labels[k] = v
    return n
