"""`gpufleet kueue import`: Kueue's published example manifests → a tenancy config.

Fixtures: tests/data/kueue (PROVENANCE.md). Expected values are read off the manifests by hand.
"""

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gpufleet.adapters.kueue.read import read_manifests
from gpufleet.adapters.kueue.to_tenancy import to_tenancy
from gpufleet.cli.main import app

DATA = Path(__file__).parents[3] / "data" / "kueue"
runner = CliRunner()


def imported(*paths: Path, gpu_models=None):
    objects, notes = read_manifests(list(paths))
    config, more = to_tenancy(objects, gpu_models)
    return config, notes + more


def test_kueueviz_v1beta2_queues_cohorts_and_classes_come_over_with_their_policies():
    """01-cluster-queues.yaml: four ClusterQueues; three in cohort ai-for-humanity-foundation.
    emergency: withinClusterQueue LowerPriority, reclaimWithinCohort Any, borrowWithinCohort
    LowerPriority, whenCanPreempt MayStopSearch (v1beta2's name for Preempt); llm: reclaim
    LowerPriority; agi: reclaim Never (the default). 01.5-cohorts.yaml: five cohorts, research
    and engineering under organization. 07: three classes, 1,000,000 / 1,000 / 1."""
    config, notes = imported(DATA / "v1beta2" / "kueueviz")
    ten = config["tenancy"]
    tenants = {t["name"]: t for t in ten["tenants"]}
    assert list(tenants) == ["emergency-cluster-queue", "agi-cluster-queue", "llm-cluster-queue",
                             "unused-cluster-queue"]
    assert tenants["emergency-cluster-queue"]["kueue"] == {
        "within_cluster_queue": "LowerPriority", "reclaim_within_cohort": "Any",
        "borrow_within_cohort": "LowerPriority", "when_can_preempt": "Preempt"}
    assert tenants["llm-cluster-queue"]["kueue"]["reclaim_within_cohort"] == "LowerPriority"
    assert "reclaim_within_cohort" not in tenants["agi-cluster-queue"]["kueue"]
    assert {t.get("cohort") for t in ten["tenants"]} == {"ai-for-humanity-foundation", None}
    parents = {c["name"]: c.get("parent") for c in ten["cohorts"]}
    assert parents == {"ai-for-humanity-foundation": None, "orphan-cohort-for-testing": None,
                       "organization": None, "research": "organization", "engineering": "organization"}
    assert [(p["name"], p["value"]) for p in ten["priority_classes"]] == [
        ("human-critical", 1_000_000), ("business-impacting", 1_000), ("long-term-research", 1)]
    assert config["kueue_local_queues"] == {"default/emergency-queue": "emergency-cluster-queue",
                                            "default/llm-model-queue": "llm-cluster-queue",
                                            "default/agi-model-queue": "agi-cluster-queue"}
    # Resource groups are kept as Kueue has them: emergency's cpu/memory group on default-flavor
    # (1 core, 1Gi = 1.073741824 GB) and its group of the resource named "gpu" (not
    # nvidia.com/gpu: a named resource) on the flavor named "gpu", each with its own flavors.
    emergency = tenants["emergency-cluster-queue"]
    assert emergency["resource_groups"] == [["cpu", "memory_gb"], ["gpu"]]
    assert emergency["resources"] == {"default-flavor": {"cpu": {"nominal": 1.0},
                                                         "memory_gb": {"nominal": 1.073741824}},
                                      "gpu": {"gpu": {"nominal": 1073741824.0}}}
    assert "quotas" not in emergency  # no nvidia.com/gpu anywhere: it admits no GPU job
    # Nothing is dropped silently: the flavors' node labels and the spot taints.
    joined = "\n".join(notes)
    assert "ResourceFlavor/gpu: not imported: spec.nodeLabels" in joined
    assert "ResourceFlavor/spot: not imported: spec.nodeTaints" in joined


