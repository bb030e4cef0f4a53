"""Parsers for the pre-flight tools' outputs: ``dcgmi diag`` tables and nccl-tests result tables.

Formats: the box table ``dcgmi diag`` prints (DCGM 3.x one result per test, DCGM 4.x adds per-GPU
``GPUn: Result`` rows under a test), and the nccl-tests table whose last eight columns are
out-of-place (time, algbw, busbw, #wrong) then in-place (the same four), closed by
``# Avg bus bandwidth : X``. Real samples in tests/data/ops/preflight (PROVENANCE.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_DCGM_ROW = re.compile(r"^\|\s*([^|]*?)\s*\|\s*([^|]*?)\s*\|?\s*$")
_RESULT = re.compile(r"^(Pass|Fail|Warn|Skip)\b", re.I)
_GPU_RESULT = re.compile(r"^GPU(\d+):\s*(Pass|Fail|Warn|Skip)\b", re.I)


@dataclass
class DcgmDiag:
    results: dict[str, str] = field(default_factory=dict)  # test → Pass/Fail/Warn/Skip
    per_gpu: dict[str, dict[int, str]] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    ran: bool = False

    @property
    def failed(self) -> list[str]:
        bad = [t for t, r in self.results.items() if r == "Fail"]
        bad += [f"{t} GPU{g}" for t, gpus in self.per_gpu.items() for g, r in gpus.items() if r == "Fail"]
        return bad

    @property
    def warned(self) -> list[str]:
        return [t for t, r in self.results.items() if r == "Warn"]


def parse_dcgmi_diag(text: str) -> DcgmDiag:
    d = DcgmDiag(ran="Successfully ran diagnostic" in text)
    section = ""
    last = ""
    for line in text.splitlines():
        if m := re.match(r"^[|+]-+\s+(\w+)\s+-+", line):
            section = m.group(1)
            continue
        m = _DCGM_ROW.match(line)
        if not m or line.startswith("+="):
            continue
        name, value = m.group(1), m.group(2)
        if name == "Diagnostic":
            continue
        if section == "Metadata" and name:
            d.metadata[name] = value
            continue
        if name and (r := _RESULT.match(value)):
            last = name
            d.results[name] = r.group(1).capitalize()
        elif not name and (g := _GPU_RESULT.match(value)) and last:
            d.per_gpu.setdefault(last, {})[int(g.group(1))] = g.group(2).capitalize()
    return d


@dataclass
class NcclTests:
    avg_busbw: float | None
    peak_busbw: float | None
    rows: int
    wrong: int
    complete: bool  # the footer was printed: the run finished


def _num(tok: str) -> float | None:
    try:
        return float(tok)
    except ValueError:
        return None


def parse_nccl_tests(text: str) -> NcclTests:
    avg = None
    peak: float | None = None
    rows = wrong = 0
    for line in text.splitlines():
        if m := re.match(r"^#\s*Avg bus bandwidth\s*:\s*([0-9.]+)", line):
            avg = float(m.group(1))
            continue
        if line.lstrip().startswith("#"):
            continue
        toks = line.split()
        if len(toks) < 9 or not toks[0].isdigit():
            continue
        oop, inp = toks[-8:-4], toks[-4:]
        vals = [_num(t) for t in (oop[2], inp[2])]
        if any(v is None for v in vals):
            continue
        rows += 1
        peak = max([v for v in vals if v is not None] + ([peak] if peak is not None else []))
        for w in (oop[3], inp[3]):
            n = _num(w)
            if n is not None and n > 0 and w != "N/A":
                wrong += 1
    return NcclTests(avg, peak, rows, wrong, avg is not None)
