"""Human formatting of durations and percentages, shared by terminal and HTML output."""

from __future__ import annotations

from gpufleet.model.units import duration

__all__ = ["duration", "pct"]


def pct(x: float) -> str:
    return f"{x:.1f}%"
