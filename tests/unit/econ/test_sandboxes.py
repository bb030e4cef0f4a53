"""Sandbox host counts (reference §4.3) and the tier choice."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.econ.inputs import HostSpec, SessionClass, TierSpec, load_inputs
from gpufleet.econ.sandboxes import hosts_needed, place, plan_sandboxes, session_counts

HOST = HostSpec(ram_gib=1536, vcpus=192, gpus=8, price_per_hr=10.0)
CPU_SESSION = SessionClass(name="s", share=1, memory_gib=2, vcpus=0.1, isolation=1)


@pytest.mark.parametrize(("overhead_mib", "hosts"), [(4.1, 3), (50, 3), (130, 4), (512, 4)],
                         ids=["runc needs 3 hosts", "gVisor 3", "Firecracker 4", "full VM 4"])
def test_two_thousand_sandboxes_of_two_gib_need_the_reference_host_counts(overhead_mib, hosts):
    """N = 2,000, m = 2 GiB, host 1,536 GiB × 0.9 = 1,382.4 GiB usable:
    runc 2,000 × 2.004 / 1,382.4 = 2.90 → 3; Firecracker 2,000 × 2.127 / 1,382.4 = 3.08 → 4;
    CPU 2,000 × 0.1 / 172.8 = 1.16 → 2 does not bind."""
    tier = TierSpec(isolation=1, overhead_mib=overhead_mib)
    n, binds = hosts_needed(2000, CPU_SESSION, tier, HOST, 0.9, 7)
    assert (n, binds) == (hosts, "ram")


@pytest.mark.parametrize(("gpu", "hosts"), [("mig", 36), ("whole", 250)],
                         ids=["MIG 1g slices: 56 per host, 36 hosts", "whole GPUs: 8 per host, 250 hosts"])
def test_gpu_granularity_decides_the_host_count(gpu, hosts):
    """2,000 sessions with one GPU unit each: 7 × 8 = 56 slices per host → ⌈2000/56⌉ = 36;
    8 GPUs per host → 2000/8 = 250."""
    cls = SessionClass(name="g", share=1, memory_gib=2, vcpus=0.1, gpu=gpu, isolation=1)
    tier = TierSpec(isolation=1, overhead_mib=4.1, gpu=("whole", "mig"))
    assert hosts_needed(2000, cls, tier, HOST, 0.9, 7) == (hosts, "gpu")


def test_session_counts_follow_the_shares_and_add_up_to_the_total():
    """50,000 × (0.30, 0.55, 0.10, 0.05) = 15,000, 27,500, 5,000, 2,500."""
    cfg = load_inputs().sandboxes
    assert session_counts(cfg) == [15000, 27500, 5000, 2500]


def test_the_tiered_design_never_gives_a_class_less_isolation_than_it_asks_for():
    cfg = load_inputs().sandboxes
    for p, cls in zip(place(cfg), cfg.mix, strict=True):
        assert cfg.tiers[p.tier].isolation >= cls.isolation


def test_mig_sessions_needing_a_strong_boundary_go_to_full_vms_since_gvisor_has_no_mig():
    cfg = load_inputs().sandboxes
    slice_ = next(p for p in place(cfg) if p.cls == "untrusted GPU slice")
    assert slice_.tier == "full-vm"
    assert slice_.gpu == "mig"


def test_without_full_vms_mig_sessions_take_whole_gpus_and_cost_seven_times_the_gpu_hosts():
    """5,000 slice sessions: 5,000 / 56 = 89.3 → 90 hosts with MIG; 5,000 / 8 = 625 hosts whole."""
    plan = plan_sandboxes(load_inputs().sandboxes)
    d = plan["designs"]["no full VMs (MIG sessions take whole GPUs)"]
    slice_ = next(p for p in d["placements"] if p["cls"] == "untrusted GPU slice")
    assert slice_["hosts"] == 625
    tiered = next(p for p in plan["designs"]["tiered (cheapest sufficient boundary)"]["placements"]
                  if p["cls"] == "untrusted GPU slice")
    assert tiered["hosts"] == 90


def test_the_tiered_design_is_the_cheapest_of_the_designs_compared():
    plan = plan_sandboxes(load_inputs().sandboxes)
    costs = {n: d["cost_per_hr"] for n, d in plan["designs"].items()}
    assert costs["tiered (cheapest sufficient boundary)"] == min(costs.values())


@given(st.integers(1, 200_000), st.floats(0, 64), st.floats(0, 16), st.sampled_from(["none", "mig", "whole"]))
def test_more_sessions_never_need_fewer_hosts(n, mem, vcpus, gpu):
    cls = SessionClass(name="x", share=1, memory_gib=mem, vcpus=vcpus, gpu=gpu, isolation=1)
    tier = TierSpec(isolation=1, overhead_mib=50, gpu=("whole", "mig"))
    a, _ = hosts_needed(n, cls, tier, HOST, 0.9, 7)
    b, _ = hosts_needed(n + 1, cls, tier, HOST, 0.9, 7)
    assert b >= a


def test_a_time_sliced_session_takes_one_replica_not_a_whole_gpu():
    """2,000 time-sliced sessions, 8 GPUs × 4 replicas = 32 per host: ⌈2,000 / 32⌉ = 63 hosts
    (RAM 2,000 × 2.004 GiB / 1,382.4 = 2.9 and CPU 1.16 do not bind). Counted as whole GPUs it
    was 2,000 / 8 = 250 hosts."""
    cls = SessionClass(name="t", share=1, memory_gib=2, vcpus=0.1, gpu="timeslice", isolation=1)
    tier = TierSpec(isolation=1, overhead_mib=4.1, gpu=("whole", "mig", "timeslice"))
    assert hosts_needed(2000, cls, tier, HOST, 0.9, 7, timeslice_replicas=4) == (63, "gpu")


def test_the_planner_packs_time_sliced_sessions_by_the_configured_replicas():
    """A mix of 1,000 time-sliced sessions (isolation 1, so runc, the only tier offering it) at 4
    replicas per GPU on 8-GPU hosts: ⌈1,000 / 32⌉ = 32 hosts; at 8 replicas ⌈1,000 / 64⌉ = 16."""
    cfg = load_inputs().sandboxes
    mix = [SessionClass(name="ts", share=1, memory_gib=4, vcpus=0.5, gpu="timeslice", isolation=1)]
    for replicas, hosts in ((4, 32), (8, 16)):
        c = cfg.model_copy(update={"sessions": 1000, "mix": mix, "timeslice_replicas_per_gpu": replicas})
        (p,) = place(c)
        assert (p.tier, p.hosts, p.binds) == ("runc", hosts, "gpu")
