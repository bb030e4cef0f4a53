"""Export never loosens a quota: decisions before `kueue export` equal decisions after `kueue
import`, on every bundled tenancy and on Kueue's published samples; quantities come back exact.
"""

from dataclasses import replace
from importlib import resources
from pathlib import Path

import pytest
import yaml
from tests.scenarios.test_kueue_rules import F, w
from tests.unit.adapters.kueue.test_kueue_export import DATA, validate

from gpufleet.adapters.kueue.export import export_manifests
from gpufleet.adapters.kueue.read import Manifest, read_manifests
from gpufleet.adapters.kueue.to_tenancy import to_tenancy
from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleInput, PendingJob
from gpufleet.model.tenancy import Tenancy
from gpufleet.model.tenancy_config import TenancySpec
from gpufleet.policies.registry import profile
from gpufleet.sim.runner import simulate
from gpufleet.sim.scenario import parse_scenario
from gpufleet.testing.builders import fleet

VERSIONS = ("v1beta1", "v1beta2")


def round_trip(spec: TenancySpec, version: str, tmp_path: Path, local: dict | None = None,
               gpu_models: dict | None = None) -> tuple[TenancySpec, list[dict]]:
    manifests, _ = export_manifests(spec, version, local)
    for m in manifests:
        validate(m, version)
    f = tmp_path / f"export-{version}.yaml"
    f.write_text(yaml.safe_dump_all(manifests))
    config, _ = to_tenancy(read_manifests([f])[0], gpu_models)
    return TenancySpec.model_validate(config["tenancy"]), manifests


def quota_part(t: Tenancy, like: Tenancy) -> Tenancy:
    """``t`` with the fields Kueue's objects do not hold (grace, half-life, usage weight,
    priority budgets, preemptible classes) taken from ``like``."""
    tenants = tuple(replace(q, priority_budget_gpus=o.priority_budget_gpus)
                    for q, o in zip(t.tenants, like.tenants, strict=True))
    classes = tuple(replace(p, preemptible=o.preemptible)
                    for p, o in zip(t.priority_classes, like.priority_classes, strict=True))
    return replace(t, tenants=tenants, priority_classes=classes, grace_s=like.grace_s,
                   half_life_s=like.half_life_s, usage_weight=like.usage_weight,
                   default_priority=like.default_priority)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", ["tenancy", "kueue"])
def test_every_bundled_tenancy_decides_the_same_after_export_and_import(name, version, tmp_path):
    """The bundled scenario's tenancy → manifests (valid against Kueue's CRDs) → tenancy: every
    quota, limit, cohort, weight and queue policy is back, and one simulated day under the
    kueue profile gives the same event log byte for byte."""
    data = yaml.safe_load(resources.files("gpufleet.scenarios").joinpath(f"{name}.yaml").read_text())
    spec = TenancySpec.model_validate(data["tenancy"])
    back, _ = round_trip(spec, version, tmp_path)
    before = spec.build()
    after = quota_part(back.build(), before)
    assert after == before
    data["workload"]["generator"]["days"] = 1
    scn = parse_scenario(data, f"{name}.yaml")
    jobs = scn.jobs(None)
    logs = []
    for t in (before, after):
        r = simulate(scn.fleet, jobs, profile("kueue"), horizon=scn.horizon,
                     cycle_interval_s=scn.spec.cycle_interval_s, tenancy=t)
        logs.append(list(r.recorder.log))
    assert logs[0] == logs[1] and any(kind == "start" for _, kind, _, _ in logs[0])


SAMPLES = [("v1beta1", "kueueviz", None), ("v1beta2", "kueueviz", None),
           ("v1beta1", "tas-sample-gpu-queues.yaml", {"tas-flavor": "H100-80GB"}),
           ("v1beta2", "tas-sample-gpu-queues.yaml", {"tas-flavor": "H100-80GB"}),
           ("v1beta2", "admission-fair-sharing-setup.yaml", None)]


@pytest.mark.parametrize("version, sample, models", SAMPLES)
def test_kueues_published_samples_come_back_the_same_after_export_and_import(version, sample, models,
                                                                            tmp_path):
    """Each of Kueue's samples (tests/data/kueue, PROVENANCE.md): import → export (both API
    versions) → import gives the same tenancy; a flavor named after a GPU model exports with
    the GFD product label and imports back as that model."""
    objects, _ = read_manifests([DATA / version / sample])
    config, _ = to_tenancy(objects, models)
    spec = TenancySpec.model_validate(config["tenancy"])
    for out_version in VERSIONS:
        back, _ = round_trip(spec, out_version, tmp_path, config["kueue_local_queues"])
        assert back.build() == spec.build(), out_version


NO_GPUS = yaml.safe_load("""
cohorts: [{name: c}]
tenants:
  - {name: a, cohort: c, quotas: {H100-80GB: {nominal: 16}}}
  - name: cpu-only
    cohort: c
    resources: {H100-80GB: {cpu: {nominal: 64}}}
""")


