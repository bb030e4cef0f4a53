"""The engine's contract: snapshot in, decisions out, with a reason for every job left waiting."""

import pytest

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import StatusCode
from gpufleet.engine.types import CycleInput, PendingJob
from gpufleet.policies.registry import PROFILES, profile
from gpufleet.testing.builders import fleet, job


def cycle(f, jobs, policy="gang-bestfit", table=None):
    table = table or NodeTable.from_fleet(f)
    return run_cycle(CycleInput(now=0.0, nodes=table, pending=[PendingJob(j) for j in jobs],
                                profile=profile(policy)))


def test_a_gang_that_fits_is_bound_whole():
    f = fleet().leaves(1, nodes=4).build()
    r = cycle(f, [job("a").gpus(8).gang(3).build()])
    assert r.started == ("a",)
    assert len(r.bindings) == 3 and {b.job for b in r.bindings} == {"a"}


def test_a_gang_that_does_not_fit_binds_nothing_and_says_why():
    f = fleet().leaves(1, nodes=4).build()
    r = cycle(f, [job("big").gpus(8).gang(3).build(), job("huge").gpus(8).gang(3).build()])
    assert r.started == ("big",)
    assert all(b.job == "big" for b in r.bindings)
    status = r.statuses["huge"]
    assert status.code is StatusCode.UNSCHEDULABLE
    assert "3×8 GPUs" in status.reasons[0] and "1 pod(s) of that shape fit now" in status.reasons[0]


def test_a_job_larger_than_the_fleet_is_unresolvable():
    f = fleet().leaves(1, nodes=2).build()
    r = cycle(f, [job("x").gpus(8).gang(3).build()])
    assert r.statuses["x"].code is StatusCode.UNRESOLVABLE
    assert "even an empty fleet holds only 2" in r.statuses["x"].reasons[0]


def test_the_engine_does_not_mutate_the_drivers_snapshot():
    f = fleet().leaves(1, nodes=2).build()
    table = NodeTable.from_fleet(f)
    cycle(f, [job("a").gpus(8).build()], table=table)
    assert int(table.gpu_free.sum()) == 16


def test_higher_priority_is_tried_first_then_submit_time_then_id():
    f = fleet().leaves(1, nodes=1).build()
    jobs = [job("b").gpus(8).at(0).build(), job("a").gpus(8).at(0).build(),
            job("late-but-urgent").gpus(8).at(5).priority(10).build()]
    assert cycle(f, jobs).started == ("late-but-urgent",)
    assert cycle(f, jobs[:2]).started == ("a",)


def test_cpu_exhaustion_is_named_when_gpus_are_free():
    f = fleet().leaves(1, nodes=1, gpus=8).build()
    r = cycle(f, [job("cpu-hog").gpus(1).cpus(220).build(), job("needs-cpu").gpus(1).cpus(16).build()])
    assert r.started == ("cpu-hog",)
    assert "CPU or memory is exhausted" in r.statuses["needs-cpu"].reasons[0]


def test_shapes_that_already_failed_are_not_searched_again():
    f = fleet().leaves(1, nodes=1).build()
    jobs = [job("fill").gpus(8).build()] + [job(f"w{i}").gpus(4).gang(2).build() for i in range(50)]
    r = cycle(f, jobs)
    assert r.stats.skipped_by_class == 49
    assert all(r.statuses[f"w{i}"].code is StatusCode.UNSCHEDULABLE for i in range(50))


# ---- every named profile ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_every_named_profile_starts_what_fits_and_explains_what_does_not(name):
    """Two 8-GPU nodes. ``fits`` (8 GPUs) starts under every policy; ``huge`` (3 × 8 GPUs, more
    than the 16 the fleet has) never starts and carries a reason; the bindings are ``fits``'s one
    pod plus, for the per-pod baseline only, the one ``huge`` pod that found the other node."""
    f = fleet().leaves(1, nodes=2).build()
    r = cycle(f, [job("fits").gpus(8).build(), job("huge").gpus(8).gang(3).at(1).build()], policy=name)
    assert r.started == ("fits",)
    assert "huge" not in r.started and r.statuses["huge"].reasons
    assert "fits" not in r.statuses
    gpus_bound = sum(b.request.gpus for b in r.bindings)
    assert gpus_bound == (16 if name == "per-pod" else 8)


def test_a_gang_short_of_cpu_says_how_many_pods_the_gpus_alone_would_take():
    """Two 8-GPU nodes, the second with 10 CPUs free; a 2×8-GPU gang asking 64 CPUs per pod:
    the first node takes min(8 / 8, 224 / 64) = 1 pod, the second min(1, trunc(10 / 64)) = 0, so
    1 pod fits now; by GPUs alone 2 would."""
    f = fleet().leaves(1, nodes=2).build()
    table = NodeTable.from_fleet(f)
    table.cpu_free[1] = 10.0
    r = cycle(f, [job("g").gpus(8).cpus(64).gang(2).build()], table=table)
    assert r.statuses["g"].code is StatusCode.UNSCHEDULABLE
    assert r.statuses["g"].reasons[0] == (
        "pod set 'worker' needs 2×8 GPUs; 1 pod(s) of that shape fit now (2 by GPUs alone: "
        "CPU or memory is exhausted on nodes with free GPUs)")