def test_the_v1beta1_edition_of_the_same_example_imports_to_the_same_queues():
    """v1beta1 says ``cohort:`` where v1beta2 says ``cohortName:``; the queues must agree."""
    new, _ = imported(*(DATA / "v1beta2" / "kueueviz" / f for f in
                        ("00-resource-flavor.yaml", "01-cluster-queues.yaml", "02-local-queues.yaml",
                         "07-workload-priority-classes.yaml")))
    old, _ = imported(DATA / "v1beta1" / "kueueviz")
    assert old == new


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_the_gpu_sample_queue_imports_16_gpus_100_cores_and_100_gibibytes(version):
    """sample-gpu-queues.yaml: tas-cluster-queue has nvidia.com/gpu 16, cpu 100, memory 100Gi on
    tas-flavor. 100Gi = 100 × 2³⁰ B = 107.374 GB (10⁹). The flavor's labels name no GPU model,
    so --gpu-model tas-flavor=H100-80GB says which; the Topology object is skipped with a note."""
    config, notes = imported(DATA / version / "tas-sample-gpu-queues.yaml",
                             gpu_models={"tas-flavor": "H100-80GB"})
    (t,) = config["tenancy"]["tenants"]
    assert t["quotas"] == {"H100-80GB": {"nominal": 16}}
    assert t["resources"]["H100-80GB"]["cpu"] == {"nominal": 100.0}
    assert t["resources"]["H100-80GB"]["memory_gb"]["nominal"] == pytest.approx(107.3741824)
    assert any("Topology/default" in n and "skipped" in n for n in notes)


def test_a_kubectl_list_reads_like_the_documents_it_holds(tmp_path):
    docs = [d for d in yaml.safe_load_all((DATA / "v1beta2" / "tas-sample-gpu-queues.yaml").read_text()) if d]
    listing = tmp_path / "get.yaml"
    listing.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": docs,
                                       "metadata": {"resourceVersion": ""}}))
    a, _ = imported(listing, gpu_models={"tas-flavor": "H100-80GB"})
    b, _ = imported(DATA / "v1beta2" / "tas-sample-gpu-queues.yaml", gpu_models={"tas-flavor": "H100-80GB"})
    assert a == b


def test_an_unknown_field_is_reported_with_its_path(tmp_path):
    docs = [d for d in yaml.safe_load_all((DATA / "v1beta2" / "tas-sample-gpu-queues.yaml").read_text()) if d]
    docs[2]["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority", "someFutureKnob": True}
    f = tmp_path / "x.yaml"
    f.write_text(yaml.safe_dump_all(docs))
    config, notes = imported(f, gpu_models={"tas-flavor": "H100-80GB"})
    want = "ClusterQueue/tas-cluster-queue: not imported: spec.preemption.someFutureKnob"
    assert any(want in n for n in notes)
    assert config["tenancy"]["tenants"][0]["kueue"] == {"within_cluster_queue": "LowerPriority"}


def _broken(tmp_path, edit) -> Path:
    docs = [d for d in yaml.safe_load_all((DATA / "v1beta2" / "tas-sample-gpu-queues.yaml").read_text()) if d]
    edit(docs[2])
    f = tmp_path / "broken.yaml"
    f.write_text(yaml.safe_dump_all(docs))
    return f


def _set(path, value):
    def edit(obj):
        node = obj
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
    return edit


@pytest.mark.parametrize("edit, where, expected", [
    (_set(("spec", "preemption"), {"withinClusterQueue": "Sometimes"}),
     "ClusterQueue/tas-cluster-queue: spec.preemption.withinClusterQueue", "one of Never"),
    (_set(("spec", "resourceGroups", 0, "flavors", 0, "resources", 2, "nominalQuota"), "lots"),
     "ClusterQueue/tas-cluster-queue: spec.resourceGroups[0].flavors[0].resources[2].nominalQuota",
     "a Kubernetes quantity"),
    (_set(("spec", "resourceGroups", 0, "flavors", 0, "resources", 2, "nominalQuota"), "1.5"),
     "ClusterQueue/tas-cluster-queue: spec.resourceGroups[0].flavors[0].resources[2].nominalQuota",
     "a whole number of GPUs"),
    (_set(("spec", "resourceGroups", 0, "flavors", 0, "resources", 2, "nominalQuota"), "8Gi"),
     "ClusterQueue/tas-cluster-queue: spec.resourceGroups[0].flavors[0].resources[2].nominalQuota",
     "a binary suffix: 8589934592 GPUs"),
    (_set(("spec", "resourceGroups", 0, "flavors", 0, "resources", 2, "nominalQuota"), "1e400"),
     "ClusterQueue/tas-cluster-queue: spec.resourceGroups[0].flavors[0].resources[2].nominalQuota",
     "a finite, non-negative quantity"),
    (_set(("spec", "resourceGroups", 0, "flavors", 0, "resources", 2, "nominalQuota"), "5000000"),
     "ClusterQueue/tas-cluster-queue: spec.resourceGroups[0].flavors[0].resources[2].nominalQuota",
     "up to 1,000,000"),
    (_set(("metadata", "name"), ""), "ClusterQueue (document 3): metadata.name", "a non-empty string"),
    (_set(("apiVersion",), "kueue.x-k8s.io/v1alpha9"), "ClusterQueue/tas-cluster-queue: apiVersion",
     "v1beta1 or"),
])
def test_a_malformed_manifest_gets_one_line_naming_file_object_and_field(tmp_path, edit, where, expected):
    f = _broken(tmp_path, edit)
    r = runner.invoke(app, ["kueue", "import", str(f), "--gpu-model", "tas-flavor=H100-80GB"])
    assert r.exit_code == 2
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith(f"error: {f}: {where}") and expected in line
    assert "Traceback" not in r.output


