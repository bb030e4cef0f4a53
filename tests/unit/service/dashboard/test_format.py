"""The dashboard's words for durations and times."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.service.dashboard.format import duration_words, plural, relative_hint, time_tag


@pytest.mark.parametrize(("seconds", "words"), [
    pytest.param(45, "45 s", id="under a minute is seconds"),
    pytest.param(61, "1 min 1 s", id="a minute and a second keeps both"),
    pytest.param(2 * 3600 + 10 * 60, "2 h 10 min", id="two hours ten minutes"),
    pytest.param(2 * 3600 + 5, "2 h", id="seconds below the second unit are dropped"),
    pytest.param(3 * 86400 + 4 * 3600 + 5 * 60, "3 d 4 h", id="days and hours, minutes dropped"),
    pytest.param(-90, "1 min 30 s", id="the sign is the hint's business, not the duration's"),
])
def test_durations_read_as_the_two_largest_units(seconds: float, words: str) -> None:
    assert duration_words(seconds) == words


@pytest.mark.parametrize("bad", [None, math.nan, math.inf, -math.inf])
def test_a_duration_that_is_not_a_number_says_unknown(bad: float | None) -> None:
    assert duration_words(bad) == "unknown"


@given(st.integers(min_value=0, max_value=10**9))
def test_the_words_never_overstate_and_lose_less_than_the_second_unit(seconds: int) -> None:
    """Read the words back as seconds: at most the true value, and short of it by less than the
    size of the unit after the second one shown (the rule drops only what is below that)."""
    sizes = {"d": 86400, "h": 3600, "min": 60, "s": 1}
    parts = duration_words(seconds).split()
    shown = sum(int(n) * sizes[u] for n, u in zip(parts[::2], parts[1::2], strict=True))
    first = sizes[parts[1]]
    smaller = sorted(v for v in sizes.values() if v < first)
    resolution = smaller[-1] if smaller else 1
    assert shown <= seconds < shown + resolution


def test_relative_hints_say_in_ago_or_now() -> None:
    assert relative_hint(1000 + 7800, 1000) == "in 2 h 10 min"
    assert relative_hint(1000 - 300, 1000) == "5 min ago"
    assert relative_hint(1010, 1000) == "now"


def test_a_time_tag_carries_the_utc_instant_for_the_browser_to_localise() -> None:
    """1,764,651,600 s after the epoch is 2025-12-02 05:00:00 UTC (20,424 days × 86,400 s
    = 1,764,633,600 s to 2025-12-02, plus 5 h = 18,000 s)."""
    tag = time_tag(1_764_651_600, now=1_764_651_600 - 3600)
    assert 'datetime="2025-12-02T05:00:00Z"' in tag
    assert "Dec 2, 05:00 UTC (in 1 h)" in tag
    assert str(time_tag(None)) == '<span class="none">—</span>'


def test_counts_take_their_plural() -> None:
    assert plural(1, "GPU") == "1 GPU"
    assert plural(12_000, "GPU") == "12,000 GPUs"
    assert plural(2, "node class", "node classes") == "2 node classes"
