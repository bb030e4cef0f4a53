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


_UNITS = ((86400.0, "d"), (3600.0, "h"), (60.0, "min"))


def durations(values: list[float | None]) -> list[str]:
    """Several durations in one unit, the one ``duration`` picks for the largest: a row or column
    reads '0.5 h, 23.5 h, 28.8 h', never '30.0 min, 23.5 h, 1.2 d'."""
    known = [abs(v) for v in values if v is not None]
    if not known:
        return [NA for _ in values]
    top = max(known)
    for size, unit in _UNITS:
        if top >= size:
            return [NA if v is None else f"{v / size:.1f} {unit}" for v in values]
    return [NA if v is None else f"{v:.0f} s" for v in values]
