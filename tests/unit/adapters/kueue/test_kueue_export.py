"""`gpufleet kueue export`: manifests Kueue's own CRD schemas accept, and a lossless round trip.

The schemas are the openAPIV3Schema of each version in Kueue's CRDs (tests/data/kueue/crd,
PROVENANCE.md), checked with jsonschema.
"""

from pathlib import Path

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from gpufleet.adapters.kueue.export import export_manifests
from gpufleet.adapters.kueue.read import read_manifests
from gpufleet.adapters.kueue.to_tenancy import to_tenancy
from gpufleet.cli.main import app
from gpufleet.model.tenancy_config import TenancySpec

DATA = Path(__file__).parents[3] / "data" / "kueue"
CRDS = {"ClusterQueue": "clusterqueues", "Cohort": "cohorts", "LocalQueue": "localqueues",
        "ResourceFlavor": "resourceflavors", "WorkloadPriorityClass": "workloadpriorityclasses"}
runner = CliRunner()

RICH = yaml.safe_load("""
priority_classes: [{name: low, value: -10}, {name: normal, value: 0}, {name: high, value: 100}]
cohorts:
  - {name: org, quotas: {H100-80GB: {nominal: 8}}}
  - {name: ml, parent: org, weight: 2}
tenants:
  - name: research
    cohort: ml
    weight: 3
    quotas: {H100-80GB: {nominal: 96, borrowing_limit: 64, lending_limit: 48}, A100-80GB: {nominal: 16}}
    resources: {H100-80GB: {cpu: {nominal: 1152}, memory_gb: {nominal: 16000}},
                A100-80GB: {cpu: {nominal: 128, borrowing_limit: 64}, memory_gb: {nominal: 1000}}}
    kueue:
      within_cluster_queue: LowerOrNewerEqualPriority
      reclaim_within_cohort: Any
      borrow_within_cohort: LowerPriority
      max_priority_threshold: 100
      queueing_strategy: StrictFIFO
      when_can_borrow: TryNextFlavor
      when_can_preempt: Preempt
  - name: vision
    cohort: ml
    quotas: {H100-80GB: {nominal: 64}}
    kueue: {reclaim_within_cohort: LowerPriority}
""")


def schema(kind: str, version: str) -> dict:
    crd = yaml.safe_load((DATA / "crd" / f"kueue.x-k8s.io_{CRDS[kind]}.yaml").read_text())
    (v,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    return v["schema"]["openAPIV3Schema"]


#: The JSON fields of Kueue's Configuration that export writes, per version, from its Go types
#: (apis/config/{v1beta1,v1beta2}/configuration_types.go at kubernetes-sigs/kueue ff69552e79):
#: v1beta2's FairSharing has no ``enable``. The Configuration has no CRD to validate against.
CONFIG_FIELDS = {
    "v1beta1": {"fairSharing": {"enable", "preemptionStrategies"},
                "admissionFairSharing": {"usageHalfLifeTime", "usageSamplingInterval", "resourceWeights"}},
    "v1beta2": {"fairSharing": {"preemptionStrategies"},
                "admissionFairSharing": {"usageHalfLifeTime", "usageSamplingInterval", "resourceWeights"}},
}


def validate(m: dict, version: str) -> None:
    """``m`` against Kueue's CRD schema, or, for the Configuration, against its Go fields."""
    if m["kind"] != "Configuration":
        jsonschema.validate(m, schema(m["kind"], version))
        return
    assert m["apiVersion"] == f"config.kueue.x-k8s.io/{version}"
    fields = CONFIG_FIELDS[version]
    assert set(m) - {"apiVersion", "kind"} <= set(fields), m
    for k, allowed in fields.items():
        assert set(m.get(k, {})) <= allowed, (k, m[k])


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_every_exported_object_is_valid_against_kueues_crd_schema(version):
    manifests, _ = export_manifests(TenancySpec.model_validate(RICH), version)
    assert {m["kind"] for m in manifests} == set(CRDS)
    for m in manifests:
        assert m["apiVersion"] == f"kueue.x-k8s.io/{version}"
        validate(m, version)


def test_the_schema_check_would_catch_a_wrong_enum():
    """The validation is real: a value outside Kueue's enum fails it."""
    manifests, _ = export_manifests(TenancySpec.model_validate(RICH), "v1beta2")
    cq = next(m for m in manifests if m["kind"] == "ClusterQueue")
    cq["spec"]["preemption"]["withinClusterQueue"] = "Sometimes"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(cq, schema("ClusterQueue", "v1beta2"))


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_export_then_import_gives_back_the_same_tenancy(version, tmp_path):
    """Every field Kueue can hold survives: quotas and limits per flavor, cpu and memory (GB ↔
    bytes), cohorts with parents, weights and own quota, all seven queue policies, classes."""
    spec = TenancySpec.model_validate(RICH)
    manifests, notes = export_manifests(spec, version)
    f = tmp_path / "kueue.yaml"
    f.write_text(yaml.safe_dump_all(manifests))
    objects, _ = read_manifests([f])
    config, _ = to_tenancy(objects)
    back = TenancySpec.model_validate(config["tenancy"])
    assert back.build() == spec.build()
    assert [t.kueue for t in back.build().tenants] == [t.kueue for t in spec.build().tenants]


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_kueues_own_example_survives_import_and_export_valid(version, tmp_path):
    """Kueue's GPU example → our config → manifests that Kueue's schema accepts, with the same
    16 GPUs and 100 cores."""
    objects, _ = read_manifests([DATA / version / "tas-sample-gpu-queues.yaml"])
    config, _ = to_tenancy(objects, {"tas-flavor": "H100-80GB"})
    manifests, _ = export_manifests(TenancySpec.model_validate(config["tenancy"]), version,
                                    config["kueue_local_queues"])
    for m in manifests:
        validate(m, version)
    cq = next(m for m in manifests if m["kind"] == "ClusterQueue")
    res = {r["name"]: r["nominalQuota"] for r in cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]}
    assert res["nvidia.com/gpu"] == 16 and res["cpu"] == 100
    lq = next(m for m in manifests if m["kind"] == "LocalQueue")
    assert lq["metadata"] == {"name": "tas-user-queue", "namespace": "default"}


