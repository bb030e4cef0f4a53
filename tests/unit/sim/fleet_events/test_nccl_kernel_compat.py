"""The NCCL ↔ CUDA and kernel ↔ driver-module rows of the compatibility matrix
(model/driver_compat.py), in the matrix itself and in a simulated rollout (fleet_events/upgrade.py).

Sources (module docstring of model/driver_compat.py): NCCL 2.10.3 release notes ("supports CUDA
10.2, CUDA 11.0, and CUDA 11.4"); NCCL 2.27.3 release notes as quoted (12.2, 12.4, 12.9); NVIDIA's
redist index for 2.30.7 (+cuda12.9, +cuda13.3); NVIDIA/open-gpu-kernel-modules README.md ("Linux
kernel 3.10 or newer" at 550.40.82, "4.15 or newer" at 560.31.02)."""

from __future__ import annotations

import dataclasses

import pytest

from gpufleet.model.driver_compat import image_compat, kernel_ok, nccl_build, placement
from gpufleet.model.errors import InputError
from gpufleet.policies.registry import profile
from gpufleet.sim.fleet_events.failures import FAST, FailureConfig
from gpufleet.sim.fleet_events.upgrade import NodeStart, UpgradeConfig
from gpufleet.sim.runner import simulate
from gpufleet.sim.scenario import parse_scenario
from gpufleet.testing.builders import fleet, job

DAY = 86400.0
OLD, NEW = "550.54.14", "580.65.06"


def test_an_nccl_build_is_one_nvidia_published_for_the_images_cuda_major():
    """2.27 was built for 12.2, 12.4, 12.9: a bare 2.27.3 in a CUDA 12.8 image is the newest 12.x
    build, 12.9 (as the cu12 pip wheels); 2.30.7 in a 13.0 image is its +cuda13.3 build; a release
    not on file (2.21) takes the image's CUDA."""
    assert nccl_build("2.27.3+cuda12.4", "12.4") == "12.4"
    assert nccl_build("2.27.3", "12.8") == "12.9"
    assert nccl_build("2.30.7", "13.0") == "13.3"
    assert nccl_build("2.10.3", "11.4") == "11.4"
    assert nccl_build("2.21.5", "12.4") == "12.4"


@pytest.mark.parametrize(("nccl", "cuda", "says"), [
    ("2.27.3+cuda13.0", "13.0", "built for CUDA 12.2, 12.4, 12.9, not 13.0"),
    ("2.30.7+cuda13.3", "12.4", "must be of one major"),
    ("2.27.3", None, "names no build"),
    ("2.27.3+cu12", "12.4", "+cuda12.9"),
    ("two", "12.4", "expected a version"),
])
def test_an_nccl_the_release_notes_do_not_allow_is_a_value_error_saying_why(nccl, cuda, says):
    with pytest.raises(ValueError, match="nccl") as e:
        nccl_build(nccl, cuda)
    assert says in str(e.value)


def test_an_nccl_build_newer_than_the_driver_weakens_native_to_minor_compat():
    """CUDA 12.4 is native on 550.54.14 (its minimum); NCCL +cuda12.9 wants 575.51.03 natively,
    so on 550 it runs through 12.x minor-version compatibility (floor 525)."""
    assert image_compat("12.4", None, OLD)[0] == "native"
    verdict, why = image_compat("12.4", "2.27.3+cuda12.9", OLD)
    assert verdict == "minor-compat" and "NCCL" in why


def test_an_image_named_only_by_its_nccl_build_needs_that_builds_cuda_family():
    """NCCL 2.30.7+cuda13.3 needs a 13.x driver (floor 580): no on 550.54.14, minor-compat on
    580.65.06 (13.3's own minimum is not on file, so never native)."""
    assert image_compat(None, "2.30.7+cuda13.3", OLD)[0] == "no"
    assert image_compat(None, "2.30.7+cuda13.3", NEW)[0] == "minor-compat"
    p = placement("12.4", OLD, NEW, nccl="2.27.3+cuda12.9")
    assert (p["old_driver"], p["new_driver"], p["may_run_on"]) == ("minor-compat", "native", "any node")


def test_the_driver_module_needs_kernel_3_10_before_r560_and_4_15_from_r560():
    assert kernel_ok("550.40.82", "4.4.0")[0]
    assert not kernel_ok("550.40.82", "3.9")[0]
    assert not kernel_ok("560.31.02", "4.14.0")[0]
    assert kernel_ok("560.31.02", "4.15.0-213-generic")[0]
    ok, why = kernel_ok(NEW, "4.4.0")
    assert not ok and "4.15" in why


def _run(up: UpgradeConfig, jobs, nodes: int = 4):
    cfg = FailureConfig(scale=0.0, recovery=FAST, upgrade=up, seed=0)
    return simulate(fleet().leaves(1, nodes=nodes).build(), jobs, profile("gang-bestfit"), failures=cfg,
                    failures_until=DAY, stranded_every_s=1e12)


