"""How long `node diagnose` takes on a large kernel log, one-pass scan vs the per-line loop.

The log: the real boot log tests/data/ops/bench/dmesg-boot.txt (leptonai/gpud's pstore fixture, see
tests/data/ops/PROVENANCE.md) repeated to ``--mb`` megabytes, with the real Xid 119 burst of
tests/data/ops/bundles/xid119-gsp-timeout/dmesg.txt inserted once in the last copy: a day of a busy
node's kernel log with one fault in it. (Each copy's kernel stamps start again near 0 s, which
ops/timeline.py reads as a new boot; a burst in an earlier copy would be history, cleared by the
boots after it — so the burst goes into the last one, as a current fault.) Both runs must give the
same verdict; the figure is the ratio of the two wall times measured in the same process (the machine
is shared: absolute times are noisy).

    python bench/diagnose_scan.py [--mb 7.5] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import gpufleet.ops.diagnose as diag
from gpufleet.ops.bundle import Source
from gpufleet.ops.rules import BOOT_MARKER, RESTART_MARKERS
from gpufleet.ops.scan import restarts, scan, scan_reference

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "ops"


def build(folder: Path, mb: float) -> int:
    boot = (DATA / "bench" / "dmesg-boot.txt").read_text().splitlines()
    burst = (DATA / "bundles" / "xid119-gsp-timeout" / "dmesg.txt").read_text().splitlines()
    target = int(mb * 1e6)
    copies = max(1, target // (sum(len(ln) + 1 for ln in boot)))
    lines: list[str] = []
    for c in range(copies):
        lines += boot
        if c == copies - 1:
            lines += burst
    (folder / "dmesg.txt").write_text("\n".join(lines) + "\n")
    return len(lines)


def restarts_reference(src: Source) -> tuple[list[int], list[int]]:
    """The per-line marker search the one-pass ``restarts`` replaced."""
    marker = RESTART_MARKERS.get(src.kind)
    if marker is None:
        return [], []
    found = [i for i, ln in enumerate(src.lines, 1) if marker.search(ln)]
    boots = [i for i, ln in enumerate(src.lines, 1) if BOOT_MARKER.search(ln)] if src.kind == "dmesg" else []
    return found, boots


def timed(folder: Path, repeat: int) -> tuple[float, diag.Diagnosis]:
    best, d = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        d = diag.diagnose(folder)
        best = min(best, time.perf_counter() - t)
    return best, d


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=7.5)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        n = build(folder, a.mb)
        size = (folder / "dmesg.txt").stat().st_size
        fast_s, fast = timed(folder, a.repeat)
        diag.scan, diag.scan_restarts = scan_reference, restarts_reference
        try:
            slow_s, slow = timed(folder, a.repeat)
        finally:
            diag.scan, diag.scan_restarts = scan, restarts
    assert fast.to_dict() == slow.to_dict(), "the two scans must give the same diagnosis"
    print(json.dumps({
        "lines": n, "mb": round(size / 1e6, 2), "verdict": [fast.layer, fast.action],
        "per_line_s": round(slow_s, 3), "one_pass_s": round(fast_s, 3), "speedup": round(slow_s / fast_s, 1),
    }))


if __name__ == "__main__":
    main()
