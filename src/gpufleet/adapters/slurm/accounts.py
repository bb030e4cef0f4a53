"""Slurm's accounts as the live service's tenancy: queues, cohorts and nominal quotas per GPU model.

Read from slurmdbd's associations (slurmrestd ``/slurmdb/v0.0.38/associations``, or ``sacctmgr -P
show assoc format=Cluster,Account,ParentName,User,Share,GrpTRES``). One slurmdbd may keep several
clusters' accounts: only those of this cluster (slurm.conf's ClusterName) are read. The mapping,
for the Queues page and ``/api/v1/queues`` over ``--source slurm``:

* an account without sub-accounts is a **queue** (tenant), in the **cohort** of its parent
  account; an account with sub-accounts is a cohort, under its own parent (``root`` on top). A
  job's tenant is its account (engine_view.py), so a queue's usage is what its running jobs hold;
* a queue's **nominal** per GPU model is its ``GrpTRES=gres/gpu=N`` when it has one (basis
  ``GrpTRES``; a hard cap in Slurm, so ``borrowing_limit: 0``), otherwise its fair-share slice of
  its parent's GPUs (basis ``shares``: ``parent GPUs × Share ÷ Σ Share`` over every association
  directly under the same parent, user associations included, as sshare's NormShares counts
  them; rounded down; ``borrowing_limit`` none, since Slurm lets an account run on idle nodes
  beyond its share). ``root``'s GPUs are the fleet's; an inner account's are its own nominal,
  found by the same rule. An untyped cap on a fleet of several GPU models is split over the
  models in proportion to their GPUs; a typed one (``gres/gpu:h100=N``) goes to the model whose
  name contains the type;
* a queue's ``weight`` is its ``Share``.

Example (the fleet: 32 H100; under root: user root Share 1, lab 2, prod 1 with GrpTRES
gres/gpu=8, research 1; under lab: vision 3 with gres/gpu=16, nlp 1): Σ Share under root = 5, so
research gets ⌊32 × 1/5⌋ = 6 (shares), prod 8 (GrpTRES), lab ⌊32 × 2/5⌋ = 12; under lab vision
gets 16 (GrpTRES) and nlp ⌊12 × 1/4⌋ = 3 (shares).

This is a picture of Slurm's limits for people, not a second scheduler: the engine is not given
these quotas (Slurm enforces GrpTRES itself and says so as the job's reason), and a quota is
changed in Slurm (``sacctmgr modify account NAME set GrpTRES=gres/gpu=N``), not through us.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from gpufleet.adapters.slurm.tenancy_import import ROOT, parse_table
from gpufleet.model.errors import InputError
from gpufleet.model.fleet import Fleet
from gpufleet.model.tenancy import Cohort, FlavorQuota, Tenancy, TenantQueue
from gpufleet.traces.slurm_sacct import parse_tres

ASSOC_FORMAT = "Cluster,Account,ParentName,User,Share,GrpTRES"
GRPTRES, SHARES = "GrpTRES", "shares"


@dataclass(frozen=True, slots=True)
class Association:
    """One association: an account (``user`` empty, ``parent`` its parent account) or a user
    in an account (``parent`` None: its account is its parent). ``gpu_caps``: GrpTRES GPU
    limits as (GPU type, or "" for any; count)."""

    account: str
    user: str = ""
    parent: str | None = None
    shares: int = 1
    gpu_caps: tuple[tuple[str, int], ...] = ()
    #: The cluster it belongs to ("" when the answer does not say).
    cluster: str = ""


@dataclass(frozen=True, slots=True)
class FairShare:
    """One ``sshare`` association row: ``fairshare`` in [0, 1] (1: has used nothing of its
    share), ``raw_usage`` in decayed TRES-seconds."""

    account: str
    user: str
    norm_shares: float
    raw_usage: float
    effective_usage: float
    fairshare: float | None


def account_names(assocs: tuple[Association, ...]) -> tuple[str, ...]:
    return tuple(sorted({a.account for a in assocs}))


@dataclass(frozen=True)
class AccountTenancy:
    tenancy: Tenancy
    #: queue -> GRPTRES or SHARES: where its nominal comes from.
    basis: dict[str, str]


def _caps_from_tres(tres: dict[str, str], where: str) -> tuple[tuple[str, int], ...]:
    out = []
    for key, value in sorted(tres.items()):
        if key != "gres/gpu" and not key.startswith("gres/gpu:"):
            continue
        if not value.isdigit():
            raise InputError("sacctmgr assoc", where, f"expected a GPU count in GrpTRES, got {key}={value}")
        out.append((key.partition(":")[2], int(value)))
    return tuple(out)


def associations_from_sacctmgr(text: str) -> tuple[Association, ...]:
    """``sacctmgr -P show assoc format=Cluster,Account,ParentName,User,Share,GrpTRES`` (header line
    kept; the Cluster column may be left out)."""
    rows = parse_table(text, "sacctmgr assoc", ("Account", "ParentName", "User", "Share", "GrpTRES"))
    out = []
    for r in rows:
        share = r["Share"].strip()
        out.append(Association(r["Account"].strip(), r["User"].strip(), r["ParentName"].strip() or None,
                               int(share) if share.isdigit() else 1,
                               _caps_from_tres(parse_tres(r["GrpTRES"]), f"Account={r['Account']}"),
                               r.get("Cluster", "").strip()))
    return tuple(out)


def associations_from_rest(data: dict[str, Any]) -> tuple[Association, ...]:
    """slurmrestd v0.0.38 ``/slurmdb/…/associations``: GrpTRES is ``max.tres.total``, a list of
    ``{"type": "gres", "name": "gpu", "count": 16}`` (``"gpu:h100"`` when typed)."""
    out = []
    for a in data.get("associations") or []:
        total = ((a.get("max") or {}).get("tres") or {}).get("total") or []
        caps = tuple(sorted((str(t.get("name", "")).partition(":")[2], int(t["count"])) for t in total
                            if t.get("type") == "gres" and str(t.get("name", "")).split(":")[0] == "gpu"
                            and t.get("count") is not None))
        shares = a.get("shares_raw")
        out.append(Association(str(a["account"]), str(a.get("user") or ""), a.get("parent_account") or None,
                               int(shares) if isinstance(shares, int) and shares > 0 else 1, caps,
                               str(a.get("cluster") or "")))
    return tuple(out)


def _cap_per_model(caps: tuple[tuple[str, int], ...], gpus: dict[str, int]) -> dict[str, int] | None:
    """A GrpTRES GPU cap as a count per GPU model (None: no cap)."""
    if not caps:
        return None
    out: Counter[str] = Counter()
    total = sum(gpus.values())
    for kind, n in caps:
        if kind:
            for m in gpus:
                if kind.lower() in m.lower():
                    out[m] += n
            continue
        models = sorted(gpus, key=lambda m: (-gpus[m], m))
        parts = {m: n * gpus[m] // total for m in models} if total else {}
        if models:
            parts[models[0]] += n - sum(parts.values())   # what rounding left, to the largest model
        out.update(parts)
    return {m: out.get(m, 0) for m in gpus}


def account_tenancy(assocs: tuple[Association, ...], fleet: Fleet,
                    cluster: str | None = None) -> AccountTenancy | None:
    """The tenancy of ``assocs`` over ``fleet`` (the module's mapping), or None without accounts.
    ``cluster``: only its associations (and those that name none); when no association names
    it (slurm.conf read here names another), all of them."""
    if cluster and any(a.cluster == cluster for a in assocs):
        assocs = tuple(a for a in assocs if a.cluster in (cluster, ""))
    accounts = {a.account: a for a in assocs if not a.user}
    if not any(name != ROOT for name in accounts):
        return None
    gpus: dict[str, int] = {}
    for n in fleet.nodes:
        gpus[n.gpu] = gpus.get(n.gpu, 0) + n.gpus

    def parent_of(name: str) -> str | None:
        if name == ROOT:
            return None
        p = accounts[name].parent
        return p if p in accounts and p != name else ROOT

    under: dict[str, int] = Counter()
    for a in assocs:
        up = a.account if a.user else parent_of(a.account)
        if up is not None:
            under[up] += a.shares
    inner = {p for name in accounts if (p := parent_of(name)) is not None}
    nominal: dict[str, dict[str, int]] = {ROOT: dict(gpus)}
    basis: dict[str, str] = {}

    def nominal_of(name: str, depth: int = 0) -> dict[str, int]:
        if name in nominal:
            return nominal[name]
        if depth > len(accounts):
            raise InputError("slurm associations", f"Account={name}", "its parents form a loop")
        cap = _cap_per_model(accounts[name].gpu_caps, gpus)
        if cap is not None:
            nominal[name], basis[name] = cap, GRPTRES
        else:
            up = parent_of(name) or ROOT
            above, total = nominal_of(up, depth + 1), under[up] or 1
            nominal[name] = {m: n * accounts[name].shares // total for m, n in above.items()}
            basis[name] = SHARES
        return nominal[name]

    cohorts, tenants = [], []
    for name in sorted(accounts):
        quotas = nominal_of(name)
        if name in inner or name == ROOT:
            cohorts.append(Cohort(name, parent_of(name), tuple(
                (m, FlavorQuota(n)) for m, n in sorted(quotas.items()))))
            continue
        hard = 0 if basis[name] == GRPTRES else None
        tenants.append(TenantQueue(name, parent_of(name), tuple(
            (m, FlavorQuota(n, hard)) for m, n in sorted(quotas.items())),
            weight=float(accounts[name].shares)))
    return AccountTenancy(Tenancy(tuple(tenants), tuple(cohorts)),
                          {t.name: basis[t.name] for t in tenants})


def account_shares(fairshare: tuple[FairShare, ...]) -> dict[str, float]:
    """Each account's fair share as sshare has it: effective usage ÷ normalized shares (1.00 =
    it used exactly its share of the decayed usage; Slurm's fair-share factor favours the lowest).
    Accounts with no shares are left out."""
    return {f.account: f.effective_usage / f.norm_shares for f in fairshare
            if not f.user and f.account != ROOT and f.norm_shares > 0}
