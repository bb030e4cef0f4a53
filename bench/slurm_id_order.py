"""Ties by Slurm job id as a number vs as text, replaying a captured sacct trace offline.

    .venv/bin/python bench/slurm_id_order.py [--sacct tests/data/slurm/sacct.txt] \
        [--conf tests/data/slurm/slurm.conf]

Runs ``gpufleet simulate --policy slurm`` on the trace ``gpufleet slurm import-sacct`` makes of the
sacct file, once with ``slurm_id_key`` (``5`` < ``10``) and once with the job id compared as text
(``10`` < ``5``, the old order), and prints the "What Slurm did" rows (Kendall tau and pair
agreement with Slurm's own start order) of both. No Slurm needed.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from typer.testing import CliRunner

import gpufleet.policies.slurm_like as slurm_like
from gpufleet.cli.main import app

DATA = Path(__file__).parents[1] / "tests" / "data" / "slurm"


def _text_key(job: slurm_like.Job) -> tuple[int, int, int, str]:
    return (0, 0, 0, dict(job.labels).get("slurm.job_id", str(job.id)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sacct", type=Path, default=DATA / "sacct.txt")
    ap.add_argument("--conf", type=Path, default=DATA / "slurm.conf")
    args = ap.parse_args()
    runner = CliRunner()
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        for cmd in (["slurm", "import-conf", str(args.conf), "--out", str(t / "fleet.yaml")],
                    ["slurm", "import-sacct", str(args.sacct), "--out", str(t / "trace.jsonl")]):
            res = runner.invoke(app, cmd)
            assert res.exit_code == 0, res.output
        numeric = slurm_like.slurm_id_key
        for label, key in (("numeric ids (slurm_id_key)", numeric), ("ids as text (old)", _text_key)):
            slurm_like.slurm_id_key = key
            res = runner.invoke(app, ["simulate", "--fleet", str(t / "fleet.yaml"), "--trace",
                                      str(t / "trace.jsonl"), "--policy", "slurm", "--slurm-conf",
                                      str(args.conf), "--out", str(t / label.split()[0])],
                                terminal_width=160)
            slurm_like.slurm_id_key = numeric
            assert res.exit_code == 0, res.output
            rows = [ln for ln in res.output.splitlines() if "Slurm" in ln or "slurm" in ln]
            print(f"== {label}")
            print("\n".join(rows))


if __name__ == "__main__":
    main()
