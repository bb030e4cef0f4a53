"""A simulated answer is a mean over seeds with its confidence interval, not one run's number.

Seeds are independent replications, so the 95% interval of the mean of x_1..x_n is

    x̄ ± t(0.975, n − 1) · s / √n        (s: the sample standard deviation)

(Student's t because n is small: for n = 8, t = 2.365, where the normal 1.96 would be 17% too
narrow). A formula "agrees" with the simulation only when its value lies inside that interval; a
check that says so is then one that can fail, and its width says what difference it can resolve.
One value gives half-width 0 (no spread can be estimated): it is shown as a single number.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Estimate:
    """Mean over ``n`` seeds and the half-width of its two-sided ``level`` t-interval."""

    mean: float
    half_width: float
    n: int
    level: float = 0.95

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width

    def contains(self, value: float) -> bool:
        """True when ``value`` lies inside the interval: the formula agrees with the simulation.
        One seed gives no interval (n < 2), so it confirms nothing: False."""
        return self.n >= 2 and self.low <= value <= self.high

    def verdict(self, value: float) -> str:
        """'agrees' inside the interval, else which side the simulation falls on."""
        if self.n < 2:
            return "one seed: no interval"
        if self.contains(value):
            return "agrees"
        return "simulation below" if self.high < value else "simulation above"

    def text(self, fmt: str = ".4g", scale: float = 1.0, unit: str = "") -> str:
        """'m ± h unit' (the interval's half-width), scaled for display."""
        return f"{self.mean * scale:{fmt}} ± {self.half_width * scale:{fmt}}{unit}"

    def as_dict(self) -> dict[str, float | int]:
        return {"mean": self.mean, "ci_low": self.low, "ci_high": self.high, "seeds": self.n,
                "level": self.level}


def t_interval(values: Iterable[float], level: float = 0.95) -> Estimate:
    """The mean of the finite ``values`` and its t-interval (module docstring)."""
    x = np.asarray(list(values), float)
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n == 0:
        return Estimate(math.nan, math.nan, 0, level)
    if n == 1:
        return Estimate(float(x[0]), 0.0, 1, level)
    half = float(stats.t.ppf(0.5 + level / 2, n - 1) * x.std(ddof=1) / math.sqrt(n))
    return Estimate(float(x.mean()), half, n, level)
