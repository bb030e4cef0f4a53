"""slurm.conf node ``Weight`` in the fleet model and in the select/cons_tres node choice.

slurm.conf(5), NodeName ``Weight``: "All things being equal, jobs will be allocated the nodes with
the lowest weight which satisfies their requirements" (default 1); nodes of equal weight are used
in the order slurm.conf lists them.
"""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gpufleet.adapters.slurm.conf import parse_slurm_conf
from gpufleet.adapters.slurm.fleet_conf import fleet_from_conf, read_fleet
from gpufleet.adapters.slurm.settings import profile_from_conf
from gpufleet.cli.main import app
from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleInput, PendingJob
from gpufleet.model.errors import InputError
from gpufleet.model.fleet_config import load_fleet
from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.policies.slurm_like import cons_tres_choice
from gpufleet.testing.builders import fleet

#: Three idle 8-GPU nodes under one leaf (no topology.conf); gpu01 is listed first but heaviest.
CONF = """ClusterName=w
NodeName=gpu01 CPUs=64 RealMemory=512000 Gres=gpu:h100:8 Weight=100
NodeName=gpu02 CPUs=64 RealMemory=512000 Gres=gpu:h100:8 Weight=10
NodeName=gpu03 CPUs=64 RealMemory=512000 Gres=gpu:h100:8 Weight=10
PartitionName=gpu Nodes=gpu[01-03] Default=YES
"""
EQUAL = CONF.replace(" Weight=100", "").replace(" Weight=10", "")


def _job(jid: str, nodes: int, gpus: int) -> Job:
    return Job(id=JobId(jid), tenant=TenantId("t"),
               pod_sets=(PodSet("main", nodes, PodRequest(gpus=gpus)),), submit_time=0.0, run_time=60.0)


def _nodes_chosen(conf_text: str, job: Job) -> list[str]:
    """One engine cycle of the Slurm-like profile with the cons_tres node choice, conf as given."""
    conf = parse_slurm_conf(conf_text)
    fleet = fleet_from_conf(conf).fleet
    setup = profile_from_conf(conf, fleet, slurm_nodes=True)
    table = NodeTable.from_fleet(fleet)
    result = run_cycle(CycleInput(now=0.0, nodes=table, pending=[PendingJob(job)], profile=setup.profile))
    return [table.names[b.node] for b in result.bindings]


def test_import_reads_each_nodes_weight_and_gives_unweighted_nodes_slurms_default_of_one() -> None:
    fleet = fleet_from_conf(parse_slurm_conf(CONF.replace(" Weight=10\n", "\n", 1))).fleet
    assert [(n.id, n.weight) for n in fleet.nodes] == [("gpu01", 100), ("gpu02", 1), ("gpu03", 10)]


def test_a_one_node_job_goes_to_the_lighter_node_though_a_heavier_one_is_listed_first() -> None:
    """Weights 100, 10, 10: the lightest tier (10) holds gpu02 and gpu03, both can take one 8-GPU
    task; of equal weight, slurm.conf order picks gpu02. With equal weights it is gpu01."""
    assert _nodes_chosen(CONF, _job("one", 1, 8)) == ["gpu02"]
    assert _nodes_chosen(EQUAL, _job("one", 1, 8)) == ["gpu01"]


def test_a_gang_opens_the_heavier_tier_only_for_the_nodes_the_lighter_one_lacks() -> None:
    """A 3-node gang: weight ≤ 10 gives 2 nodes, too few; weight ≤ 100 gives all 3 under the one
    leaf, taken lightest first: gpu02, gpu03, then gpu01."""
    assert _nodes_chosen(CONF, _job("gang", 3, 8)) == ["gpu02", "gpu03", "gpu01"]


def test_a_busy_light_node_leaves_the_job_to_the_next_lightest() -> None:
    """gpu02 (weight 10) has 2 GPUs free, too few for 4: tier 10 still has gpu03, which gets it."""
    fleet = fleet_from_conf(parse_slurm_conf(CONF)).fleet
    table = NodeTable.from_fleet(fleet)
    table.take(1, PodRequest(gpus=6))
    weights = np.array([n.weight for n in fleet.nodes])
    chosen = cons_tres_choice(_job("four", 1, 4), table, weights)
    assert chosen is not None and [table.names[b.node] for b in chosen] == ["gpu03"]


