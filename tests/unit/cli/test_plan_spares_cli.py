"""`gpufleet plan spares`: the Poisson plan, Erlang B beside it, the simulated check, bad input."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gpufleet.cli.main import app

runner = CliRunner()


def test_1024_nodes_at_the_llama3_rate_with_a_three_day_repair_need_22_spares():
    """In service alone: λ = 1024 × 3.789e-3 × 3 = 11.64 away on average, P(N ≥ 21) = 0.85% → 21.
    The idle spares fail too: Λ = (1024 + s) r; with 21, λ = 11.878 and P(N ≥ 21) = 1.046% ≥ 1%;
    with 22, λ = 11.889 and P(N ≥ 22) = 0.548%: 22."""
    res = runner.invoke(app, ["plan", "spares", "--nodes", "1024", "--repair-days", "3", "--output", "json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["spares"] == 22
    assert out["mean_nodes_away"] == pytest.approx(11.889, abs=0.001)
    assert out["p_no_spare"] < 0.01 <= out["p_no_spare_one_fewer"]


def test_the_simulated_shortage_agrees_with_the_formula_within_five_percent():
    """256 nodes + 10 spares, default health steps (E[T] = 3.77 d): Λ E[T] = 266 × 3.789e-3 × 3.768 =
    3.798; P(N ≥ 9) = 1.59%, P(N ≥ 10) = 0.578% → 10 spares; 40 simulated years (14,401 failures)."""
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
