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

from dataclasses import dataclass
from typing import Any

from gpufleet.adapters.slurm.accounts import ROOT, account_tenancy, associations_from_sacctmgr, parse_table
from gpufleet.adapters.slurm.conf import SlurmConf
from gpufleet.adapters.slurm.hostlist import compress
from gpufleet.adapters.slurm.settings import duration_s
from gpufleet.model.errors import InputError
from gpufleet.model.fleet import Fleet
from gpufleet.model.tenancy import FlavorQuota

ASSOC_FORMAT = "Cluster,Account,ParentName,User,Share,GrpTRES,QOS"
QOS_FORMAT = "Name,Priority,Preempt,PreemptMode,GrpTRES,MaxTRESPU"
@dataclass(frozen=True)
class ImportedTenancy:
    spec: dict[str, Any]
    notes: tuple[str, ...]


def _quotas(quotas: tuple[tuple[str, FlavorQuota], ...]) -> dict[str, dict[str, int]]:
    limit = "borrowing_limit"
    return {m: {"nominal": q.nominal} | ({} if q.borrowing_limit is None else {limit: q.borrowing_limit})
            for m, q in quotas}


def tenancy_from_slurm(assoc_text: str, qos_text: str, conf: SlurmConf, fleet: Fleet,
                       assoc_source: str = "sacctmgr assoc", qos_source: str = "sacctmgr qos",
                       cluster: str | None = None) -> ImportedTenancy:
    """The ``tenancy:`` mapping (as YAML-ready data) and notes on what has no counterpart. The
    accounts' quotas are accounts.account_tenancy's, the live service's rule."""

    assocs = associations_from_sacctmgr(assoc_text, assoc_source)
    cluster = cluster or conf.cluster_name
    if not any(not a.user and a.cluster in (cluster, "") for a in assocs):
        found = sorted({a.cluster for a in assocs if not a.user} - {""})
        hint = f"; the file has {', '.join(found)} (pass --cluster)" if found else ", found none"
        raise InputError(assoc_source, "Cluster",
                         f"expected account rows (User empty) of cluster {cluster}{hint}")
    got = account_tenancy(assocs, fleet, cluster)
    if got is None or not got.tenancy.tenants:
        raise InputError(assoc_source, "Account", "expected at least one account without sub-accounts")
    cohorts = [{"name": c.name, **({"parent": c.parent} if c.parent else {}), "quotas": _quotas(c.quotas)}
               for c in got.tenancy.cohorts]
    tenants = [{"name": t.name, "cohort": t.cohort or ROOT, "weight": t.weight, "quotas": _quotas(t.quotas)}
               for t in got.tenancy.tenants]
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
