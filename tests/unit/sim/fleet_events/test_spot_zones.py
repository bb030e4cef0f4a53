"""Zone-correlated spot reclaims (fleet_events/spot.py): many nodes of one zone at once, and what that does
to gangs."""

from __future__ import annotations

import math
from collections import defaultdict
from functools import cache

import pytest

from gpufleet.policies.registry import profile
from gpufleet.sim.fleet_events.failures import FAST, FailureConfig, SpotConfig
from gpufleet.sim.fleet_events.spot import draw_reclaims, draw_zone_reclaims
from gpufleet.sim.runner import simulate
from gpufleet.testing.builders import fleet, job

DAY = 86400.0


def test_a_zone_event_takes_half_the_zones_spot_nodes_at_one_instant_and_none_elsewhere():
    """Two zones of 32 spot nodes, f = 0.5: every event time carries ⌈0.5 × 32⌉ = 16 distinct
    nodes, all from one zone; about Λ_z × T = 2/day × 30 days = 60 events per zone."""
    spot = SpotConfig(nodes=64, reclaims_per_node_day=0.0, zone_events_per_day=2.0, zone_fraction=0.5)
    zones = ["a"] * 32 + ["b"] * 32
    by_t: dict[float, list[int]] = defaultdict(list)
    for t, node in draw_zone_reclaims(spot, 7, 30 * DAY, zones):
        by_t[t].append(node)
    assert by_t
    for nodes in by_t.values():
        assert len(nodes) == len(set(nodes)) == 16
        assert len({zones[n] for n in nodes}) == 1
    per_zone = [sum(zones[ns[0]] == z for ns in by_t.values()) for z in "ab"]
    assert all(abs(c - 60) < 4 * math.sqrt(60) for c in per_zone)  # Poisson: 4σ


def test_zone_events_leave_the_independent_reclaim_stream_unchanged():
    spot = SpotConfig(nodes=8, reclaims_per_node_day=1.0)
    on = SpotConfig(nodes=8, reclaims_per_node_day=1.0, zone_events_per_day=3.0)
    assert draw_reclaims(spot, 1, 10 * DAY) == draw_reclaims(on, 1, 10 * DAY)


@cache
def _gang_run(zone_events: float, per_node: float, seed: int = 3):
    """One zone of 32 spot nodes running 4 gangs of 8; reclaims back after 1 h; τ = 1 h."""
    spot = SpotConfig(nodes=32, reclaims_per_node_day=per_node, notice_s=120.0, away_s=3600.0,
                      zone_events_per_day=zone_events, zone_fraction=0.5)
    cfg = FailureConfig(scale=0.0, recovery=FAST, spot=spot, seed=seed)
    js = [job(f"g{i}").gpus(8).gang(8).runs(40 * DAY).checkpoints(3600.0, 60.0, 60.0).build()
          for i in range(4)]
    return simulate(fleet().leaves(1, nodes=32).build(), js, profile("gang-bestfit"), failures=cfg,
                    failures_until=200 * DAY, decision_log=False, stranded_every_s=1e12)


def _hits_per_running_day(r) -> tuple[float, list[float]]:
    exposure, began, hits = 0.0, {}, []
    for t, kind, jid, _ in r.recorder.log:
        if kind == "start":
            began[jid] = t
        elif kind in ("failed", "finish") and jid in began:
            exposure += t - began.pop(jid)
            if kind == "failed":
                hits.append(t)
    return len(hits) / exposure * DAY, hits


def test_a_gang_is_hit_at_most_once_per_zone_event_so_less_often_than_by_independent_reclaims():
    """Λ_z = 4 per day, m = 16 of Z = 32: each node is reclaimed 4 × 16/32 = 2 times a day, as with
    independent reclaims at 2 per node-day — under which a gang of 8 is hit 8 × 2 = 16 times per
    running day. Correlated, an event misses all 8 of its nodes with P = C(24,16)/C(32,16) =
    735,471 / 601,080,390 = 0.00122, so the gang is hit 4 × 0.99878 = 3.995 times per running day.
    Simulated over 4 gangs × 40 days of work: 3.82 (623 hits, Poisson σ 4.0%) — held to 10%, 2.5σ;
    the independent run: 16.39 (2,696 hits, σ 1.9%), within 10% of 16 as well."""
    p_hit = 1 - math.comb(24, 16) / math.comb(32, 16)
    assert p_hit == pytest.approx(0.99878, abs=1e-5)
    zone_rate, _ = _hits_per_running_day(_gang_run(4.0, 0.0))
    indep_rate, _ = _hits_per_running_day(_gang_run(0.0, 2.0))
    assert zone_rate == pytest.approx(4 * p_hit, rel=0.10)
    assert indep_rate == pytest.approx(16.0, rel=0.10)


def test_correlated_reclaims_interrupt_the_zones_gangs_together():
    """Under zone events most interruptions share their instant with another gang's (an event takes
    half the zone: every running gang is hit with P = 0.99878); independent reclaims almost never
    coincide (two nodes at one float instant)."""
    def shared(hits: list[float]) -> float:
        count: dict[float, int] = defaultdict(int)
        for t in hits:
            count[t] += 1
        return sum(c for c in count.values() if c > 1) / len(hits)

    assert shared(_hits_per_running_day(_gang_run(4.0, 0.0))[1]) > 0.5
    assert shared(_hits_per_running_day(_gang_run(0.0, 2.0))[1]) < 0.01


def test_each_zone_draws_reclaims_at_its_own_rates():
    """A reclaim process per zone: 16 spot nodes, 8 in z0 at 10 per node-day, 8 in z1 at the
    default 1; zone events 2/day in z1 only (fraction 1/4 → 2 nodes each). Over 20 days:
    z0 independent E = 8 × 10 × 20 = 1,600 (σ = 40); z1 independent 8 × 1 × 20 = 160 (σ = 12.6);
    z1 events E = 2 × 20 = 40, 2 nodes each → 80 node-reclaims (σ = 2√40 = 12.6); z0 none."""
    from gpufleet.sim.fleet_events.failures import ZoneRates
    from gpufleet.sim.fleet_events.spot import draw_reclaims, draw_zone_reclaims
    spot = SpotConfig(nodes=16, reclaims_per_node_day=1.0, zone_events_per_day=0.0,
                      zones=(ZoneRates("z0", reclaims_per_node_day=10.0),
                             ZoneRates("z1", events_per_day=2.0, fraction=0.25)))
    zones = ["z0"] * 8 + ["z1"] * 8
    ind = draw_reclaims(spot, 3, 20 * 86400.0, zones)
    z0 = sum(1 for _, n in ind if n < 8)
    assert abs(z0 - 1600) <= 3 * 40 and abs(len(ind) - z0 - 160) <= 3 * 12.65
    ev = draw_zone_reclaims(spot, 3, 20 * 86400.0, zones)
    assert all(n >= 8 for _, n in ev) and abs(len(ev) - 80) <= 3 * 12.65
