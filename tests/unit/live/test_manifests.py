"""The deployment manifests validate against the Kubernetes OpenAPI schemas (kubernetes-validate
ships them) and grant what the scheduler calls."""

from pathlib import Path

import pytest
import yaml

kv = pytest.importorskip("kubernetes_validate")

MANIFEST = Path(__file__).resolve().parents[3] / "deploy" / "kubernetes" / "gpufleet-scheduler.yaml"


def docs() -> list[dict]:
    return [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]


@pytest.mark.parametrize("version", ["1.34.0", "1.36.0"])
def test_every_manifest_validates_strictly_against_the_openapi_schema(version):
    kinds = []
    for d in docs():
        kv.validate(d, version, strict=True)   # raises ValidationError on any schema violation
        kinds.append(d["kind"])
    assert kinds == ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment"]


def test_a_broken_manifest_is_caught_by_the_same_validation():
    dep = next(d for d in docs() if d["kind"] == "Deployment")
    dep["spec"]["replicas"] = "two"
    with pytest.raises(kv.ValidationError):
        kv.validate(dep, "1.36.0", strict=True)


def test_the_role_grants_every_call_the_scheduler_makes():
    role = next(d for d in docs() if d["kind"] == "ClusterRole")
    granted = {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
               for v in rule["verbs"]}
    needed = [("", "pods/binding", "create"), ("", "pods/status", "patch"),
              ("events.k8s.io", "events", "create"),
              ("", "pods", "delete"), ("", "pods", "watch"), ("", "nodes", "list"),
              ("resource.k8s.io", "resourceslices", "watch"), ("scheduling.x-k8s.io", "podgroups", "list"),
              ("coordination.k8s.io", "leases", "update")]
    assert [n for n in needed if n not in granted] == []
