"""Fleet from slurm.conf + gres.conf + topology.conf (captured from the emulated cluster), and back."""

from dataclasses import replace
from pathlib import Path

import pytest

from gpufleet.adapters.slurm.conf import parse_gres, parse_gres_conf, parse_slurm_conf
from gpufleet.adapters.slurm.fleet_conf import (
    fleet_from_conf,
    gpu_from_slurm_type,
    read_fleet,
    slurm_view,
    write_fleet,
)
from gpufleet.adapters.slurm.topology_conf import parse_topology
from gpufleet.model.errors import InputError
from gpufleet.model.fleet import NodeHealth
from gpufleet.testing.builders import fleet

DATA = Path(__file__).parents[2] / "data" / "slurm"


def read_back(directory: Path):
    topo = [directory / "topology.conf"]
    if (directory / "topology-block.conf").exists():
        topo.append(directory / "topology-block.conf")
    return read_fleet(directory / "slurm.conf", directory / "gres.conf", topo).fleet


def test_the_captured_cluster_reads_as_16_h100_nodes_on_two_leaves_under_one_spine() -> None:
    got = read_fleet(DATA / "slurm.conf", DATA / "gres.conf", [DATA / "topology.conf"])
    f = got.fleet
    assert f.name == "emu"
    assert len(f) == 16 and f.total_gpus == 128
    assert {n.gpu for n in f.nodes} == {"H100-80GB"}
    assert {(n.cpus, n.memory_gb) for n in f.nodes} == {(64, 500)}
    assert [n.leaf for n in f.nodes] == ["leaf01"] * 8 + ["leaf02"] * 8
    assert {n.spine for n in f.nodes} == {"spine"} and {n.zone for n in f.nodes} == {"z0"}
    assert f.nodes[0].nvlink_domain == "gpu001"
    assert got.notes == ()
    assert [p.name for p in got.conf.partitions] == ["gpu"]
    assert len(got.conf.partitions[0].nodes) == 16


def test_reading_writing_and_reading_the_captured_files_gives_the_same_fleet(tmp_path: Path) -> None:
    first = read_fleet(DATA / "slurm.conf", DATA / "gres.conf", [DATA / "topology.conf"]).fleet
    write_fleet(first, tmp_path)
    assert read_back(tmp_path) == first


@pytest.mark.parametrize(
    "built",
    [
        fleet().leaves(2, nodes=4).build(),
        fleet().leaves(3, nodes=2, gpus=4, gpu="A100-40GB", cpus=96, memory_gb=1024)
        .leaves(1, nodes=3).build(),
        fleet().nvl72(2).build(),
        fleet().leaves(1, nodes=2).nvl72(1).build(),
    ],
    ids=[
        "two leaves of HGX nodes",
        "two node models in separate groups",
        "two NVL72 racks whose NVLink domains span 18 trays",
        "HGX nodes next to an NVL72 rack",
    ],
)
def test_a_fleet_written_to_slurm_files_reads_back_the_same(built, tmp_path: Path) -> None:
    write_fleet(built, tmp_path)
    back = read_back(tmp_path)
    assert back == replace(slurm_view(built), name="fleet")


def test_zones_spines_and_health_survive_the_round_trip(tmp_path: Path) -> None:
    base = fleet().leaves(4, nodes=2).build()
    nodes = list(base.nodes)
    nodes = [replace(n, zone="east" if i < 4 else "west", spine=f"sp{i // 2}") for i, n in enumerate(nodes)]
    nodes[0] = replace(nodes[0], health=NodeHealth.DOWN)
    nodes[1] = replace(nodes[1], health=NodeHealth.DRAINING)
    nodes[2] = replace(nodes[2], health=NodeHealth.DEGRADED)
    built = replace(base, nodes=tuple(nodes))
    write_fleet(built, tmp_path)
    assert read_back(tmp_path) == slurm_view(built)
    assert "SwitchName=east Switches=sp[0-1]" in (tmp_path / "topology.conf").read_text()


