"""Fuzzing the YAML readers (scenario, fleet, tenancy): every input loads or is one InputError line.

Never another exception type (a traceback at the CLI), never a hang (the per-example deadline),
and whatever loads is usable: a fleet with GPUs and unique node names, jobs with finite numbers.
"""

from __future__ import annotations

import math

import yaml
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.model.errors import InputError
from gpufleet.model.fleet_config import load_fleet, parse_fleet
from gpufleet.sim.feasibility import unschedulable_jobs
from gpufleet.sim.scenario import expected_jobs, load_scenario, parse_scenario

from .strategies import FAST, mutated, nasty_values

FLEET = {"name": "f", "fabric": {"nic_gbps": 400, "leaf_oversubscription": 2.0},
         "groups": [{"nodes": 2, "gpu": "H100-80GB", "gpus_per_node": 8, "leaf_size": 2, "prefix": "a"},
                    {"nodes": 1, "gpu": "L40S", "gpus_per_node": 4, "cpus": 64, "memory_gb": 512}]}
NODES_FLEET = {"nodes": [{"id": "n1", "gpu": "H100", "gpus": 8, "cpus": 64, "memory_gb": 512, "zone": "z",
                          "spine": "s", "leaf": "l", "nvlink_domain": "n1", "health": "healthy"}]}
JOBS = [{"id": "a", "tenant": "research", "submit": 0, "run_time": 3600, "replicas": 2, "gpus": 8,
         "cpus": 32, "memory_gb": 100, "priority_class": "high", "checkpoint_interval_s": 600},
        {"id": "b", "tenant": "prod", "run_time": 60, "gpus": 0, "mig_profile": "3g.40gb"},
        {"id": "c", "tenant": "prod", "run_time": 60, "gpus": 0, "gpu_milli": 250, "share": "milli"},
        {"id": "d", "tenant": "prod", "run_time": 60, "replicas": 2, "gpus": 8, "tp": 8, "dp": 2,
         "model": "llama-7b", "topology_required": "leaf"}]
TENANCY = {"half_life_h": 24, "usage_weight": 0.5, "grace_s": 60,
           "priority_classes": [{"name": "normal", "value": 0}, {"name": "high", "value": 100}],
           "cohorts": [{"name": "org"}],
           "tenants": [{"name": "research", "cohort": "org", "weight": 2,
                        "quotas": {"H100-80GB": {"nominal": 8, "borrowing_limit": 8, "lending_limit": 4}}},
                       {"name": "prod", "cohort": "org", "quotas": {"H100-80GB": {"nominal": 8}}}]}
SCENARIO_JOBS = {"name": "s", "fleet": FLEET, "workload": {"jobs": JOBS}, "tenancy": TENANCY,
                 "policies": ["tenancy", "gang-easy"], "cycle_interval_s": 30, "runtime_model": "topology"}
SCENARIO_GEN = {"name": "g", "fleet": FLEET,
                "workload": {"generator": {"days": 0.5, "offered_load": 0.9, "max_gpus": 16, "seed": 3,
                                           "tenants": [{"name": "a", "weight": 1}],
                                           "training": {"fraction": 0.5, "min_gpus": 2,
                                                        "pod_gpus": {8: 0.5, 1: 0.5}},
                                           "checkpointing": {"intervals_s": [600, 1800], "cost_s": 5}}},
                "policies": ["gang-easy"]}


def usable(scn) -> None:
    """What loads must be usable: GPUs in the fleet, unique node names, finite job numbers."""
    fleet = scn.fleet
    assert fleet.total_gpus > 0
    ids = [n.id for n in fleet.nodes]
    assert len(ids) == len(set(ids))
    gen = scn.spec.workload.generator
    if gen is not None:
        gpn = max(n.gpus for n in fleet.nodes)
        if expected_jobs(gen.spec(gpn), fleet.total_gpus, gen.seed) > 5_000:
            return  # a large but valid workload: drawing it is real work, not a hang (bounded elsewhere)
    jobs = scn.jobs()
    assert len({j.id for j in jobs}) == len(jobs)
    for j in jobs:
        assert math.isfinite(j.submit_time) and math.isfinite(j.run_time)
    unschedulable_jobs(jobs, fleet)
    scn.warnings()


def loads_or_one_line(data, source="fuzz.yaml"):
    try:
        scn = parse_scenario(data, source)
    except InputError as e:
        assert "\n" not in str(e) and str(e).startswith(source)
        return None
    usable(scn)
    return scn


@FAST
@given(mutated(SCENARIO_JOBS))
def test_a_mutated_jobs_scenario_loads_or_is_one_line(doc):
    loads_or_one_line(doc)


@FAST
@given(mutated(SCENARIO_GEN))
def test_a_mutated_generator_scenario_loads_or_is_one_line(doc):
    loads_or_one_line(doc)


@FAST
@given(mutated({"fleet": FLEET, "workload": {"jobs": [{"id": "a", "run_time": 1}]}}, max_mutations=4))
def test_a_mutated_fleet_section_loads_or_is_one_line(doc):
    loads_or_one_line(doc)


@FAST
@given(mutated({"fleet": NODES_FLEET}, max_mutations=3))
def test_a_mutated_per_node_fleet_file_loads_or_is_one_line(doc):
    try:
        fleet = parse_fleet(doc.get("fleet") if isinstance(doc, dict) else doc, "fleet.yaml")
    except InputError as e:
        assert "\n" not in str(e)
        return
    assert fleet.total_gpus > 0


@FAST
@given(mutated({"fleet": FLEET, "workload": {"jobs": JOBS}, "tenancy": TENANCY}, max_mutations=3))
def test_a_mutated_tenancy_section_loads_or_is_one_line(doc):
    loads_or_one_line(doc)


@FAST
@given(nasty_values)
def test_any_yaml_value_as_a_whole_scenario_is_one_line(value):
    loads_or_one_line(value)


@FAST
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_arbitrary_bytes_as_a_scenario_or_fleet_file_are_one_line(tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("fz") / "in.yaml"
    path.write_bytes(raw)
    for load in (load_scenario, load_fleet):
        try:
            load(path)
        except InputError as e:
            assert "\n" not in str(e) and str(path) in str(e)


@FAST
@given(mutated(SCENARIO_JOBS))
def test_a_mutated_scenario_round_trips_through_yaml_text(tmp_path_factory, doc):
    path = tmp_path_factory.mktemp("fz") / "s.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True))
    try:
        usable(load_scenario(path))
    except InputError as e:
        assert "\n" not in str(e) and str(path) in str(e)
