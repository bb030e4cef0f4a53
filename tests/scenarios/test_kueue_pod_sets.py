"""The ``kueue`` profile preempts for a workload whose pod sets land on different flavors.

Kueue's flavor assigner (pkg/scheduler/flavorassigner) assigns each pod set its own flavor and
mode, earlier pod sets counted; the workload's representative mode is its worst pod set's, and
when that is Preempt the preemptor computes one set of targets for the usage of all pod sets
on their flavors. Nodes 0-1 are H100, node 2 is A100 (8 GPUs each); one cycle at t = 10,000,
then one 30 s later when the victims are gone.
"""

from dataclasses import replace

from tests.scenarios.test_kueue_rules import A100, NOW, F, two_flavor_cycle, w

from gpufleet.engine.plan import PodBinding
from gpufleet.engine.types import RunningJob
from gpufleet.model.tenancy import Cohort, FlavorQuota, KueueQueuePolicy, Tenancy, TenantQueue
from gpufleet.policies.quota import with_flavor


def test_a_workload_split_across_flavors_reclaims_on_the_flavor_that_needs_it():
    """a: H100 nominal 8, then A100 nominal 8, reclaimWithinCohort Any. b: A100 nominal 0, runs
    b-1 (8 GPUs) on the A100 node, borrowing all of a's A100 quota. The workload: trainer (1 × 8
    GPUs) then eval (1 × 4), any model.
    Per pod set: trainer on H100, 0 + 8 ≤ 8: Fit. eval, trainer counted: H100 8 + 4 > 8 and the
    cohort has no other H100 to lend (b has none): NoFit there; A100 0 + 4 ≤ 8 within nominal
    but 8 − 8 = 0 unused: Reclaim (b borrows 8). Representative mode: Preempt, on A100; b-1 is
    the one candidate, and evicting it leaves A100 8 unused ≥ 4: preempted, InCohortReclamation.
    As one 12-GPU block on a single flavor it could never fit (8 of quota on each), so nothing
    would be preempted and the workload would wait for b-1's end (25 h).
    30 s later b-1 is gone: trainer on H100, eval on A100, admitted and started."""
    base = w("mixed", "a", 8, submit=100.0)
    trainer = replace(base.pod_sets[0], name="trainer")
    ev = replace(base.pod_sets[0], name="eval", request=replace(base.pod_sets[0].request, gpus=4))
    mixed = replace(base, pod_sets=(trainer, ev))
    ten = Tenancy(tenants=(
        TenantQueue("a", "c", ((F, FlavorQuota(8)), (A100, FlavorQuota(8))),
                    kueue=KueueQueuePolicy(reclaim_within_cohort="Any")),
        TenantQueue("b", "c", ((A100, FlavorQuota(0)),))), cohorts=(Cohort("c"),), grace_s=30.0)
    b1 = with_flavor(w("b-1", "b", 8), A100)
    run = [RunningJob(b1, NOW - 1_000, (PodBinding("b-1", "worker", 0, 2, b1.pod_sets[0].request),))]
    r1 = two_flavor_cycle(run, [mixed], ten)
    assert [(p.job, p.for_job, p.reason) for p in r1.preemptions] == [("b-1", "mixed", "InCohortReclamation")]

    r2 = two_flavor_cycle([], [mixed], ten)
    assert r2.started == ("mixed",)
    nodes = {b.pod_set: b.node for b in r2.bindings}
    assert nodes["trainer"] in (0, 1) and nodes["eval"] == 2
