import pytest

from gpufleet.model.catalog import CATALOG, UnknownGpuModel, gpu_model
from gpufleet.model.errors import InputError
from gpufleet.model.fleet_config import load_fleet, parse_fleet
from gpufleet.testing.builders import fleet


@pytest.mark.parametrize("name", ["H100-80GB", "H200-141GB", "A100-80GB", "B200", "L40S"])
def test_the_catalog_knows_every_model_the_issue_names(name):
    assert name in CATALOG


def test_an_l40s_has_no_nvlink_and_no_mig():
    m = gpu_model("L40S")
    assert m.nvlink_gbps == 0 and not m.mig_capable


def test_aliases_resolve_case_insensitively():
    assert gpu_model("h100").name == "H100-80GB"


def test_an_unknown_model_names_the_known_ones():
    with pytest.raises(UnknownGpuModel, match="H100-80GB"):
        gpu_model("H900")


def test_an_hgx_node_is_one_eight_gpu_nvlink_domain():
    f = fleet().leaves(2, nodes=4).build()
    domains = {n.nvlink_domain for n in f.nodes}
    assert len(domains) == 8 and f.total_gpus == 64


def test_an_nvl72_rack_is_one_72_gpu_domain_across_18_nodes():
    f = fleet().nvl72(racks=2).build()
    by_domain: dict[str, int] = {}
    for n in f.nodes:
        by_domain[n.nvlink_domain] = by_domain.get(n.nvlink_domain, 0) + n.gpus
    assert sorted(by_domain.values()) == [72, 72]


def test_leaves_and_spines_follow_the_compact_form():
    f = parse_fleet({"groups": [{"nodes": 64, "gpu": "H100-80GB", "leaf_size": 16,
                                  "leaves_per_spine": 2}]}, "x.yaml")
    assert len({n.leaf for n in f.nodes}) == 4
    assert len({n.spine for n in f.nodes}) == 2


BAD_FLEETS = [
    ("an unknown GPU model", "fleet:\n  groups:\n    - {nodes: 2, gpu: H900}\n",
     "fleet.groups[0].gpu: unknown GPU model 'H900'"),
    ("a negative node count", "fleet:\n  groups:\n    - {nodes: -3, gpu: H100}\n",
     "fleet.groups[0].nodes: Input should be greater than 0"),
    ("a missing field", "fleet:\n  groups:\n    - {gpu: H100}\n",
     "fleet.groups[0].nodes: missing required field"),
    ("a YAML syntax error", "fleet:\n  groups: [ {nodes: 2\n", "YAML syntax error"),
    ("an unknown field", "fleet:\n  groups:\n    - {nodes: 2, gpu: H100, gpus: 8}\n",
     "fleet.groups[0].gpus: unknown field"),
]


@pytest.mark.parametrize(("case", "text", "expected"), BAD_FLEETS, ids=[c[0] for c in BAD_FLEETS])
def test_a_bad_fleet_file_gets_one_line_naming_file_and_field(tmp_path, case, text, expected):
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_fleet(path)
    line = str(err.value)
    assert "\n" not in line
    assert line.startswith(str(path))
    assert expected in line
