"""What the pages print: durations in words, times as ``<time>`` tags, counts with their noun.

The server renders every time as ``<time datetime="…Z">`` with UTC text; ``static/dashboard.js``
rewrites it in the reader's own time zone with a relative hint ("in 2 h 10 min"), so a page is
right without JavaScript and local with it. ``duration_words`` and the script's
``durationWords`` are one rule (the largest non-zero unit, then the next one when it is not
zero) and a test holds them together.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

from markupsafe import Markup, escape

__all__ = ["duration_words", "plural", "relative_hint", "time_tag"]

_UNITS = (("d", 86400), ("h", 3600), ("min", 60), ("s", 1))


def duration_words(seconds: float | None) -> str:
    """7800 → '2 h 10 min', 45 → '45 s', 273900 → '3 d 4 h', 86700 → '1 d' (the 5 min are below
    the second unit); None, NaN or infinite → 'unknown' (never a number that is not one)."""
    if seconds is None or not math.isfinite(seconds):
        return "unknown"
    s = round(abs(seconds))
    for (unit, size), (next_unit, next_size) in zip(_UNITS, _UNITS[1:], strict=False):
        n = s // size
        if n > 0:
            rest = (s - n * size) // next_size
            return f"{n} {unit}" + (f" {rest} {next_unit}" if rest else "")
    return f"{s} s"


def relative_hint(when: float, now: float) -> str:
    """'in 2 h 10 min', '5 min ago', or 'now' within half a minute."""
    delta = when - now
    if abs(delta) < 30:
        return "now"
    return f"in {duration_words(delta)}" if delta > 0 else f"{duration_words(delta)} ago"


def time_tag(epoch: float | None, now: float | None = None, *, hint: bool = True) -> Markup:
    """A ``<time>`` element for an epoch-seconds instant; '—' when there is none."""
    if epoch is None or not math.isfinite(epoch):
        return Markup('<span class="none">—</span>')
    moment = datetime.fromtimestamp(epoch, tz=UTC)
    iso = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    text = moment.strftime("%b %-d, %H:%M UTC")
    if hint and now is not None:
        text += f" ({relative_hint(epoch, now)})"
    no_hint = "" if hint else " data-no-hint"
    return Markup(f'<time datetime="{iso}"{no_hint}>{escape(text)}</time>')


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """plural(1, 'GPU') → '1 GPU', plural(3, 'GPU') → '3 GPUs'."""
    return f"{n:,} {noun if n == 1 else (nouns or noun + 's')}"
