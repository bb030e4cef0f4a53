"""Human formatting of durations and percentages, shared by terminal and HTML output.

A statistic over an empty set is None (a wait p95 over no jobs is not 0 s); it prints as "n/a".
"""

from __future__ import annotations

from gpufleet.model.units import duration as _duration

__all__ = ["NA", "duration", "durations", "pct"]

NA = "n/a"


def duration(seconds: float | None) -> str:
    """60 → '1.0 min', 5400 → '1.5 h', 172800 → '2.0 d'; None → 'n/a'."""
    return NA if seconds is None else _duration(seconds)


def pct(x: float | None) -> str:
    return NA if x is None else f"{x:.1f}%"


def durations(values: list[float | None]) -> list[str]:
    """Several durations for one row: values of an hour or more share one unit, hours unless the
    largest is 10 days or more (then days), so a row reads '4.8 h, 36.0 h', never '4.8 h, 1.5 d';
    values under an hour keep minutes or seconds (so '3.1 min' does not become '0.1 h')."""
    known = [abs(v) for v in values if v is not None]
    top = max(known, default=0.0)
    size, unit = (86400.0, "d") if top >= 10 * 86400 else (3600.0, "h")
    return [NA if v is None else (f"{v / size:.1f} {unit}" if abs(v) >= 3600 else _duration(v))
            for v in values]
