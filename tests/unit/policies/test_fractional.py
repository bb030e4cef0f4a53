"""Fractional placement: MIG instances, soft shares, the tenant rule, whole-GPU counts consistent."""

import numpy as np

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import StatusCode
from gpufleet.engine.types import CycleInput, PendingJob
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet, job


def table(nodes=1, gpus=2, gpu="H100-80GB"):
    return NodeTable.from_fleet(fleet().leaves(1, nodes=nodes, gpus=gpus, gpu=gpu).build())


def cycle(t, jobs):
    res = run_cycle(CycleInput(0.0, t, [PendingJob(j) for j in jobs], profile("gang-fractional")))
    for b in res.bindings:
        t.take(b.node, b.request, slot=b.slot)
    return res


def test_the_tenant_rule_bites_with_a_reason_when_only_other_tenants_gpus_have_room():
    t = table(gpus=1)
    res = cycle(t, [job("a").tenant("x").share(300).build(), job("b").tenant("y").share(300).build()])
    assert res.started == ("a",)
    st = res.statuses["b"]
    assert st.code is StatusCode.UNSCHEDULABLE
    assert "tenant rule" in st.explain() and "(x)" in st.explain()


def test_mig_lets_two_tenants_share_one_gpu():
    t = table(gpus=1)
    res = cycle(t, [job("a").tenant("x").mig("3g.40gb").build(), job("b").tenant("y").mig("4g.40gb").build()])
    assert set(res.started) == {"a", "b"}
    assert {b.slot.gpu for b in res.bindings} == {0}
    assert sorted(b.slot.mig_start for b in res.bindings) == [0, 4]


def test_soft_shares_of_one_tenant_pack_onto_one_gpu():
    t = table(gpus=4)
    res = cycle(t, [job(f"s{i}").tenant("x").share(250, "mps", memory_gb=20).build() for i in range(4)])
    assert len(res.started) == 4
    assert {b.slot.gpu for b in res.bindings} == {0}
    assert t.gpu_free[0] == 3


def test_share_modes_do_not_mix_on_one_gpu():
    t = table(gpus=2)
    res = cycle(t, [job("m").tenant("x").share(500, "mps").build(),
                    job("ts").tenant("x").share(500, "timeslice").build()])
    assert len({b.slot.gpu for b in res.bindings}) == 2


def test_whole_gpu_count_stays_consistent_as_fractional_pods_come_and_go():
    t = table(gpus=8)
    res = cycle(t, [job("w").gpus(4).build(), job("m").mig("1g.10gb").gang(3).build(),
                    job("s").share(500).build()])
    assert set(res.started) == {"w", "m", "s"}
    pg = t.per_gpu
    assert t.gpu_free[0] == 8 - 4 - int((~pg.idle[0] & pg.valid[0]).sum())
    assert t.gpu_free[0] == 2              # 4 whole + one MIG GPU (3×1g) + one soft GPU
    for b in res.bindings:
        t.give(b.node, b.request, slot=b.slot)
    assert t.gpu_free[0] == 8 and pg.idle[0].all()


def test_whole_gpu_pods_cannot_take_gpus_that_hold_fractional_pods():
    t = table(gpus=2)
    cycle(t, [job("s").share(100).build()])
    res = cycle(t, [job("w").gpus(2).build()])
    assert res.started == ()


def test_a_mig_pod_on_a_fresh_gpu_needs_a_reconfiguration_and_a_configured_gpu_does_not():
    t = table(gpus=2)
    first = cycle(t, [job("a").mig("7g.80gb").build()])
    assert first.bindings[0].slot.reconfigure
    for b in first.bindings:
        t.give(b.node, b.request, slot=b.slot)
    again = cycle(t, [job("b").mig("3g.40gb").build()])
    assert not again.bindings[0].slot.reconfigure
    assert again.bindings[0].slot.gpu == first.bindings[0].slot.gpu


def test_whole_gpus_taking_idle_mig_gpus_end_their_mig_mode():
    t = table(gpus=2)
    first = cycle(t, [job("a").mig("1g.10gb").build()])
    for b in first.bindings:
        t.give(b.node, b.request, slot=b.slot)
    assert t.per_gpu.idle_configured[0] == 1
    cycle(t, [job("w").gpus(2).build()])
    assert t.gpu_free[0] == 0 and t.per_gpu.idle_configured[0] == 0
    assert not t.per_gpu.mig_configured.any()


def test_a_profile_no_gpu_of_the_fleet_offers_is_unresolvable():
    t = table(gpus=2, gpu="L40S")
    res = cycle(t, [job("a").mig("1g.10gb").build()])
    assert res.statuses["a"].code is StatusCode.UNRESOLVABLE


def test_slots_count_fractional_pods_per_gpu():
    t = table(nodes=2, gpus=2)
    req = job("m").mig("3g.40gb").build().pod_sets[0].request
    assert list(t.slots(req)) == [4, 4]
    assert list(t.slots(req, empty=True)) == [4, 4]
    soft = job("s").share(250).build().pod_sets[0].request
    assert np.array_equal(t.slots(soft), [8, 8])
