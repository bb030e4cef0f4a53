"""The GPU Operator chain on one node: what should run, in what order, and what blocks.

Facts (ops-reference §3, gpu-operator@a22dbf67): the operator treats a node as a GPU node when NFD
labelled it ``feature.node.kubernetes.io/pci-10de.present``, ``pci-0302_10de.present`` or
``pci-0300_10de.present`` = "true"; it then writes ``nvidia.com/gpu.deploy.<operand>`` labels, and each
operand's daemonset selects on its label. The operands start in the state-manager order and wait on
each other through files in ``/run/nvidia/validations`` (driver-ready → toolkit-ready → …): an operand
stuck in ``Init`` is waiting for the one before it.

Bring-up time (``bringup``): by hand, an engineer walks each node through driver install (+ reboot),
toolkit and runtime configuration, plugin and validation: ``ceil(N / engineers) × minutes_per_node``.
With the operator, the daemonsets run on all nodes at once: ``operator_minutes`` for any N (image
pulls and the driver build dominate; the driver pod's startup probe allows 60 + 120 × 10 s ≈ 21 min
before kubelet restarts it, which bounds one attempt). Driver *upgrades* are different: the default
``maxParallelUpgrades: 1`` walks the nodes one at a time, ``N × upgrade_minutes``.
The per-node minutes are inputs (defaults are our assumptions, not published figures).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field

import yaml

GPU_NODE_LABELS = (
    "feature.node.kubernetes.io/pci-10de.present",
    "feature.node.kubernetes.io/pci-0302_10de.present",
    "feature.node.kubernetes.io/pci-0300_10de.present",
)


@dataclass(frozen=True)
class Operand:
    name: str
    deploy_label: str
    pod_prefix: str
    waits_for: str  # readiness file under /run/nvidia/validations it waits on ("" = none)
    produces: str
    default_on: bool = True


# State-manager order (controllers/state_manager.go), container workload.
CHAIN: tuple[Operand, ...] = (
    Operand("driver", "nvidia.com/gpu.deploy.driver", "nvidia-driver-daemonset", "", ".driver-ctr-ready"),
    Operand(
        "container-toolkit",
        "nvidia.com/gpu.deploy.container-toolkit",
        "nvidia-container-toolkit-daemonset",
        "driver-ready",
        "the toolkit and runtime config on the host",
    ),
    Operand(
        "operator-validator",
        "nvidia.com/gpu.deploy.operator-validator",
        "nvidia-operator-validator",
        ".driver-ctr-ready",
        "driver-ready, toolkit-ready, cuda-ready, plugin-ready",
    ),
    Operand(
        "device-plugin",
        "nvidia.com/gpu.deploy.device-plugin",
        "nvidia-device-plugin-daemonset",
        "toolkit-ready",
        "nvidia.com/gpu in the node's allocatable",
    ),
    Operand(
        "dcgm",
        "nvidia.com/gpu.deploy.dcgm",
        "nvidia-dcgm-",
        "toolkit-ready",
        "hostengine :5555",
        default_on=False,
    ),
    Operand(
        "dcgm-exporter",
        "nvidia.com/gpu.deploy.dcgm-exporter",
        "nvidia-dcgm-exporter",
        "toolkit-ready",
        "metrics :9400",
    ),
    Operand(
        "gpu-feature-discovery",
        "nvidia.com/gpu.deploy.gpu-feature-discovery",
        "gpu-feature-discovery",
        "toolkit-ready",
        "nvidia.com/gpu.product, .count, cuda.* labels",
    ),
    Operand(
        "mig-manager",
        "nvidia.com/gpu.deploy.mig-manager",
        "nvidia-mig-manager",
        "toolkit-ready",
        "nvidia.com/mig.config.state",
    ),
)
READY = ("Running", "Completed")
CHAIN_INDEX = {o.name: i for i, o in enumerate(CHAIN)}
PRODUCER = {
    "driver-ready": "operator-validator",
    "toolkit-ready": "operator-validator",
    ".driver-ctr-ready": "driver",
}


def _blocker(steps: list[Step], problems: list[str]) -> str:
    """The first operand, in chain order, that should run and is not ready while nothing after it is.
    A missing pod with a ready operand after it was evidently satisfied another way (a host-installed
    driver); an operand stuck in Init is waiting for a readiness file, so the blame goes to the
    operand that writes that file."""
    run = [s for s in steps if s.should_run]
    for i, s in enumerate(run):
        if s.state in READY:
            continue
        later_ready = any(t.state in READY for t in run[i + 1 :])
        if s.state == CUT_OFF:
            continue  # below the cut: unknown, so neither missing nor the blocker by itself
        if s.state == "not listed" and later_ready:
            continue
        if s.state.startswith("Init") and s.waits_for in PRODUCER:
            prod = PRODUCER[s.waits_for]
            pstate = next((t.state for t in steps if t.operand == prod), "not listed")
            problems.append(
                f"{s.operand} is {s.state}: its init container waits for {s.waits_for}, which "
                f"{prod} ({pstate}) writes; look at {prod}'s logs "
                f"(kubectl -n gpu-operator logs <{prod} pod> --all-containers)"
            )
            return prod if pstate not in READY else s.operand
        if s.state == "not listed":
            problems.append(
                f"{s.operand} should run but has no pod in the list (daemonset missing, or its "
                f"nodeSelector {s.why.split('=')[0]} does not match this node)"
            )
        return s.operand
    return ""


def parse_labels(text: str) -> dict[str, str]:
    """Node labels from ``kubectl get node -o json|yaml``, ``key: value`` lines, ``key=value`` lines,
    or a comma-separated ``key=value`` list."""
    s = text.strip()
    if not s:
        return {}
    if s.startswith("{"):
        try:
            doc = json.loads(s)
        except json.JSONDecodeError as e:
            raise ValueError(f"not valid JSON (line {e.lineno}: {e.msg})") from None
        return _labels_of(doc)
    if re.search(r"^\s*[\w./-]+:\s", s, re.M) and "=" not in s.splitlines()[0]:
        try:
            doc = yaml.safe_load("\n".join(ln.strip() for ln in s.splitlines()))
        except yaml.YAMLError:
            raise ValueError("labels look like YAML but do not parse") from None
        if isinstance(doc, dict):
            return (
                _labels_of(doc)
                if "metadata" in doc or "items" in doc
                else {k: str(v) for k, v in doc.items()}
            )
    out = {}
    for part in re.split(r"[,\n]", s):
        part = part.strip()
        if "=" in part:
            k, _, v = part.partition("=")
            out[k.strip()] = v.strip()
    if not out:
        raise ValueError("no labels found (expected node JSON/YAML, key: value or key=value)")
    return out


def _labels_of(doc: dict) -> dict[str, str]:
    items = doc.get("items") or [doc]
    meta = (items[0] or {}).get("metadata") or {}
    return {k: str(v) for k, v in (meta.get("labels") or {}).items()}


#: The state of an operand whose pod is absent from a listing that was cut off: unknown, not missing.
CUT_OFF = "not in listing (cut off)"


@dataclass
class PodListing:
    """Operand → (worst STATUS, pod name), and ``cut``: why the listing looks incomplete ("" when whole).

    A listing pasted from a terminal or a ticket is often cut: its last row stops mid-way. An operand
    absent from such a listing may simply be below the cut, so it must not be reported as missing."""

    pods: dict[str, tuple[str, str]]
    cut: str = ""


def _columns(line: str) -> int:
    """Columns of a ``kubectl get pods`` line. kubectl pads columns with at least three spaces, and a
    cell may hold one space (``NOMINATED NODE``, a RESTARTS of ``2 (5m ago)``)."""
    return len(re.split(r"\s{2,}", line.strip()))


def parse_pod_listing(text: str) -> PodListing:
    """``kubectl get pods [-n gpu-operator] [-o wide]`` → operand → (worst STATUS, pod name), and
    whether the listing was cut. With several nodes' pods listed, the worst state wins: pass
    ``--field-selector spec.nodeName=…`` to look at one node.

    Cut: a row with fewer columns than the header (or, with no header, than most rows) — kubectl
    prints every column of every row, so a short row is a listing that stops inside a line."""
    out: dict[str, tuple[str, str]] = {}
    lines = [(i, ln) for i, ln in enumerate(text.splitlines(), 1) if ln.strip()]
    header = next((ln for _, ln in lines if ln.split()[0] in ("NAME", "NAMESPACE")), None)
    rows = [(i, ln) for i, ln in lines if ln.split()[0] not in ("NAME", "NAMESPACE")]
    if header is not None:
        width = _columns(header)
    else:
        counts = [_columns(ln) for _, ln in rows]
        width = max(set(counts), key=counts.count) if counts else 0
    cut = ""
    for i, line in rows:
        if width >= 5 and _columns(line) < width and not cut:
            cut = f"line {i} has {_columns(line)} of {width} columns: {' '.join(line.split())!r}"
        toks = line.split()
        if len(toks) < 3:
            continue
        if re.fullmatch(r"\d+/\d+", toks[1]):
            name, ready, status = toks[0], toks[1], toks[2]
        elif len(toks) >= 4 and re.fullmatch(r"\d+/\d+", toks[2]):
            name, ready, status = toks[1], toks[2], toks[3]
        else:
            continue
        name = name.removeprefix("pod/")
        op = next(
            (
                o.name
                for o in CHAIN
                if name.startswith(o.pod_prefix)
                and not (o.name == "dcgm" and name.startswith("nvidia-dcgm-exporter"))
            ),
            None,
        )
        if op is None:
            continue
        state = status if status != "Running" or ready.split("/")[0] == ready.split("/")[1] else "NotReady"
        if op not in out or (out[op][0] in READY and state not in READY):
            out[op] = (state, name)
    return PodListing(out, cut)


@dataclass
class Step:
    operand: str
    should_run: bool
    why: str
    state: str
    waits_for: str
    produces: str
    blocked_by: str = ""


@dataclass
class ChainStatus:
    gpu_node: bool
    gpu_node_why: str
    steps: list[Step]
    blocker: str
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def chain_status(
    labels: dict[str, str], pods: dict[str, tuple[str, str]] | None = None, listing_cut: str = ""
) -> ChainStatus:
    """What should run and what blocks. ``listing_cut`` (from ``parse_pod_listing``) says the pod
    listing is incomplete: operands absent from it are "not in listing (cut off)", never "missing"."""
    pods = pods or {}
    absent = CUT_OFF if listing_cut else "not listed"
    present = [k for k in GPU_NODE_LABELS if labels.get(k) == "true"]
    gpu_node = bool(present) or labels.get("nvidia.com/gpu.present") == "true"
    if present:
        why = f"NFD label {present[0]}=true"
    elif gpu_node:
        why = "nvidia.com/gpu.present=true (NFD's PCI label not shown)"
    else:
        why = (
            "no NFD label pci-10de / pci-0302_10de / pci-0300_10de = true: the operator deploys nothing "
            "here (is NFD running? is the GPU on the PCI bus?)"
        )
    problems: list[str] = []
    if listing_cut:
        problems.append(
            f"the pod listing is incomplete ({listing_cut}): operands absent from it may be below the "
            "cut, so their state is unknown; pass the whole `kubectl get pods -n gpu-operator -o wide`"
        )
    workload = labels.get("nvidia.com/gpu.workload.config", "container")
    if workload != "container":
        problems.append(f"workload config '{workload}': the sandbox/vGPU operands replace this chain")
    all_off = labels.get("nvidia.com/gpu.deploy.operands") == "false"
    mig_capable = (
        labels.get("nvidia.com/mig.capable") == "true" or "nvidia.com/gpu.deploy.mig-manager" in labels
    )
    steps: list[Step] = []
    for op in CHAIN:
        value = labels.get(op.deploy_label)
        if not gpu_node or all_off:
            run, reason = False, "not a GPU node" if not gpu_node else "nvidia.com/gpu.deploy.operands=false"
        elif op.name == "mig-manager" and not mig_capable:
            run, reason = False, "no MIG-capable GPU (nvidia.com/mig.capable)"
        elif value is None:
            run, reason = (
                op.default_on,
                (
                    f"{op.deploy_label} not set yet (operator has not reconciled the node)"
                    if op.default_on
                    else "disabled by default"
                ),
            )
        elif value == "paused-for-mig-change":
            run, reason = False, "paused by mig-manager during a MIG reconfiguration"
        elif value == "pre-installed":
            run, reason = False, "pre-installed on the host"
        else:
            run, reason = value != "false", f"{op.deploy_label}={value}"
        state = pods.get(op.name, (absent, ""))[0] if pods else "unknown"
        steps.append(Step(op.name, run, reason, state, op.waits_for, op.produces))
    blocker = _blocker(steps, problems) if pods else ""
    for s in steps:
        if (
            blocker
            and s.should_run
            and s.operand != blocker
            and CHAIN_INDEX[s.operand] > CHAIN_INDEX[blocker]
            and s.state not in READY
        ):
            s.blocked_by = blocker
    if labels.get("nvidia.com/gpu.product", "").endswith("-MIG-INVALID"):
        problems.append(
            "nvidia.com/gpu.product ends in -MIG-INVALID: the MIG layout breaks the single strategy"
        )
    if labels.get("nvidia.com/mig.config.state") == "failed":
        problems.append(
            "nvidia.com/mig.config.state=failed: mig-manager could not apply nvidia.com/mig.config"
        )
    return ChainStatus(gpu_node, why, steps, blocker, problems)


@dataclass
class Bringup:
    nodes: int
    by_hand_minutes: float
    operator_minutes: float
    upgrade_minutes: float


def bringup(
    nodes: int,
    minutes_per_node: float = 60.0,
    engineers: int = 1,
    operator_minutes: float = 20.0,
    upgrade_minutes_per_node: float = 15.0,
) -> Bringup:
    return Bringup(
        nodes,
        math.ceil(nodes / engineers) * minutes_per_node,
        operator_minutes,
        nodes * upgrade_minutes_per_node,
    )
