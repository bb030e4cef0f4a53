"""Placement during a driver rollout follows the compatibility matrix (fleet_events/upgrade_compat.py over
model/driver_compat.py): a job's image CUDA version (its ``cuda`` label) decides which drivers it
may land on."""

from __future__ import annotations

import dataclasses

import pytest

from gpufleet.model.job import Job
from gpufleet.policies.registry import profile
from gpufleet.sim.fleet_events.failures import FAST, FailureConfig
from gpufleet.sim.fleet_events.upgrade import UpgradeConfig
from gpufleet.sim.runner import simulate
from gpufleet.sim.scenario import bundled
from gpufleet.testing.builders import fleet, job

DAY = 86400.0
OLD, NEW = "550.54.14", "580.65.06"


def _cuda(j: Job, cuda: str) -> Job:
    return dataclasses.replace(j, labels=(("cuda", cuda),))


def _run(up: UpgradeConfig, jobs: list[Job], nodes: int = 4):
    cfg = FailureConfig(scale=0.0, recovery=FAST, upgrade=up, seed=0)
    return simulate(fleet().leaves(1, nodes=nodes).build(), jobs, profile("gang-bestfit"), failures=cfg,
                    failures_until=DAY, stranded_every_s=1e12)


def _starts(r, jid: str) -> list[tuple[float, str]]:
    return [(t, d) for t, k, j, d in r.recorder.log if k == "start" and j == jid]


def test_a_job_whose_cuda_needs_the_new_driver_waits_for_the_first_upgraded_nodes():
    """550.54.14 → 580.65.06 on 4 nodes, waves of 2 from t = 1,000 s, 480 s a node. CUDA 13.0
    needs 580.65.06 (13.x family floor 580): "no" on 550, native on 580. Submitted at 0 on an
    all-550 fleet, it waits; wave 0 (nodes 0–1, idle) is upgraded at 1,000 + 480 = 1,480 s and the
    job starts there, on node 0, then runs 1,000 s → 2,480 s. The unlabelled job and the CUDA 12.4
    job (native on both: 550.54.14 is 12.4's minimum) start at once, at 0."""
    up = UpgradeConfig(wave=2, start_s=1000, node_fail_p=0.0, from_driver=OLD, to_driver=NEW)
    jobs = [_cuda(job("cu13").gpus(8).runs(1000).build(), "13.0"), job("plain").gpus(8).runs(1000).build(),
            _cuda(job("cu124").gpus(8).runs(1000).build(), "12.4")]
    r = _run(up, jobs)
    assert _starts(r, "cu13") == [(1480.0, "g0-n0000")]
    assert r.finishes["cu13"] == pytest.approx(2480)
    assert r.starts["plain"] == r.starts["cu124"] == 0.0


def test_without_drivers_in_the_rollout_the_label_restricts_nothing():
    """The same rollout with no driver versions: the CUDA 13.0 job starts at 0 like any other."""
    j = _cuda(job("cu13").gpus(8).runs(1000).build(), "13.0")
    r = _run(UpgradeConfig(wave=2, start_s=1000, node_fail_p=0.0), [j])
    assert r.starts["cu13"] == 0.0


def test_a_job_incompatible_with_the_new_driver_never_lands_on_an_upgraded_node():
    """A driver rollback, 580.65.06 → 550.54.14: CUDA 13.0 is native on 580 and "no" on 550 (below
    the 13.x floor 580). 4 nodes, waves of 2 from 1,000 s; the 1-node job (τ = 600 s, R = 60 s,
    3,600 s of work) starts on node 0 at 0. Wave 0 drains it at its save at 1,200 s (1,200 s kept);
    nodes 0–1 go to 550, so it restarts on node 2 (old) at 1,200 s. Wave 0 ends at 1,200 + 480 =
    1,680 s; wave 1 drains it at its next save: 1,200 + (1,680 − 1,200 − 60) = 1,620 s done, save
    1,800 at 1,860 s. Then every node runs 550: it waits and never finishes. Without the label it
    restarts on node 0 at 1,860 s and ends at 1,860 + 60 + 1,800 = 3,720 s."""
    up = UpgradeConfig(wave=2, start_s=1000, node_fail_p=0.0, from_driver=NEW, to_driver=OLD)
    base = job("cu13").gpus(8).runs(3600).checkpoints(600, 0, 60).build()
    r = _run(up, [_cuda(base, "13.0")])
    assert _starts(r, "cu13") == [(0.0, "g0-n0000"), (1200.0, "g0-n0002")]
    assert "cu13" not in r.finishes
    assert r.failures.upgrade.jobs_drained == 2
    plain = _run(up, [base])
    assert _starts(plain, "cu13") == [(0.0, "g0-n0000"), (1200.0, "g0-n0002"), (1860.0, "g0-n0000")]
    assert plain.finishes["cu13"] == pytest.approx(3720)


def test_a_job_needing_the_new_driver_takes_no_free_old_node_while_upgraded_ones_are_busy():
    """550.54.14 → 580.65.06 on 6 nodes, waves of 2 from 1,000 s: nodes 0–1 run 580 from 1,480 s,
    nodes 2–3 are out 1,480–1,960 s, nodes 4–5 stay on 550 until 1,960 s. An unlabelled job takes
    node 0 at 1,490 s for 2,000 s. A 2-node CUDA 13.0 gang arrives at 1,500 s: old nodes 4–5 are
    free but refused, only node 1 is upgraded and free; it waits for wave 1 (1,960 s) and starts
    on nodes 1–2, ending at 1,960 + 3,600 = 5,560 s. Without the label it starts at once."""
    up = UpgradeConfig(wave=2, start_s=1000, node_fail_p=0.0, from_driver=OLD, to_driver=NEW)
    filler = job("p").gpus(8).at(1490).runs(2000).build()
    gang = job("cu13").gpus(8).gang(2).at(1500).runs(3600).build()
    r = _run(up, [filler, _cuda(gang, "13.0")], nodes=6)
    assert _starts(r, "p") == [(1490.0, "g0-n0000")]
    assert _starts(r, "cu13") == [(1960.0, "g0-n0001,g0-n0002")]
    assert r.finishes["cu13"] == pytest.approx(5560)
    # unlabelled, it takes node 1 and old node 4 at once (and wave 2 drains it at 1,960 + 300 s)
    assert _starts(_run(up, [filler, gang], nodes=6), "cu13")[0] == (1500.0, "g0-n0001,g0-n0004")


