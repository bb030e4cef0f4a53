"""A node's health layers (driver → container toolkit → device plugin → allocatable) and its last
diagnosis, for every source.

Two witnesses speak, in this order:

1. **The last diagnosis** an admin attached (``POST /api/v1/nodes/NAME/diagnosis`` with the JSON of
   ``gpufleet node diagnose BUNDLE -o json``, or ``…/diagnosis/bundle`` with the bundle's files, which
   runs ``ops.diagnose`` here). Its root-cause layer is the fault, the layers it found healthy are ok,
   the ones after the root cause are collateral (they depend on it: re-check after the fix), and a
   layer no file in the bundle could speak for is "not checked".
2. **The live state** the source reports, for what no diagnosis covers. A node that *failed* (the
   virtual fleet's ``fail``, a Slurm node DOWN) lost its GPUs below the scheduler: the fault shows on
   the first layer, *driver and GPU*, and the layers above it are collateral — the simulator's
   failures (fleet_events/failures.py, Llama 3's Table 5) are GPU, host and network faults that all take the
   node's GPUs away from the driver's view, and a diagnosis is what names the exact layer. A node an
   admin drained or cordoned has healthy layers and no allocatable GPUs: that shows on *allocatable*
   only. A node the fleet labels ``degraded`` is in service with a condition to watch.

The diagnosis's layers (ops/layers.py, in isolation order) fold into the four rows people look at:
PCI, kernel driver, Xid and NVLink fabric are *driver and GPU*; the container toolkit is itself; the
device plugin and Kubernetes are *device plugin*; *allocatable* is the scheduler's own count (the
node table), never the diagnosis's. RDMA and thermal/power, when a diagnosis names them, get a row of
their own after these.

The node's state on the health machine (model/health.py): a failed node is quarantined (its jobs
already requeued: suspect → draining → quarantined happened at once); a drained or cordoned one is
draining (no new work, its jobs finish: Slurm's DRAIN, as model/health.py maps it); one held for a
reservation is healthy; a node in service is where its fleet label enters it (``machine_state``).
A diagnosis's verdict walks it on from there (``ops.health_moves``): the next steps the runbook
allows.

A diagnosis is kept in the store's ``meta`` table under the node's key (one row per node, the newest
wins, every replica sees it) and audited with the diagnosis as ``after``, in one transaction.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gpufleet.live.snapshot import LiveSnapshot
from gpufleet.model.fleet import NodeHealth
from gpufleet.model.health import HealthState, IllegalTransition, fleet_label, machine_state
from gpufleet.ops.bundle import MAX_FILES
from gpufleet.ops.diagnose import diagnose
from gpufleet.ops.health_moves import verdict_moves
from gpufleet.ops.layers import Action, Layer
from gpufleet.service.auth import Principal
from gpufleet.service.errors import ApiError
from gpufleet.service.store import Store

#: The rows shown, each with the diagnosis layers it stands for.
ROWS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("driver", "Driver and GPU", ("hardware_pci", "kernel_driver", "gpu_xid", "nvlink_fabric")),
    ("toolkit", "Container toolkit", ("container_toolkit",)),
    ("device_plugin", "Device plugin", ("device_plugin", "kubernetes")),
)
EXTRA_ROWS = {"network_rdma": "Network (RDMA)", "thermal_power": "Thermal and power"}
#: Out-of-service reasons that mean the node broke: the virtual fleet's ``fail``; Slurm's DOWN,
#: DOWN* (not responding), FAIL and FAILING (live/slurm.py keeps the state's last word, lowered).
FAILED = ("fail", "down", "not_responding")
MAX_BUNDLE_BYTES = 16 * 1024 * 1024
FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
Short = Field(default="", max_length=4000)


class DiagnosisDoc(BaseModel):
    """``gpufleet node diagnose BUNDLE -o json`` (ops/diagnose.py's ``Diagnosis`` with its health walk)."""

    model_config = ConfigDict(extra="ignore")
    layer: Layer
    failure: str = Field(max_length=4000)
    action: Action
    evidence: list[str] = Field(default_factory=list, max_length=100)
    confirm: str = Short
    healthy_layers: list[Layer] = Field(default_factory=list, max_length=20)
    downstream_layers: list[Layer] = Field(default_factory=list, max_length=20)
    collateral: list[str] = Field(default_factory=list, max_length=100)
    notes: list[str] = Field(default_factory=list, max_length=100)
    sources: dict[str, str] = Field(default_factory=dict, max_length=MAX_FILES)
    skipped: list[str] = Field(default_factory=list, max_length=MAX_FILES)
    #: what the bundle lacks or cuts (a truncated table, two driver versions, an unreadable file):
    #: with any of it the verdict is not ``confident``
    incomplete: list[str] = Field(default_factory=list, max_length=MAX_FILES)
    confident: bool = True


class BundleIn(BaseModel):
    """A node bundle's files, name → text (what ``gpufleet node collect`` writes into a folder)."""

    files: dict[str, str] = Field(min_length=1, max_length=MAX_FILES)


class LayerRow(BaseModel):
    key: str
    label: str
    #: ok, fault, collateral, watch, unchecked, out (allocatable: none to give)
    state: Literal["ok", "fault", "collateral", "watch", "unchecked", "out"]
    words: str
    #: Who says so: "diagnosis" or the source's name.
    basis: str


class AttachedDiagnosis(BaseModel):
    at: float
    by: str
    #: "posted" (a diagnose result) or "bundle" (diagnosed here from uploaded files).
    how: str
    diagnosis: DiagnosisDoc


class NodeHealthOut(BaseModel):
    node: str
    #: The node's state on the health machine, its fleet label, and the verdict's next steps.
    state: str
    fleet_label: str
    next_states: list[str]
    layers: list[LayerRow]
    last_diagnosis: AttachedDiagnosis | None


def _key(node: str) -> str:
    key = f"diagnosis:{node}"
    return key if len(key) <= 64 else "diagnosis:#" + hashlib.sha256(node.encode()).hexdigest()[:40]


def last_diagnosis(store: Store, node: str) -> AttachedDiagnosis | None:
    raw = store.get_meta(_key(node))
    return AttachedDiagnosis.model_validate_json(raw) if raw else None


def require_admin(store: Store, who: Principal, node: str) -> None:
    """Only an admin attaches a diagnosis; a refusal is audited (before any work is done)."""
    if who.role != "admin":
        store.audit(actor=who.actor, role=who.role, action="node.diagnosis", target=node, outcome="refused",
                    detail=f"{who.role} may not attach a diagnosis; admin only")
        raise ApiError(403, f"{who.role} may not attach a diagnosis; admin only")


def attach(store: Store, who: Principal, node: str, doc: DiagnosisDoc,
           how: str = "posted") -> AttachedDiagnosis:
    """Keep ``doc`` as ``node``'s last diagnosis, audited as ``node.diagnosis`` (admin only)."""
    require_admin(store, who, node)
    before = last_diagnosis(store, node)
    att = AttachedDiagnosis(at=time.time(), by=who.actor, how=how, diagnosis=doc)
    with store.writing() as c:
        store.set_meta(_key(node), att.model_dump_json(), c)
        store.audit(actor=who.actor, role=who.role, action="node.diagnosis", target=node, outcome="ok",
                    before=before.diagnosis.model_dump() if before else None, after=doc.model_dump(), c=c)
    return att


def diagnose_files(bundle: BundleIn) -> DiagnosisDoc:
    """Write the files into a fresh folder and run ops.diagnose on it: the CLI's answer, here."""
    total = 0
    for name, text in bundle.files.items():
        if not FILE_NAME.match(name):
            raise ApiError(422, f"files: {name[:60]!r} is not a plain file name (letters, digits, . _ -)",
                           "files")
        total += len(text.encode("utf-8", "replace"))
    if total > MAX_BUNDLE_BYTES:
        raise ApiError(422, f"files: {total:,} bytes in all; at most {MAX_BUNDLE_BYTES:,}", "files")
    with tempfile.TemporaryDirectory(prefix="gpufleet-bundle-") as tmp:
        for name, text in bundle.files.items():
            (Path(tmp) / name).write_text(text, encoding="utf-8")
        d = diagnose(Path(tmp))
    return DiagnosisDoc.model_validate(d.to_dict())


def health(snap: LiveSnapshot, node: str, att: AttachedDiagnosis | None) -> NodeHealthOut | None:
    """The node's layers and state (module docstring); None for a node the fleet lacks."""
    if node not in snap.table.names:
        return None
    i = snap.table.names.index(node)
    n = snap.fleet.nodes[i]
    out = snap.out_of_service.get(node)
    down = not bool(snap.table.schedulable[i]) and str(n.health) == "down"
    failed = (out or "").startswith(FAILED) or (out is None and down)
    state = _machine_state(out, failed, n.health)
    d = att.diagnosis if att is not None else None
    nxt: list[str] = []
    if d is not None:
        try:
            nxt = [str(m.to) for m in verdict_moves(state, d.layer, d.action)]
        except IllegalTransition:
            nxt = []
    layers = [_row(key, label, covers, d, failed, str(n.health), snap.source) for key, label, covers in ROWS]
    if d is not None and d.layer in EXTRA_ROWS:
        layers.append(LayerRow(key=d.layer, label=EXTRA_ROWS[d.layer], state="fault",
                               words=f"{d.failure}; action: {d.action.replace('_', ' ')}", basis="diagnosis"))
    layers.append(_allocatable(snap, i, out))
    return NodeHealthOut(node=node, state=str(state), fleet_label=str(fleet_label(state)), next_states=nxt,
                         layers=layers, last_diagnosis=att)


def _machine_state(out: str | None, failed: bool, label: NodeHealth) -> HealthState:
    """Where the node is on the health machine: a failed node is quarantined (its jobs already
    left); one taken out of service otherwise (drained, cordoned: no new work, its jobs finish)
    is draining, as model/health.py maps Slurm's DRAIN; one held for a reservation is healthy;
    a node in service is where its fleet label enters the machine."""
    if failed:
        return HealthState.QUARANTINED
    if out is None:
        return machine_state(label)
    return HealthState.HEALTHY if out.startswith("reservation") else HealthState.DRAINING


def _row(key: str, label: str, covers: tuple[str, ...], d: DiagnosisDoc | None, failed: bool, label_now: str,
         source: str) -> LayerRow:
    if d is not None:
        if d.layer in covers:
            return LayerRow(key=key, label=label, state="fault", basis="diagnosis",
                            words=f"{d.failure}; action: {d.action.replace('_', ' ')}")
        if any(c in d.downstream_layers for c in covers):
            return LayerRow(key=key, label=label, state="collateral", basis="diagnosis",
                            words=f"depends on {d.layer.replace('_', ' ')}: re-check after the fix")
        if any(c in d.healthy_layers for c in covers):
            return LayerRow(key=key, label=label, state="ok", basis="diagnosis", words="checked, no fault")
        return LayerRow(key=key, label=label, state="unchecked", basis="diagnosis",
                        words="not checked: no file in the bundle speaks for it")
    if failed:
        if key == "driver":
            return LayerRow(key=key, label=label, state="fault", basis=source,
                            words="the node failed: its GPUs left the driver's view (attach a "
                                  "diagnosis to name the exact layer)")
        return LayerRow(key=key, label=label, state="collateral", basis=source,
                        words="down with the layer below it")
    if key == "driver" and label_now == "degraded":
        return LayerRow(key=key, label=label, state="watch", basis=source,
                        words="degraded: in service, with a condition to watch")
    return LayerRow(key=key, label=label, state="ok", basis=source, words="in service")


def _allocatable(snap: LiveSnapshot, i: int, out: str | None) -> LayerRow:
    t = snap.table
    total, free = int(t.gpu_total[i]), int(t.gpu_free[i])
    if bool(t.schedulable[i]):
        return LayerRow(key="allocatable", label="Allocatable", state="ok", basis=snap.source,
                        words=f"{total} of {total} GPUs ({free} free)")
    reason = out or "down"
    if reason.startswith("drain"):       # ours, or Slurm's DRAIN / DRAINING / DRAINED
        why = "drained by an admin: running jobs finish, no new work"
    elif reason == "cordon":
        why = "cordoned by an admin: no new work"
    elif reason == "fail":
        why = "failed: its jobs were requeued"
    else:
        why = f"out of service ({reason})"
    return LayerRow(key="allocatable", label="Allocatable", state="out", basis=snap.source,
                    words=f"0 of {total} GPUs: {why}; {total - free} still held by running work")


def node_health(snap: LiveSnapshot, store: Store, node: str) -> NodeHealthOut | None:
    return health(snap, node, last_diagnosis(store, node))
