"""Slurm's accounts as the live tenancy (adapters/slurm/accounts.py), from real answers of
slurmdbd: tests/data/slurmrestd/associations-nested.json (slurmrestd's associations) and
tests/data/slurm/sacctmgr-assoc-live.txt (``sacctmgr -P show assoc
format=Cluster,Account,ParentName,User,Share,GrpTRES``), read from the same emulated cluster.

The recorded tree: under root the user association root (Share 1), lab (Share 2), prod (Share 1,
GrpTRES=gres/gpu=8) and research (Share 1); under lab vision (Share 3, GrpTRES=gres/gpu=16)
and nlp (Share 1); user root in every leaf account. Slurm guarantees no account GPUs, so over
4 nodes × 8 H100 = 32 GPUs root holds all 32 and every account has nominal 0, borrowing up to
its GrpTRES: prod 8, vision 16, research and nlp without limit (None).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gpufleet.adapters.slurm.accounts import (
    Association,
    FairShare,
    account_shares,
    account_tenancy,
    associations_from_rest,
    associations_from_sacctmgr,
)
from gpufleet.adapters.slurm.compare_run import read_cluster
from gpufleet.adapters.slurm.queue import QueueSnapshot
from gpufleet.adapters.slurm.rest import SlurmView, parse_sshare
from gpufleet.adapters.slurm.tenancy_import import tenancy_from_slurm
from gpufleet.live.slurm import SlurmSource
from gpufleet.model.errors import InputError
from gpufleet.testing.builders import fleet

DATA = Path(__file__).resolve().parents[2] / "data"
H100 = fleet().leaves(1, nodes=4, gpus=8).build()


def nominals(assocs: tuple[Association, ...], f=H100) -> dict[str, tuple]:  # noqa: ANN001
    t = account_tenancy(assocs, f)
    assert t is not None
    return {q.name: (q.cohort, {m: (fq.nominal, fq.borrowing_limit) for m, fq in q.quotas}, q.weight,
                     t.basis[q.name]) for q in t.tenancy.tenants}


def test_leaf_accounts_are_queues_in_their_parents_cohort_borrowing_up_to_their_grptres():
    (model,) = {n.gpu for n in H100.nodes}
    got = nominals(associations_from_rest(json.loads((DATA / "slurmrestd" / "associations-nested.json")
                                                     .read_text())))
    assert got == {
        "research": ("root", {model: (0, None)}, 1.0, "shares"),
        "prod": ("root", {model: (0, 8)}, 1.0, "GrpTRES"),
        "nlp": ("lab", {model: (0, None)}, 1.0, "shares"),
        "vision": ("lab", {model: (0, 16)}, 3.0, "GrpTRES"),
    }
    t = account_tenancy(associations_from_rest(json.loads(
        (DATA / "slurmrestd" / "associations-nested.json").read_text())), H100)
    assert {c.name: (c.parent, c.quota(model).nominal) for c in t.tenancy.cohorts} == \
        {"lab": ("root", 0), "root": (None, 32)}


def test_sacctmgr_gives_the_same_queues_as_slurmrestd():
    rest = associations_from_rest(json.loads((DATA / "slurmrestd" / "associations-nested.json").read_text()))
    cli = associations_from_sacctmgr((DATA / "slurm" / "sacctmgr-assoc-live.txt").read_text())
    assert sorted(cli, key=repr) == sorted(rest, key=repr)
    assert nominals(cli) == nominals(rest)


def test_an_untyped_limit_is_split_over_gpu_models_by_their_gpus_and_a_typed_one_goes_to_its_model():
    """24 A100 + 8 H100 GPUs: gres/gpu=10 gives ⌊10 × 24/32⌋ = 7 and ⌊10 × 8/32⌋ = 2, the 1 left by
    rounding to the larger model: it may borrow 8 A100, 2 H100. gres/gpu:h100=4 is 4 H100 and no A100."""
    mixed = fleet().leaves(1, nodes=3, gpus=8, gpu="A100-80GB").leaves(1, nodes=1, gpus=8).build()
    models = sorted({n.gpu for n in mixed.nodes})
    assert len(models) == 2
    a100 = next(m for m in models if "A100" in m)
    h100 = next(m for m in models if "H100" in m)
    got = nominals((Association("root"), Association("a", parent="root", gpu_caps=(("", 10),)),
                    Association("b", parent="root", gpu_caps=(("h100", 4),))), mixed)
    assert got["a"][1] == {a100: (0, 8), h100: (0, 2)}
    assert got["b"][1] == {a100: (0, 0), h100: (0, 4)}


def test_no_accounts_is_no_tenancy_and_a_bad_limit_names_the_account():
    assert account_tenancy((Association("root"), Association("root", user="root")), H100) is None
    text = "Account|ParentName|User|Share|GrpTRES\nroot||||\nprod|root||1|gres/gpu=lots\n"
    with pytest.raises(InputError, match="Account=prod"):
        associations_from_sacctmgr(text)
    with pytest.raises(InputError, match="its parents form a loop"):
        account_tenancy((Association("a", parent="b"), Association("b", parent="a")), H100)


def test_fair_share_is_effective_usage_over_normalized_shares_per_account():
    """prod used 30 % of the decayed usage on a 20 % share: 0.3 / 0.2 = 1.5 (over its share);
    research 10 % on 20 %: 0.5. User rows and root are not queues."""
    rows = (FairShare("root", "", 0.0, 0, 1.0, None), FairShare("prod", "", 0.2, 300, 0.3, None),
            FairShare("prod", "root", 1.0, 300, 0.3, 0.2), FairShare("research", "", 0.2, 100, 0.1, None))
    assert account_shares(rows) == {"prod": pytest.approx(1.5), "research": pytest.approx(0.5)}


def test_only_this_clusters_accounts_are_read_when_slurmdbd_keeps_several():
    """One slurmdbd for two clusters: gfq's accounts (the recorded ones) and another cluster's
    ``other`` account; slurm.conf names gfq."""
    rest = associations_from_rest(json.loads((DATA / "slurmrestd" / "associations-nested.json").read_text()))
    assert {a.cluster for a in rest} == {"gfq"}
    both = (*rest, Association("root", cluster="big"), Association("other", parent="root", cluster="big"))
    assert set(nominals(both)) == {"research", "prod", "nlp", "vision", "other"}     # no cluster named
    t = account_tenancy(both, H100, "gfq")
    assert t is not None and {q.name for q in t.tenancy.tenants} == {"research", "prod", "nlp", "vision"}
    cli = associations_from_sacctmgr("Cluster|Account|ParentName|User|Share|GrpTRES\n"
                                     "big|root||||\nbig|other|root||1|gres/gpu=4\n")
    assert {(a.cluster, a.account) for a in cli} == {("big", "root"), ("big", "other")}


def test_sshare_of_the_recorded_tree_gives_every_account_a_share_and_no_user_row():
    """tests/data/slurmrestd/sshare-nested.txt, read right after the accounts were made: nothing
    has run, so every effective usage is 0 and every account's fair share 0.0 (root is left out)."""
    rows = parse_sshare((DATA / "slurmrestd" / "sshare-nested.txt").read_text())
    assert account_shares(rows) == {"lab": 0.0, "nlp": 0.0, "vision": 0.0, "prod": 0.0, "research": 0.0}


