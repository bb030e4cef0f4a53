"""Slurm's accounts, fair-share shares, GPU caps and QOS as a gpufleet ``tenancy:`` section.

Sources: ``sacctmgr -P show assoc format=Cluster,Account,ParentName,User,Share,GrpTRES,QOS`` and
``sacctmgr -P show qos format=Name,Priority,Preempt,PreemptMode,GrpTRES,MaxTRESPU`` (header line
included), plus slurm.conf for ``PriorityDecayHalfLife`` and the partitions. Mapping:

* an account with sub-accounts becomes a **cohort** (``root`` is the top one); an account without
  becomes a **tenant** in its parent's cohort, with ``weight`` = its fair-share ``Share``;
* Slurm guarantees no account a share of the nodes; ``GrpTRES=gres/gpu=N`` is a hard cap. So the
  ``root`` cohort holds the whole fleet (per GPU model), every tenant has ``nominal: 0`` and
  borrows from it, up to its cap (``borrowing_limit: N``; none without a cap). A cap on an inner
  account becomes its cohort's quota with the same limit;
* each **QOS** becomes a priority class of its ``Priority`` value; a QOS that another QOS's
  ``Preempt`` list names is preemptible, the others are not. Two QOS with the same priority cannot
  both be classes (our classes need distinct values): the later ones are listed in ``notes``;
* ``PriorityDecayHalfLife`` (default 7 days) becomes ``half_life_h``;
* partitions have no counterpart (a tenancy spans the fleet): each is listed in ``notes`` with its
  nodes and priority settings, so nothing is dropped silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpufleet.adapters.slurm.conf import SlurmConf
from gpufleet.adapters.slurm.hostlist import compress
from gpufleet.adapters.slurm.settings import duration_s
from gpufleet.model.errors import InputError
from gpufleet.model.fleet import Fleet
from gpufleet.traces.slurm_sacct import parse_tres, tres_count

ASSOC_FORMAT = "Cluster,Account,ParentName,User,Share,GrpTRES,QOS"
QOS_FORMAT = "Name,Priority,Preempt,PreemptMode,GrpTRES,MaxTRESPU"
ROOT = "root"


def parse_table(text: str, source: str, required: Sequence[str]) -> list[dict[str, str]]:
    """``sacctmgr -P`` output with its header line, as one dict per row."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise InputError(source, "", "empty file (expected sacctmgr -P output with a header line)")
    header = lines[0].split("|")
    missing = [c for c in required if c not in header]
    if missing:
        raise InputError(source, "header", f"missing column {missing[0]} (expected sacctmgr -P show ... "
                         f"format={','.join(required)})")
    rows = []
    for no, line in enumerate(lines[1:], start=2):
        cells = line.split("|")
        if len(cells) != len(header):
            raise InputError(source, f"line {no}",
                             f"expected {len(header)} '|'-separated fields, got {len(cells)}")
        rows.append(dict(zip(header, cells, strict=True)))
    return rows


@dataclass(frozen=True)
class ImportedTenancy:
    spec: dict[str, Any]
    notes: tuple[str, ...]


def _gpu_cap(tres_text: str, source: str, where: str) -> int | None:
    tres = parse_tres(tres_text)
    return tres_count(tres, "gres/gpu", source, where) if "gres/gpu" in tres else None


def _share(text: str, source: str, where: str) -> float:
    text = text.strip()
    if text.lower() == "parent" or not text:
        return 1.0
    if not text.isdigit() or int(text) == 0:
        raise InputError(source, where, f"expected a fair-share Share ≥ 1 or 'parent', got {text!r}")
    return float(text)


