"""The shipped Grafana dashboard and manifests match what the service serves."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from tests.unit.service.conftest import job_body

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"


def test_every_metric_the_grafana_dashboard_queries_is_exported(served_tenancy):
    s = served_tenancy
    s.post_job(job_body("a1", tenant="a"), headers=s.member_a)
    s.tick()
    text = s.client.get("/metrics", headers=s.viewer).text
    # a labelled counter has no sample before its first event: its TYPE line names it
    exported = set(re.findall(r"^(gpufleet_\w+?)(?:\{| )", text, re.M))
    exported |= set(re.findall(r"^# TYPE (gpufleet_\w+) counter", text, re.M))
    dash = json.loads((DEPLOY / "grafana" / "gpufleet.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    queried = {m for e in exprs for m in re.findall(r"gpufleet_\w+", e)}
    assert queried and queried <= exported, queried - exported


def test_the_kubernetes_manifest_probes_the_health_route_and_runs_serve():
    docs = list(yaml.safe_load_all((DEPLOY / "kubernetes" / "gpufleet-serve.yaml").read_text()))
    dep = next(d for d in docs if d["kind"] == "Deployment")
    c = dep["spec"]["template"]["spec"]["containers"][0]
    assert c["args"][0] == "serve"
    assert c["readinessProbe"]["httpGet"]["path"] == "/healthz"
