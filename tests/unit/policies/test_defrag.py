"""Defragmentation: move the cheapest running jobs so a blocked gang fits, never for nothing."""

from dataclasses import replace

import pytest

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.profile import Profile
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import StatusCode
from gpufleet.engine.types import CycleInput, PendingJob, RunningJob
from gpufleet.policies.defrag import DefragPreemptor, move_cost_gpu_s
from gpufleet.policies.fractional import FractionalGangFit
from gpufleet.testing.builders import fleet, job

NOW = 10_000.0


def running(j, nodes, start=0.0):
    ps = j.pod_sets[0]
    binds = tuple(PodBinding(j.id, ps.name, i, n, ps.request) for i, n in enumerate(nodes))
    return RunningJob(j, start, binds)


def cycle(run, pending, rule="cost", disruptions=(), **kw):
    t = NodeTable.from_fleet(fleet().leaves(1, nodes=2).build())
    for rj in run:
        for b in rj.bindings:
            t.take(b.node, b.request, slot=b.slot)
    prof = Profile("defrag-test", placer=FractionalGangFit(),
                   preemptor=DefragPreemptor(rule, patience_s=0.0, **kw))
    return run_cycle(CycleInput(NOW, t, [PendingJob(j) for j in pending], prof, running=run,
                                disruptions=disruptions))


def half_nodes():
    """Two nodes half full: 8 GPUs free, but no node has 8. ``cheap`` checkpointed 100 s ago;
    ``dear`` never checkpoints and has run 10,000 s."""
    cheap = job("cheap").gpus(4).runs(50_000).checkpoints(1800, cost_s=1000, restart_s=60).build()
    dear = job("dear").gpus(4).runs(50_000).build()
    return [running(cheap, [0], start=NOW - 3700), running(dear, [1])]


def test_the_cheaper_victim_moves_and_the_gang_is_told_why_it_waits():
    big = job("big").gpus(8).build()
    res = cycle(half_nodes(), [big])
    assert [p.job for p in res.preemptions] == ["cheap"]
    assert res.preemptions[0].for_job == "big"
    assert res.statuses["big"].code is StatusCode.WAIT and "moving cheap" in res.statuses["big"].explain()


def test_cost_is_lost_work_since_the_checkpoint_plus_restart_per_gpu_equivalent():
    cheap, dear = half_nodes()
    # 100 s since its checkpoint at the notice + 60 s computed during the grace period (its
    # checkpoint cost exceeds the grace, so it cannot checkpoint on notice) + 60 s restart
    assert move_cost_gpu_s(cheap, NOW, 60.0) == pytest.approx(4 * (100 + 60 + 60))
    assert move_cost_gpu_s(dear, NOW, 60.0) == pytest.approx(4 * (NOW + 60))  # all of it, grace too
    mig = running(job("m").mig("3g.40gb").runs(9_000).checkpoints(60, restart_s=30).build(), [0])
    assert move_cost_gpu_s(mig, NOW, 60.0) == pytest.approx(3 / 7 * 30)


def test_never_evicts_when_the_gang_still_would_not_fit():
    pinned = replace(job("pinned").gpus(4).build(), priority=5)    # higher priority: not movable
    run = [half_nodes()[0], running(pinned, [1])]
    res = cycle(run, [job("big").gpus(8).gang(2).build()])
    assert res.preemptions == ()
    assert "no set of movable jobs" in res.statuses["big"].explain()


def test_never_evicts_for_a_gang_that_fits_after_all_or_that_is_bigger_than_the_fleet():
    res = cycle(half_nodes(), [job("small").gpus(4).build(), job("huge").gpus(8).gang(3).build()])
    assert res.preemptions == ()


@pytest.mark.parametrize("per_hour, recent, moves", [
    (32.0, (), True),
    (2.0, (), False),
    (32.0, ((NOW - 600, 30.0),), False),
    (32.0, ((NOW - 4000, 30.0),), True),
], ids=["within budget", "a move larger than the hourly budget is refused",
        "recent evictions use up the budget", "evictions older than an hour no longer count"])
def test_the_disruption_budget_is_respected(per_hour, recent, moves):
    res = cycle(half_nodes(), [job("big").gpus(8).build()], gpus_per_hour=per_hour, disruptions=recent)
    assert bool(res.preemptions) is moves
    if not moves:
        assert "disruption budget" in res.statuses["big"].explain()


def test_the_naive_rule_moves_the_smallest_jobs_first():
    cheap = job("cheap").gpus(4).runs(50_000).checkpoints(1800, cost_s=1000, restart_s=60).build()
    tiny = [running(job(f"t{i}").gpus(1).runs(50_000).build(), [1], start=NOW - 5000) for i in range(2)]
    run = [running(cheap, [0], start=NOW - 3700), *tiny]
    ours = cycle(run, [job("big").gpus(8).build()])
    naive = cycle(run, [job("big").gpus(8).build()], rule="smallest")
    assert [p.job for p in naive.preemptions] == ["t0", "t1"]     # clears node 1 at 2×5,000 GPU-s
    assert [p.job for p in ours.preemptions] == ["cheap"]         # clears node 0 at 4×160 GPU-s


def test_ours_requires_the_moved_jobs_to_fit_again():
    """Both nodes busy with 4+3 GPUs: freeing a node for the gang leaves no room for the mover."""
    run = [running(job("a").gpus(4).runs(50_000).checkpoints(60).build(), [0]),
           running(job("b").gpus(3).runs(50_000).checkpoints(60).build(), [0]),
           running(job("c").gpus(4).runs(50_000).checkpoints(60).build(), [1]),
           running(job("d").gpus(3).runs(50_000).checkpoints(60).build(), [1])]
    assert cycle(run, [job("big").gpus(8).build()]).preemptions == ()
    assert cycle(run, [job("big").gpus(8).build()], rule="smallest").preemptions != ()


def test_patience_keeps_defrag_away_from_gangs_that_just_arrived():
    t = NodeTable.from_fleet(fleet().leaves(1, nodes=2).build())
    run = half_nodes()
    for rj in run:
        for b in rj.bindings:
            t.take(b.node, b.request)
    prof = Profile("p", placer=FractionalGangFit(), preemptor=DefragPreemptor("cost", patience_s=1800))
    res = run_cycle(CycleInput(NOW, t, [PendingJob(job("big").gpus(8).at(NOW - 60).build())], prof,
                               running=run))
    assert res.preemptions == ()


@pytest.mark.parametrize("rule", ["cost", "smallest"])
def test_a_gang_that_may_use_one_node_moves_only_the_job_on_that_node(rule):
    """Two nodes half full (``half_nodes``): 'cheap' (4 GPUs) on node 0, 'dear' (4 GPUs) on node 1.
    Either move frees a whole 8-GPU node, and the cost rule prefers 'cheap'; but a gang that may
    use node 1 only gains nothing from node 0, so both rules move 'dear' (and only 'dear')."""
    run = half_nodes()
    names = NodeTable.from_fleet(fleet().leaves(1, nodes=2).build()).names
    big = replace(job("big").gpus(8).build(), eligible_nodes=frozenset({names[1]}))
    res = cycle(run, [big], rule=rule)
    assert [p.job for p in res.preemptions] == ["dear"]
