"""Policies declare what they can reuse (engine/reuse.py); a profile's shortcuts follow from the
declarations alone, so a policy that declares nothing gets none."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpufleet.engine.phases.place import PlaceOutcome
from gpufleet.engine.reuse import CycleReuse, Reuse, reuse_of
from gpufleet.policies.backfill import ShadowReserver
from gpufleet.policies.gang import GangBestFit
from gpufleet.policies.registry import PROFILES, profile


class _Undeclared:
    """A placer that says nothing about reuse (the default for every new policy)."""

    name = "undeclared"
    stop_at_first_blocked = defer = False

    def place(self, ordered, plan, ctx):
        return PlaceOutcome()

    def fit(self, job, table, ctx):
        raise NotImplementedError

    def feasible(self, job, table, ctx):
        return None


def test_a_policy_that_declares_nothing_can_reuse_nothing():
    assert reuse_of(_Undeclared()) == Reuse()
    p = replace(profile("gang-bestfit"), placer=_Undeclared())
    assert CycleReuse.of(p) == CycleReuse()


@pytest.mark.parametrize("name, cut, unfit, behind, carry", [
    ("gang-bestfit", "greedy", True, False, False),
    ("gang-fifo", "fifo", False, True, False),
    ("gang-easy", None, False, False, True),
    ("gang-easy-trusting", None, False, False, True),
    ("free-for-all", None, True, False, False),
    ("smallest-first", None, True, False, False),
], ids=lambda v: str(v))
def test_the_greedy_fifo_and_easy_profiles_get_exactly_their_shortcuts(name, cut, unfit, behind, carry):
    """Greedy gang best fit in any order skips unfit arrivals; only priority-FIFO order is cut."""
    r = CycleReuse.of(profile(name))
    assert (r.cut, r.unfit_arrivals, r.behind_stop, r.carry_scan) == (cut, unfit, behind, carry)
    assert r.promises == (ShadowReserver().depth if carry else 0)


SHORTCUT = {"gang-bestfit", "gang-fifo", "gang-easy", "gang-easy-trusting", "free-for-all", "smallest-first"}


@pytest.mark.parametrize("name", sorted(set(PROFILES) - SHORTCUT))
def test_every_other_bundled_profile_runs_every_cycle_in_full(name):
    """Conservative backfill defers to due reservations, tenancy and Kueue admit by quota,
    topology prices waits, per-pod binds partially, preemptors evict: no rule covers them."""
    assert CycleReuse.of(profile(name)) == CycleReuse()


def test_a_reserver_with_a_window_a_time_grid_or_compression_promises_nothing():
    assert ShadowReserver().reuse().promises == 8
    for changed in ({"window_s": 3600.0}, {"resolution_s": 60.0}, {"compress": True},
                    {"keep_promises": False}, {"protect": 0}):
        assert ShadowReserver(**changed).reuse() == Reuse(), changed


def test_deferring_gang_placement_is_not_monotone_in_free_capacity_alone():
    assert GangBestFit(defer=True).reuse() == Reuse()
    assert GangBestFit(stop_at_first_blocked=True).reuse() == Reuse(monotone_classes=True,
                                                                     stops_at_blocked=True)
