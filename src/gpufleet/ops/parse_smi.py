"""Parsers for nvidia-smi's outputs: the table, ``-q``, ``-L``, ``nvlink -s``, ``topo -m``.

Each returns plain data with the line numbers of what it read, so a finding can quote its evidence.
Formats are the ones in tests/data/ops (captured H100, H200, L40S, A100 outputs; see PROVENANCE.md):
``-q`` is an indented ``Key : Value`` tree, sections by indentation; the table is box-drawn with two
text rows per GPU.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TABLE_HDR = re.compile(r"NVIDIA-SMI (\S+)\s+Driver Version: (\S+)\s+CUDA Version: (\S+)")
_TABLE_GPU = re.compile(r"^\|\s+(\d+)\s+(.+?)\s+(On|Off)\s+\|\s+([0-9A-Fa-f:.]+)\s+(\S+)\s+\|\s+(\S+)\s+\|")
_TABLE_USE = re.compile(
    r"^\|\s*(\S+)\s+(\S+)\s+(P\d+|ERR!)\s+(\S+)\s*/\s*(\S+)\s*\|\s*(\d+)MiB\s*/\s*(\d+)MiB\s*\|"
    r"\s*(\S+)\s+(\S+)"
)


@dataclass
class SmiGpu:
    index: int
    name: str
    bus_id: str
    ecc_uncorrected: str  # "0", "N/A", or a count
    line: int
    util: str = ""
    power: str = ""
    power_cap: str = ""


@dataclass
class SmiTable:
    driver: str = ""
    cuda: str = ""
    gpus: list[SmiGpu] = field(default_factory=list)
    err_lines: list[int] = field(default_factory=list)  # "ERR!" cells


def parse_smi_table(lines: list[str]) -> SmiTable:
    t = SmiTable()
    for i, line in enumerate(lines, 1):
        if (m := _TABLE_HDR.search(line)) and not t.driver:
            t.driver, t.cuda = m.group(2), m.group(3)
        elif m := _TABLE_GPU.match(line):
            t.gpus.append(SmiGpu(int(m.group(1)), m.group(2).strip(), m.group(4), m.group(6), i))
        elif (m := _TABLE_USE.match(line)) and t.gpus:
            g = t.gpus[-1]
            g.power, g.power_cap, g.util = m.group(4), m.group(5), m.group(8)
        if "ERR!" in line:
            t.err_lines.append(i)
    return t


@dataclass
class QGpu:
    """The fields of one ``nvidia-smi -q`` GPU block the diagnosis uses: path → (value, line)."""

    bus_id: str
    line: int
    fields: dict[str, tuple[str, int]] = field(default_factory=dict)

    def get(self, path: str) -> str:
        return self.fields.get(path, ("", 0))[0]

    def line_of(self, path: str) -> int:
        return self.fields.get(path, ("", self.line))[1]


_Q_GPU = re.compile(r"^GPU ([0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)\s*$")
_Q_KV = re.compile(r"^(\s+)([^:]+?)\s*:\s*(.*)$")
_Q_SEC = re.compile(r"^(\s*)(\S[^:]*?)\s*$")
# A section name at column 0 opening an excerpt (`nvidia-smi -q | grep -A8 'Clocks Throttle'` as
# published in a blog post): a capitalised word run with no colon and no "=" banner.
_Q_TOP_SEC = re.compile(r"^[A-Z][A-Za-z0-9 ()./-]*$")


def parse_smi_q(lines: list[str]) -> tuple[dict[str, str], list[QGpu]]:
    """Header fields (Driver Version …) and one ``QGpu`` per GPU block; keys are section paths
    joined by '/', e.g. ``PCI/GPU Link Info/PCIe Generation/Current``."""
    header: dict[str, str] = {}
    gpus: list[QGpu] = []
    stack: list[tuple[int, str]] = []
    for i, line in enumerate(lines, 1):
        if m := _Q_GPU.match(line):
            gpus.append(QGpu(m.group(1), i))
            stack = []
            continue
        if not gpus and (
            (line[:1].isspace() and line.strip()) or (_Q_TOP_SEC.match(line) and not header)
        ):
            # an excerpt (`nvidia-smi -q -d ROW_REMAPPER | grep -A4 …`) without its "GPU …" header
            gpus.append(QGpu("?", i))
        if not gpus:
            if ":" in line:
                k, _, v = line.partition(":")
                header[k.strip()] = v.strip()
            continue
        kv = _Q_KV.match(line)
        sec = None if kv else _Q_SEC.match(line)
        m = kv or sec
        if not m:
            continue
        indent = len(m.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        key = m.group(2).strip()
        if kv:
            path = "/".join([s for _, s in stack] + [key])
            gpus[-1].fields[path] = (kv.group(3).strip(), i)
        # a key with a value can still head deeper lines (`HW Slowdown : Active` over its
        # `HW Thermal Slowdown` and `HW Power Brake Slowdown`): it opens a section either way
        stack.append((indent, key))
    return header, gpus


_NVL_GPU = re.compile(r"^GPU (\d+): (.*?) \(UUID: (\S+)\)")
_NVL_LINK = re.compile(r"^\s+Link (\d+): (.*)$")


@dataclass
class NvlinkGpu:
    index: int
    name: str
    line: int
    links: dict[int, tuple[str, int]] = field(default_factory=dict)  # link → (speed text, line)

    @property
    def inactive(self) -> list[int]:
        return [k for k, (v, _) in self.links.items() if "inactive" in v.lower()]


def parse_nvlink_status(lines: list[str]) -> list[NvlinkGpu]:
    out: list[NvlinkGpu] = []
    for i, line in enumerate(lines, 1):
        if m := _NVL_GPU.match(line):
            out.append(NvlinkGpu(int(m.group(1)), m.group(2), i))
        elif (m := _NVL_LINK.match(line)) and out:
            out[-1].links[int(m.group(1))] = (m.group(2).strip(), i)
    return out


_L_GPU = re.compile(r"^GPU (\d+): (.*?) \(UUID: (GPU-[0-9a-f-]+)\)")


def parse_smi_L(lines: list[str]) -> list[tuple[int, str, str, int]]:
    return [
        (int(m.group(1)), m.group(2), m.group(3), i)
        for i, line in enumerate(lines, 1)
        if (m := _L_GPU.match(line))
    ]


@dataclass
class Topo:
    """``nvidia-smi topo -m``: columns, the GPU→device link types, NIC legend if printed."""

    columns: list[str]
    matrix: dict[str, dict[str, str]]
    legend: dict[str, str]

    @property
    def gpus(self) -> list[str]:
        return [c for c in self.columns if c.startswith("GPU")]

    @property
    def nics(self) -> list[str]:
        return [c for c in self.columns if not c.startswith("GPU")]


_TOPO_KINDS = {"X", "SYS", "NODE", "PHB", "PXB", "PIX", "NV#", "SOC"}


def parse_topo(lines: list[str]) -> Topo | None:
    header = next((ln for ln in lines if re.match(r"^\s*GPU0\s", ln)), None)
    if header is None:
        return None
    cols: list[str] = []
    for c in re.split(r"\t|\s{2,}", header.strip()):
        c = c.strip()
        if not c or c in ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID") or " " in c:
            break
        cols.append(c)
    matrix: dict[str, dict[str, str]] = {}
    legend: dict[str, str] = {}
    for ln in lines:
        if m := re.match(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$", ln):
            legend[m.group(1)] = m.group(2)
            continue
        parts = ln.split()
        if not parts or parts[0] not in cols:
            continue
        cells = [p for p in parts[1:]][: len(cols)]
        if len(cells) < len(cols):
            continue
        if not all(c in _TOPO_KINDS or re.fullmatch(r"NV\d+", c) for c in cells):
            continue
        matrix[parts[0]] = dict(zip(cols, cells, strict=True))
    return Topo(cols, matrix, legend)


_MIG_ROW = re.compile(r"^\|\s+(\d+)\s+MIG (\S+)\s+(\d+)\s+(\d+)\s+(\d+):(\d+)\s+\|")


@dataclass
class MigInstance:
    gpu: int
    profile: str
    profile_id: int
    instance_id: int
    start: int
    size: int
    line: int

    @property
    def compute_slices(self) -> int:
        """The "N" of an "Ng.Mgb" profile (0 for a profile name of another shape)."""
        m = re.match(r"(\d+)g\.", self.profile)
        return int(m.group(1)) if m else 0


def parse_mig_lgi(lines: list[str]) -> list[MigInstance]:
    """``nvidia-smi mig -lgi``: one GPU instance per row (GPU, profile, IDs, memory-slice placement)."""
    return [
        MigInstance(
            int(m.group(1)), m.group(2), int(m.group(3)), int(m.group(4)), int(m.group(5)), int(m.group(6)), i
        )
        for i, ln in enumerate(lines, 1)
        if (m := _MIG_ROW.match(ln))
    ]
