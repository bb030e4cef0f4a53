"""Screenshots of every dashboard page for docs/service.md, taken by the browser tests.

    PYTHONPATH=src .venv/bin/python tools/dashboard_screenshots.py
    PYTHONPATH=src .venv/bin/python tools/dashboard_screenshots.py --slurm   # as root: the Slurm pages

Runs the browser tests that save a page's screenshot (tests/browser: a real ``gpufleet serve``
with the bundled tenancy's workload, headless Debian Chromium; tools/browser-deps.sh installs it)
into a temporary folder, then writes the ones listed in ``SHOTS`` to docs/img/ as palette PNGs
(256 colours, cropped to ``MAX_HEIGHT`` px): a dashboard is flat colours and text, so the palette
loses nothing visible and keeps each file well under 200 KB. Fails if a test fails or a file
would be over ``MAX_BYTES``. ``--slurm`` takes the pages that differ over ``serve --source slurm``
(Queues: Slurm's accounts; History: its accounting) from tests/integration/test_dashboard_slurm.py
instead, against the real emulated Slurm (root, Debian's Slurm packages), into ``SLURM_SHOTS``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "img"
#: artifact name → docs/img file (one per page; the node and studies pages with their results).
SHOTS = {"overview": "dashboard-overview.png", "queues": "dashboard-queues.png", "jobs": "dashboard-jobs.png",
         "job-blocked": "dashboard-job.png", "nodes": "dashboard-nodes.png",
         "node-diagnosis": "dashboard-node.png", "history": "dashboard-history.png",
         "studies-results": "dashboard-studies.png"}
TESTS = ["tests/browser/test_dashboard.py::test_every_page_renders_real_data_without_console_errors_or_"
         "serious_accessibility_faults",
         "tests/browser/test_node_health.py",
         "tests/browser/test_dashboard.py::test_a_study_runs_in_the_background_with_progress_and_shows_today_first"]
SLURM_SHOTS = {"slurm-queues": "dashboard-queues-slurm.png", "slurm-history": "dashboard-history-slurm.png"}
SLURM_TESTS = ["tests/integration/test_dashboard_slurm.py"]
MAX_HEIGHT = 1600
MAX_BYTES = 200_000


def main(argv: list[str]) -> int:
    slurm = argv == ["--slurm"]
    if argv and not slurm:
        print("usage: dashboard_screenshots.py [--slurm]", file=sys.stderr)
        return 2
    shots, tests = (SLURM_SHOTS, SLURM_TESTS) if slurm else (SHOTS, TESTS)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "GPUFLEET_BROWSER_ARTIFACTS": tmp}
        rc = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
                             cwd=ROOT, env=env)
        if rc != 0:
            print(f"the browser tests failed (exit {rc}); no screenshot written", file=sys.stderr)
            return rc
        OUT.mkdir(parents=True, exist_ok=True)
        for name, target in shots.items():
            src = Path(tmp) / f"{name}.png"
            img = Image.open(src).convert("RGB")
            img = img.crop((0, 0, img.width, min(img.height, MAX_HEIGHT)))
            img.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(OUT / target, optimize=True)
            size = (OUT / target).stat().st_size
            print(f"{target}: {img.width}×{img.height}, {size / 1000:.0f} kB")
            if size > MAX_BYTES:
                print(f"{target}: {size:,} bytes, over {MAX_BYTES:,}", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
