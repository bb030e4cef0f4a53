"""Placers that place whole GPUs only refuse fractional requests instead of over-committing."""

import pytest

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import StatusCode
from gpufleet.engine.types import CycleInput, PendingJob
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet


def mig_jobs(n):
    return [Job(f"m{i}", "t", (PodSet("w", 1, PodRequest(0, mig_profile="1g.10gb")),), 0.0, 60.0)
            for i in range(n)]


@pytest.mark.parametrize("policy", ["gang-bestfit", "gang-easy", "per-pod"])
def test_a_whole_gpu_placer_refuses_mig_requests_with_a_reason(policy):
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=1, gpus=1).build())
    r = run_cycle(CycleInput(0.0, table, [PendingJob(j) for j in mig_jobs(20)], profile(policy)))
    assert r.started == ()
    assert all(s.code is StatusCode.UNRESOLVABLE and "whole GPUs only" in s.reasons[0]
               for s in r.statuses.values())


def test_the_fractional_placer_fits_seven_1g_slices_on_one_h100():
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=1, gpus=1).build())
    r = run_cycle(CycleInput(0.0, table, [PendingJob(j) for j in mig_jobs(20)],
                             profile("gang-fractional")))
    assert len(r.started) == 7
