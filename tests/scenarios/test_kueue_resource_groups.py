"""The ``kueue`` profile with Kueue's resource groups: one flavor per group, groups apart.

Written from Kueue's ClusterQueue concept doc ("Resource groups": the resources of a group are
assigned together from one of its flavors; different groups independently) and its flavor
assigner (pkg/scheduler/flavorassigner: a flavor per resource group, the first that fits in the
group's order). One cycle at t = 10,000 on two H100 nodes of 8 GPUs and 224 cores each.
"""

from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from tests.unit.adapters.kueue.test_kueue_export import validate

from gpufleet.adapters.kueue.export import export_manifests
from gpufleet.adapters.kueue.read import read_manifests
from gpufleet.adapters.kueue.to_tenancy import to_tenancy
from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import AdmissionState, CycleInput, PendingJob, RunningJob
from gpufleet.model.tenancy import Tenancy
from gpufleet.model.tenancy_config import TenancySpec
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet, job

NOW = 10_000.0

#: A ClusterQueue with GPUs in one group and cpu in another, as Kueue's docs write groups.
MANIFESTS = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: h100}
spec: {nodeLabels: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: on-demand}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: spot}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: a}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources: [{name: nvidia.com/gpu, nominalQuota: 16}]
  - coveredResources: [cpu]
    flavors:
    - name: on-demand
      resources: [{name: cpu, nominalQuota: 16}]
    - name: spot
      resources: [{name: cpu, nominalQuota: 32}]
"""


def imported(tmp_path: Path, text: str = MANIFESTS) -> TenancySpec:
    f = tmp_path / "cq.yaml"
    f.write_text(text)
    config, _ = to_tenancy(read_manifests([f])[0])
    return TenancySpec.model_validate(config["tenancy"])


def w(name: str, gpus: int, cores: float, submit: float):
    return replace(job("x").tenant("a").gpus(gpus).cpus(cores).at(submit).runs(9_000).build(), id=name)


def cycle(t: Tenancy, pending, state: AdmissionState | None = None):
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=2).build())
    return run_cycle(CycleInput(NOW, table, [PendingJob(j) for j in pending], profile("kueue"),
                                tenancy=t, admission=state or AdmissionState()))


PENDING = [w("a-1", 4, 16, 0.0), w("a-2", 4, 24, 1.0), w("a-3", 4, 16, 2.0)]


def test_each_resource_group_takes_its_own_flavor(tmp_path):
    """GPUs in group 0 (h100, 16), cpu in group 1 (on-demand 16, then spot 32). a-1 (4 GPUs, 16
    cores): GPUs on h100, cores on on-demand (16 ≤ 16). a-2 (4, 24): on-demand is full (16 + 24
    > 16), spot takes them (24 ≤ 32). a-3 (4, 16): GPUs fit (12 ≤ 16) but cores fit neither
    on-demand (32 > 16) nor spot (40 > 32): refused, naming the cpu group. Merging the groups
    into one (the old import) dropped the cpu quota, on flavors without a GPU model, and admitted
    all three."""
    spec = imported(tmp_path)
    (q,) = spec.tenants
    assert q.resource_groups == [["nvidia.com/gpu"], ["cpu"]]
    r = cycle(spec.build(), PENDING)
    assert r.started == ("a-1", "a-2")
    assert r.admission.group_flavors == {"a-1": ("on-demand",), "a-2": ("spot",)}
    assert "no flavor of its resource group (on-demand, spot) has room" in r.statuses["a-3"].reasons[1]


def test_a_running_workload_is_charged_on_the_flavor_its_group_got(tmp_path):
    """Cycle 1 admits a-1 (cores on on-demand) and a-2 (on spot), and both start. Cycle 2, a-1
    done: on-demand is empty again, spot holds a-2's 24. b-1 (4 GPUs, 16 cores) fits on-demand
    (0 + 16 ≤ 16) and is admitted there. Had a-2 been counted on the group's first flavor (what
    a driver without the record falls back to), on-demand would hold 24 > 16 and b-1 would go to
    spot (0 + 16 ≤ 32): the flavor b-1 gets tells the two apart."""
    t = imported(tmp_path).build()
    r1 = cycle(t, PENDING[:2])
    a2 = next(rj for rj in _running(r1) if rj.job.id == "a-2")
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=2).build())
    for b in a2.bindings:
        table.take(b.node, b.request)
    r2 = run_cycle(CycleInput(NOW + 60, table, [PendingJob(w("b-1", 4, 16, 5.0))], profile("kueue"),
                              running=[a2], tenancy=t, admission=r1.admission))
    assert r2.started == ("b-1",)
    assert r2.admission.group_flavors["b-1"] == ("on-demand",)
    assert r2.admission.group_flavors["a-2"] == ("spot",)


def _running(r) -> list[RunningJob]:
    """The jobs a cycle started, as running jobs on their bindings."""
    by_job: dict = {}
    for b in r.bindings:
        by_job.setdefault(b.job, []).append(b)
    jobs = {j.id: j for j in PENDING}
    return [RunningJob(jobs[j], NOW, tuple(bs)) for j, bs in by_job.items()]


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_resource_groups_survive_export_and_import_and_decide_the_same(version, tmp_path):
    """Export writes the two groups as they were (GPUs on h100-80gb; cpu on on-demand then spot,
    ResourceFlavors without node labels), import reads them back: the same tenancy, the same
    decisions."""
    spec = imported(tmp_path)
    manifests, _ = export_manifests(spec, version)
    cq = next(m for m in manifests if m["kind"] == "ClusterQueue")
    groups = cq["spec"]["resourceGroups"]
    assert [(g["coveredResources"], [f["name"] for f in g["flavors"]]) for g in groups] == [
        (["nvidia.com/gpu"], ["h100-80gb"]), (["cpu"], ["on-demand", "spot"])]
    for m in manifests:
        validate(m, version)
    f = tmp_path / "back.yaml"
    f.write_text(yaml.safe_dump_all(manifests))
    config, _ = to_tenancy(read_manifests([f])[0])
    back = TenancySpec.model_validate(config["tenancy"])
    assert back.build() == spec.build()
    assert cycle(back.build(), PENDING).started == cycle(spec.build(), PENDING).started == ("a-1", "a-2")