def test_the_block_form_makes_each_block_an_nvlink_domain() -> None:
    topo = parse_topology("BlockName=rack1 Nodes=gb[001-018]\nBlockName=rack2 Nodes=gb[019-036]\n"
                          "BlockSizes=18\n")
    conf = parse_slurm_conf("ClusterName=nvl\n"
                            "NodeName=gb[001-036] CPUs=144 RealMemory=884736 Gres=gpu:gb200:4\n")
    f = fleet_from_conf(conf, topo).fleet
    assert {n.nvlink_domain for n in f.nodes[:18]} == {"rack1"}
    assert f.nodes[18].nvlink_domain == "rack2"
    assert topo.block_sizes == (18,)
    assert {n.gpu for n in f.nodes} == {"GB200"}


def test_a_four_level_tree_folds_the_extra_level_into_the_zone_with_a_note() -> None:
    topo = parse_topology("SwitchName=l1 Nodes=n[1-2]\nSwitchName=pod1 Switches=l1\n"
                          "SwitchName=sp1 Switches=pod1\nSwitchName=core Switches=sp1\n")
    conf = parse_slurm_conf("NodeName=n[1-2] CPUs=8 RealMemory=1024 Gres=gpu:h100:8\n")
    got = fleet_from_conf(conf, topo)
    first = got.fleet.nodes[0]
    assert (first.leaf, first.spine, first.zone) == ("l1", "pod1", "core")
    assert got.notes == ("switch l1: levels sp1 folded into zone core",)


def test_node_defaults_continuations_and_comments_are_honoured() -> None:
    conf = parse_slurm_conf(
        "# comment\nNodeName=DEFAULT CPUs=32 RealMemory=2048 \\\n  Gres=gpu:a100:4\n"
        "NodeName=a[1-2] State=DRAIN # drained\nNodeName=b1 CPUs=16 RealMemory=4096 Gres=gpu:a100:2\n"
        "PartitionName=all Nodes=ALL Default=YES\n"
    )
    assert [(n.name, n.cpus, n.real_memory_mb, n.state) for n in conf.nodes] == [
        ("a1", 32, 2048, "DRAIN"), ("a2", 32, 2048, "DRAIN"), ("b1", 16, 4096, None)]
    assert conf.partitions[0].nodes == ("a1", "a2", "b1")
    assert fleet_from_conf(conf).fleet.nodes[0].health is NodeHealth.DRAINING


def test_an_untyped_gpu_gres_takes_its_type_from_gres_conf() -> None:
    conf = replace(parse_slurm_conf("NodeName=n1 CPUs=8 RealMemory=1024 Gres=gpu:8\n"),
                   gres_devices=parse_gres_conf("NodeName=n1 Name=gpu Type=h200 File=/dev/nvidia[0-7]\n"))
    assert fleet_from_conf(conf).fleet.nodes[0].gpu == "H200-141GB"


def test_nodes_without_gpus_are_left_out_and_noted() -> None:
    conf = parse_slurm_conf("NodeName=login CPUs=8 RealMemory=1024\nNodeName=g1 CPUs=8 RealMemory=1024 "
                            "Gres=gpu:h100:8\n")
    got = fleet_from_conf(conf)
    assert [n.id for n in got.fleet.nodes] == ["g1"]
    assert got.notes == ("node login: no GPU, left out",)


@pytest.mark.parametrize(
    ("gres_type", "model"),
    [("h100", "H100-80GB"), ("nvidia_h100_80gb_hbm3", "H100-80GB"), ("a100-40gb", "A100-40GB"),
     ("gb200", "GB200"), ("tpu", None)],
    ids=["a short type", "an AutoDetect=nvml name", "a type with its memory size", "a Grace-Blackwell type",
         "a type the catalog does not know"],
)
def test_slurm_gpu_types_resolve_to_catalog_models(gres_type: str, model: str | None) -> None:
    assert gpu_from_slurm_type(gres_type) == model


def test_gres_strings_with_types_counts_and_socket_bindings_parse() -> None:
    assert [str(g) for g in parse_gres("gpu:h100:8(S:0-1),nic:2,gpu:4")] == ["gpu:h100:8", "nic:2", "gpu:4"]


