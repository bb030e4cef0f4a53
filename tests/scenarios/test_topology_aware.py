"""Scenarios: the same workload with topology-blind and topology-aware placement."""

from __future__ import annotations

import pytest
import yaml

from gpufleet.policies.registry import profile
from gpufleet.sim.metrics import summarize
from gpufleet.sim.runner import SimResult, simulate
from gpufleet.sim.runtime import runtime_model_for
from gpufleet.sim.scenario import Scenario, bundled, parse_scenario

SPLIT_OR_WAIT = """
name: split-or-wait
fleet:
  groups: [{nodes: 2, gpu: H100-80GB, gpus_per_node: 8, leaf_size: 2}]
workload:
  jobs:
    # Two 4-GPU jobs with 1.5 TB of memory each: one per node, 4 GPUs left free on each for an hour.
    - {id: frag, replicas: 2, gpus: 4, memory_gb: 1500, run_time: 3600}
    # Llama-2-70B, TP=8, in two 4-GPU pods: 10 hours at the ideal placement.
    - {id: llm, submit: 1, replicas: 2, gpus: 4, run_time: 36000, tp: 8, model: llama-70b}
runtime_model: topology
policies: [topology-blind, topology-aware]
"""


def run(scn: Scenario, policy: str) -> SimResult:
    return simulate(scn.fleet, scn.jobs(), profile(policy, scn.fleet.fabric), horizon=scn.horizon,
                    runtime_model=runtime_model_for(scn.spec.runtime_model, scn.fleet))


def test_the_blind_scheduler_starts_the_tp8_job_split_and_it_runs_2_34_times_as_long():
    """Llama-2-70B, TP=8, 1024 micro-batches of 1 × 4096 tokens per step on H100s at MFU 0.5:
    compute 1024 × 6 × 69e9 × 4096 / (8 × 989e12 × 0.5) = 438.9 s on either placement. TP moves
    320 all-reduces per micro-batch (4 per layer × 80 layers) of 4096 × 8192 × 2 B, a ring over
    8 sending 2 × 7/8 of that per rank: over NVLink at 370 GB/s bus bandwidth plus 14 hops × 2 µs,
    over one NDR rail (400/8 GB/s × 0.93 = 46.5 GB/s) plus 14 × 5 µs when split 4 + 4.
    Slowdown = (compute + split TP) / (compute + packed TP) = 1289.5 / 552.1 = 2.34
    (tests/unit/policies/test_steptime.py checks each term against the step-time model)."""
    r = run(parse_scenario(yaml.safe_load(SPLIT_OR_WAIT), "split-or-wait"), "topology-blind")
    assert r.starts["llm"] == 1.0
    compute = 1024 * 6 * 69e9 * 4096 / (8 * 989e12 * 0.5)
    ring_bytes = 2 * 7 / 8 * 4096 * 8192 * 2
    all_reduces = 4 * 80 * 1024
    packed = all_reduces * (ring_bytes / 370e9 + 14 * 2e-6)
    split = all_reduces * (ring_bytes / (400e9 / 8 * 0.93) + 14 * 5e-6)
    assert r.slowdowns["llm"] == pytest.approx((compute + split) / (compute + packed), rel=1e-3)
    assert r.finishes["llm"] == pytest.approx(1.0 + 36000 * r.slowdowns["llm"])


def test_the_aware_scheduler_waits_an_hour_for_a_whole_node_and_finishes_12_hours_sooner():
    scn = parse_scenario(yaml.safe_load(SPLIT_OR_WAIT), "split-or-wait")
    aware, blind = run(scn, "topology-aware"), run(scn, "topology-blind")
    assert aware.starts["llm"] == 3600.0 and aware.slowdowns["llm"] == 1.0
    assert aware.finishes["llm"] == 3600.0 + 36000
    assert blind.finishes["llm"] - aware.finishes["llm"] > 12 * 3600


SMALL_TRAINING = """
name: small-training
fleet:
  fabric: {leaf_oversubscription: 2.0}
  groups: [{nodes: 16, gpu: H100-80GB, gpus_per_node: 8, leaf_size: 4, leaves_per_spine: 2}]
workload:
  generator: {days: 1.5, offered_load: 0.8, max_gpus: 64, seed: 5, training: {fraction: 0.8}}
runtime_model: topology
"""


def test_on_a_small_training_fleet_aware_placement_slows_almost_nothing_and_finishes_jobs_sooner():
    scn = parse_scenario(yaml.safe_load(SMALL_TRAINING), "small-training")
    s = {p: summarize(run(scn, p)) for p in ("topology-blind", "gang-bestfit", "topology-aware")}
    assert s["topology-aware"]["slowdown_p95"] == pytest.approx(1.0, abs=0.02)
    assert s["topology-blind"]["slowdown_mean"] > 1.2
    jct = {p: v["jct_mean_s"] for p, v in s.items()}
    assert jct["topology-aware"] < jct["gang-bestfit"] < jct["topology-blind"]


def test_on_the_bundled_training_scenario_aware_placement_cuts_mean_jct_by_more_than_10_percent():
    scn = bundled("training")
    blind, aware = (summarize(run(scn, p)) for p in ("topology-blind", "topology-aware"))
    assert aware["jct_mean_s"] / blind["jct_mean_s"] < 0.9
    assert aware["slowdown_p95"] == pytest.approx(1.0, abs=0.02)
    assert aware["jobs_pending_at_end"] == 0
