"""Accounts, shares, GPU caps and QOS from captured sacctmgr output, as a tenancy section."""

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gpufleet.adapters.slurm.compare_run import read_cluster
from gpufleet.adapters.slurm.tenancy_import import tenancy_from_slurm
from gpufleet.cli.main import app
from gpufleet.model.errors import InputError
from gpufleet.model.tenancy_config import TenancySpec

DATA = Path(__file__).parents[2] / "data" / "slurm"
ASSOC = (DATA / "sacctmgr-assoc.txt").read_text()
QOS = (DATA / "sacctmgr-qos.txt").read_text()


@pytest.fixture(scope="module")
def spec() -> TenancySpec:
    fleet, conf = read_cluster(DATA / "slurm.conf")
    got = tenancy_from_slurm(ASSOC, QOS, conf, fleet, cluster="gfit")
    spec = TenancySpec.model_validate(got.spec)
    assert spec.problem() is None
    return spec


def test_leaf_accounts_are_tenants_weighted_by_their_fair_share(spec: TenancySpec) -> None:
    """lab has sub-accounts (a cohort under root); vision (Share 3), nlp (1), prod and research
    (1 each) have none."""
    tenants = {t.name: (t.cohort, t.weight) for t in spec.tenants}
    assert tenants == {"nlp": ("lab", 1.0), "vision": ("lab", 3.0), "prod": ("root", 1.0),
                       "research": ("root", 1.0)}
    assert [(c.name, c.parent) for c in spec.cohorts] == [("root", None), ("lab", "root")]


def test_the_fleet_belongs_to_root_and_a_gpu_cap_is_a_borrowing_limit(spec: TenancySpec) -> None:
    """tests/data/slurm/slurm.conf: 16 nodes × 8 H100 = 128 GPUs, all in root's quota; vision's
    GrpTRES=gres/gpu=16 caps what it may borrow; the others have no cap."""
    cohorts = {c.name: c for c in spec.cohorts}
    assert cohorts["root"].quotas["H100-80GB"].nominal == 128
    tenants = {t.name: t.quotas["H100-80GB"] for t in spec.tenants}
    assert (tenants["vision"].nominal, tenants["vision"].borrowing_limit) == (0, 16)
    assert tenants["nlp"].borrowing_limit is None


def test_qos_become_priority_classes_and_the_preempted_one_is_preemptible(spec: TenancySpec) -> None:
    classes = {p.name: (p.value, p.preemptible) for p in spec.priority_classes}
    assert classes == {"normal": (0, False), "scavenger": (1, True), "high": (100, False)}


def test_the_command_writes_a_tenancy_file_and_notes_the_partition(tmp_path: Path) -> None:
    out = tmp_path / "tenancy.yaml"
    res = CliRunner().invoke(app, ["slurm", "import-tenancy", str(DATA / "slurm.conf"), "--assoc",
                                   str(DATA / "sacctmgr-assoc.txt"), "--qos", str(DATA / "sacctmgr-qos.txt"),
                                   "--cluster", "gfit", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "note: partition gpu: 16 nodes (gpu[001-016]), Default=YES, PriorityJobFactor=1" in res.output
    assert "wrote" in res.output and "4 tenants, 2 cohorts, 3 priority classes" in res.output
    assert yaml.safe_load(out.read_text())["tenancy"]["half_life_h"] == 0.5  # PriorityDecayHalfLife=00:30:00


def test_rows_of_another_cluster_name_the_clusters_found() -> None:
    fleet, conf = read_cluster(DATA / "slurm.conf")
    with pytest.raises(InputError, match="of cluster emu; the file has gfit \\(pass --cluster\\)"):
        tenancy_from_slurm(ASSOC, QOS, conf, fleet)


@pytest.mark.parametrize(("assoc", "message"), [
    ("", "empty file"),
    ("Account|User\nroot|\n", "missing column ParentName"),
    ("Cluster|Account|ParentName|User|Share|GrpTRES|QOS\nemu|a|root||0||\n", "Share ≥ 1"),
    ("Cluster|Account|ParentName|User|Share|GrpTRES|QOS\nemu|a|root||1|gres/gpu=-4|\n",
     "GrpTRES: gres/gpu: expected a whole number ≥ 0"),
])
def test_bad_sacctmgr_output_is_one_error_line(assoc: str, message: str) -> None:
    fleet, conf = read_cluster(DATA / "slurm.conf")
    with pytest.raises(InputError, match=message):
        tenancy_from_slurm(assoc, QOS, conf, fleet, cluster="emu")