def test_weights_survive_import_conf_then_export_conf(tmp_path: Path) -> None:
    """import-conf writes each node's weight to the fleet YAML; export-conf writes ``Weight=`` back
    (only where it is not the default 1, as Slurm needs no more), and reading that reproduces it."""
    (tmp_path / "slurm.conf").write_text(CONF)
    runner = CliRunner()
    res = runner.invoke(app, ["slurm", "import-conf", str(tmp_path / "slurm.conf"), "--out",
                              str(tmp_path / "fleet.yaml")])
    assert res.exit_code == 0, res.output
    assert [n.weight for n in load_fleet(tmp_path / "fleet.yaml").nodes] == [100, 10, 10]
    res = runner.invoke(app, ["slurm", "export-conf", str(tmp_path / "fleet.yaml"),
                              "--out", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    written = (tmp_path / "c" / "slurm.conf").read_text()
    assert "Weight=100" in written and "Weight=10" in written
    assert [n.weight for n in read_fleet(tmp_path / "c" / "slurm.conf").fleet.nodes] == [100, 10, 10]


def test_an_equal_weight_fleet_exports_no_weight_at_all() -> None:
    from gpufleet.adapters.slurm.fleet_conf import write_slurm_conf

    assert "Weight" not in write_slurm_conf(fleet_from_conf(parse_slurm_conf(EQUAL)).fleet)


@pytest.mark.parametrize("weight", ["4294967295", "-1", "heavy"])
def test_a_weight_slurm_cannot_hold_is_one_error_naming_the_node(weight: str) -> None:
    with pytest.raises(InputError, match="NodeName=gpu01: Weight"):
        parse_slurm_conf(CONF.replace("Weight=100", f"Weight={weight}"))


@settings(max_examples=80, deadline=None)
@given(weights=st.lists(st.integers(0, 3), min_size=8, max_size=8),
       busy=st.lists(st.booleans(), min_size=8, max_size=8), need=st.integers(1, 8))
def test_under_one_switch_the_job_gets_the_lightest_usable_nodes_first_listed_first(
        weights: list[int], busy: list[bool], need: int) -> None:
    """One leaf of 8 nodes: whatever the weights and busy nodes, an R-node job gets the R usable
    nodes that come first by (weight, slurm.conf order) — every lighter tier whole, then the last
    tier in order — or nothing when fewer than R are usable."""
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=8).build())
    for i, b in enumerate(busy):
        if b:
            table.take(i, PodRequest(gpus=8))
    chosen = cons_tres_choice(_job("g", need, 8), table, np.array(weights))
    usable = sorted((w, i) for i, (w, b) in enumerate(zip(weights, busy, strict=True)) if not b)
    if len(usable) < need:
        assert chosen is None
    else:
        assert chosen is not None and sorted(b.node for b in chosen) == sorted(i for _, i in usable[:need])


def test_a_gang_spans_two_leaves_to_take_every_lighter_node_first() -> None:
    """Two leaves of 4 idle nodes; nodes 0 (leaf 0) and 4 (leaf 1) weigh 1, the rest 5. A 3-node
    job: tier 1 has 2 nodes, too few, so tier 5 opens; Slurm takes *all* tier-1 nodes (0 and 4),
    then the next node of their leaves in leaf order: node 1. Without weights it would be leaf 0's
    nodes 0, 1, 2 (best fit, one leaf)."""
    table = NodeTable.from_fleet(fleet().leaves(2, nodes=4).build())
    weights = np.array([1, 5, 5, 5, 1, 5, 5, 5])
    chosen = cons_tres_choice(_job("g3", 3, 8), table, weights)
    assert chosen is not None and [b.node for b in chosen] == [0, 4, 1]
    plain = cons_tres_choice(_job("g3", 3, 8), table)
    assert plain is not None and [b.node for b in plain] == [0, 1, 2]
