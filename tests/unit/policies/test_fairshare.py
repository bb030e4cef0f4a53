"""Fair-share ordering between tenants, worked by hand."""

import math

import numpy as np
from tests.unit.policies.test_quota import running

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleContext, CycleInput, PendingJob
from gpufleet.model.tenancy import Cohort, FlavorQuota, Tenancy, TenantQueue
from gpufleet.policies.fairshare import (
    DominantResourceFairShare,
    SlurmClassicFairShare,
    drf_share,
    slurm_factor,
)
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet, job

F = "H100-80GB"
H = 3600.0


def ten(usage_weight=0.5, wa=1.0, wb=1.0):
    return Tenancy(tenants=(TenantQueue("a", "c", ((F, FlavorQuota(32)),), wa),
                            TenantQueue("b", "c", ((F, FlavorQuota(32)),), wb)),
                   cohorts=(Cohort("c"),), half_life_s=H, usage_weight=usage_weight)


def order(orderer, tenancy, usage, running_=(), names=("a1", "a2", "b1", "b2")):
    ctx = CycleContext(0.0, profile("tenancy"), np.random.default_rng(0), running=list(running_),
                       tenancy=tenancy, usage=usage)
    pending = [PendingJob(job(n).tenant(n[0]).gpus(8).at(i).build()) for i, n in enumerate(names)]
    return [p.job.id for p in orderer.order(pending, ctx)]


def test_decayed_usage_lets_a_tenant_that_ran_lately_wait_behind_one_that_holds_more_now():
    """C = 64 GPUs, H = 1 h, k = 0.5. a holds 16 GPUs now and used nothing lately; b holds
    nothing now but used U_b = 115,200 GPU·s (32 GPUs for an hour).

        historical_b = 115200 × ln2 / (3600 × 64) = 0.5 × ln2 = 0.34657
        share_a = 0.5 × 16/64 + 0.5 × 0        = 0.12500  → a1 first
        share_a = 0.5 × 24/64                    = 0.18750
        share_b = 0.5 × 0 + 0.5 × 0.34657        = 0.17329  → b1 next
        share_b = 0.5 × 8/64 + 0.17329           = 0.23579
        share_a = 0.18750                                   → a2, then a = 0.25 > b → b2
    Order: a1, b1, a2, b2. Without history (k = 0): b (0) goes before a (0.25) until b reaches
    0.25 too; the tie goes to the name: b1, b2, a1, a2.
    """
    a_run = running(job("a0").tenant("a").gpus(8).gang(2).build(), node=0)
    usage = {"b": 115_200.0}
    assert math.isclose(drf_share({F: 0}, 115_200.0, 1.0, {F: 64}, H, 0.5), 0.5 * 0.5 * math.log(2))
    assert order(DominantResourceFairShare(), ten(), usage, [a_run]) == ["a1", "b1", "a2", "b2"]
    no_history = order(DominantResourceFairShare(), ten(usage_weight=0.0), usage, [a_run])
    assert no_history == ["b1", "b2", "a1", "a2"]


def test_a_tenant_with_twice_the_weight_gets_two_turns_for_each_of_the_others():
    """Weights 2 and 1, no history: after n jobs share_a = (8n/64)/2 = n/16, share_b = n/8.
    a1 (0 = 0, name), b1 (0 < 1/16), a2 (1/16 < 1/8), a3 (1/8 = 1/8, name), b2.
    With equal weights a2 and b2 tie at 1/8 and alternate: a1, b1, a2, b2, a3."""
    names = ("a1", "a2", "a3", "b1", "b2")
    assert order(DominantResourceFairShare(), ten(usage_weight=0.0, wa=2.0), {}, names=names) == [
        "a1", "b1", "a2", "a3", "b2"]
    assert order(DominantResourceFairShare(), ten(usage_weight=0.0), {}, names=names) == [
        "a1", "b1", "a2", "b2", "a3"]


def test_slurm_classic_factor_puts_the_lighter_user_first():
    """Equal shares S = 0.5; usage a = 3, b = 1 → U_a = 0.75, U_b = 0.25.
    F_a = 2^(−0.75/0.5) = 2^(−1.5) = 0.354; F_b = 2^(−0.5) = 0.707 → b's jobs first."""
    assert math.isclose(slurm_factor(3, 4, 1, 2), 2 ** -1.5)
    assert math.isclose(slurm_factor(1, 4, 1, 2), 2 ** -0.5)
    assert order(SlurmClassicFairShare(), ten(), {"a": 3.0, "b": 1.0}) == ["b1", "b2", "a1", "a2"]


def test_splitting_a_job_buys_no_extra_gpus_under_dominant_share():
    """a asks 16 × 1 GPU, b 2 × 8 GPUs, on 16 free GPUs: each tenant gets 8, not a's 16."""
    t = ten(usage_weight=0.0)
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=2).build())
    pend = ([PendingJob(job(f"a{i}").tenant("a").gpus(1).build()) for i in range(16)]
            + [PendingJob(job(f"b{i}").tenant("b").gpus(8).at(1).build()) for i in range(2)])
    r = run_cycle(CycleInput(0.0, table, pend, profile("tenancy"), tenancy=t))
    assert sum(1 for j in r.started if j.startswith("a")) == 8
    assert sum(1 for j in r.started if j.startswith("b")) == 1
