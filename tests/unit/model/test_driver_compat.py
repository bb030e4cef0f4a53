"""The driver-upgrade compatibility matrix (model/driver_compat.py), from the CUDA Toolkit release
notes' minimum-driver table and NVIDIA's compatibility rules (ops reference §8.1–8.2)."""

from __future__ import annotations

import pytest

from gpufleet.model.driver_compat import compat, placement


def test_a_driver_at_the_toolkits_minimum_runs_it_natively_and_newer_drivers_run_older_cuda():
    """CUDA 12.4 GA needs ≥ 550.54.14; 11.8 needs ≥ 520.61.05: both native on 550.54.14 and 580.65.06."""
    for driver in ("550.54.14", "580.65.06"):
        assert compat("12.4", driver)[0] == "native"
        assert compat("11.8", driver)[0] == "native"
    assert compat("12.4", "550.54.13")[0] == "minor-compat"  # one patch short: 12.x family on ≥ 525


def test_an_older_driver_of_the_same_family_runs_with_minor_version_compatibility():
    """CUDA 12.8 GA needs 570.26; on 550.54.14 (≥ 525, the 12.x floor) it runs, minus PTX JIT."""
    verdict, why = compat("12.8", "550.54.14")
    assert verdict == "minor-compat" and "PTX" in why


def test_a_new_major_needs_its_family_driver_or_forward_compatibility():
    """CUDA 13.0 needs ≥ 580.65.06 (13.x family floor 580): not on 575.51.03 — unless the
    cuda-compat package runs it on a data-center GPU."""
    assert compat("13.0", "575.51.03")[0] == "no"
    assert compat("13.0", "575.51.03", forward_compat=True)[0] == "forward-compat"
    assert compat("13.0", "580.65.06")[0] == "native"


def test_fabric_manager_must_match_the_driver_exactly():
    verdict, why = compat("12.4", "570.86.15", fabric_manager="570.86.10")
    assert verdict == "no" and "802" in why
    assert compat("12.4", "570.86.15", fabric_manager="570.86.15")[0] == "native"


def test_during_a_rollout_a_new_cuda_image_may_land_only_on_upgraded_nodes():
    """550.54.14 → 580.65.06: a CUDA 13.0 image cannot run on the old driver, so only on upgraded
    nodes; 12.x images run anywhere."""
    assert placement("13.0", "550.54.14", "580.65.06")["may_run_on"] == "upgraded nodes only"
    assert placement("12.8", "550.54.14", "580.65.06")["may_run_on"] == "any node"
    p = placement("13.1", "550.54.14", "580.65.06")  # 13.1 wants 590.44.01; 580 is its family floor
    assert (p["new_driver"], p["may_run_on"]) == ("minor-compat", "upgraded nodes only")
    assert placement("13.0", "535.54.03", "575.51.03")["may_run_on"] == "nowhere"


@pytest.mark.parametrize("cuda,driver", [("12.7", "550.1"), ("twelve", "550.1"), ("12", "550.1"),
                                         ("12.4", ""), ("12.4", "5x0"), ("12.4", "9" * 40)])
def test_bad_versions_are_one_clear_value_error(cuda, driver):
    with pytest.raises(ValueError, match="CUDA|driver"):
        compat(cuda, driver)
