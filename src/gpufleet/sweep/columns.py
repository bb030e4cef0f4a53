"""The columns a sweep cell writes: a summary's scalars, flattened, and which of them are numbers."""

from __future__ import annotations

from typing import Any

from gpufleet.model.fleet import Fleet
from gpufleet.policies.registry import profile
from gpufleet.sim.metrics import summarize
from gpufleet.sim.runner import simulate


def flat_summary(summary: dict[str, Any]) -> dict[str, float | int | bool | str | None]:
    """The summary's scalars (None where a statistic covers no jobs), plus wait percentiles by job
    size as ``wait_p50_s[9-64]``."""
    row: dict[str, float | int | bool | str | None] = {}
    for k, v in summary.items():
        if v is None or isinstance(v, bool | int | float | str):
            row[k] = v
    for label, bucket in (summary.get("wait_by_size") or {}).items():
        row[f"wait_p50_s[{label}]"] = bucket["wait_p50_s"]
        row[f"wait_p95_s[{label}]"] = bucket["wait_p95_s"]
    return row


def metric_names(fleet: Fleet) -> set[str]:
    """The numeric columns a cell's row has: those of an empty simulation on ``fleet``. A statistic
    over no jobs is None there (a wait percentile of nothing is not 0 s), and a number in a cell
    that has jobs."""
    empty = flat_summary(summarize(simulate(fleet, [], profile("gang-bestfit"))))
    return {k for k, v in empty.items()
            if v is None or (isinstance(v, int | float) and not isinstance(v, bool))}
