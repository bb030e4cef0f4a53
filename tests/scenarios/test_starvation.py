"""A 256-GPU gang behind a steady stream of 1–8-GPU jobs.

Fleet: 32 nodes × 8 GPUs = 256 GPUs, so the gang needs the whole fleet free at once. Small jobs
(1–8 GPUs, 20–60 min, exact estimates) arrive every 90 s on average for 3 days: offered load from
the stream alone ≈ 4.5 GPUs × 40 min / 90 s / 256 GPUs ≈ 0.47, so there is always something
running. The gang arrives at 2 h.
Without reservation, the gang starts only when every small job happens to be gone at once — in a
steady stream, not until the stream dries up. With EASY reservation, its start is fixed when it
becomes the head of the queue and backfill may not delay it.
"""

import numpy as np
import pytest

from gpufleet.policies.registry import profile
from gpufleet.sim.runner import simulate
from gpufleet.testing.builders import fleet, job

DAY = 86400.0


def stream(seed: int = 5, days: float = 3.0):
    rng = np.random.default_rng(seed)
    t, jobs, i = 0.0, [], 0
    while t < days * DAY:
        t += rng.exponential(90.0)
        g = int(rng.choice([1, 2, 4, 8]))
        run = float(rng.uniform(1200, 3600))
        jobs.append(job(f"s{i:05d}").gpus(g).at(round(t, 3)).runs(run, estimate=run).build())
        i += 1
    big = job("big").gpus(8).gang(32).at(2 * 3600.0).runs(4 * 3600.0, estimate=4 * 3600.0).build()
    return [*jobs, big]


@pytest.fixture(scope="module")
def runs():
    f = fleet().leaves(4, nodes=8).build()
    jobs = stream()
    return {p: simulate(f, jobs, profile(p)) for p in ("gang-easy", "gang-bestfit")}


def test_with_reservation_the_big_gang_starts_no_later_than_its_reservation(runs):
    r = runs["gang-easy"]
    assert "big" in r.reserved_starts
    assert r.starts["big"] <= r.reserved_starts["big"] + 1e-6
    assert r.starts["big"] - 2 * 3600.0 < 2 * 3600.0  # waits about one small job's run time


def test_without_reservation_the_big_gang_waits_far_longer(runs):
    easy_wait = runs["gang-easy"].starts["big"] - 2 * 3600.0
    greedy = runs["gang-bestfit"]
    greedy_wait = greedy.starts.get("big", greedy.end_time) - 2 * 3600.0
    assert greedy_wait > 10 * easy_wait
    assert greedy_wait > 2 * DAY


def test_backfill_keeps_the_fleet_busy_while_the_gang_waits(runs):
    r = runs["gang-easy"]
    small_started_while_waiting = [j for j, t in r.starts.items()
                                   if j != "big" and 2 * 3600.0 < t < r.starts["big"]]
    assert small_started_while_waiting
