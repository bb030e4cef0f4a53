"""Run a sweep: skip the cells already finished in OUT, run the rest, write Parquet and HTML."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpufleet.sweep.executors import run_local, run_ray
from gpufleet.sweep.report import sweep_report
from gpufleet.sweep.spec import Sweep
from gpufleet.sweep.store import CellStore, write_parquet


@dataclass(frozen=True)
class SweepOutcome:
    rows: list[dict[str, Any]]  # one per cell of the grid, in the grid's order
    ran: int  # cells run now
    reused: int  # cells found finished in OUT
    parquet: Path
    html: Path


def run_sweep(sweep: Sweep, out: Path, *, ray_address: str | None = None, workers: int = 1,
              progress: Callable[[int], None] | None = None, report: bool = True) -> SweepOutcome:
    """``progress(n)`` is called with the number of cells finished so far (reused ones first)."""
    store = CellStore(out)
    finished = store.finished()
    wanted = {c.id for c in sweep.cells}
    done = {k: v for k, v in finished.items() if k in wanted}
    todo = [c for c in sweep.cells if c.id not in done]
    count = len(done)
    if progress is not None:
        progress(count)

    def on_done(row: dict[str, Any]) -> None:
        nonlocal count
        store.save(row)
        done[row["cell_id"]] = row
        count += 1
        if progress is not None:
            progress(count)

    if todo:
        if ray_address is not None:
            run_ray(todo, ray_address, on_done, workers if ray_address == "local" else None)
        else:
            run_local(todo, workers, on_done)
    rows = [done[c.id] for c in sweep.cells]
    keys = ["scenario", *sweep.parameter_names, "policy", "seed"]
    parquet = out / "results.parquet"
    write_parquet(rows, parquet, keys)
    html = out / "report.html"
    if report:
        where = f"Ray ({ray_address})" if ray_address is not None else f"{workers} local process(es)"
        html.write_text(sweep_report(sweep.spec.name, sweep.spec.description, rows,
                                     sweep.parameter_names, sweep.spec.metrics, where,
                                     reused=len(sweep.cells) - len(todo)))
    return SweepOutcome(rows, len(todo), len(sweep.cells) - len(todo), parquet, html)
