"""The scenario's `tenancy:` section: validated at load, one line per mistake; and end to end."""

import json

import pytest
import yaml
from typer.testing import CliRunner

from gpufleet.cli.main import app
from gpufleet.model.errors import InputError
from gpufleet.sim.scenario import parse_scenario

BASE = """
name: small-tenancy
fleet:
  groups: [{nodes: 4, gpu: H100-80GB, gpus_per_node: 8, leaf_size: 4}]
workload:
  jobs:
    - {id: a1, tenant: a, run_time: 3600, replicas: 2, gpus: 8, checkpoint_interval_s: 600, restart_s: 60}
    - {id: b1, tenant: b, submit: 60, run_time: 3600, replicas: 2, gpus: 8, priority_class: high}
    - {id: b2, tenant: b, submit: 60, run_time: 3600, replicas: 1, gpus: 8}
tenancy:
  grace_s: 30
  priority_classes: [{name: normal, value: 0}, {name: high, value: 100, preemptible: false}]
  cohorts: [{name: org}, {name: ml, parent: org}]
  tenants:
    - {name: a, cohort: ml, quotas: {H100-80GB: {nominal: 16, borrowing_limit: 16}}}
    - {name: b, cohort: org, priority_budget_gpus: 8, quotas: {h100: {nominal: 16, lending_limit: 8}}}
policies: [tenancy, static-partitions]
"""


def mutate(path, value):
    data = yaml.safe_load(BASE)
    node = data
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return data


@pytest.mark.parametrize(("path", "value", "expected"), [
    (("tenancy", "tenants", 0, "cohort"), "nowhere", "names cohort 'nowhere', which is not declared"),
    (("tenancy", "tenants", 1, "quotas"), {"H100-80GB": {"nominal": 4, "lending_limit": 8}},
     "lending_limit (8) must not exceed nominal (4)"),
    (("tenancy", "tenants", 0, "quotas"), {"A100-80GB": {"nominal": 4}}, "which the fleet does not have"),
    (("workload", "jobs", 1, "priority_class"), "urgent", "is not one of tenancy.priority_classes"),
    (("workload", "jobs", 0, "tenant"), "z", "tenant 'z' has no queue in tenancy.tenants"),
    (("tenancy", "cohorts"), [{"name": "org"}, {"name": "ml", "parent": "org"},
                              {"name": "x", "parent": "y"}, {"name": "y", "parent": "x"}],
     "its own ancestor"),
], ids=["a tenant naming an undeclared cohort", "lending more than the nominal quota",
        "a quota for a GPU model the fleet lacks", "an unknown priority class",
        "a job of a tenant without a queue", "a cycle of parent cohorts"])
def test_a_bad_tenancy_section_is_one_line_naming_file_and_problem(path, value, expected):
    with pytest.raises(InputError) as e:
        parse_scenario(mutate(path, value), "t.yaml")
    msg = str(e.value)
    assert msg.startswith("t.yaml: ") and expected in msg and "\n" not in msg and len(msg) < 200


def test_the_tenancy_section_builds_quotas_classes_and_checkpointed_jobs():
    scn = parse_scenario(yaml.safe_load(BASE), "t.yaml")
    ten = scn.tenancy
    assert ten.tenant("b").quota("H100-80GB").lending_limit == 8
    assert ten.cohort("ml").parent == "org" and ten.grace_s == 30
    jobs = {j.id: j for j in scn.jobs()}
    assert jobs["b1"].priority == 100 and not ten.preemptible(jobs["b1"].priority)
    assert jobs["a1"].checkpointing.interval_s == 600


def test_simulate_reports_per_tenant_metrics_and_the_tenancy_sections(tmp_path):
    scn = tmp_path / "t.yaml"
    scn.write_text(BASE)
    res = CliRunner().invoke(app, ["simulate", str(scn), "--out", str(tmp_path / "o"), "--no-progress"])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    for s in summary["policies"].values():
        assert {"preemptions", "lost_gpu_hours", "tenants"} <= set(s)
        assert set(s["tenants"]["a"]) >= {"wait_p50_s", "wait_p95_s", "gpu_hours", "share_of_fleet_pct",
                                          "entitlement_pct"}
    assert summary["policies"]["tenancy"]["tenants"]["a"]["entitlement_pct"] == 50.0
    html = (tmp_path / "o" / "report.html").read_text()
    assert "Tenancy: the pooling arithmetic" in html and "Gaming a fair-share system" in html
