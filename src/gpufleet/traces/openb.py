"""Readers for the openb trace (Alibaba GPU cluster trace v2023): node lists and pod lists.

Rows become columnar numpy arrays inside frozen dataclasses; nothing from the csv (names of columns,
'nan' strings, '|'-joined model lists) crosses into the policies. Every malformed input raises
`OpenbFormatError` with one line naming the file, the row and field, and what was expected, so the
CLI can print it and exit 2 instead of showing a traceback.

Node csv: sn, cpu_milli, memory_mib, gpu, model (model empty for CPU-only nodes).
Pod csv:  name, cpu_milli, memory_mib, num_gpu, gpu_milli[, gpu_spec, ...]; gpu_spec is optional
(the multigpu* files lack it) and is a '|'-separated list of allowed models, empty or 'nan' for any.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

MILLI = 1000
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")

IntArray = npt.NDArray[np.int64]
#: Bounds on one cell (typos, not machines): they keep every column inside int64 and every sum finite.
MAX_CELL = 10**12
MAX_GPUS = 128


class OpenbFormatError(ValueError):
    """A node or pod file that cannot be read; the message is one line meant for the user."""


@dataclass(frozen=True, eq=False)
class NodeList:
    """Nodes as columns. `model` is '' for CPU-only nodes."""

    names: tuple[str, ...]
    cpu_milli: IntArray
    memory_mib: IntArray
    gpus: IntArray
    model: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.names)

    @property
    def total_gpu_milli(self) -> int:
        return int(self.gpus.sum()) * MILLI


@dataclass(frozen=True, eq=False)
class PodList:
    """Pods as columns. `gpu_milli` is per GPU; `gpu_spec` is the allowed-model set (empty = any)."""

    names: tuple[str, ...]
    cpu_milli: IntArray
    memory_mib: IntArray
    num_gpu: IntArray
    gpu_milli: IntArray
    gpu_spec: tuple[frozenset[str], ...]

    def __len__(self) -> int:
        return len(self.names)

    @property
    def total_gpu_milli(self) -> IntArray:
        """GPU request of each pod in milli: per-GPU milli times the GPU count."""
        return self.gpu_milli * self.num_gpu


def _rows(path: Path, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    if path.is_dir():
        raise OpenbFormatError(f"{path}: is a directory (expected an openb csv file)")
    if not path.is_file():
        raise OpenbFormatError(f"{path}: file not found (expected an openb csv file)")
    if path.stat().st_size == 0:
        raise OpenbFormatError(f"{path}: empty file (expected a csv header: {', '.join(required)})")
    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as err:
        raise OpenbFormatError(f"{path}: cannot read file ({err.strerror})") from None
    with handle:
        reader = csv.DictReader(handle)
        try:
            header = reader.fieldnames or []
        except (csv.Error, UnicodeDecodeError) as err:
            raise OpenbFormatError(f"{path}: not a readable csv file ({err})") from None
        header = [h.strip() for h in header]
        reader.fieldnames = header
        missing = [c for c in required if c not in header]
        if missing:
            raise OpenbFormatError(
                f"{path}: missing column '{missing[0]}' (expected columns {', '.join(required)})"
            )
        try:
            yield from enumerate(reader, start=2)
        except (csv.Error, UnicodeDecodeError) as err:
            raise OpenbFormatError(f"{path}: not a readable csv file ({err})") from None


def _int(path: Path, lineno: int, row: dict[str, str], field: str, *, upper: int = MAX_CELL) -> int:
    raw = (row.get(field) or "").strip()
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not np.isfinite(value) or value != int(value) or value < 0 or value > upper:
        bound = f" between 0 and {upper}"
        raise OpenbFormatError(
            f"{path}: row {lineno}, field '{field}': expected a non-negative integer{bound}, got {raw!r}"
        )
    return int(value)


def _spec(raw: str | None) -> frozenset[str]:
    text = (raw or "").strip()
    if text.lower() in ("", "nan", "none"):
        return frozenset()
    return frozenset(part.strip() for part in text.split("|") if part.strip())


def read_nodes(path: str | Path) -> NodeList:
    """Read an openb node list; every node needs an integer cpu, memory and GPU count."""
    path = Path(path)
    names: list[str] = []
    cols: dict[str, list[int]] = {"cpu_milli": [], "memory_mib": [], "gpu": []}
    models: list[str] = []
    for lineno, row in _rows(path, NODE_COLUMNS):
        name = (row.get("sn") or "").strip()
        if not name:
            raise OpenbFormatError(f"{path}: row {lineno}, field 'sn': expected a node name, got ''")
        names.append(name)
        for field, values in cols.items():
            values.append(_int(path, lineno, row, field, upper=MAX_GPUS if field == "gpu" else MAX_CELL))
        model = (row.get("model") or "").strip()
        if model.lower() == "nan":
            model = ""
        if cols["gpu"][-1] > 0 and not model:
            raise OpenbFormatError(
                f"{path}: row {lineno}, field 'model': expected a GPU model for a node with GPUs, got ''"
            )
        models.append(model)
    if not names:
        raise OpenbFormatError(f"{path}: no rows (expected at least one node)")
    if not any(cols["gpu"]):
        raise OpenbFormatError(f"{path}: no node has GPUs (column 'gpu' is 0 on all {len(names):,} rows); "
                               "expected a GPU cluster's node list")
    return NodeList(
        names=tuple(names),
        cpu_milli=np.array(cols["cpu_milli"], dtype=np.int64),
        memory_mib=np.array(cols["memory_mib"], dtype=np.int64),
        gpus=np.array(cols["gpu"], dtype=np.int64),
        model=tuple(models),
    )


def read_pods(path: str | Path) -> PodList:
    """Read an openb pod list. ``gpu_milli`` is per GPU: a pod of 2 GPUs at 500 milli asks for half
    of each of two GPUs (1,000 milli in all), which FGD places GPU by GPU (policies/fgd/gradient.py)."""
    path = Path(path)
    names: list[str] = []
    cols: dict[str, list[int]] = {"cpu_milli": [], "memory_mib": [], "num_gpu": [], "gpu_milli": []}
    specs: list[frozenset[str]] = []
    for lineno, row in _rows(path, POD_COLUMNS):
        name = (row.get("name") or "").strip()
        if not name:
            raise OpenbFormatError(f"{path}: row {lineno}, field 'name': expected a pod name, got ''")
        names.append(name)
        for field in ("cpu_milli", "memory_mib", "num_gpu"):
            upper = MAX_GPUS if field == "num_gpu" else MAX_CELL
            cols[field].append(_int(path, lineno, row, field, upper=upper))
        milli = _int(path, lineno, row, "gpu_milli", upper=MILLI)
        count = cols["num_gpu"][-1]
        if count == 0 and milli != 0:
            raise OpenbFormatError(
                f"{path}: row {lineno}, field 'gpu_milli': expected 0 for a pod with num_gpu 0, got {milli}"
            )
        if count > 0 and milli == 0:
            raise OpenbFormatError(
                f"{path}: row {lineno}, field 'gpu_milli': expected 1..1000 for a pod with GPUs, got 0"
            )
        cols["gpu_milli"].append(milli)
        specs.append(_spec(row.get("gpu_spec")))
    if not names:
        raise OpenbFormatError(f"{path}: no rows (expected at least one pod)")
    return PodList(
        names=tuple(names),
        cpu_milli=np.array(cols["cpu_milli"], dtype=np.int64),
        memory_mib=np.array(cols["memory_mib"], dtype=np.int64),
        num_gpu=np.array(cols["num_gpu"], dtype=np.int64),
        gpu_milli=np.array(cols["gpu_milli"], dtype=np.int64),
        gpu_spec=tuple(specs),
    )
