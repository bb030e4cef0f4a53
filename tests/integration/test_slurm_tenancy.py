"""`gpufleet slurm import-tenancy` against a real slurmdbd: accounts, shares, a GPU cap and QOS.

Set GPUFLEET_CAPTURE_DIR to keep the sacctmgr output read here (tests/data/slurm/sacctmgr-*.txt
were captured that way).
"""

import os
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gpufleet.adapters.slurm.tenancy_import import ASSOC_FORMAT, QOS_FORMAT
from gpufleet.cli.main import app
from gpufleet.model.tenancy_config import TenancySpec

pytestmark = pytest.mark.slurm


def test_accounts_shares_caps_and_qos_become_a_tenancy(slurm, tmp_path: Path) -> None:
    for argv in (["sacctmgr", "-i", "add", "account", "lab", "parent=root", "fairshare=2"],
                 ["sacctmgr", "-i", "add", "account", "vision", "parent=lab", "fairshare=3",
                  "GrpTRES=gres/gpu=16"],
                 ["sacctmgr", "-i", "add", "account", "nlp", "parent=lab", "fairshare=1"],
                 ["sacctmgr", "-i", "add", "qos", "scavenger", "priority=1"],
                 ["sacctmgr", "-i", "add", "qos", "high", "priority=100", "preempt=scavenger"]):
        slurm.run(*argv, check=False)
    assoc = slurm.run("sacctmgr", "-P", "show", "assoc", f"format={ASSOC_FORMAT}")
    qos = slurm.run("sacctmgr", "-P", "show", "qos", f"format={QOS_FORMAT}")
    if os.environ.get("GPUFLEET_CAPTURE_DIR"):
        Path(os.environ["GPUFLEET_CAPTURE_DIR"], "sacctmgr-assoc.txt").write_text(assoc)
        Path(os.environ["GPUFLEET_CAPTURE_DIR"], "sacctmgr-qos.txt").write_text(qos)
    out = tmp_path / "tenancy.yaml"
    res = CliRunner().invoke(app, ["slurm", "import-tenancy", slurm.slurm_conf, "--out", str(out)],
                             env={"SLURM_CONF": slurm.slurm_conf})
    assert res.exit_code == 0, res.output
    spec = TenancySpec.model_validate(yaml.safe_load(out.read_text())["tenancy"])
    tenants = {t.name: t for t in spec.tenants}
    assert tenants["vision"].cohort == "lab" and tenants["vision"].weight == 3
    assert tenants["vision"].quotas["H100-80GB"].borrowing_limit == 16
    assert tenants["nlp"].quotas["H100-80GB"].borrowing_limit is None
    assert {c.name: c.parent for c in spec.cohorts}["lab"] == "root"
    classes = {p.name: (p.value, p.preemptible) for p in spec.priority_classes}
    assert classes["high"] == (100, False) and classes["scavenger"] == (1, True)
    assert "partition gpu: 8 nodes" in res.output
