"""The tenancy report says only what the run compared: the pooling section needs two of its
policies and names only those it has; a chart of nothing is not drawn."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli.main import app

runner = CliRunner()
SCENARIO = """
name: two-tenants
fleet:
  groups: [{nodes: 2, gpu: H100-80GB, gpus_per_node: 8}]
workload:
  jobs:
    - {id: a1, tenant: a, run_time: 600, replicas: 1, gpus: 8}
    - {id: a2, tenant: a, run_time: 600, replicas: 1, gpus: 8}
    - {id: b1, tenant: b, submit: 60, run_time: 600, replicas: 1, gpus: 8}
tenancy:
  cohorts: [{name: org}]
  tenants:
    - {name: a, cohort: org, quotas: {H100-80GB: {nominal: 8}}}
    - {name: b, cohort: org, quotas: {H100-80GB: {nominal: 8}}}
policies: [tenancy]
"""


def report(tmp_path: Path, *policies: str) -> str:
    scn = tmp_path / "s.yaml"
    scn.write_text(SCENARIO)
    argv = ["simulate", str(scn), "--out", str(tmp_path / "out"), "--no-progress"]
    for p in policies:
        argv += ["--policy", p]
    res = runner.invoke(app, argv)
    assert res.exit_code == 0, res.output
    return (tmp_path / "out" / "report.html").read_text()


@pytest.mark.parametrize("policies", [("tenancy",), ("tenancy", "kueue"), ("tenancy", "gang-easy"),
                                      ("tenancy-easy", "gang-easy")],
                         ids=["tenancy alone", "tenancy beside kueue",
                              "tenancy beside a policy without quotas",
                              "no pooling policy at all (was an IndexError)"])
def test_one_pooling_policy_gets_no_pooling_section(tmp_path, policies):
    assert "the pooling arithmetic" not in report(tmp_path, *policies)


def test_the_pooling_section_names_only_the_policies_it_compares(tmp_path):
    """Two of the three pooling policies: two described, free-for-all not."""
    html = report(tmp_path, "static-partitions", "tenancy")
    section = html[html.index("the pooling arithmetic"):]
    assert "The same jobs under 2 tenancy policies." in section
    assert "Static partitions" in section and "Four-layer" in section
    assert "Free-for-all" not in section
