"""Slurm's accounts as the live service's tenancy: queues, cohorts and nominal quotas per GPU model.

Read from slurmdbd's associations (slurmrestd ``/slurmdb/v0.0.38/associations``, or ``sacctmgr -P
show assoc format=Cluster,Account,ParentName,User,Share,GrpTRES``). One slurmdbd may keep several
clusters' accounts: only those of this cluster (slurm.conf's ClusterName) are read. The mapping,
for the Queues page and ``/api/v1/queues`` over ``--source slurm``:

* an account without sub-accounts is a **queue** (tenant), in the **cohort** of its parent
  account; an account with sub-accounts is a cohort, under its own parent (``root`` on top). A
  job's tenant is its account (engine_view.py), so a queue's usage is what its running jobs hold;
* Slurm guarantees no account a share of the nodes and ``GrpTRES=gres/gpu=N`` is a hard cap. So
  ``root`` holds the whole fleet (per GPU model); every other account has ``nominal: 0`` and
  borrows from above up to its cap (``borrowing_limit``: the cap, basis ``GrpTRES``; none without
  one, basis ``shares``). An untyped cap on a fleet of several GPU models is split over the models
  in proportion to their GPUs; a typed one (``gres/gpu:h100=N``) goes to the model whose name
  contains the type;
* a queue's ``weight`` is its ``Share``.

The one rule for both ``gpufleet slurm import-tenancy`` (a replay's tenancy) and the live
service's Slurm source, so that both give one cluster the same quotas. Example (the fleet: 32
H100; under root: lab, prod with GrpTRES gres/gpu=8, research; under lab: vision with
gres/gpu=16, nlp): root holds 32; prod may borrow 8, vision 16, research and nlp without limit.

This is a picture of Slurm's limits for people, not a second scheduler: the engine is not given
these quotas (Slurm enforces GrpTRES itself and says so as the job's reason), and a quota is
changed in Slurm (``sacctmgr modify account NAME set GrpTRES=gres/gpu=N``), not through us.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpufleet.model.errors import InputError
from gpufleet.model.fleet import Fleet
from gpufleet.model.tenancy import Cohort, FlavorQuota, Tenancy, TenantQueue
from gpufleet.traces.slurm_sacct import parse_tres, tres_count

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


def _caps_from_tres(tres: dict[str, str], source: str, where: str) -> tuple[tuple[str, int], ...]:
    out = []
    for key in sorted(tres):
        if key != "gres/gpu" and not key.startswith("gres/gpu:"):
            continue
        out.append((key.partition(":")[2], tres_count(tres, key, source, f"{where}: GrpTRES")))
    return tuple(out)


def _share(text: str, source: str, where: str) -> int:
    text = text.strip()
    if text.lower() == "parent" or not text:
        return 1
    if not text.isdigit() or int(text) == 0:
        raise InputError(source, where, f"expected a fair-share Share ≥ 1 or 'parent', got {text!r}")
    return int(text)


def associations_from_sacctmgr(text: str, source: str = "sacctmgr assoc") -> tuple[Association, ...]:
    """``sacctmgr -P show assoc format=Cluster,Account,ParentName,User,Share,GrpTRES`` (header line
    kept; the Cluster column may be left out)."""
    rows = parse_table(text, source, ("Account", "ParentName", "User", "Share", "GrpTRES"))
    out = []
    for r in rows:
        where = f"Account={r['Account']}"
        out.append(Association(r["Account"].strip(), r["User"].strip(), r["ParentName"].strip() or None,
                               _share(r["Share"], source, where),
                               _caps_from_tres(parse_tres(r["GrpTRES"]), source, where),
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
    accounts.setdefault(ROOT, Association(ROOT))
    gpus: dict[str, int] = {}
    for n in fleet.nodes:
        gpus[n.gpu] = gpus.get(n.gpu, 0) + n.gpus

    def parent_of(name: str) -> str | None:
        if name == ROOT:
            return None
        p = accounts[name].parent
        return p if p in accounts and p != name else ROOT

    for name in accounts:
        seen, up = {name}, parent_of(name)
        while up is not None:
            if up in seen:
                raise InputError("slurm associations", f"Account={name}", "its parents form a loop")
            seen, up = seen | {up}, parent_of(up)
    inner = {p for name in accounts if (p := parent_of(name)) is not None}
    cohorts, tenants, basis = [], [], {}
    for name in sorted(accounts, key=lambda n: (n != ROOT, n)):
        cap = _cap_per_model(accounts[name].gpu_caps, gpus)
        quotas = tuple((m, FlavorQuota(gpus[m] if name == ROOT else 0, None if cap is None else cap[m]))
                       for m in sorted(gpus))
        if name in inner or name == ROOT:
            cohorts.append(Cohort(name, parent_of(name), quotas))
            continue
        basis[name] = SHARES if cap is None else GRPTRES
        tenants.append(TenantQueue(name, parent_of(name), quotas, weight=float(accounts[name].shares)))
    return AccountTenancy(Tenancy(tuple(tenants), tuple(cohorts)), basis)


def account_shares(fairshare: tuple[FairShare, ...]) -> dict[str, float]:
    """Each account's fair share as sshare has it: effective usage ÷ normalized shares (1.00 =
    it used exactly its share of the decayed usage; Slurm's fair-share factor favours the lowest).
    Accounts with no shares are left out."""
    return {f.account: f.effective_usage / f.norm_shares for f in fairshare
            if not f.user and f.account != ROOT and f.norm_shares > 0}
