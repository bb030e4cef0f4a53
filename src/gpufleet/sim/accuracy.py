"""Per-tenant run-time accuracy: how long a tenant's jobs really ran against what it estimated.

The driver keeps the last ``window`` ratios actual / estimate per tenant and hands the engine the
median. Reservation and backfill plan with estimate × max(1, median): a tenant whose jobs run 4×
their estimates is planned at 4×, so under-stating run times no longer wins backfill slots, and
honest tenants are untouched.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from gpufleet.model.job import Job


def median(xs: deque[float]) -> float:
    """``float(np.median(xs))`` bit for bit (the mean of the two middle values is (a + b) / 2 in
    both), for at most ``window`` values: a sort of 50 floats, not an array built per finish."""
    s = sorted(xs)
    m = len(s) // 2
    return float(s[m]) if len(s) % 2 else (s[m - 1] + s[m]) / 2


@dataclass
class AccuracyTracker:
    window: int = 50
    _ratios: dict[str, deque[float]] = field(default_factory=dict)
    _medians: dict[str, float] = field(default_factory=dict)

    def finished(self, job: Job) -> None:
        if not job.run_time_estimate:
            return
        ratios = self._ratios.setdefault(job.tenant, deque(maxlen=self.window))
        ratios.append(job.run_time / job.run_time_estimate)
        self._medians[job.tenant] = median(ratios)

    def medians(self) -> dict[str, float]:
        return dict(self._medians)
