"""Every HTML report the CLI writes, opened in headless Debian Chromium (issue 29 §5): no console
error, every chart loaded and drawn with data, every table with rows. Screenshots go beside the
dashboard's (build/browser-artifacts/report-*.png) for people to look at.

The reports come from real runs of the CLI on small inputs (seconds each): the bundled deadlock
scenario, the bundled tenancy and kueue scenarios cut to half a day at 150 % load (so jobs
queue), the assembled Kubernetes snapshot of tests/data/k8s, a small hybrid run, the planners
with their defaults (serving needs the Alibaba trace, present only with shared/data: skipped
without it), and a 4-cell sweep.

"Drawn with data": the charts are PNGs (matplotlib) embedded as data: URIs, so the page can read
their pixels; a chart counts as drawn when it has more than 400 saturated pixels (the series
colours; axes, grid and text are grey). A legend sample is about 60 (five of them: 300).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from chrome import console_errors, missing_browser, start_chrome  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "src" / "gpufleet" / "scenarios"
SERVING = ROOT.parent / "shared" / "data" / "alibaba-serving-2025" / "disaggregated_DLRM_trace.csv"

SWEEP = """
name: tiny
scenarios: [tiny.yaml]
policies: [gang-bestfit, per-pod]
seeds: 2
metrics: [wait_p95_s, gpu_allocation_pct, gpu_busy_pct, jct_mean_s]
"""
TINY = """
name: tiny
fleet:
  groups: [{nodes: 4, gpu: H100-80GB, gpus_per_node: 8, leaf_size: 2}]
workload:
  generator: {days: 0.3, offered_load: 1.6, max_gpus: 16}
"""

PIXELS = """
return Array.from(document.images).map(im => {
  const c = document.createElement('canvas');
  c.width = im.naturalWidth; c.height = im.naturalHeight;
  const g = c.getContext('2d'); g.drawImage(im, 0, 0);
  const d = g.getImageData(0, 0, c.width || 1, c.height || 1).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4) {
    if (Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 60) n++;
  }
  return [im.alt || '(no alt)', im.naturalWidth, n];
});
"""
TABLES = """
return Array.from(document.querySelectorAll('table')).map(t => [
  t.querySelectorAll('tbody tr, tr').length - t.querySelectorAll('thead tr').length,
  Array.from(t.querySelectorAll('tbody tr')).filter(r => r.innerText.trim() === '').length]);
"""


def _cli(*args: str, cwd: Path) -> None:
    r = subprocess.run([sys.executable, "-c", "from gpufleet.cli.main import app; app()", *args],
                       cwd=cwd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"gpufleet {' '.join(args)}: {r.stderr[-2000:]}"


def _short(name: str, tmp: Path) -> Path:
    doc = yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text())
    doc["workload"]["generator"].update(days=0.5, offered_load=1.5)   # short, and busy enough to queue
    p = tmp / f"{name}-short.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


QUIET = "--no-progress"
K8S = str(ROOT / "tests" / "data" / "k8s" / "cluster")
REPORTS = {
    "simulate-deadlock": lambda tmp: (["simulate", "deadlock", QUIET], "report.html"),
    "simulate-tenancy": lambda tmp: (["simulate", str(_short("tenancy", tmp)), QUIET], "report.html"),
    "simulate-kueue": lambda tmp: (["simulate", str(_short("kueue", tmp)), QUIET], "report.html"),
    "k8s-analyze": lambda tmp: (["k8s", "analyze", K8S], "report.html"),
    "k8s-hybrid": lambda tmp: (["k8s", "hybrid", "--nodes", "8", "--days", "0.5", QUIET], "report.html"),
    "plan-capacity": lambda tmp: (["plan", "capacity"], "capacity.html"),
    "plan-coldstart": lambda tmp: (["plan", "coldstart", "--seeds", "2"], "coldstart.html"),
    "plan-sandboxes": lambda tmp: (["plan", "sandboxes"], "sandboxes.html"),
    "plan-serving": lambda tmp: (["plan", "serving", "--trace", str(SERVING)], "serving.html"),
    "plan-spares": lambda tmp: (["plan", "spares"], "spares.html"),
    "plan-upgrade": lambda tmp: (["plan", "upgrade"], "upgrade.html"),
    "sweep": lambda tmp: (["sweep", str(tmp / "sweep.yaml"), "--workers", "1", QUIET], "report.html"),
}


@pytest.fixture(scope="module")
def chrome():
    if missing_browser() is not None:
        pytest.skip(missing_browser())
    driver = start_chrome()
    try:
        yield driver
    finally:
        driver.quit()


@pytest.mark.parametrize("name", list(REPORTS))
def test_every_report_opens_without_console_errors_and_its_charts_have_data(name, chrome, tmp_path,
                                                                            artifacts):
    if name == "plan-serving" and not SERVING.exists():
        pytest.skip(f"{SERVING} is not here (shared/data holds the Alibaba serving trace)")
    (tmp_path / "tiny.yaml").write_text(TINY)
    (tmp_path / "sweep.yaml").write_text(SWEEP)
    args, page = REPORTS[name](tmp_path)
    out = tmp_path / "out"
    _cli(*args, "--out", str(out), cwd=tmp_path)
    html = out / page
    assert html.exists(), f"{name}: {page} not written ({sorted(p.name for p in out.iterdir())})"
    console_errors(chrome)   # empty the log of the previous page
    chrome.get(html.as_uri())
    errors = console_errors(chrome)
    assert not errors, f"{name}: {errors}"
    for alt, width, coloured in chrome.execute_script(PIXELS):
        assert width > 0, f"{name}: chart {alt!r} did not load"
        assert coloured > 400, f"{name}: chart {alt!r} has no data drawn ({coloured} coloured pixels)"
    for rows, empty in chrome.execute_script(TABLES):
        assert rows >= 1 and empty == 0, f"{name}: a table with {rows} row(s), {empty} of them empty"
    chrome.set_window_size(1400, max(1000, min(12000, chrome.execute_script(
        "return document.body.scrollHeight"))))
    chrome.save_screenshot(str(artifacts / f"report-{name}.png"))
