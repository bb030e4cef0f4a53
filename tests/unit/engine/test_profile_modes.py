"""A profile's backfill mode is read from what its steps declare, and a profile whose steps
contradict each other is refused when it is built (engine/profile.py), with one line that names
the profile and the steps; what a driver reads (``period_s``) is declared, not looked up."""

from __future__ import annotations

import pytest

from gpufleet.engine.profile import BackfillMode, Profile, ProfileError
from gpufleet.policies.backfill import ReservationBackfill, ShadowReserver
from gpufleet.policies.gang import GangBestFit
from gpufleet.policies.registry import PROFILES, profile
from gpufleet.policies.slurm_like import SlurmPriority, slurm_like_profile
from gpufleet.policies.topology import TopologyAware

G, F, E, C = BackfillMode.GREEDY, BackfillMode.FIFO, BackfillMode.EASY, BackfillMode.CONSERVATIVE


@pytest.mark.parametrize("name, mode", [
    ("gang-bestfit", G), ("gang-fifo", F), ("gang-easy", E), ("gang-easy-trusting", E),
    ("gang-conservative", C), ("topology-aware", G), ("topology-easy", E), ("tenancy", G),
    ("tenancy-easy", E), ("kueue", G), ("gang-defrag", G),
], ids=lambda v: v if isinstance(v, str) else v.value)
def test_every_named_profile_has_the_mode_its_steps_make(name, mode):
    assert profile(name).mode is mode


def test_every_registered_profile_builds():
    assert {p().mode for p in PROFILES.values()} == {G, F, E, C}


@pytest.mark.parametrize("backfill, mode", [("easy", E), ("conservative", C)])
def test_slurms_backfill_protects_one_or_all_of_its_plan(backfill, mode):
    """Slurm's conservative plan protects ``depth`` (> 1) jobs without deferring placement."""
    assert slurm_like_profile(SlurmPriority(nodes=4, cpus=224), backfill).mode is mode


@pytest.mark.parametrize("kw, says", [
    ({"placer": GangBestFit(), "reserver": ShadowReserver(), "backfiller": ReservationBackfill()},
     "later jobs pass the blocked head"),
    ({"placer": TopologyAware(), "reserver": ShadowReserver()}, "later jobs pass the blocked head"),
    ({"placer": GangBestFit(stop_at_first_blocked=True), "reserver": ShadowReserver()}, "with no backfill"),
    ({"placer": GangBestFit(defer=True)}, "but the profile reserves nothing"),
    ({"placer": GangBestFit(), "backfiller": ReservationBackfill()}, "no holes to fill"),
], ids=["reservation behind a greedy placer", "a topology reservation behind a greedy placer",
        "a reservation nothing backfills around", "a deferring placer with no promises",
        "backfill behind a greedy placer"])
def test_contradicting_steps_are_refused_at_build_with_one_line(kw, says):
    with pytest.raises(ProfileError) as e:
        Profile("mine", **kw)
    assert says in str(e.value) and "'mine'" in str(e.value) and "\n" not in str(e.value)


def test_the_period_a_driver_honours_is_the_preemptors_declared_one():
    """Defrag looks again every 300 s (DefragPreemptor's default); nothing else is periodic."""
    assert profile("gang-defrag").period_s == 300.0
    assert {n: profile(n).period_s for n in PROFILES if profile(n).period_s} == {
        "gang-defrag": 300.0, "gang-defrag-naive": 300.0}
