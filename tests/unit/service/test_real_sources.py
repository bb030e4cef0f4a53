"""The API over a real source's world: what /healthz and the summary say when the source goes
away, and what a submission gets. The source is the ``kubernetes`` one over ApiServerDouble (a
test double of recorded objects, tests/unit/live/api_double.py: no API server runs here); the
Slurm counterpart runs against a real slurmctld + slurmrestd (tests/integration/test_serve_slurm.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gpufleet.live.kubernetes import KubernetesSource
from gpufleet.model.errors import InputError
from gpufleet.model.fleet import Fleet
from gpufleet.service.app import create_app
from gpufleet.service.config import ServiceConfig
from gpufleet.service.runtime import Service, make_source

from ..live.api_double import ApiServerDouble
from ..live.test_k8s_scheduler import NOW, eight_gpu_node, gpu_pod
from ..live.test_kubernetes_source import Unreachable


def test_the_service_over_kubernetes_says_when_the_api_server_is_gone_and_when_it_is_back(tmp_path: Path):
    net = Unreachable(ApiServerDouble([eight_gpu_node("a"), gpu_pod("w0", gang="train"),
                                       gpu_pod("w1", gang="train")]))
    t = [NOW]
    src = KubernetesSource(net, "observer", poll_s=1.0, wall=lambda: t[0])
    cfg = ServiceConfig(fleet=Fleet(()), data_dir=tmp_path, source="kubernetes", run_loop=False,
                        argon2_time_cost=1, argon2_memory_kib=1024)
    svc = Service(cfg, source=src)       # reads the API server once before serving
    admin = {"Authorization": f"Bearer {svc.auth.create('admin')[0]}"}
    with TestClient(create_app(cfg, svc)) as client:
        h = client.get("/healthz").json()
        assert h["status"] == "ok" and h["source_reachable"] is True and h["source"] == "kubernetes"
        src_view = client.get("/api/v1/source", headers=admin).json()
        assert src_view["name"] == "kubernetes" and src_view["about"]["mode"] == "observer"
        # a gang's id is namespace/name: the explain route takes it as it is
        e = client.get("/api/v1/jobs/default/train/explain", headers=admin).json()
        assert e["job"] == "default/train" and e["state"] == "pending", e

        r = client.post("/api/v1/nodes/a/cordon", headers=admin)
        assert r.status_code == 409 and "kubectl cordon" in r.json()["error"]["message"]

        net.down = True
        t[0] += 1
        svc.tick()
        h = client.get("/healthz")
        assert h.status_code == 200 and h.json()["status"] == "degraded"
        assert h.json()["source_reachable"] is False and h.json()["source_since"] == NOW + 1
        assert "ConnectionRefusedError" in h.json()["source_last_error"]
        s = client.get("/api/v1/summary", headers=admin).json()
        assert s["source_reachable"] is False and s["pending_jobs"] == 1      # the last world read
        assert 'gpufleet_source_up{source="kubernetes"} 0.0' in client.get("/metrics", headers=admin).text

        r = client.post("/api/v1/jobs", headers=admin,
                        json={"run_time": 60, "pod_sets": [{"replicas": 1, "gpus": 1}]})
        assert r.status_code == 422 and "kubectl" in r.json()["error"]["message"]
        assert client.get("/api/v1/jobs", headers=admin).json()["jobs"] == []

        net.down = False
        t[0] += 1
        svc.tick()
        h = client.get("/healthz").json()
        assert h["source_reachable"] is True and h["source_since"] == NOW + 2
        assert "ConnectionRefusedError" in h["source_last_error"]            # kept after recovery
    svc.store.close()


def test_a_kubernetes_service_names_an_unknown_policy_before_it_looks_for_a_cluster(tmp_path: Path):
    """The Kubernetes source runs the profile the user names, so a misspelt one is refused as
    --policy (before, it was ignored: the source always ran gang-conservative)."""
    cfg = ServiceConfig(fleet=Fleet(()), data_dir=tmp_path, source="kubernetes", policy="gang-bestfitt",
                        run_loop=False)
    with pytest.raises(InputError) as e:
        make_source(cfg)
    assert e.value.source == "--policy" and "gang-bestfitt" in str(e.value)
