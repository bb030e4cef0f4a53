"""Fabric Manager = driver, exactly (fleet_events/upgrade.py): the driver goes in first, the FM after it on
NVSwitch systems; a node whose FM differs from its driver runs no CUDA (nv-fabricmanager exits,
CUDA error 802: ops reference §2.2, §8.2) — it fails validation, or, when it starts so, is held out
of service until its wave installs a matching pair."""

from __future__ import annotations

import dataclasses

import pytest

from gpufleet.model.health import StepDurations
from gpufleet.policies.registry import profile
from gpufleet.sim.fleet_events.failures import FAST, FailureConfig
from gpufleet.sim.fleet_events.upgrade import NodeStart, UpgradeConfig
from gpufleet.sim.runner import simulate
from gpufleet.testing.builders import fleet, job

DAY = 86400.0
#: NVIDIA/gpu-driver-container#735: a driver container shipped FM 590.48.01 beside driver 580.126.09.
OLD, NEW, WRONG_FM = "570.86.15", "580.126.09", "590.48.01"


def _run(up: UpgradeConfig, jobs, nodes: int = 2):
    cfg = FailureConfig(scale=0.0, recovery=FAST, upgrade=up, seed=0)
    return simulate(fleet().leaves(1, nodes=nodes).build(), jobs, profile("gang-bestfit"), failures=cfg,
                    failures_until=3 * DAY, stranded_every_s=1e12)


def _events(r, kind: str) -> list[tuple[float, str]]:
    return [(t, who) for t, k, who, _ in r.recorder.log if k == kind]


def test_the_driver_goes_in_before_the_fabric_manager_and_an_unpinned_fm_holds_each_node_back():
    """2 idle nodes, waves of 1 from 1,000 s, 480 s for the driver then 60 s for the FM. The rollout
    installs FM 590.48.01 beside driver 580.126.09: node 0 gets its driver at 1,480 s (FM still
    570.86.15), its FM at 1,540 s — FM ≠ driver, validation fails, the node goes to repair; node 1
    likewise at 2,020 / 2,080 s. A job arriving at 2,100 s waits for node 0's repair: back at
    1,540 + the repair-in-place path (StepDurations.out_of_service_s()). With the FM pinned to the
    driver the same job starts at once."""
    base = dict(wave=1, start_s=1000, node_s=480, fm_s=60, node_fail_p=0.0, from_driver=OLD, to_driver=NEW)
    late = job("late").gpus(8).at(2100).runs(100).build()
    r = _run(UpgradeConfig(**base, fabric_manager=WRONG_FM), [late])
    assert _events(r, "upgrade-driver") == [(1480.0, "g0-n0000"), (2020.0, "g0-n0001")]
    assert _events(r, "upgrade-failed") == [(1540.0, "g0-n0000"), (2080.0, "g0-n0001")]
    u = r.failures.upgrade
    assert (u.nodes_fm_mismatch, u.nodes_failed, u.nodes_upgraded) == (2, 2, 0)
    assert r.starts["late"] == pytest.approx(1540 + StepDurations().out_of_service_s())
    pinned = _run(UpgradeConfig(**base), [late])
    assert _events(pinned, "upgrade-failed") == [] and pinned.starts["late"] == 2100.0
    assert pinned.failures.upgrade.nodes_upgraded == 2


def test_a_node_that_starts_with_a_mismatched_fabric_manager_is_held_back_until_its_wave():
    """Node 1 starts with FM 570.86.10 beside driver 570.86.15: no CUDA there, so of two 8-GPU jobs
    submitted at 0 one runs on node 0 and the other waits although node 1 is idle. The rollout
    visits node 1 first (order 1, 0) at 1,000 s; 480 s later it has driver and FM 580.126.09 and
    the waiting job starts there at 1,480 s. Without NVSwitches FM does not matter: it starts at 0."""
    up = UpgradeConfig(wave=1, start_s=1000, node_s=480, node_fail_p=0.0, from_driver=OLD, to_driver=NEW,
                       order=(1, 0), nodes=(NodeStart("g0-n0001", fabric_manager="570.86.10"),))
    jobs = [job("a").gpus(8).runs(50_000).build(), job("b").gpus(8).runs(100).build()]
    r = _run(up, jobs)
    assert _events(r, "fm-mismatch") == [(0.0, "g0-n0001")]
    assert r.failures.upgrade.nodes_held_at_start == 1
    assert r.starts["a"] == 0.0
    assert [(t, d) for t, k, j, d in r.recorder.log if k == "start" and j == "b"] == [(1480.0, "g0-n0001")]
    no_switch = _run(dataclasses.replace(up, nvswitch=False), jobs)
    assert no_switch.starts["b"] == 0.0


def test_a_scenario_names_the_fabric_manager_its_step_and_the_nvswitches():
    from gpufleet.sim.scenario import parse_scenario
    scn = parse_scenario({
        "fleet": {"name": "f", "groups": [{"nodes": 2, "gpu": "H100-80GB", "gpus_per_node": 8}]},
        "workload": {"jobs": [{"id": "a", "gpus": 8, "run_time": 10}]},
        "reliability": {"failure_scale": 0, "upgrade": {
            "wave": 1, "from_driver": OLD, "to_driver": NEW, "fabric_manager": WRONG_FM, "fm_minutes": 1,
            "nodes": [{"match": "*-n0001", "fabric_manager": "570.86.10"}]}}}, "s.yaml")
    up = scn.failures.upgrade
    assert (up.fabric_manager, up.fm_s, up.nvswitch) == (WRONG_FM, 60.0, True)
    assert up.nodes == (NodeStart("*-n0001", None, "570.86.10", None),)


def test_a_held_node_repaired_for_another_fault_comes_back_with_its_pair_pinned():
    """Node g0-n0001 starts with FM 570.86.10 beside driver 570.86.15 (OLD) and is held back; its
    wave is 5 days away. At 300× the Llama 3 rates (seed 0) a fault hits it on day 0 and its repair
    ends before the wave. The repair's validation runs CUDA, so it comes back with the FM pinned
    to its driver: when it next takes work the model must say it can run it (pair equal, not
    held) — never a node that runs jobs while the model calls it unable to run CUDA."""
    up = UpgradeConfig(wave=1, start_s=5 * DAY, node_s=480, node_fail_p=0.0, from_driver=OLD,
                       to_driver=NEW, order=(1, 0),
                       nodes=(NodeStart("g0-n0001", fabric_manager="570.86.10"),))
    cfg = FailureConfig(scale=300.0, recovery=FAST, upgrade=up, seed=0)
    jobs = [job(f"j{i}").gpus(8).at(i * 3600.0).runs(3000).build() for i in range(60)]
    r = simulate(fleet().leaves(1, nodes=2).build(), jobs, profile("gang-bestfit"), failures=cfg,
                 failures_until=6 * DAY, stranded_every_s=1e12)
    log = r.recorder.log
    back = next(t for t, k, who, _ in log if k == "node-healthy" and who == "g0-n0001")
    assert back < 5 * DAY, "the premise: a repair of the held node ends before its wave"
    pinned = [(t, why) for t, k, who, why in log if k == "fm-pinned" and who == "g0-n0001"]
    assert pinned == [(back, f"repair pinned Fabric Manager to driver {OLD}: in service")]
    starts = [t for t, k, _, where in log if k == "start" and "g0-n0001" in str(where) and t < 5 * DAY]
    assert starts and min(starts) >= back, "held until the repair, in service after it"
