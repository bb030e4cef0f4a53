"""Per-tenant run-time accuracy: how long a tenant's jobs really ran against what it estimated.

The driver keeps the last ``window`` ratios actual / estimate per tenant and hands the engine the
median. Reservation and backfill plan with estimate × max(1, median): a tenant whose jobs run 4×
their estimates is planned at 4×, so under-stating run times no longer wins backfill slots, and
honest tenants are untouched.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from gpufleet.model.job import Job


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
        self._medians[job.tenant] = float(np.median(ratios))

    def medians(self) -> dict[str, float]:
        return dict(self._medians)
