"""The ``kueue`` profile's flavor assignment when every flavor needs borrowing or preemption:
Kueue's ``flavorFungibility.preference`` (pkg/scheduler/flavorassigner isPreferred)."""

import pytest
import yaml
from tests.scenarios.test_kueue_rules import A100, F, on, preempted, two_flavor_cycle, w

from gpufleet.adapters.kueue.export import export_manifests
from gpufleet.adapters.kueue.read import read_manifests
from gpufleet.adapters.kueue.to_tenancy import to_tenancy
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.types import RunningJob
from gpufleet.model.tenancy import Cohort, FlavorQuota, KueueQueuePolicy, Tenancy, TenantQueue
from gpufleet.model.tenancy_config import TenancySpec
from gpufleet.policies.quota import with_flavor


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
