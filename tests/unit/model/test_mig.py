"""MIG slice arithmetic: which profile mixes fit one GPU, where instances go, what they waste."""

import itertools

import pytest

from gpufleet.model.mig import (
    COMPUTE_SLICES,
    PROFILES,
    capacity_table,
    fits,
    maximal_mixes,
    mix_waste,
    place_mix,
    profile_for,
)

H100 = "H100-80GB"


@pytest.mark.parametrize("mix, fit", [
    (["1g.10gb"] * 7, True),
    (["1g.10gb"] * 8, False),
    (["3g.40gb", "3g.40gb"], True),
    (["4g.40gb", "3g.40gb"], True),
    (["4g.40gb", "4g.40gb"], False),
    (["7g.80gb"], True),
    (["7g.80gb", "1g.10gb"], False),
    (["2g.20gb"] * 3 + ["1g.10gb"], True),
    (["1g.20gb"] * 4, True),
    (["3g.40gb"] + ["1g.10gb"] * 4, True),
    (["3g.40gb", "3g.40gb", "1g.10gb"], False),
], ids=lambda v: "+".join(v) if isinstance(v, list) else ("fits" if v else "does not fit"))
def test_h100_mixes_fit_as_the_placement_table_says(mix, fit):
    assert (place_mix(H100, mix) is not None) is fit


@pytest.mark.parametrize("mix, compute, memory", [
    (["4g.40gb", "3g.40gb"], 0, 0),
    (["3g.40gb", "3g.40gb"], 1, 0),
    (["1g.10gb"] * 7, 0, 1),
    (["1g.20gb"] * 4, 3, 0),
    (["7g.80gb"], 0, 0),
], ids=["4g+3g wastes nothing", "3g+3g wastes one compute slice",
        "7x1g wastes memory slice 7", "4x1g.20gb wastes three compute slices", "7g wastes nothing"])
def test_waste_counts_the_unused_compute_and_memory_slices(mix, compute, memory):
    w = mix_waste(H100, mix)
    assert (w.compute_slices, w.memory_slices) == (compute, memory)


def test_the_h100_table_lists_only_maximal_mixes_with_no_waste_first():
    table = maximal_mixes(H100)
    names = [m for m, _ in table]
    assert ("3g.40gb", "4g.40gb") in [tuple(sorted(m)) for m in names]
    assert table[0][1].compute_slices == 0 and table[0][1].memory_slices == 0
    for mix, _ in table:
        assert place_mix(H100, mix) is not None
        for extra in PROFILES[H100]:
            assert place_mix(H100, (*mix, extra)) is None


def test_the_compute_limit_is_implied_by_non_overlapping_placements():
    """Every set of non-overlapping placements uses at most 7 compute slices, so the engine can
    track the memory-slice mask alone."""
    placements = [(p, s) for p in PROFILES[H100].values() for s in p.starts]
    for k in range(1, 8):
        for combo in itertools.combinations(placements, k):
            mask, ok = 0, True
            for p, s in combo:
                if mask & p.bits(s):
                    ok = False
                    break
                mask |= p.bits(s)
            if ok:
                assert sum(p.compute for p, _ in combo) <= COMPUTE_SLICES


def test_a_1g_beside_a_3g_keeps_room_for_a_2g():
    assert fits(H100, [("3g.40gb", 0)], "1g.10gb") == 6
    assert fits(H100, [("3g.40gb", 0), ("1g.10gb", 6)], "2g.20gb") == 4


def test_fits_refuses_overlap_and_a_1g_never_sits_on_slice_7():
    assert fits(H100, [("4g.40gb", 0)], "4g.40gb") is None
    assert 7 not in profile_for(H100, "1g.10gb").starts


def test_capacity_table_counts_instances_left_beside_a_mask():
    assert capacity_table(H100, "1g.10gb")[0] == 7
    assert capacity_table(H100, "1g.10gb")[0b00001111] == 3     # a 4g at 0 leaves 1g at 4, 5, 6
    assert capacity_table(H100, "3g.40gb")[0b00000001] == 1
    assert capacity_table("L40S", "1g.10gb")[0] == 0


@pytest.mark.parametrize("model, name", [("A100-40GB", "3g.20gb"), ("A100-80GB", "3g.40gb"),
                                         ("H200-141GB", "3g.71gb")])
def test_the_other_families_share_the_geometry_under_their_own_names(model, name):
    assert place_mix(model, [name, name]) is not None
    assert profile_for(model, name).memory_slices == 4