@pytest.mark.parametrize(
    ("conf", "topology", "message"),
    [
        ("NodeName=n1 CPUs=x RealMemory=1", "", "slurm.conf: line 1: NodeName=n1: CPUs: expected CPUs"),
        ("NodeName=n1 CPUs=8 RealMemory=1 Gres=gpu:tpu:8", "",
         "slurm.conf: NodeName=n1: Gres: expected one GPU type known to the catalog"),
        ("NodeName=n[1-2 CPUs=8", "", "slurm.conf: line 1: NodeName=n[1-2: unbalanced '['"),
        ("NodeName=n1 CPUs=8 RealMemory=1 Gres=gpu:h100:8", "SwitchName=s Switches=missing",
         "topology.conf: SwitchName=s: child switch missing is not defined"),
        ("NodeName=n1 CPUs=8 RealMemory=1 Gres=gpu:h100:8", "Hello=1",
         "topology.conf: line 1: expected SwitchName=, BlockName= or BlockSizes="),
    ],
    ids=["a non-numeric CPU count", "an unknown GPU type", "a broken hostlist", "an undefined child switch",
         "an unknown topology line"],
)
def test_bad_files_give_one_line_naming_file_field_and_expectation(conf: str, topology: str,
                                                                   message: str) -> None:
    with pytest.raises(InputError) as err:
        fleet_from_conf(parse_slurm_conf(conf), parse_topology(topology))
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_gres_conf_listing_fewer_device_files_than_gres_says_is_an_error() -> None:
    """slurm.conf promises 8 GPUs, gres.conf lists /dev/nvidia[0-3]: slurmd would register 4 and
    Slurm would drain the node, so the fleet cannot have 8 there."""
    conf = replace(parse_slurm_conf("NodeName=n1 CPUs=8 RealMemory=1024 Gres=gpu:h100:8\n"),
                   gres_devices=parse_gres_conf("NodeName=n1 Name=gpu Type=h100 File=/dev/nvidia[0-3]\n"))
    with pytest.raises(InputError, match=r"gres.conf: NodeName=n1: expected 8 gpu device\(s\) as "
                                         r"slurm.conf's Gres= says, got 4"):
        fleet_from_conf(conf)


def test_topology_conf_naming_a_node_slurm_conf_lacks_is_an_error() -> None:
    conf = parse_slurm_conf("NodeName=n[1-2] CPUs=8 RealMemory=1024 Gres=gpu:h100:8\n")
    with pytest.raises(InputError, match=r"topology.conf: SwitchName: expected nodes that slurm.conf "
                                         r"defines, got n\[3-4\]"):
        fleet_from_conf(conf, parse_topology("SwitchName=leaf1 Nodes=n[1-4]\n"))


@pytest.mark.parametrize("bad", ["gpu 001", "a=b", "n#1", "n,1"])
def test_export_refuses_a_node_name_slurm_would_read_differently(tmp_path: Path, bad: str) -> None:
    f = fleet().leaves(1, nodes=2).build()
    f = replace(f, nodes=(replace(f.nodes[0], id=bad), f.nodes[1]))
    with pytest.raises(InputError, match="expected a Slurm name"):
        write_fleet(f, tmp_path)
    assert not (tmp_path / "slurm.conf").exists()


def test_export_refuses_two_nodes_of_the_same_name(tmp_path: Path) -> None:
    f = fleet().leaves(1, nodes=2).build()
    f = replace(f, nodes=(f.nodes[0], replace(f.nodes[1], id=f.nodes[0].id)))
    with pytest.raises(InputError, match="conflicting NodeName= lines"):
        write_fleet(f, tmp_path)


def test_export_refuses_a_cluster_name_with_a_blank(tmp_path: Path) -> None:
    f = replace(fleet().leaves(1, nodes=2).build(), name="my cluster")
    with pytest.raises(InputError, match="fleet: name: expected a Slurm name"):
        write_fleet(f, tmp_path)