def test_import_tenancy_and_the_live_source_give_one_cluster_the_same_quotas():
    """The same accounts recorded twice (sacctmgr for ``gpufleet slurm import-tenancy``, slurmrestd
    for the live service), over tests/data/slurm/slurm.conf's 16 nodes × 8 H100 = 128 GPUs: root
    holds 128, lab 0 (no GrpTRES, so no borrowing limit); every queue has nominal 0 and may borrow
    its GrpTRES: prod 8, vision 16, nlp and research without limit; weights are the Shares
    (vision 3, the others 1)."""
    fleet, conf = read_cluster(DATA / "slurm" / "slurm.conf")
    imported = tenancy_from_slurm((DATA / "slurm" / "sacctmgr-assoc-live.txt").read_text(),
                                  (DATA / "slurm" / "sacctmgr-qos.txt").read_text(), conf, fleet,
                                  cluster="gfq").spec
    src = SlurmSource(None, conf=replace(conf, cluster_name="gfq"))  # type: ignore[arg-type]
    src._read_accounts(SlurmView(QueueSnapshot(0.0, (), ()), associations=associations_from_rest(json.loads(
        (DATA / "slurmrestd" / "associations-nested.json").read_text()))), fleet)
    model = "H100-80GB"
    live_queues = {q.name: (q.cohort, q.weight, q.quota(model).nominal, q.quota(model).borrowing_limit)
                   for q in src.tenancy.tenants}
    import_queues = {t["name"]: (t["cohort"], t["weight"], t["quotas"][model]["nominal"],
                                 t["quotas"][model].get("borrowing_limit")) for t in imported["tenants"]}
    assert live_queues == import_queues == {"nlp": ("lab", 1.0, 0, None), "prod": ("root", 1.0, 0, 8),
                                            "research": ("root", 1.0, 0, None), "vision": ("lab", 3.0, 0, 16)}
    assert {c.name: (c.parent, c.quota(model).nominal) for c in src.tenancy.cohorts} == \
        {c["name"]: (c.get("parent"), c["quotas"][model]["nominal"]) for c in imported["cohorts"]} == \
        {"root": (None, 128), "lab": ("root", 0)}
