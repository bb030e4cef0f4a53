"""The simulated cluster's running set keeps its columns (engine/running.py) in step with the dict
whatever changes it: start, notice (a replaced run), end, eviction, pickling."""

import pickle
from dataclasses import replace

import numpy as np
import pytest

from gpufleet.engine.capacity import Releases
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.types import CycleContext, RunningJob
from gpufleet.model.job import PodRequest
from gpufleet.policies.registry import profile
from gpufleet.sim.cluster import RunningJobs
from gpufleet.testing.builders import job


def rj(jid: str, est: float, node: int) -> RunningJob:
    return RunningJob(job(jid).runs(est).build(), 0.0,
                      (PodBinding(jid, "w", 0, node, PodRequest(4, 8.0, 32.0)),))


def schedule_matches(running: RunningJobs, now: float) -> None:
    ctx = CycleContext(now=now, profile=profile("gang-easy"), rng=np.random.default_rng(0),
                       running=list(running.values()))
    want = Releases.build(list(running.values()), ctx.expected_end, ctx.expected_ends(list(running.values())))
    got = running.columns.releases(now, {}, ctx.expected_end)
    assert got.jobs == want.jobs and got.ends.tolist() == want.ends.tolist()
    assert got.rel_node.tolist() == want.rel_node.tolist()


def test_every_change_to_the_running_dict_reaches_its_columns():
    """a, b, c start (ends 100, 50, 200); b gets notice (evict at 30: it ends first); a ends; c is
    popped; d starts. After each step the columns give the schedule built from the dict."""
    running = RunningJobs()
    for jid, est, node in (("a", 100.0, 0), ("b", 50.0, 1), ("c", 200.0, 2)):
        running[jid] = rj(jid, est, node)
    schedule_matches(running, 10.0)
    running["b"] = replace(running["b"], evicting=True, evict_at=30.0)
    assert list(running) == ["a", "b", "c"]  # a replaced run keeps its place
    schedule_matches(running, 10.0)
    ctx = CycleContext(now=10.0, profile=profile("gang-easy"), rng=np.random.default_rng(0))
    assert running.columns.releases(10.0, {}, ctx.expected_end).jobs == ("b", "a", "c")
    del running["a"]
    assert running.pop("c").job.id == "c"
    assert running.pop("zz", None) is None
    running["d"] = rj("d", 5.0, 3)
    schedule_matches(running, 10.0)
    assert len(running.columns) == 2
    copy = pickle.loads(pickle.dumps(running))
    schedule_matches(copy, 10.0)
    with pytest.raises(KeyError):
        running.pop("zz")
    with pytest.raises(TypeError):
        running.update({"e": rj("e", 1.0, 0)})
    with pytest.raises(TypeError):
        running |= {"e": rj("e", 1.0, 0)}
    with pytest.raises(KeyError):  # the columns know a job by its own id
        running["e"] = rj("f", 1.0, 0)
    assert list(running) == ["b", "d"] and len(running.columns) == 2
