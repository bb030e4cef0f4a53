"""`gpufleet slurm compare` against the real emulated Slurm: a reduced workload of 48 jobs.

Threshold: two unrelated schedules put half the job pairs in the same order (0.5); the sticky-
promise conservative backfill (before its fix) reached 61 % on 200 jobs. Slurm is not
deterministic, so the threshold sits below what repeated runs of this exact test gave
(2026-12-01, this 2-core machine): with the jobs submitted held and released together, 18 runs
gave 85.9-95.3 % of pairs (tau 0.73-0.92), 10 of them beside two busy-looping processes. Before
that change (one sbatch after another) 24 runs gave 69.4-94.1 % and fell under the old 70 % once:
the first jobs started before the rest had been submitted. The test asks for 75 % and tau > 0.55.
"""

import json

import pytest
from typer.testing import CliRunner

from gpufleet.cli.main import app

pytestmark = pytest.mark.slurm


def test_compare_puts_most_job_pairs_in_slurms_order_and_writes_its_report(slurm, tmp_path) -> None:
    res = CliRunner().invoke(app, ["slurm", "compare", "--slurm-conf", slurm.slurm_conf, "--jobs", "48",
                                   "--seed", "2", "--out", str(tmp_path), "--timeout", "120"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output.strip().splitlines()[-1])
    assert summary["jobs"] == 48
    assert summary["pair_agreement"] >= 0.75, summary
    assert summary["kendall_tau_b"] > 0.55, summary
    report = (tmp_path / "report.html").read_text()
    assert "Biggest disagreements" in report and "data:image/png;base64," in report
    assert len(json.loads((tmp_path / "compare.json").read_text())["starts"]) == 48
