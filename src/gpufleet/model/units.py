"""Units as people read them: durations in reasons, tables and reports."""

from __future__ import annotations


def duration(seconds: float) -> str:
    """60 → '1.0 min', 5400 → '1.5 h', 172800 → '2.0 d'."""
    s = float(seconds)
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{s / 60:.1f} min"
    if s < 86400:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} d"