def test_the_cli_exports_a_scenario_and_says_what_kueue_cannot_hold(tmp_path):
    src = Path(__file__).parents[4] / "src" / "gpufleet" / "scenarios" / "tenancy.yaml"
    out = tmp_path / "m.yaml"
    r = runner.invoke(app, ["kueue", "export", str(src), "--out", str(out)])
    assert r.exit_code == 0, r.output
    kinds = [d["kind"] for d in yaml.safe_load_all(out.read_text())]
    assert kinds.count("ClusterQueue") == 4 and kinds.count("Cohort") == 1
    bad = runner.invoke(app, ["kueue", "export", str(src), "--api-version", "v2"])
    assert bad.exit_code == 2 and "v1beta1 or v1beta2" in bad.stderr
    empty = tmp_path / "e.yaml"
    empty.write_text("")
    r2 = runner.invoke(app, ["kueue", "export", str(empty)])
    assert r2.exit_code == 2 and "tenancy" in r2.stderr


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_admission_fair_sharing_survives_export_valid_and_import_back(version, tmp_path):
    """The AFS example → config → manifests Kueue's schema accepts (admissionScope on the
    ClusterQueue, fairSharing.weight on each LocalQueue) → the same config back."""
    objects, _ = read_manifests([DATA / "v1beta2" / "admission-fair-sharing-setup.yaml"])
    config, _ = to_tenancy(objects)
    spec = TenancySpec.model_validate(config["tenancy"])
    manifests, _ = export_manifests(spec, version, config["kueue_local_queues"])
    for m in manifests:
        validate(m, version)
    cq = next(m for m in manifests if m["kind"] == "ClusterQueue")
    assert cq["spec"]["admissionScope"] == {"admissionMode": "UsageBasedAdmissionFairSharing"}
    out = tmp_path / "m.yaml"
    out.write_text(yaml.safe_dump_all(manifests))
    back, _ = to_tenancy(read_manifests([out])[0])
    assert TenancySpec.model_validate(back["tenancy"]).build() == spec.build()


FAIR = yaml.safe_load("""
cohorts: [{name: c}]
tenants:
  - {name: a, cohort: c, quotas: {H100-80GB: {nominal: 8}}}
  - {name: b, cohort: c, quotas: {H100-80GB: {nominal: 8}}}
fair_sharing: {preemption_strategies: [LessThanInitialShare]}
""")


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_fair_sharing_is_exported_as_kueues_configuration_and_read_back(version, tmp_path):
    """Fair sharing is cluster-wide in Kueue: Configuration.fairSharing, not a ClusterQueue
    field. Exported, the strategies are written in their order (here LessThanInitialShare
    alone, which is not Kueue's default pair), v1beta1 with ``enable: true``, v1beta2 without
    (the field does not exist there); imported back, fair sharing is on with the same list."""
    spec = TenancySpec.model_validate(FAIR)
    manifests, notes = export_manifests(spec, version)
    config = manifests[-1]
    validate(config, version)
    expected = {"preemptionStrategies": ["LessThanInitialShare"]}
    if version == "v1beta1":
        expected = {"enable": True, **expected}
    assert config["kind"] == "Configuration" and config["fairSharing"] == expected
    assert any("kueue-manager-config" in n for n in notes)
    f = tmp_path / "m.yaml"
    f.write_text(yaml.safe_dump_all(manifests))
    back, _ = to_tenancy(read_manifests([f])[0])
    t = TenancySpec.model_validate(back["tenancy"]).build()
    assert t.fair_sharing and t.fair_sharing_strategies == ("LessThanInitialShare",)
    assert t == spec.build()
    plain = TenancySpec.model_validate({k: v for k, v in FAIR.items() if k != "fair_sharing"})
    assert all(m["kind"] != "Configuration" for m in export_manifests(plain, version)[0])


V1BETA2_CONFIG = """
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
fairSharing:
  preemptionStrategies: [LessThanOrEqualToFinalShare]
"""


def test_a_v1beta2_configuration_turns_fair_sharing_on_without_an_enable_field(tmp_path):
    """v1beta2's FairSharing has no ``enable``: the block itself turns fair sharing on (Kueue
    converts a v1beta1 ``enable: false`` block to no block at all). Read, fair sharing is on
    with the one strategy given; a v1beta1 block without ``enable: true`` leaves it off."""
    objects, _ = read_manifests([DATA / "v1beta2" / "kueueviz"])
    f = tmp_path / "config.yaml"
    f.write_text(V1BETA2_CONFIG)
    config, notes = to_tenancy(objects + read_manifests([f])[0])
    t = TenancySpec.model_validate(config["tenancy"]).build()
    assert t.fair_sharing and t.fair_sharing_strategies == ("LessThanOrEqualToFinalShare",)
    assert not any("fairSharing" in n for n in notes)
    f.write_text(V1BETA2_CONFIG.replace("v1beta2", "v1beta1"))
    config, _ = to_tenancy(objects + read_manifests([f])[0])
    assert not TenancySpec.model_validate(config["tenancy"]).build().fair_sharing
