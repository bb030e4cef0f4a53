"""The bandwidth and step-time model behind topology-aware placement."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.model.fleet import Fabric, Fleet, Node, NodeGroup, build_fleet
from gpufleet.model.parallelism import LLAMA_13B, LLAMA_70B, Parallelism, ParallelismMismatch
from gpufleet.policies.steptime import (
    CommCostModel,
    Link,
    StepKnobs,
    Tier,
    domain_sizes,
    group_link,
    network_gbs,
    p2p_s,
    reference_placement,
    ring_allreduce_s,
    slowdown,
    span_tier,
    step_time,
)


def hgx(nodes: int = 4, leaf_size: int = 32, fabric: Fabric | None = None) -> Fleet:
    return build_fleet([NodeGroup(nodes=nodes, gpu="H100-80GB", leaf_size=leaf_size)], fabric)


def nvl72(racks: int = 1) -> Fleet:
    return build_fleet([NodeGroup(nodes=18 * racks, gpu="GB200", gpus_per_node=4, nvlink_domain_nodes=18,
                                  leaf_size=18 * racks)])


def spread(nodes: tuple[Node, ...] | list[Node], per_node: list[int]) -> list[Node]:
    """Ranks in order: ``per_node[i]`` consecutive ranks on ``nodes[i]``."""
    return [n for n, k in zip(nodes, per_node, strict=False) for _ in range(k)]


# ---- the seed case -------------------------------------------------------------------------------


def test_tp8_split_four_and_four_across_two_nodes_of_one_leaf_runs_at_about_half_speed() -> None:
    """Llama-2-70B shape, TP=8 on 8 H100-80GB, one HGX node versus 4+4 on two nodes of one leaf.

    Profile: P = 69e9, L = 80, h = 8192, s = 4096, micro-batch 1, global batch 1024 sequences
    (4M tokens, as Llama 2 trained), BF16; dp = pp = 1, so m = 1024 micro-batches per step.
    (Memory fit is not modelled; the shape is chosen for its compute-to-TP-traffic ratio.)

    Compute per micro-batch: 6 * 69e9 * 4096 / (8 GPUs * 989e12 * MFU 0.5) = 0.4287 s;
    per step 1024 * 0.4287 = 438.9 s on both placements.

    TP: 4 all-reduces per layer (2 fwd, 2 bwd) * 80 layers = 320 per micro-batch, each of
    1 * 4096 * 8192 * 2 B = 67.1 MB; a ring over 8 moves 2*7/8 * 67.1 MB = 117.4 MB per rank.
    - one node, NVLink: 450 GB/s per direction * 370/450 = 370 GB/s bus bandwidth;
      117.4 MB / 370 GB/s + 14 steps * 2 us = 0.345 ms; * 320 * 1024 = 113.2 s.
    - 4+4: the ring's bottleneck hop is one NDR rail, 400/8 GB/s * 0.93 = 46.5 GB/s;
      117.4 MB / 46.5 GB/s + 14 * 5 us = 2.596 ms; * 320 * 1024 = 850.5 s.

    Step: 438.9 + 113.2 = 552.1 s packed, 438.9 + 850.5 = 1289.5 s split: slowdown 2.34.
    """
    fleet = hgx(nodes=2)
    par = Parallelism(tp=8)
    one_node = spread(fleet.nodes, [8])
    split = spread(fleet.nodes, [4, 4])

    packed = step_time(one_node, LLAMA_70B, par, fleet.fabric)
    halved = step_time(split, LLAMA_70B, par, fleet.fabric)

    assert packed.compute_s == pytest.approx(438.9, rel=1e-3)
    assert packed.tp_s == pytest.approx(113.2, rel=1e-3)
    assert halved.tp_s == pytest.approx(850.5, rel=1e-3)
    assert (packed.tp_gbs, halved.tp_gbs) == pytest.approx((370.0, 46.5))
    assert slowdown(one_node, LLAMA_70B, par, fleet.fabric) == pytest.approx(1.0)
    assert 1.7 <= slowdown(split, LLAMA_70B, par, fleet.fabric) <= 2.5


def test_the_cheap_score_agrees_with_the_full_model_on_the_seed_case() -> None:
    fleet = hgx(nodes=2)
    par = Parallelism(tp=8)
    full = slowdown(spread(fleet.nodes, [4, 4]), LLAMA_70B, par, fleet.fabric)
    cheap = CommCostModel.build(LLAMA_70B, par, "H100-80GB", fleet.fabric, domain_gpus=8)
    assert cheap.slowdown(2, 1, 1, 2, 1, 1) == pytest.approx(full)
    assert cheap.slowdown(1, 1, 1, 1, 1, 1) == pytest.approx(1.0)


# ---- NVLink domains that span nodes --------------------------------------------------------------


def test_an_nvl72_rack_lets_a_tp16_group_span_four_nodes_with_no_slowdown() -> None:
    fleet = nvl72()
    par = Parallelism(tp=16)
    four_trays = spread(fleet.nodes, [4, 4, 4, 4])
    assert group_link(four_trays, fleet.fabric).tier == Tier.DOMAIN
    size = domain_sizes(fleet)["gb200-g0-nvl0"]
    assert size == 72
    assert slowdown(four_trays, LLAMA_70B, par, fleet.fabric, domain_gpus=size) == pytest.approx(1.0)
    assert slowdown(four_trays, LLAMA_70B, par, fleet.fabric) == pytest.approx(1.0)


def test_a_tp16_group_across_two_nvl72_racks_is_slower_than_inside_one() -> None:
    fleet = nvl72(racks=2)
    par = Parallelism(tp=16)
    two_racks = spread(fleet.nodes[16:20], [4, 4, 4, 4])  # trays 16, 17 of rack 0; 18, 19 of rack 1
    assert slowdown(two_racks, LLAMA_70B, par, fleet.fabric, domain_gpus=72) > 1.5


# ---- the fabric ----------------------------------------------------------------------------------


def test_leaf_oversubscription_makes_a_cross_leaf_dp_all_reduce_slower() -> None:
    par = Parallelism(tp=8, dp=2)
    times = {}
    for ratio in (1.0, 4.0):
        fleet = hgx(nodes=2, leaf_size=1, fabric=Fabric(leaf_oversubscription=ratio))
        times[ratio] = step_time(spread(fleet.nodes, [8, 8]), LLAMA_13B, par, fleet.fabric)
    assert times[4.0].dp_gbs == pytest.approx(times[1.0].dp_gbs / 4)
    assert times[4.0].dp_s > times[1.0].dp_s
    assert times[4.0].tp_s == pytest.approx(times[1.0].tp_s)


def test_leaf_oversubscription_does_not_touch_a_dp_all_reduce_inside_one_leaf() -> None:
    par = Parallelism(tp=8, dp=2)
    fleets = [hgx(nodes=2, fabric=Fabric(leaf_oversubscription=r)) for r in (1.0, 4.0)]
    a, b = (step_time(spread(f.nodes, [8, 8]), LLAMA_13B, par, f.fabric) for f in fleets)
    assert a == b


@pytest.mark.parametrize(
    ("tier", "expected"),
    [
        pytest.param(Tier.LEAF, 46.5, id="one leaf gets the rail rate"),
        pytest.param(Tier.SPINE, 46.5 / 2, id="across leaves divides by the leaf ratio"),
        pytest.param(Tier.CORE, 46.5 / 2 / 3, id="across spines divides by both ratios"),
    ],
)
def test_network_bandwidth_falls_with_each_oversubscribed_tier(tier: Tier, expected: float) -> None:
    fabric = Fabric(leaf_oversubscription=2.0, spine_oversubscription=3.0)
    assert network_gbs(fabric, tier) == pytest.approx(expected)


# ---- collectives ---------------------------------------------------------------------------------


def test_a_ring_all_reduce_over_one_rank_costs_nothing() -> None:
    assert ring_allreduce_s(1e9, 1, Link(Tier.LEAF, 46.5, 5e-6)) == 0.0


def test_a_ring_all_reduce_moves_two_n_minus_one_over_n_of_the_bytes_plus_latency() -> None:
    link = Link(Tier.DOMAIN, 100.0, 1e-6)
    # n = 4: 2 * 3 / 4 * 1 GB / 100 GB/s = 15 ms, plus 6 steps of 1 us
    assert ring_allreduce_s(1e9, 4, link) == pytest.approx(0.015 + 6e-6)
    assert p2p_s(1e9, link) == pytest.approx(0.01 + 1e-6)


def test_striping_over_rails_credits_at_most_the_members_per_domain() -> None:
    fleet = hgx(nodes=2)
    split = spread(fleet.nodes, [4, 4])
    assert group_link(split, fleet.fabric, StepKnobs(rails_per_crossing=8)).gbs == pytest.approx(4 * 46.5)


# ---- pipeline and data parallel terms ------------------------------------------------------------


def test_the_pipeline_bubble_is_pp_minus_one_over_m_plus_pp_minus_one() -> None:
    profile = replace(LLAMA_13B, global_batch=8)  # m = 8 micro-batches
    par = Parallelism(tp=2, pp=4)
    fleet = hgx(nodes=1)
    b = step_time(spread(fleet.nodes, [8]), profile, par, fleet.fabric)
    pipeline = b.step_s - b.dp_s
    stage = pipeline / (b.micro_batches + par.pp - 1)
    p2p = b.pp_s - (par.pp - 1) * stage
    assert b.micro_batches == 8
    assert b.compute_s + b.tp_s + b.pp_s + b.dp_s == pytest.approx(b.step_s)
    assert (par.pp - 1) * stage / pipeline == pytest.approx(3 / 11)
    assert 0 < p2p < 0.01 * b.pp_s  # stages inside one node: the p2p term is NVLink-cheap


def test_pipeline_stages_in_different_leaves_pay_more_for_p2p_than_in_one_leaf() -> None:
    par = Parallelism(tp=8, pp=2)
    near = hgx(nodes=2, fabric=Fabric(leaf_oversubscription=4.0))
    far = hgx(nodes=2, leaf_size=1, fabric=Fabric(leaf_oversubscription=4.0))
    a = step_time(spread(near.nodes, [8, 8]), LLAMA_70B, par, near.fabric)
    b = step_time(spread(far.nodes, [8, 8]), LLAMA_70B, par, far.fabric)
    assert b.pp_s > a.pp_s
    assert a.pp_gbs == pytest.approx(46.5)


def test_the_dp_all_reduce_hides_at_most_the_overlap_fraction() -> None:
    par = Parallelism(tp=8, dp=2)
    fleet = hgx(nodes=2, leaf_size=1, fabric=Fabric(leaf_oversubscription=8.0))
    b = step_time(spread(fleet.nodes, [8, 8]), LLAMA_13B, par, fleet.fabric)
    full = ring_allreduce_s(13e9 / 8 * 2, 2, group_link([fleet.nodes[0], fleet.nodes[1]], fleet.fabric))
    assert 0.2 * full - 1e-12 <= b.dp_s < full


# ---- validation ----------------------------------------------------------------------------------


def test_a_placement_whose_length_is_not_the_world_size_is_rejected() -> None:
    fleet = hgx(nodes=1)
    with pytest.raises(ParallelismMismatch):
        step_time(spread(fleet.nodes, [4]), LLAMA_13B, Parallelism(tp=8), fleet.fabric)


def test_a_placement_with_more_ranks_than_gpus_on_a_node_is_rejected() -> None:
    fleet = hgx(nodes=1)
    with pytest.raises(ValueError, match="more than 8 ranks"):
        step_time([fleet.nodes[0]] * 16, LLAMA_13B, Parallelism(tp=16), fleet.fabric)


# ---- the cheap score -----------------------------------------------------------------------------


def test_span_counts_map_to_tiers_and_a_domain_wins_over_leaf_counts() -> None:
    assert span_tier(1, 2, 1) == 0  # an NVL72 rack straddling two leaves is still one domain
    assert list(span_tier([1, 2, 3, 4], [1, 1, 2, 3], [1, 1, 1, 2])) == [0, 1, 2, 3]


def test_the_cheap_score_is_monotone_in_the_tp_tier_and_takes_arrays() -> None:
    fabric = Fabric(leaf_oversubscription=2.0, spine_oversubscription=2.0)
    model = CommCostModel.build(LLAMA_13B, Parallelism(tp=8, dp=4), "H100-80GB", fabric, domain_gpus=8)
    d, lv, sp = np.array([1, 2, 4, 4]), np.array([1, 1, 2, 4]), np.array([1, 1, 1, 2])
    scores = model.slowdown(d, lv, sp, np.full(4, 4), np.full(4, 4), np.full(4, 2))
    assert np.all(np.diff(scores) > 0)
    assert scores[1] == model.slowdown(2, 1, 1, 4, 4, 2)
    assert scores[0] >= 1.0


# ---- properties ----------------------------------------------------------------------------------

FLEETS = {
    "hgx": build_fleet([NodeGroup(nodes=8, gpu="H100-80GB", leaf_size=2, leaves_per_spine=2)]),
    "nvl": build_fleet(
        [NodeGroup(nodes=16, gpu="GB200", gpus_per_node=4, nvlink_domain_nodes=8, leaf_size=8)]
    ),
}


PlacedJob = tuple[Fleet, Parallelism, list[Node], Fabric]


@st.composite
def placed_jobs(draw: st.DrawFn, sizes: list[int]) -> PlacedJob:
    fleet = FLEETS[draw(st.sampled_from(sorted(FLEETS)))]
    par = draw(
        st.builds(Parallelism, tp=st.sampled_from(sizes), pp=st.sampled_from([1, 2, 4]),
                  dp=st.sampled_from([1, 2, 4])).filter(lambda p: p.world_size <= fleet.total_gpus)
    )
    slots = [n for n in fleet.nodes for _ in range(n.gpus)]
    order = draw(st.permutations(range(len(slots))))
    fabric = Fabric(leaf_oversubscription=draw(st.sampled_from([1.0, 2.0, 4.0])),
                    spine_oversubscription=draw(st.sampled_from([1.0, 3.0])))
    return fleet, par, [slots[i] for i in order[: par.world_size]], fabric


@settings(max_examples=60, deadline=None)
@given(placed_jobs(sizes=[1, 2, 3, 4, 5, 6, 7, 8]))
def test_slowdown_is_at_least_one_for_any_placement_of_a_valid_world(case: PlacedJob) -> None:
    fleet, par, placement, fabric = case
    size = max(domain_sizes(fleet).values())
    assert slowdown(placement, LLAMA_13B, par, fabric, domain_gpus=size) >= 1.0


@settings(max_examples=60, deadline=None)
@given(placed_jobs(sizes=[1, 2, 4, 8]))
def test_no_placement_beats_the_reference_packing_for_power_of_two_layouts(case: PlacedJob) -> None:
    fleet, par, placement, fabric = case
    node = fleet.nodes[0]
    size = max(domain_sizes(fleet).values())
    ref = reference_placement(par, node.gpu, node.gpus, size)
    assert step_time(placement, LLAMA_13B, par, fabric).step_s >= (
        step_time(ref, LLAMA_13B, par, fabric).step_s * (1 - 1e-12)
    )