def test_a_job_whose_nccl_build_needs_the_new_driver_waits_for_the_first_upgraded_nodes():
    """As the CUDA 13.0 case (test_upgrade_compat): 4 nodes, waves of 2 from 1,000 s, 480 s a node.
    The job names only NCCL 2.30.7+cuda13.3 (13.x floor 580: no on 550): it waits for wave 0,
    upgraded at 1,000 + 480 = 1,480 s, and runs 1,000 s → 2,480 s. It waited 1,480 s × 8 GPUs
    = 3.29 GPU-h with no node at all for its image (blocked, so also held)."""
    j = job("nc13").gpus(8).runs(1000).build()
    j = dataclasses.replace(j, labels=(("nccl", "2.30.7+cuda13.3"),))
    r = _run(UpgradeConfig(wave=2, start_s=1000, node_fail_p=0.0, from_driver=OLD, to_driver=NEW), [j])
    assert r.starts["nc13"] == pytest.approx(1480)
    u = r.failures.upgrade
    assert u.driver_held_jobs == 1
    assert u.driver_blocked_gpu_s == pytest.approx(8 * 1480)
    assert u.driver_wait_gpu_s == pytest.approx(8 * 1480)


def test_a_node_whose_kernel_is_too_old_for_the_new_driver_fails_validation_and_is_held_back():
    """Nodes 0–1 (g0-n0000, g0-n0001) run kernel 4.14 (fine for 550's 3.10 floor, below 580's
    4.15): upgraded in wave 0 (1,000 → 1,480 s) they fail validation as kernel-too-old and go to
    repair (out of service for hours); nodes 2–3 (kernel 5.15) upgrade in wave 1, 1,480 → 1,960 s.
    An 8-GPU job arriving at 1,500 s finds every node out and starts at 1,960 s on node 2."""
    up = UpgradeConfig(wave=2, start_s=1000, node_fail_p=0.0, from_driver=OLD, to_driver=NEW,
                       kernel="5.15.0", nodes=(NodeStart("g0-n000[01]", kernel="4.14.0"),))
    r = _run(up, [job("late").gpus(8).at(1500).runs(100).build()])
    u = r.failures.upgrade
    assert (u.nodes_kernel_too_old, u.nodes_failed, u.nodes_upgraded) == (2, 2, 2)
    failed = [(t, n) for t, k, n, _ in r.recorder.log if k == "upgrade-failed"]
    assert failed == [(1480.0, "g0-n0000"), (1480.0, "g0-n0001")]
    assert r.failures.lost_gpu_s.get("kernel-too-old", 0.0) == 0.0  # idle nodes: no job lost work
    starts = [(t, d) for t, k, jid, d in r.recorder.log if k == "start" and jid == "late"]
    assert starts == [(1960.0, "g0-n0002")]


def _scenario(upgrade: dict, jobs: list[dict]):
    return parse_scenario({
        "fleet": {"name": "f", "groups": [{"nodes": 4, "gpu": "H100-80GB", "gpus_per_node": 8}]},
        "workload": {"jobs": jobs},
        "reliability": {"failure_scale": 0, "upgrade": upgrade}}, "s.yaml")


def test_a_scenario_job_carries_its_nccl_as_a_label_beside_its_cuda():
    scn = _scenario({"wave": 1, "from_driver": OLD, "to_driver": NEW, "kernel": "5.15.0"},
                    [{"id": "a", "gpus": 8, "run_time": 10, "cuda": "12.4", "nccl": "2.27.3+cuda12.9"}])
    assert scn.jobs(0)[0].labels == (("cuda", "12.4"), ("nccl", "2.27.3+cuda12.9"))
    assert scn.failures.upgrade.kernel == "5.15.0"


@pytest.mark.parametrize(("upgrade", "jobspec", "field"), [
    ({"wave": 1}, {"cuda": "13.0", "nccl": "2.27.3+cuda12.9"}, "workload.jobs[0]"),
    ({"wave": 1}, {"nccl": "2.27.3"}, "workload.jobs[0]"),
    ({"wave": 1, "from_driver": OLD, "to_driver": NEW, "kernel": "3.2"}, {}, "reliability.upgrade"),
    ({"wave": 1, "kernel": "five"}, {}, "reliability.upgrade.kernel"),
    ({"wave": 1, "to_driver": NEW, "nodes": [{"match": "*", "driver": "x"}]}, {},
     "reliability.upgrade.nodes[0].driver"),
    # a Fabric Manager with no driver to match would hold every node out of service
    ({"wave": 1, "to_driver": NEW, "nodes": [{"match": "*", "fabric_manager": OLD}]}, {},
     "nodes[0].fabric_manager needs a driver"),
])
def test_a_bad_nccl_or_kernel_in_a_scenario_is_one_input_error_naming_the_field(upgrade, jobspec, field):
    with pytest.raises(InputError) as e:
        _scenario(upgrade, [{"id": "a", "gpus": 8, "run_time": 10, **jobspec}])
    msg = str(e.value)
    assert field in msg and "\n" not in msg
