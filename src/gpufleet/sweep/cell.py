"""Run one cell: build the scenario with the cell's parameters, simulate one policy, summarize.

This is the whole unit of work a worker (a local process or a Ray task) receives: plain data in,
one flat row out. It calls the simulator only through its public API, as ``gpufleet simulate`` does.
"""

from __future__ import annotations

import time
from typing import Any

from gpufleet.policies.registry import profile
from gpufleet.sim.metrics import summarize
from gpufleet.sim.runner import simulate
from gpufleet.sim.runtime import runtime_model_for
from gpufleet.sim.scenario import parse_scenario
from gpufleet.sim.usage import UsageTracker
from gpufleet.sweep.columns import flat_summary
from gpufleet.sweep.spec import Cell, apply_parameters

#: Columns that measure the machine, not the policy: left out when two runs are compared.
TIMING_COLUMNS = ("sim_wall_s", "cell_wall_s")


def run_cell(cell: Cell) -> dict[str, Any]:
    """One simulation; the row holds the cell's id and key, then every scalar metric."""
    started = time.perf_counter()
    scn = parse_scenario(apply_parameters(cell.scenario_data, dict(cell.params)), cell.source)
    jobs = scn.jobs(cell.seed)
    ten = scn.tenancy
    result = simulate(scn.fleet, jobs, profile(cell.policy, scn.fleet.fabric), seed=cell.seed,
                      horizon=scn.horizon, cycle_interval_s=scn.spec.cycle_interval_s,
                      runtime_model=runtime_model_for(scn.spec.runtime_model, scn.fleet),
                      tenancy=ten, usage_tracker=UsageTracker(ten.half_life_s) if ten is not None else None)
    row: dict[str, Any] = {"cell_id": cell.id, **cell.key, "fleet_gpus": scn.fleet.total_gpus}
    row.update(flat_summary(summarize(result, ten)))
    row["cell_wall_s"] = round(time.perf_counter() - started, 4)
    return row