def tenancy_from_slurm(assoc_text: str, qos_text: str, conf: SlurmConf, fleet: Fleet,
                       assoc_source: str = "sacctmgr assoc", qos_source: str = "sacctmgr qos",
                       cluster: str | None = None) -> ImportedTenancy:
    """The ``tenancy:`` mapping (as YAML-ready data) and notes on what has no counterpart."""
    rows = parse_table(assoc_text, assoc_source, ("Account", "ParentName", "User", "Share", "GrpTRES"))
    cluster = cluster or conf.cluster_name
    accounts = [r for r in rows if not r["User"].strip() and r.get("Cluster", cluster) in (cluster, "")]
    if not accounts:
        found = sorted({r.get("Cluster", "") for r in rows if not r["User"].strip()} - {""})
        hint = f"; the file has {', '.join(found)} (pass --cluster)" if found else ", found none"
        raise InputError(assoc_source, "Cluster",
                         f"expected account rows (User empty) of cluster {cluster}{hint}")
    parent = {r["Account"]: (r["ParentName"] or None) for r in accounts}
    children = {p for p in parent.values() if p}
    per_model: dict[str, int] = {}
    for n in fleet.nodes:
        per_model[n.gpu] = per_model.get(n.gpu, 0) + n.gpus
    cohorts: list[dict[str, Any]] = []
    tenants: list[dict[str, Any]] = []
    for r in accounts:
        name = r["Account"]
        where = f"Account={name}"
        cap = _gpu_cap(r["GrpTRES"], assoc_source, where + ": GrpTRES")
        up = parent[name] if parent[name] in parent else (ROOT if name != ROOT else None)
        limit = {"borrowing_limit": cap} if cap is not None else {}
        capped = {m: {"nominal": 0, **limit} for m in per_model}
        if name == ROOT or name in children:
            quotas = {m: {"nominal": total} for m, total in per_model.items()} if name == ROOT else capped
            above = {"parent": up} if up and name != ROOT else {}
            cohorts.append({"name": name, **above, "quotas": quotas})
        else:
            tenants.append({"name": name, "cohort": up or ROOT,
                            "weight": _share(r["Share"], assoc_source, where), "quotas": capped})
    if not any(c["name"] == ROOT for c in cohorts):
        cohorts.insert(0, {"name": ROOT, "quotas": {m: {"nominal": t} for m, t in per_model.items()}})
    notes: list[str] = []
    classes = _classes(qos_text, qos_source, notes)
    for p in conf.partitions:
        opts = {k: v for k, v in p.options if k.lower() in ("prioritytier", "priorityjobfactor", "default",
                                                             "allowaccounts", "allowqos")}
        notes.append(f"partition {p.name}: {len(p.nodes)} nodes ({compress(list(p.nodes))})"
                     + (f", {', '.join(f'{k}={v}' for k, v in opts.items())}" if opts else "")
                     + "; a tenancy spans the whole fleet, so partitions are not mapped")
    spec: dict[str, Any] = {
        "half_life_h": duration_s(conf, "PriorityDecayHalfLife", 7 * 86400.0) / 3600.0,
        "priority_classes": classes, "cohorts": cohorts, "tenants": tenants,
    }
    if not tenants:
        raise InputError(assoc_source, "Account", "expected at least one account without sub-accounts")
    return ImportedTenancy(spec, tuple(notes))


def _classes(qos_text: str, source: str, notes: list[str]) -> list[dict[str, Any]]:
    rows = parse_table(qos_text, source, ("Name", "Priority", "Preempt"))
    preempted = {q.strip() for r in rows for q in r["Preempt"].split(",") if q.strip()}
    out: list[dict[str, Any]] = []
    seen: dict[int, str] = {}
    for r in rows:
        text = r["Priority"].strip() or "0"
        if not text.isdigit():
            raise InputError(source, f"QOS {r['Name']}: Priority",
                             f"expected a whole number ≥ 0, got {text!r}")
        value = int(text)
        if value in seen:
            notes.append(f"QOS {r['Name']}: priority {value} equals QOS {seen[value]}'s; kept as that class")
            continue
        seen[value] = r["Name"]
        out.append({"name": r["Name"], "value": value, "preemptible": r["Name"] in preempted})
    return out
