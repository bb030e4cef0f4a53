"""Human formatting of durations and percentages, shared by terminal and HTML output."""

from __future__ import annotations


def duration(seconds: float) -> str:
    s = float(seconds)
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{s / 60:.1f} min"
    if s < 86400:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} d"


def pct(x: float) -> str:
    return f"{x:.1f}%"
