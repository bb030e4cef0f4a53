"""A reliability scenario with failures switched off still runs and reports (it once hung)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from gpufleet.cli.main import app

SCENARIOS = Path(__file__).parents[3] / "src" / "gpufleet" / "scenarios"


def test_failure_scale_zero_runs_and_the_report_says_its_studies_use_the_llama3_rates(tmp_path):
    """failure_scale 0 means no failure rate: MTTI = 1 / (N · 0) is infinite and so is Daly's
    checkpoint interval, which made the report's recovery study simulate a gang that never
    checkpoints, forever. The run has no failures (0 interruptions) and its studies fall back to
    the Llama 3 rates, saying so."""
    text = (SCENARIOS / "reliability.yaml").read_text()
    assert "failure_scale: 1.0" in text
    scn = tmp_path / "off.yaml"
    scn.write_text(text.replace("failure_scale: 1.0", "failure_scale: 0"))
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["simulate", str(scn), "--out", str(out), "-o", "json"])
    assert r.exit_code == 0, r.output
    assert "failures off (failure_scale 0)" in (out / "report.html").read_text()
