"""The ``kubernetes`` source of ``gpufleet serve`` against ApiServerDouble: a test double built
from the real recorded objects of tests/data/k8s (api_double.py says what it models). No API
server runs in this project's tests; the official client's side is kube_api.OfficialKubeApi.

Cluster: two nodes of 8 GPUs (the recorded RKE2 GPU node, renamed). A 2-pod gang of 8 GPUs each
fits; a third 8-GPU pod then has no room.
"""

from __future__ import annotations

import pytest

from gpufleet.live.explain import explain
from gpufleet.live.kubernetes import KubernetesSource
from gpufleet.live.loop import LiveLoop
from gpufleet.live.source import SourceRefused
from gpufleet.testing.builders import job

from .api_double import ApiServerDouble
from .test_k8s_scheduler import NOW, eight_gpu_node, gpu_pod


class Unreachable:
    """The double behind a network that refuses connections while ``down``."""

    def __init__(self, api: ApiServerDouble) -> None:
        self.api, self.down = api, False

    def __getattr__(self, name: str):  # noqa: ANN204
        attr = getattr(self.api, name)
        if not callable(attr):
            return attr

        def call(*a, **kw):  # noqa: ANN002, ANN003, ANN202
            if self.down:
                raise ConnectionRefusedError(111, "Connection refused")
            return attr(*a, **kw)
        return call


def source(api, mode: str, t: list[float]) -> KubernetesSource:  # noqa: ANN001
    return KubernetesSource(api, mode, poll_s=2.0, wall=lambda: t[0])


def test_observer_mode_explains_every_pending_gang_and_binds_nothing():
    api = ApiServerDouble([eight_gpu_node("a"), eight_gpu_node("b"),
                           gpu_pod("w0", gang="train"), gpu_pod("w1", gang="train"),
                           gpu_pod("other", scheduler="default-scheduler")])
    t = [NOW]
    src = source(api, "observer", t)
    loop = LiveLoop(src, epoch=NOW)
    loop.tick()
    assert api.binds == [] and api.events == []                   # read only
    snap = loop.snapshot()
    assert len(snap.fleet.nodes) == 2 and int(snap.table.gpu_total.sum()) == 16
    assert len(snap.pending) == 2                                 # both gangs, whatever their scheduler
    (train,) = [k for k in snap.pending if "train" in k]
    assert snap.pending[train].total_gpus == 16
    e = explain(snap, train)
    assert e is not None and e.state == "pending" and e.code is not None
    assert snap.health.ok and "observer" in snap.health.detail


def test_scheduler_mode_binds_a_gang_whole_and_explains_the_pod_that_waits():
    api = ApiServerDouble([eight_gpu_node("a"), eight_gpu_node("b"),
                           gpu_pod("w0", gang="train"), gpu_pod("w1", gang="train")])
    t = [NOW]
    src = source(api, "scheduler", t)
    events = src.poll(NOW)
    assert sorted(n for _, n in api.binds) == ["a", "b"]
    assert sorted(e.node for e in events if e.kind == "bind") == ["a", "b"]
    api.add(gpu_pod("late", gpus=8))
    t[0] += 2
    src.advance(t[0])
    t[0] += 2
    src.advance(t[0])
    loop = LiveLoop(src, epoch=NOW)
    loop.tick()
    snap = loop.snapshot()
    (late,) = [k for k in snap.pending if "late" in k]
    assert len(snap.running) == 1
    e = explain(snap, late)
    assert e is not None and e.state == "pending" and e.reason == "capacity"
    assert e.node_counts and all(c.reason != "fits one pod now" for c in next(iter(e.node_counts.values())))


def test_an_unreachable_api_server_is_reported_and_the_source_catches_up_when_it_returns():
    api = ApiServerDouble([eight_gpu_node("a"), gpu_pod("p0", gpus=8)])
    net = Unreachable(api)
    t = [NOW]
    src = source(net, "observer", t)
    src.advance(t[0])
    assert len(src.pending()) == 1
    net.down = True
    t[0] += 2
    assert [e.kind for e in src.advance(t[0])] == ["source-down"]
    h = src.health()
    assert not h.ok and h.since == NOW + 2 and "ConnectionRefusedError" in h.last_error
    assert len(src.pending()) == 1                                # the last world read stays
    t[0] += 2
    assert src.advance(t[0]) == []                                # one event, not one per try
    api.add(gpu_pod("p1", gpus=4))                                # created while we could not see
    net.down = False
    t[0] += 2
    back = src.advance(t[0])
    assert back[0].kind == "source-up" and any(e.kind == "submit" and "p1" in (e.job or "") for e in back)
    assert src.health().ok and src.health().since == NOW + 6 and len(src.pending()) == 2


def test_jobs_are_the_api_servers_a_submission_is_refused_with_what_to_do():
    src = source(ApiServerDouble([eight_gpu_node("a")]), "observer", [NOW])
    with pytest.raises(SourceRefused, match="kubectl"):
        src.send(job("x").gpus(1).build())
