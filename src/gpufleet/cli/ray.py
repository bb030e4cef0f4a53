"""`gpufleet ray compare`: RayClusters on the scheduler below them, uncoordinated vs coordinated."""

from __future__ import annotations

from typing import Annotated

import typer

from gpufleet.adapters.ray.simulated import raycluster_workload, simulate_pair
from gpufleet.cli.common import Table, console, fail, one_line_errors, working
from gpufleet.cli.main import app
from gpufleet.model.fleet import NodeGroup, build_fleet
from gpufleet.report.fmt import duration
from gpufleet.sweep.stats import paired_tests, t_interval

ray_app = typer.Typer(help="Ray on a GPU fleet: placement groups as gangs, RayClusters as pods.",
                      no_args_is_help=True)
app.add_typer(ray_app, name="ray")

ROWS = (("held_pct", "GPUs held (% of fleet)"), ("useful_pct", "GPUs used by bundles (%)"),
        ("idle_held_pct", "held but idle (%)"), ("wait_p50_s", "wait p50"), ("wait_p95_s", "wait p95"))


@ray_app.command()
@one_line_errors
def compare(
    nodes: Annotated[int, typer.Option(help="8-GPU nodes in the fleet.")] = 16,
    days: Annotated[float, typer.Option(help="Simulated days of RayCluster arrivals.")] = 2.0,
    load: Annotated[float, typer.Option(help="Offered load in bundle GPUs / fleet GPUs.")] = 0.7,
    seeds: Annotated[int, typer.Option(help="Workload seeds (replications).")] = 3,
    worker_gpus: Annotated[int, typer.Option(help="GPUs per worker pod of the uncoordinated template.")] = 8,
    idle_timeout: Annotated[float, typer.Option(help="Seconds idle workers linger (KubeRay default 60).")]
    = 60.0,
) -> None:
    """Simulate RayClusters arriving on a fleet: the autoscaler asking pods one at a time vs the
    coordination rules (gang-admit, bundle-sized workers, scale down, head in the gang)."""
    checks = [(1 <= nodes <= 4096, f"--nodes: expected 1 to 4096, got {nodes}"),
              (0 < days <= 60, f"--days: expected more than 0 and at most 60, got {days}"),
              (0 < load <= 5, f"--load: expected more than 0 and at most 5, got {load}"),
              (1 <= seeds <= 100, f"--seeds: expected 1 to 100, got {seeds}"),
              (worker_gpus in (1, 2, 4, 8), f"--worker-gpus: expected 1, 2, 4 or 8, got {worker_gpus}"),
              (0 <= idle_timeout <= 86400, f"--idle-timeout: expected 0 to 86400 s, got {idle_timeout}")]
    for ok, msg in checks:
        if not ok:  # also false for NaN
            raise fail(msg)
    f = build_fleet([NodeGroup(nodes=nodes, gpu="H100-80GB", gpus_per_node=8, leaf_size=16)], name="ray")
    per_seed = {}
    for s in range(1, seeds + 1):
        with working(f"simulating seed {s} of {seeds} (autoscaler and coordinated)"):
            arrivals = raycluster_workload(f.total_gpus, days, load, s, worker_gpus=worker_gpus)
            per_seed[s] = simulate_pair(f, arrivals, s, idle_timeout)
    sides = list(per_seed[1])
    t = Table(title=f"{f.total_gpus} GPUs, {days:g} days at load {load:g}, {seeds} seed(s): "
              "mean ± 95% t-interval", header_style="bold")
    t.add_column("metric")
    for side in sides:
        t.add_column(side, justify="right")
    for key, label in ROWS:
        cells = []
        for side in sides:
            ci = t_interval([per_seed[s][side][key] for s in per_seed])
            fmt = duration if key.endswith("_s") else (lambda v: f"{v:.1f}")
            cells.append(fmt(ci.mean) + (f" ± {fmt(ci.half_width)}" if ci.n > 1 else ""))
        t.add_row(label, *cells)
    console.print(t)
    tests = paired_tests({side: {s: per_seed[s][side]["idle_held_pct"] for s in per_seed} for side in sides})
    for p in tests:
        if p.n >= 2:
            console.print(f"idle held, {p.a} − {p.b}: {p.mean_diff:+.1f} points, paired p = {p.p:.3g}"
                          f" (Holm {p.p_holm:.3g})")