def test_a_rolled_back_canary_is_on_the_old_driver_again():
    """Canary of 2 of 4 nodes from 1,000 s with a bad driver that fails every canary node: nodes 0–1
    fail validation at 1,480 s (their repair would install the new driver), the soak ends at
    1,480 + 3,600 = 5,080 s with 2 of 2 failed > 25%: rollback, so the repairs install the old
    driver. The CUDA 13.0 job (arriving at 2,000 s) never starts, though both nodes are back in
    service later. With a good driver nodes 0–1 run 580 from 1,480 s and it starts on arrival."""
    bad = UpgradeConfig(wave=2, canary=2, start_s=1000, node_fail_p=0.0, bad_driver_p=1.0, bad_fail_p=1.0,
                        from_driver=OLD, to_driver=NEW)
    j = _cuda(job("cu13").gpus(8).at(2000).runs(1000).build(), "13.0")
    r = _run(bad, [j])
    assert r.failures.upgrade.rolled_back
    assert {n for _, k, n, _ in r.recorder.log if k == "node-healthy"} == {"g0-n0000", "g0-n0001"}
    assert "cu13" not in r.starts
    good = dataclasses.replace(bad, bad_driver_p=0.0)
    assert _starts(_run(good, [j]), "cu13") == [(2000.0, "g0-n0000")]


def _log(up: UpgradeConfig | None, cuda: str | None) -> list:
    scn = bundled("reliability")
    fc = dataclasses.replace(scn.failures, upgrade=up)
    jobs = scn.jobs(1) if cuda is None else [_cuda(j, cuda) for j in scn.jobs(1)]
    r = simulate(scn.fleet, jobs, profile("gang-bestfit", scn.fleet.fabric), failures=fc,
                 horizon=scn.horizon, failures_until=scn.spec.reliability.until_s(scn.horizon))
    return r.recorder.log


def test_the_reliability_scenario_log_is_unchanged_without_image_versions_or_when_both_drivers_run_them():
    """The bundled `reliability` scenario (the 256-node gang on 272 nodes) with a rollout of waves
    of 20, canary 4, from day 1: naming the drivers changes nothing when no job carries a CUDA
    label, nor when its image (12.4: native on both 550.54.14 and 580.65.06) runs on both."""
    plain = UpgradeConfig(wave=20, canary=4, start_s=DAY)
    drivers = dataclasses.replace(plain, from_driver=OLD, to_driver=NEW)
    before = _log(plain, None)
    assert any(k == "upgrade-drain" for _, k, _, _ in before)  # the rollout meets the gang
    assert repr(_log(drivers, None)) == repr(before)
    assert repr(_log(drivers, "12.4")) == repr(before)


def test_a_bad_cuda_label_names_the_job():
    up = UpgradeConfig(wave=2, start_s=1000, from_driver=OLD, to_driver=NEW)
    with pytest.raises(ValueError, match="job x: label cuda: CUDA: 9.9 is not in the toolkit table"):
        _run(up, [_cuda(job("x").gpus(8).runs(10).build(), "9.9")])


def _scenario(upgrade: dict, cuda: str = "13.0"):
    from gpufleet.sim.scenario import parse_scenario
    return parse_scenario({
        "fleet": {"name": "f", "groups": [{"nodes": 4, "gpu": "H100-80GB", "gpus_per_node": 8}]},
        "workload": {"jobs": [{"id": "cu13", "gpus": 8, "run_time": 1000, "cuda": cuda}]},
        "reliability": {"failure_scale": 0, "upgrade": upgrade}}, "s.yaml")


def test_a_scenario_names_the_drivers_and_each_jobs_cuda_and_the_rollout_honours_them():
    """The first test's rollout written as a scenario (start 1,000 s = 0.2777… h, 8 min a node):
    the CUDA 13.0 job waits for wave 0, upgraded at 1,000 + 480 = 1,480 s."""
    scn = _scenario({"wave": 2, "start_hours": 1000 / 3600, "node_fail_p": 0, "from_driver": OLD,
                     "to_driver": NEW})
    assert scn.jobs(0)[0].labels == (("cuda", "13.0"),)
    r = simulate(scn.fleet, scn.jobs(0), profile("gang-bestfit"), failures=scn.failures,
                 failures_until=DAY)
    assert r.starts["cu13"] == pytest.approx(1480)


@pytest.mark.parametrize(("upgrade", "cuda", "field"), [
    ({"wave": 1, "from_driver": "abc", "to_driver": NEW}, "13.0", "reliability.upgrade.from_driver"),
    ({"wave": 1, "from_driver": OLD, "to_driver": NEW}, "9.9", "workload.jobs[0].cuda"),
    ({"wave": 1, "from_driver": OLD, "to_driver": NEW}, "twelve", "workload.jobs[0].cuda"),
])
def test_a_bad_driver_or_cuda_version_in_a_scenario_is_one_input_error_naming_the_field(upgrade, cuda, field):
    from gpufleet.model.errors import InputError
    with pytest.raises(InputError) as e:
        _scenario(upgrade, cuda)
    assert field in str(e.value)
