"""`gpufleet plan spares`: the Poisson plan, Erlang B beside it, the simulated check, bad input."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gpufleet.cli.main import app

runner = CliRunner()


def test_1024_nodes_at_the_llama3_rate_with_a_three_day_repair_need_21_spares():
    """λ = 1024 × 3.789e-3 × 3 = 11.64 away on average; P(N ≥ 20) = 1.60% ≥ 1% > P(N ≥ 21) = 0.85%."""
    res = runner.invoke(app, ["plan", "spares", "--nodes", "1024", "--repair-days", "3", "--output", "json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["spares"] == 21
    assert out["mean_nodes_away"] == pytest.approx(11.64, abs=0.01)
    assert out["p_no_spare"] < 0.01 <= out["p_no_spare_one_fewer"]


def test_the_simulated_shortage_agrees_with_the_formula_within_five_percent():
    """256 nodes, default health steps (E[T] = 3.77 d): 10 spares, P = 0.446%; 5 simulated years."""
    res = runner.invoke(app, ["plan", "spares", "--simulate", "--output", "json"])
    out = json.loads(res.output)
    assert out["spares"] == 10
    assert out["simulated_p_no_spare"] == pytest.approx(out["p_no_spare"], rel=0.05)


@pytest.mark.parametrize("args", [["--rate", "nan"], ["--nodes", "0"], ["--repair-days", "1e300"],
                                  ["--risk", "inf"], ["--nodes", "many"]])
def test_bad_numbers_get_one_line_and_exit_2(args):
    res = runner.invoke(app, ["plan", "spares", *args])
    assert res.exit_code == 2
    assert "Traceback" not in res.output
