"""The bundled tenancy week under the kueue profile: wall time and preemptions per simulated day.

    .venv/bin/python bench/kueue_week.py [--days 7] [--profile kueue]

Prints one line per simulated day (preemptions that day) and the totals; a preemption of a
quota reservation whose pods never started (no work lost) counts as one, and the total says
how many of those there were.
Compare runs on the same machine in one sitting: the machine is shared.
"""

from __future__ import annotations

import argparse
import time
from importlib import resources

import yaml

from gpufleet.policies.registry import profile
from gpufleet.sim.runner import simulate
from gpufleet.sim.scenario import parse_scenario
from gpufleet.sim.usage import UsageTracker


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", type=float, default=7.0)
    ap.add_argument("--profile", default="kueue")
    args = ap.parse_args()
    data = yaml.safe_load(resources.files("gpufleet.scenarios").joinpath("tenancy.yaml").read_text())
    data["workload"]["generator"]["days"] = args.days
    scn = parse_scenario(data, "bench/kueue_week.py")
    jobs = scn.jobs(None)
    assert scn.tenancy is not None
    t0 = time.perf_counter()
    r = simulate(scn.fleet, jobs, profile(args.profile), seed=0, horizon=scn.horizon,
                 cycle_interval_s=scn.spec.cycle_interval_s, tenancy=scn.tenancy,
                 usage_tracker=UsageTracker(scn.tenancy.half_life_s))
    wall = time.perf_counter() - t0
    per_day: dict[int, int] = {}
    released = 0
    for t, kind, _, detail in r.recorder.log:
        if kind == "preempt":
            per_day[int(t // 86400)] = per_day.get(int(t // 86400), 0) + 1
            released += "quota reservation released" in detail
    for d in range(int(args.days) + 1):
        print(f"day {d}: {per_day.get(d, 0)} preemptions")
    print(f"{args.profile}: {len(jobs)} jobs, {sum(per_day.values())} preemptions "
          f"({released} quota reservations released), {wall:.1f} s wall")


if __name__ == "__main__":
    main()
