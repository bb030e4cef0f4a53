"""The estimate-accuracy ledger's median: numpy's median, bit for bit, without numpy per finish."""

from __future__ import annotations

from collections import deque

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.model.job import Job
from gpufleet.sim.accuracy import AccuracyTracker, median
from gpufleet.testing.builders import job


@given(st.lists(st.floats(min_value=1e-6, max_value=1e6, allow_nan=False), min_size=1, max_size=50))
def test_median_equals_numpys_median_exactly(xs):
    assert median(deque(xs)) == float(np.median(xs))


def test_a_tenant_that_runs_four_times_its_estimates_is_planned_at_four_times():
    """Ratios 4, 4, 2 (actual ÷ estimate) → median 4; a fourth at 1 → (2 + 4) / 2 = 3."""
    tracker = AccuracyTracker()
    jobs: list[Job] = [job(f"j{i}").tenant("a").runs(r, estimate=100).build()
                       for i, r in enumerate((400, 400, 200))]
    for j in jobs:
        tracker.finished(j)
    assert tracker.medians() == {"a": 4.0}
    tracker.finished(job("j3").tenant("a").runs(100, estimate=100).build())
    assert tracker.medians() == {"a": 3.0}
