"""The per-node fleet form (``fleet: {nodes: [...]}``), the one `gpufleet slurm import-conf` writes."""

from pathlib import Path

import pytest

from gpufleet.model.errors import InputError
from gpufleet.model.fleet import NodeHealth
from gpufleet.model.fleet_config import load_fleet, parse_fleet

TWO_NODES = """\
fleet:
  name: emu
  fabric: {nic_gbps: 200}
  nodes:
    - {id: gpu001, gpu: h100, gpus: 8, cpus: 64, memory_gb: 500, zone: z0, spine: s0, leaf: leaf1,
       nvlink_domain: gpu001}
    - {id: gpu002, gpu: H100-80GB, gpus: 8, cpus: 64, memory_gb: 500, zone: z0, spine: s0, leaf: leaf2,
       nvlink_domain: gpu002, health: draining}
"""


def node(**over: object) -> dict[str, object]:
    base = {"id": "n1", "gpu": "H100-80GB", "gpus": 8, "cpus": 64, "memory_gb": 500, "zone": "z0",
            "spine": "s0", "leaf": "l0", "nvlink_domain": "n1"}
    return {**base, **over}


def test_every_node_keeps_the_names_and_places_the_file_gives_it(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(TWO_NODES)
    fleet = load_fleet(path)
    assert fleet.name == "emu" and fleet.fabric.nic_gbps == 200
    assert [(n.id, n.gpu, n.leaf, n.nvlink_domain) for n in fleet.nodes] == [
        ("gpu001", "H100-80GB", "leaf1", "gpu001"), ("gpu002", "H100-80GB", "leaf2", "gpu002")]
    assert fleet.total_gpus == 16


def test_health_is_optional_and_healthy_by_default(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(TWO_NODES)
    assert [n.health for n in load_fleet(path).nodes] == [NodeHealth.HEALTHY, NodeHealth.DRAINING]


def test_a_fleet_config_may_name_a_health_machine_state_and_gets_its_label() -> None:
    """One vocabulary (model/health.py): rma and preflight nodes are out of service (down), a
    suspect node takes no new work (draining), and the engine sees them unschedulable."""
    fleet = parse_fleet({"nodes": [node(id="a", health="rma"), node(id="b", health="suspect"),
                                   node(id="c", health="preflight"), node(id="d", health="degraded")]},
                        "f.yaml")
    assert [n.health for n in fleet.nodes] == [NodeHealth.DOWN, NodeHealth.DRAINING, NodeHealth.DOWN,
                                               NodeHealth.DEGRADED]
    assert [n.health.schedulable for n in fleet.nodes] == [False, False, False, True]


def test_a_node_in_the_file_is_the_node_the_compact_form_would_build() -> None:
    compact = parse_fleet({"groups": [{"nodes": 1, "gpu": "H100-80GB", "cpus": 64, "memory_gb": 500}]},
                          "c.yaml")
    n = compact.nodes[0]
    explicit = parse_fleet({"nodes": [{"id": n.id, "gpu": n.gpu, "gpus": n.gpus, "cpus": n.cpus,
                                       "memory_gb": n.memory_gb, "zone": n.zone, "spine": n.spine,
                                       "leaf": n.leaf, "nvlink_domain": n.nvlink_domain}]}, "n.yaml")
    assert explicit == compact


BAD = [
    ("a node without a leaf", {"nodes": [{k: v for k, v in node().items() if k != "leaf"}]},
     "fleet.nodes[0].leaf: missing required field"),
    ("an unknown GPU model", {"nodes": [node(gpu="H900")]}, "fleet.nodes[0].gpu: unknown GPU model 'H900'"),
    ("a negative GPU count", {"nodes": [node(gpus=-1)]}, "fleet.nodes[0].gpus: Input should be greater than"),
    ("an unknown health", {"nodes": [node(health="sick")]},
     "fleet.nodes[0].health: expected one of healthy, degraded, draining, down or a health-machine state"),
    ("an unknown field", {"nodes": [node(gpus_per_node=8)]}, "fleet.nodes[0].gpus_per_node: unknown field"),
    ("the same id twice", {"nodes": [node(), node()]}, "fleet.nodes: node id 'n1' appears twice"),
    ("an empty node list", {"nodes": []}, "fleet.nodes: List should have at least 1 item"),
    ("both forms at once", {"nodes": [node()], "groups": [{"nodes": 1, "gpu": "H100"}]},
     "fleet: expected either 'groups' (compact form) or 'nodes' (per-node form), not both"),
    ("neither form", {"name": "x"}, "fleet: missing 'groups' (compact form) or 'nodes' (per-node form)"),
]


@pytest.mark.parametrize(("case", "spec", "expected"), BAD, ids=[c[0] for c in BAD])
def test_a_bad_per_node_fleet_gets_one_line_naming_the_file_and_field(case: str, spec: dict,
                                                                      expected: str) -> None:
    with pytest.raises(InputError) as err:
        parse_fleet(spec, "fleet.yaml")
    line = str(err.value)
    assert "\n" not in line
    assert line.startswith(f"fleet.yaml: {expected}"), line
