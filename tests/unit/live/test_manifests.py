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


SERVE_IN_CLUSTER = MANIFEST.with_name("gpufleet-serve-in-cluster.yaml")


@pytest.mark.parametrize("version", ["1.34.0", "1.36.0"])
def test_the_serve_in_cluster_manifest_validates_and_grants_the_observer_reads_only(version):
    """``serve --source kubernetes --kube-mode observer`` lists and watches every kind the
    reader keeps (live/kube_api.py KINDS) and writes nothing."""
    ds = [d for d in yaml.safe_load_all(SERVE_IN_CLUSTER.read_text()) if d]
    for d in ds:
        kv.validate(d, version, strict=True)
    role = next(d for d in ds if d["kind"] == "ClusterRole")
    granted = {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
               for v in rule["verbs"]}
    reads = [("", "nodes"), ("", "pods"), ("scheduling.x-k8s.io", "podgroups"),
             ("scheduling.volcano.sh", "podgroups"), ("scheduling.k8s.io", "podgroups"),
             ("scheduling.k8s.io", "workloads"), ("resource.k8s.io", "resourceclaims"),
             ("resource.k8s.io", "resourceslices"), ("resource.k8s.io", "deviceclasses"),
             ("resource.k8s.io", "resourceclaimtemplates")]
    assert all((g, r, v) in granted for g, r in reads for v in ("list", "watch"))
    assert {v for _, _, v in granted} == {"get", "list", "watch"}
    dep = next(d for d in ds if d["kind"] == "Deployment")
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--source") + 1] == "kubernetes"
    assert dep["spec"]["template"]["spec"]["serviceAccountName"] == "gpufleet-serve"
