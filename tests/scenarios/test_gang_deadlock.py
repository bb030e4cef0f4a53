"""The gang deadlock, reproduced from the bundled scenario file.

8 nodes × 8 GPUs = 64 GPUs; two jobs of 8 pods × 8 GPUs = 64 GPUs each, arriving together.
Per-pod: pods interleave A0 B0 A1 B1 …, each job binds 4 pods (32 GPUs), 0 GPUs are left, neither
gang completes, nothing ever finishes: deadlock with all 64 GPUs held and none working.
Gang: A takes all 8 nodes at t=0 and runs 1 h; B starts at 1 h; makespan 2 h.
"""

from gpufleet.policies.registry import profile
from gpufleet.sim.metrics import summarize
from gpufleet.sim.runner import simulate
from gpufleet.sim.scenario import bundled


def run(policy):
    scn = bundled("deadlock")
    return simulate(scn.fleet, scn.jobs(), profile(policy))


def test_per_pod_placement_deadlocks_holding_the_whole_fleet():
    r = run("per-pod")
    s = summarize(r)
    assert r.deadlocked
    assert s["jobs_finished"] == 0 and s["jobs_pending_at_end"] == 2
    assert r.held_by_partial_gangs == 64
    bound = {}
    for _, kind, jid, _ in r.recorder.log:
        if kind == "bind":
            bound[jid] = bound.get(jid, 0) + 1
    assert bound == {"train-a": 4, "train-b": 4}


def test_gang_placement_runs_the_jobs_one_after_the_other():
    r = run("gang-bestfit")
    assert not r.deadlocked
    assert r.starts == {"train-a": 0.0, "train-b": 3600.0}
    assert summarize(r)["makespan_s"] == 7200.0
