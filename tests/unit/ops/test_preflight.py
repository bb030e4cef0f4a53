"""Pre-flight: tool outputs parsed from real captures (tests/data/ops/PROVENANCE.md), the gate on a
machine with no GPU (every check skipped, never failed), and the gate-plan arithmetic."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.model.errors import InputError
from gpufleet.ops.gate_plan import catch_of, choose_gate, plan
from gpufleet.ops.preflight import CATALOG, Options, check_storage, run_preflight
from gpufleet.ops.preflight_parse import parse_dcgmi_diag, parse_nccl_tests

DATA = Path(__file__).resolve().parents[2] / "data" / "ops" / "preflight"


def test_dcgm_3x_table_reads_each_test_result():
    d = parse_dcgmi_diag((DATA / "dcgmi-diag-r3-skips.txt").read_text())
    assert d.ran and len(d.results) == 9 and set(d.results.values()) == {"Pass"}
    assert d.results["Page Retirement/Row Remap"] == "Pass" and not d.failed


def test_dcgm_4x_table_reads_metadata_and_per_gpu_rows():
    d = parse_dcgmi_diag((DATA / "dcgmi-diag-4x-per-gpu.txt").read_text())
    assert d.metadata["DCGM Version"] == "4.2.3"
    assert d.per_gpu["software"] == {0: "Pass", 1: "Pass", 2: "Pass", 3: "Pass"}
    assert d.results == {"software": "Pass", "memory": "Pass"}


def test_a_failed_dcgm_row_is_reported_with_its_gpu():
    text = (DATA / "dcgmi-diag-4x-per-gpu.txt").read_text().replace("GPU2: Pass  ", "GPU2: Fail  ")
    assert parse_dcgmi_diag(text).failed == ["software GPU2"]


def test_nccl_tests_footer_and_peak_busbw_from_the_legacy_table():
    r = parse_nccl_tests((DATA / "nccl-tests-2080ti-nvlink.txt").read_text())
    assert r.complete and r.avg_busbw == 6.6
    assert r.rows == 13 and r.peak_busbw == 21.86 and r.wrong == 0  # in-place 134217728 row


def test_nccl_tests_without_its_footer_is_an_incomplete_run():
    r = parse_nccl_tests((DATA / "nccl-tests-gb10-truncated.txt").read_text())
    assert not r.complete and r.rows == 4 and r.peak_busbw == 1.01


def test_on_a_machine_without_gpus_every_check_is_skipped_with_a_reason():
    results = run_preflight(long=True)
    assert [r.name for r in results] == list(CATALOG)
    for r in results:
        if (
            r.name in ("nic", "nvlink", "dcgm_quick", "dcgm_long", "gemm", "hbm", "nccl")
            and r.status != "skipped"
        ):
            pytest.skip("this machine has GPU tooling; the no-GPU contract is checked elsewhere")
        assert r.status == "skipped" and r.detail.startswith("skipped: ")


def test_storage_passes_on_a_writable_folder_and_fails_on_a_missing_one(tmp_path):
    assert check_storage(Options(storage=[tmp_path])).status == "pass"
    bad = check_storage(Options(storage=[tmp_path / "missing"]))
    assert bad.status == "fail" and "missing" in bad.detail


def test_gate_catch_and_start_failure_follow_the_documented_arithmetic():
    """1 − 0.98^64 = 1 − e^{64·ln 0.98} = 0.7255; the gate's checks catch
    1 − 0.8·0.9·0.95·0.7·0.9·0.85·0.75 = 0.7253 of bad nodes; residual rate 0.02·0.2747 = 0.005494;
    P' = 1 − (1 − 0.005494)^64 = 0.2974; saving (0.7255 − 0.2974)·64·8·0.5 = 109.6 GPU-h;
    cost 64·8·74/3600 = 10.52 GPU-h."""
    p = plan(0.02, 64, 8, 0.5)
    none, gate, long = p.options
    assert math.isclose(p.p_fail_no_gate, 0.7255, abs_tol=5e-4)
    assert gate.seconds == 74 and "dcgm_long" not in gate.checks
    assert math.isclose(gate.catch, 0.7253, abs_tol=5e-4)
    assert math.isclose(gate.p_fail_start, 0.2974, abs_tol=5e-4)
    assert math.isclose(gate.saving_gpu_h, 109.6, abs_tol=0.3)
    assert math.isclose(gate.cost_gpu_h, 10.52, abs_tol=0.01)
    assert long.seconds == 974 and none.net_gpu_h == 0


def test_a_long_failed_start_makes_the_long_diagnostic_worth_it():
    p = plan(0.02, 64, 8, 8.0)
    assert max(p.options, key=lambda o: o.net_gpu_h).name == "long diagnostic"
    assert p.break_even_rate_long is not None and p.break_even_rate_long < 0.02


@pytest.mark.parametrize(
    "kwargs",
    [{"bad_node_rate": 1.5}, {"nodes": 0}, {"gate_seconds": float("nan")}, {"failed_start_hours": -1}],
)
def test_bad_plan_inputs_are_one_line_errors(kwargs):
    args = {"bad_node_rate": 0.02, "nodes": 64, "gpus_per_node": 8, "failed_start_hours": 0.5} | kwargs
    with pytest.raises(InputError):
        plan(**args)


@given(st.floats(1, 2000))
def test_the_chosen_gate_fits_its_budget_and_catches_no_more_than_everything(budget):
    chosen = choose_gate(budget)
    assert sum(s.seconds for s in chosen) <= budget
    assert catch_of(chosen) <= catch_of(list(CATALOG.values())) + 1e-12


@given(st.floats(0, 0.99), st.integers(1, 512), st.floats(0, 100))
def test_a_gate_never_makes_a_start_more_likely_to_fail(rate, nodes, hours):
    p = plan(rate, nodes, 8, hours)
    assert all(o.p_fail_start <= p.p_fail_no_gate + 1e-12 for o in p.options)
    assert all(o.saving_gpu_h >= -1e-9 for o in p.options)


def test_the_gpu_benchmark_child_says_why_it_cannot_run_here():
    import importlib.util
    import json
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "gpufleet.ops.gpubench", "gemm", "--seconds", "0.1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    first = json.loads(out.splitlines()[0])
    if importlib.util.find_spec("torch") is None:
        assert first == {"skipped": "torch not installed"}
    else:
        assert "skipped" in first or first["value"] > 0


def test_the_long_diagnostic_figures_follow_the_same_arithmetic_by_hand():
    """Long diagnostic = the gate's seven checks + dcgm_long (catch 0.60, 900 s): 74 + 900 = 974 s.
    Miss = 0.2747115 (the gate's) × 0.4 = 0.1098846, catch 0.8901154; residual rate
    0.02 × 0.1098846 = 0.0021977; P' = 1 − 0.9978023^64 = 1 − e^{64·(−0.0022001)} = 0.13134;
    saving (0.72555 − 0.13134)·64·8·0.5 = 152.12 GPU-h; cost 64·8·974/3600 = 138.52 GPU-h;
    net 13.59 GPU-h — less than the gate's 109.67 − 10.52 = 99.15, so the gate is the better buy."""
    _, gate, long = plan(0.02, 64, 8, 0.5).options
    assert math.isclose(long.catch, 0.8901154, abs_tol=1e-6)
    assert math.isclose(long.p_fail_start, 0.13134, abs_tol=5e-5)
    assert math.isclose(long.saving_gpu_h, 152.12, abs_tol=0.01)
    assert math.isclose(long.cost_gpu_h, 138.52, abs_tol=0.01)
    assert math.isclose(long.net_gpu_h, 13.59, abs_tol=0.01)
    assert math.isclose(gate.net_gpu_h, 99.15, abs_tol=0.01)
