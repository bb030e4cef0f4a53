"""The ``kueue`` profile's flavor assignment when every flavor needs borrowing or preemption:
Kueue's ``flavorFungibility.preference`` (pkg/scheduler/flavorassigner isPreferred)."""

import pytest
import yaml
from tests.scenarios.test_kueue_rules import A100, NOW, F, on, preempted, two_flavor_cycle, w

from gpufleet.adapters.kueue.export import export_manifests
from gpufleet.adapters.kueue.read import read_manifests
from gpufleet.adapters.kueue.to_tenancy import to_tenancy
from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import AdmissionState, CycleInput, PendingJob, RunningJob
from gpufleet.model.tenancy import Cohort, FlavorQuota, KueueQueuePolicy, Tenancy, TenantQueue
from gpufleet.model.tenancy_config import TenancySpec
from gpufleet.policies.kueue.cycle import NO_LONGER_FITS
from gpufleet.policies.quota import with_flavor
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet


@pytest.mark.parametrize("preference, started, expected", [
    (None, ("a-hi",), []),
    ("BorrowingOverPreemption", ("a-hi",), []),
    ("PreemptionOverBorrowing", (), [("a-low", "InClusterQueue")]),
])
def test_the_preference_decides_between_borrowing_on_one_flavor_and_preempting_on_another(
        preference, started, expected):
    """a: H100 (nominal 8) then A100 (nominal 8), both fungibility rules TryNextFlavor,
    withinClusterQueue LowerPriority; b: H100 8, idle (lends it); cohort c. a runs a-1 (8,
    priority 10) on H100 and a-low (8, priority 0) on A100. a-hi (8, priority 10):
    H100 fits by borrowing b's 8 (mode fit, borrowing level 1: the cohort); A100 fits only by
    evicting a-low (mode preempt, level 0 once it is gone). The default prefers the better mode
    (fit): a-hi starts on H100, nothing evicted. PreemptionOverBorrowing prefers the lower
    level: A100, a-low is evicted."""
    pol = KueueQueuePolicy(within_cluster_queue="LowerPriority", when_can_borrow="TryNextFlavor",
                           when_can_preempt="TryNextFlavor", preference=preference)
    a = TenantQueue("a", "c", ((F, FlavorQuota(8)), (A100, FlavorQuota(8))), kueue=pol)
    b = TenantQueue("b", "c", ((F, FlavorQuota(8)),))
    low = with_flavor(w("a-low", "a", 8), A100)
    ps = low.pod_sets[0]
    run = [on(w("a-1", "a", 8, prio=10), 0),
           RunningJob(low, 9_000.0, (PodBinding("a-low", ps.name, 0, 2, ps.request),))]
    r = two_flavor_cycle(run, [w("a-hi", "a", 8, prio=10)], Tenancy(tenants=(a, b), cohorts=(Cohort("c"),)))
    assert r.started == started
    assert preempted(r) == expected


def test_the_preference_round_trips_and_needs_both_rules_at_try_next_flavor(tmp_path):
    """Export writes flavorFungibility.preference, import reads it back; as in Kueue's CRD it
    may be set only with whenCanBorrow and whenCanPreempt both TryNextFlavor."""
    spec = TenancySpec.model_validate({"cohorts": [{"name": "c"}], "tenants": [
        {"name": "a", "cohort": "c", "quotas": {F: {"nominal": 8}}, "kueue": {
            "when_can_borrow": "TryNextFlavor", "when_can_preempt": "TryNextFlavor",
            "preference": "PreemptionOverBorrowing"}}]})
    manifests, _ = export_manifests(spec)
    cq = next(m for m in manifests if m["kind"] == "ClusterQueue")
    assert cq["spec"]["flavorFungibility"]["preference"] == "PreemptionOverBorrowing"
    f = tmp_path / "m.yaml"
    f.write_text(yaml.safe_dump_all(manifests))
    back, _ = to_tenancy(read_manifests([f])[0])
    assert TenancySpec.model_validate(back["tenancy"]).build() == spec.build()
    with pytest.raises(ValueError, match="preference can only be set"):
        TenancySpec.model_validate({"tenants": [{"name": "a", "kueue": {
            "preference": "PreemptionOverBorrowing"}}]})


def scan_cycle(now: float, run: list[RunningJob], pending: list, tenancy: Tenancy,
               state: AdmissionState | None = None):
    """Two H100 nodes (0, 1), one A100 node (2)."""
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=2).leaves(1, nodes=1, gpu=A100).build())
    for rj in run:
        for b in rj.bindings:
            table.take(b.node, b.request)
    return run_cycle(CycleInput(now, table, [PendingJob(j) for j in pending], profile("kueue"),
                                running=run, tenancy=tenancy, admission=state or AdmissionState()))


def scan_tenancy() -> Tenancy:
    """q1: H100 8. q2: H100 0 then A100 8 (flavors in that order). Cohort c; Kueue's defaults
    (whenCanBorrow Borrow)."""
    return Tenancy(tenants=(TenantQueue("q1", "c", ((F, FlavorQuota(8)),)),
                            TenantQueue("q2", "c", ((F, FlavorQuota(0)), (A100, FlavorQuota(8))))),
                   cohorts=(Cohort("c"),))


@pytest.mark.parametrize("w1_still_runs", [True, False])
def test_a_head_that_loses_its_flavor_in_the_cycle_is_requeued_and_resumes_on_the_next(w1_still_runs):
    """Kueue nominates every head on the cycle's starting state, then admits them in order, each
    only if its nominated assignment still fits (scheduler.go: "Workload no longer fits after
    processing another workload" → skipped, requeued). With FlavorFungibilityPreserveScanProgress
    (beta, on by default since v0.20) the skipped head keeps its flavor scan: next cycle it
    starts after the flavor it was nominated on (LastTriedFlavorIdx + 1).
    Cycle 1, nothing running: w1 (q1, 8) fits q1's H100 nominal (level 0). w2 (q2, 8) fits
    H100 only by borrowing q1's idle 8: whenCanBorrow Borrow stops the scan there (index 0).
    w1 goes first (level 0 before borrowing) and takes the 8: w2 no longer fits, is not moved to
    A100 in that cycle, and nothing is preempted. Cycle 2, 30 s later: w2's scan starts at
    index 1, A100, where it fits q2's nominal: it starts on node 2. It does so even when w1 has
    left and H100 is free again (the scan does not go back to index 0 within the next cycle)."""
    t = scan_tenancy()
    w1, w2 = w("w1", "q1", 8), w("w2", "q2", 8, submit=1.0)
    r1 = scan_cycle(NOW, [], [w1, w2], t)
    assert r1.started == ("w1",) and r1.preemptions == ()
    assert r1.statuses["w2"].reasons[0] == NO_LONGER_FITS
    assert r1.admission.scan == {"w2": 1}
    run = [on(w1, 0)] if w1_still_runs else []
    r2 = scan_cycle(NOW + 30, run, [w2], t, state=r1.admission)
    assert r2.started == ("w2",)
    assert [b.node for b in r2.bindings if b.job == "w2"] == [2]
    assert r2.admission.scan == {}


def test_without_a_skipped_cycle_the_scan_starts_from_the_first_flavor():
    """The resume is for the cycle after the skip only: given no scan state, w2 alone (H100 free)
    borrows q1's 8 on H100, its first flavor, as whenCanBorrow Borrow says."""
    r = scan_cycle(NOW, [], [w("w2", "q2", 8)], scan_tenancy())
    assert r.started == ("w2",)
    assert [b.node for b in r.bindings if b.job == "w2"][0] in (0, 1)
