"""The fleet we read from a running Slurm's files agrees with what Slurm itself reports."""

from pathlib import Path

import pytest

from gpufleet.adapters.slurm.fleet_conf import read_fleet, write_fleet
from gpufleet.adapters.slurm.hostlist import expand
from gpufleet.adapters.slurm.reader import parse_scontrol_kv, parse_scontrol_nodes

pytestmark = pytest.mark.slurm


def test_the_fleet_read_from_the_live_configs_matches_scontrol(slurm) -> None:
    fleet = read_fleet(slurm.etc / "slurm.conf", slurm.etc / "gres.conf", [slurm.etc / "topology.conf"]).fleet
    nodes = {n.name: n for n in parse_scontrol_nodes(slurm.run("scontrol", "show", "node", "-o"))}
    assert sorted(nodes) == sorted(n.id for n in fleet.nodes)
    assert all(nodes[n.id].gpus == n.gpus == 8 for n in fleet.nodes)


def test_our_leaves_are_the_switches_slurm_reports(slurm) -> None:
    fleet = read_fleet(slurm.etc / "slurm.conf", slurm.etc / "gres.conf", [slurm.etc / "topology.conf"]).fleet
    leaves: dict[str, set[str]] = {}
    for line in slurm.run("scontrol", "show", "topology").splitlines():
        kv = parse_scontrol_kv(line)
        if kv.get("Level") == "0":
            leaves[kv["SwitchName"]] = set(expand(kv["Nodes"]))
    ours: dict[str, set[str]] = {}
    for n in fleet.nodes:
        ours.setdefault(n.leaf, set()).add(n.id)
    assert ours == leaves


def test_configs_we_write_for_the_live_fleet_read_back_identically(slurm, tmp_path: Path) -> None:
    fleet = read_fleet(slurm.etc / "slurm.conf", slurm.etc / "gres.conf", [slurm.etc / "topology.conf"]).fleet
    write_fleet(fleet, tmp_path)
    again = read_fleet(tmp_path / "slurm.conf", tmp_path / "gres.conf", [tmp_path / "topology.conf"]).fleet
    assert again == fleet
