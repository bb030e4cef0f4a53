"""Spot reclaims: a node is taken back after a notice; gangs on it stop and restart elsewhere.

At a reclaim notice (t) the node is cordoned (no new work). A job on it whose checkpoint cost fits
in the notice writes a checkpoint and loses nothing but its restart; otherwise it computes on and
loses the work since its last periodic checkpoint when the node goes at t + notice — on average
half a checkpoint interval: expected waste per reclaim = τ/2 + R (studies/reliability.py). The node
returns ``away_s`` after it went. Reclaims are drawn up front from their own seeded stream, so every
policy meets the same ones. A gang of n spot nodes is reclaimed n times as often as one node.

Zone-correlated reclaims (``SpotConfig.zone_events_per_day`` > 0): a cloud runs short of capacity
in one zone and takes back many spot nodes there at once. Per zone, events arrive at Λ_z (Poisson);
each reclaims m = ⌈f · Z⌉ of the zone's Z spot nodes, chosen uniformly, at one instant (each node
with its own notice). A node's reclaim rate is Λ_z m/Z, as from independent reclaims at that rate,
but a gang of n nodes in the zone is hit by an event with P = 1 − C(Z−n, m)/C(Z, m): at most once
per event, so a big gang is interrupted *less* often than n independent nodes (≈ Λ_z instead of
n Λ_z m/Z), and every gang of the zone is interrupted together — the spares and the queue see all
of them at once. Drawn from their own stream, so switching them on leaves the per-node draws alone.

A reclaim process per zone (``SpotConfig.zones``, ``reliability.spot.zones`` in a scenario): each
zone may set its own per-node rate, event rate and fraction (AWS's Spot Instance Advisor buckets
interruption frequency by instance type and location, <5% … >20% a month: reliability reference
§7); zones without an entry use the defaults.
"""

from __future__ import annotations

import math

import numpy as np

from gpufleet.sim.cluster import set_schedulable
from gpufleet.sim.fleet_events.failures import FailureState, SpotConfig, work_done_s
from gpufleet.sim.kernel import Event, EventKind, Outcome

STREAM = 0x5907
ZONE_STREAM = 0x20E5


def draw_reclaims(spot: SpotConfig, seed: int, until_s: float,
                  zones: list[str] | None = None) -> list[tuple[float, int]]:
    """(time, node): Poisson per spot node at its zone's rate (``zones[i]``: node i's zone)."""
    rng = np.random.default_rng([seed, STREAM])
    out: list[tuple[float, int]] = []
    for node in range(spot.nodes):
        rate = spot.rates(zones[node])[0] if zones is not None else spot.reclaims_per_node_day
        lam = rate / 86400.0 * until_s
        out.extend((float(t), node) for t in rng.uniform(0.0, until_s, int(rng.poisson(lam))))
    out.sort()
    return out


def draw_zone_reclaims(spot: SpotConfig, seed: int, until_s: float,
                       zones: list[str]) -> list[tuple[float, int]]:
    """(time, node) for every node of every zone event; ``zones[i]`` is spot node i's zone."""
    if spot.zone_events_per_day <= 0 and not any(z.events_per_day for z in spot.zones):
        return []
    rng = np.random.default_rng([seed, STREAM, ZONE_STREAM])
    out: list[tuple[float, int]] = []
    for zone in sorted(set(zones)):
        _, per_day, fraction = spot.rates(zone)
        lam = per_day / 86400.0 * until_s
        members = np.array([i for i, z in enumerate(zones) if z == zone])
        m = min(len(members), math.ceil(fraction * len(members)))
        for t in np.sort(rng.uniform(0.0, until_s, int(rng.poisson(lam)))):
            out.extend((float(t), int(node)) for node in np.sort(rng.choice(members, m, replace=False)))
    out.sort()
    return out


def on_reclaim(st, ev: Event) -> Outcome:  # noqa: ANN001 (SimState)
    """A reclaim notice: cordon the node; gangs on it stop when it goes, at t + notice."""
    fs: FailureState = st.fail
    node = ev.payload
    spot = fs.cfg.spot
    assert spot is not None
    table = st.cluster.table
    if not table.schedulable[node] or node in fs.reclaimed:
        return Outcome.NOTHING  # already gone (or out for repair): nothing to take back
    fs.reclaimed.add(node)
    set_schedulable(table, node, False)
    for jid in st.cluster.unbind_on(node):  # pods of waiting per-pod jobs bound there
        st.rec.event(st.t, "unbound", jid, f"pods on {table.names[node]} released: spot reclaim")
    gone = st.t + spot.notice_s
    st.rec.event(st.t, "spot-notice", table.names[node], f"reclaimed at t={gone:.0f}")
    for jid, rj in list(st.cluster.running.items()):
        if any(b.node == node for b in rj.bindings) and jid not in fs.stopped:
            ck = rj.job.checkpointing
            fits = ck is not None and ck.cost_s <= spot.notice_s
            # a checkpoint written in the notice keeps the work up to the notice
            fs.stopped[jid] = (gone, "spot")
            fs.spot_saved[jid] = work_done_s(rj, st.t) if fits else None
            st.q.push(gone, EventKind.STOP, (jid, st.gen(jid), gone, "spot"))
            st.rec.event(st.t, "failed", jid, f"spot reclaim of {table.names[node]}; stops at t={gone:.0f}")
    st.q.push(gone + spot.away_s, EventKind.HEALTH, (node, "spot-back", False))
    return Outcome.CHANGED


def spot_back(st, node: int) -> Outcome:  # noqa: ANN001
    fs: FailureState = st.fail
    fs.reclaimed.discard(node)
    if fs.book.states[node].schedulable and node not in fs.pool:
        set_schedulable(st.cluster.table, node, True)
    st.rec.event(st.t, "spot-back", st.cluster.table.names[node])
    return Outcome.CHANGED


def install(st, until_s: float) -> None:  # noqa: ANN001
    fs: FailureState = st.fail
    if fs.cfg.spot is None:
        return
    zones = [n.zone for n in st.cluster.fleet.nodes[:fs.cfg.spot.nodes]]
    for t, node in draw_reclaims(fs.cfg.spot, fs.cfg.seed, until_s, zones):
        st.q.push(t, EventKind.RECLAIM, node)
    for t, node in draw_zone_reclaims(fs.cfg.spot, fs.cfg.seed, until_s, zones):
        st.q.push(t, EventKind.RECLAIM, node)
