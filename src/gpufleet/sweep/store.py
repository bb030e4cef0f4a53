"""Where a sweep's results live: one JSON file per finished cell, gathered into one Parquet file.

``OUT/cells/<cell id>.json`` is written atomically (temporary name, then rename) as each cell
finishes, so a sweep that is stopped at any moment loses at most the cells still running; on the
next run those files are the resume point. ``OUT/results.parquet`` has one row per cell of the
current grid (key columns, then metrics) and is rewritten at the end; DuckDB or polars query it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any


class CellStore:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.cells_dir = out / "cells"

    def finished(self) -> dict[str, dict[str, Any]]:
        """Rows of every finished cell on disk, by cell id (a torn or foreign file is ignored)."""
        rows: dict[str, dict[str, Any]] = {}
        if not self.cells_dir.is_dir():
            return rows
        for p in sorted(self.cells_dir.glob("*.json")):
            try:
                row = json.loads(p.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(row, dict) and row.get("cell_id") == p.stem:
                rows[p.stem] = row
        return rows

    def save(self, row: dict[str, Any]) -> None:
        self.cells_dir.mkdir(parents=True, exist_ok=True)
        final = self.cells_dir / f"{row['cell_id']}.json"
        tmp = final.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(row, sort_keys=True))
        os.replace(tmp, final)


def write_parquet(rows: Iterable[dict[str, Any]], path: Path, key_columns: list[str]) -> int:
    """One row per cell, key columns first; a metric missing from a row is null. Returns the count."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = list(rows)
    cols: list[str] = list(dict.fromkeys(["cell_id", *key_columns]))
    for r in rows:
        cols += [c for c in r if c not in cols]
    table = pa.table({c: [r.get(c) for r in rows] for c in cols})
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return len(rows)