@pytest.mark.parametrize("version", VERSIONS)
def test_a_tenant_without_gpu_quota_still_admits_no_gpu_job_after_the_round_trip(version, tmp_path):
    """cpu-only has cpu quota on H100 and no GPU quota there: our model refuses its GPU jobs
    (no GPU quota, no borrowing). Kueue needs every resource of a group on every flavor, so
    export writes its nvidia.com/gpu on h100-80gb; as nominal 0 alone Kueue would let it borrow
    a's 16 idle GPUs without limit. Written as nominal 0 with borrowingLimit 0, the 8-GPU job is
    refused before and after, while a's own job is admitted both times."""
    spec = TenancySpec.model_validate(NO_GPUS)
    back, manifests = round_trip(spec, version, tmp_path)
    cq = next(m for m in manifests if m["kind"] == "ClusterQueue" and m["metadata"]["name"] == "cpu-only")
    gpu = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert gpu == {"name": "nvidia.com/gpu", "nominalQuota": 0, "borrowingLimit": 0}
    pending = [replace(w("x", "cpu-only", 8), id="cpu-only-gpus"), replace(w("y", "a", 8), id="a-gpus")]
    for t in (spec.build(), back.build()):
        table = NodeTable.from_fleet(fleet().leaves(1, nodes=2).build())
        r = run_cycle(CycleInput(10_000.0, table, [PendingJob(j) for j in pending], profile("kueue"),
                                 tenancy=t))
        assert r.started == ("a-gpus",)


def test_memory_and_cpu_quantities_come_back_exactly():
    """100Gi is 107,374,182,400 bytes; imported as 107.3741824 GB it is exported as "100Gi"
    again (not "107374M"); 16T stays 16T, 300m of cpu stays 300m."""
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "q"},
          "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu", "cpu", "memory"], "flavors": [
              {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8},
                                             {"name": "cpu", "nominalQuota": "300m"},
                                             {"name": "memory", "nominalQuota": "100Gi"}]},
              {"name": "a100-80gb", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8},
                                                  {"name": "cpu", "nominalQuota": 96},
                                                  {"name": "memory", "nominalQuota": "16T"}]}]}]}}
    config, _ = to_tenancy([Manifest("q.yaml", "ClusterQueue", "v1beta2", "q", None, cq)])
    spec = TenancySpec.model_validate(config["tenancy"])
    manifests, _ = export_manifests(spec)
    out = next(m for m in manifests if m["kind"] == "ClusterQueue")
    got = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]}
           for f in out["spec"]["resourceGroups"][0]["flavors"]}
    assert got == {"h100-80gb": {"nvidia.com/gpu": 8, "cpu": "300m", "memory": "100Gi"},
                   "a100-80gb": {"nvidia.com/gpu": 8, "cpu": 96, "memory": "16T"}}


def test_exported_flavors_select_nodes_by_the_product_gfd_writes():
    """H100-80GB nodes carry nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3 (GFD's README), not
    our catalog name; the exported ResourceFlavor selects them, and imports back as H100-80GB."""
    spec = TenancySpec.model_validate({"tenants": [{"name": "a", "quotas": {F: {"nominal": 8}}}]})
    manifests, notes = export_manifests(spec)
    rf = next(m for m in manifests if m["kind"] == "ResourceFlavor")
    assert rf["spec"]["nodeLabels"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    assert not any("ResourceFlavor" in n for n in notes)
    gb = TenancySpec.model_validate({"tenants": [{"name": "a", "quotas": {"GB200": {"nominal": 8}}}]})
    _, notes = export_manifests(gb)
    assert any("is not a value GPU Feature Discovery is known to write" in n for n in notes)



SHARED = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: research}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: h100-80gb, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: research}
spec:
  cohortName: research
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: h100-80gb, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
"""


@pytest.mark.parametrize("version", VERSIONS)
def test_a_cluster_queue_and_a_cohort_may_share_a_name(version, tmp_path):
    """Kueue allows ClusterQueue research in Cohort research (different kinds). Imported, the
    queue's 8 and the cohort's own 8 make 16 reachable: a 16-GPU job is admitted on 2 nodes;
    the names survive export and import."""
    f = tmp_path / "shared.yaml"
    f.write_text(SHARED)
    config, _ = to_tenancy(read_manifests([f])[0])
    spec = TenancySpec.model_validate(config["tenancy"])
    assert spec.problem() is None
    t = spec.build()
    assert t.tenant("research") is not None and t.cohort("research") is not None
    big = replace(w("x", "research", 8), id="big")
    big = replace(big, pod_sets=(replace(big.pod_sets[0], replicas=2),))
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=2).build())
    r = run_cycle(CycleInput(10_000.0, table, [PendingJob(big)], profile("kueue"), tenancy=t))
    assert r.started == ("big",)
    back, _ = round_trip(spec, version, tmp_path)
    assert back.build() == t