def test_binary_empty_and_missing_inputs_get_one_line_and_exit_2(tmp_path):
    binary = tmp_path / "x.yaml"
    binary.write_bytes(b"\x00\x01\x02")
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    for args, expected in (([str(binary)], "not a binary file"),
                           ([str(empty_dir)], "no .yaml"),
                           ([str(tmp_path / "nope")], "no such file"),
                           ([str(DATA / "v1beta2" / "tas-sample-gpu-queues.yaml")],
                            "--gpu-model tas-flavor=")):
        r = runner.invoke(app, ["kueue", "import", *args])
        assert r.exit_code == 2, args
        assert expected in r.stderr and len(r.stderr.strip().splitlines()) >= 1
        assert "Traceback" not in r.output


def test_import_writes_a_config_the_simulator_loads(tmp_path):
    out = tmp_path / "tenancy.yaml"
    r = runner.invoke(app, ["kueue", "import", str(DATA / "v1beta2" / "tas-sample-gpu-queues.yaml"),
                            "--gpu-model", "tas-flavor=H100-80GB", "--out", str(out)])
    assert r.exit_code == 0, r.output
    from gpufleet.model.tenancy_config import TenancySpec
    spec = TenancySpec.model_validate(yaml.safe_load(out.read_text())["tenancy"])
    ten = spec.build()
    assert ten.tenant("tas-cluster-queue").quota("H100-80GB").nominal == 16


def test_an_empty_file_is_named_in_the_one_line_error(tmp_path):
    empty = tmp_path / "queues.yaml"
    empty.write_text("")
    res = runner.invoke(app, ["kueue", "import", str(empty)])
    assert res.exit_code == 2 and f"{empty}: " in res.output and "ClusterQueue" in res.output


def test_kueues_admission_fair_sharing_example_turns_it_on_with_its_local_queue_weights():
    """admission-fair-sharing-setup.yaml: cluster-queue (StrictFIFO, admissionScope
    UsageBasedAdmissionFairSharing, cpu 9 on a flavor without GPUs) and LocalQueues lq-a, lq-b
    in namespace default, fairSharing.weight "1" each. The cpu quota has no GPU model: a note."""
    config, notes = imported(DATA / "v1beta2" / "admission-fair-sharing-setup.yaml")
    (t,) = config["tenancy"]["tenants"]
    assert t["kueue"] == {"queueing_strategy": "StrictFIFO", "admission_fair_sharing": True}
    assert config["tenancy"]["admission_fair_sharing"] == {
        "local_queue_weights": {"default/lq-a": 1.0, "default/lq-b": 1.0}}
    assert config["kueue_local_queues"] == {"default/lq-a": "cluster-queue", "default/lq-b": "cluster-queue"}
    assert not any("admissionScope" in n or "fairSharing" in n for n in notes)


def test_kueues_configuration_sets_the_half_life_and_sampling_interval(tmp_path):
    """Kueue's Configuration admissionFairSharing {usageHalfLifeTime: 168h (the concept doc's
    example), usageSamplingInterval: 10m}: half-life 168 h, sampling 600 s; "1h30m" is 1.5 h; a
    value that is no duration is one line naming the field."""
    conf = tmp_path / "config.yaml"
    base = (DATA / "v1beta2" / "admission-fair-sharing-setup.yaml").read_text()
    for life, hours in (("168h", 168.0), ("1h30m", 1.5)):
        conf.write_text(base + "\n---\napiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n"
                        f"admissionFairSharing:\n  usageHalfLifeTime: {life}\n  usageSamplingInterval: 10m\n")
        config, _ = imported(conf)
        assert config["tenancy"].get("half_life_h", 168.0) == pytest.approx(hours)  # 168 h: the default
        assert config["tenancy"]["admission_fair_sharing"]["sampling_interval_s"] == 600.0
    conf.write_text(base + "\n---\napiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n"
                    "admissionFairSharing:\n  usageHalfLifeTime: a week\n")
    r = runner.invoke(app, ["kueue", "import", str(conf)])
    assert r.exit_code == 2
    assert "admissionFairSharing.usageHalfLifeTime" in r.output and "Traceback" not in r.output
