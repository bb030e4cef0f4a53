"""Human formatting of durations and percentages, shared by terminal and HTML output.

A statistic over an empty set is None (a wait p95 over no jobs is not 0 s); it prints as "n/a".
"""

from __future__ import annotations

from gpufleet.model.units import duration as _duration

__all__ = ["NA", "duration", "pct"]

NA = "n/a"


def duration(seconds: float | None) -> str:
    """60 → '1.0 min', 5400 → '1.5 h', 172800 → '2.0 d'; None → 'n/a'."""
    return NA if seconds is None else _duration(seconds)


def pct(x: float | None) -> str:
    return NA if x is None else f"{x:.1f}%"
