import pytest

from gpufleet.model.errors import InputError
from gpufleet.sim.scenario import parse_scenario
from gpufleet.sweep.spec import apply_parameters, bundled_sweep, parse_sweep

TINY = {"name": "tiny", "fleet": {"groups": [{"nodes": 4, "gpu": "H100-80GB", "gpus_per_node": 8}]},
        "workload": {"generator": {"days": 0.1, "offered_load": 0.9, "max_gpus": 16}}}


def spec(**over):
    return {"scenarios": ["default"], "policies": ["gang-bestfit", "per-pod"], "seeds": 2, **over}


def test_the_grid_is_the_product_of_scenarios_settings_policies_and_seeds():
    """1 scenario × (2 loads × 3 scales) × 2 policies × 2 seeds = 24 cells, all distinct."""
    sw = parse_sweep(spec(parameters={"offered_load": [0.5, 0.9], "fleet_scale": [0.25, 0.5, 1]}), "<t>")
    assert len(sw.cells) == 24
    assert len({c.id for c in sw.cells}) == 24


def test_a_cell_id_depends_on_its_own_key_not_on_the_rest_of_the_grid():
    small = parse_sweep(spec(seeds=[3]), "<t>")
    big = parse_sweep(spec(seeds=[1, 2, 3], policies=["gang-bestfit", "gang-easy", "per-pod"]), "<t>")
    assert {c.id for c in small.cells} <= {c.id for c in big.cells}


def test_fleet_scale_multiplies_node_counts_and_quota_scale_multiplies_quotas():
    """default has 64 nodes: × 0.25 = 16 nodes = 128 GPUs. A quota of 64 GPUs × 1.5 = 96."""
    sw = bundled_sweep()
    data = sw.scenarios[0][1]
    scaled = apply_parameters(data, {"fleet_scale": 0.25})
    assert parse_scenario(scaled, "<t>").fleet.total_gpus == 128
    assert data["fleet"]["groups"][0]["nodes"] == 64  # the original is untouched
    ten = {**TINY, "tenancy": {"tenants": [{"name": "a", "quotas": {"H100-80GB": 64}}]}}
    assert apply_parameters(ten, {"quota_scale": 1.5})["tenancy"]["tenants"][0]["quotas"] == {"H100-80GB": 96}


def test_a_dotted_parameter_sets_that_scenario_field():
    out = apply_parameters(TINY, {"workload.generator.max_gpus": 8, "fleet.groups.0.gpus_per_node": 4})
    assert out["workload"]["generator"]["max_gpus"] == 8
    assert out["fleet"]["groups"][0]["gpus_per_node"] == 4


@pytest.mark.parametrize("bad, says", [
    (spec(policies=["nope"]), "policies"),
    (spec(seeds=0), "seeds"),
    (spec(seeds=[]), "seeds"),
    (spec(parameters={"load": [1]}), "unknown parameter 'load'"),
    (spec(parameters={"offered_load": []}), "has no values"),
    (spec(parameters={"offered_load": [float("nan")]}), "NaN"),
    (spec(parameters={"offered_load": [99]}), "offered_load"),
    (spec(parameters={"workload.nothing.here": [1]}), "has no workload.nothing"),
    (spec(metrics=["speed"]), "unknown metric 'speed'"),
    (spec(scenarios=["no-such"]), "not a bundled scenario"),
    (spec(extra=1), "unknown field"),
    (spec(seeds=10_000, parameters={"offered_load": [0.1] * 100}), "at most 1,000,000"),
    ([1, 2], "expected a mapping"),
], ids=["an unknown policy", "zero seeds", "an empty seed list", "an unknown parameter",
        "an axis with no values", "a NaN value", "a load the scenario rejects", "a dotted path to nowhere",
        "an unknown metric", "an unknown scenario", "an unknown field", "a grid too large to run",
        "a list instead of a mapping"])
def test_a_bad_spec_is_one_input_error_naming_what_is_wrong(bad, says):
    with pytest.raises(InputError) as e:
        parse_sweep(bad, "spec.yaml")
    assert says in str(e.value)
    assert str(e.value).startswith("spec.yaml")
    assert "\n" not in str(e.value)


def test_the_bundled_example_is_thirty_cells():
    """3 policies × 5 seeds × 2 loads (the other axes have one value each) = 30."""
    assert len(bundled_sweep().cells) == 30
