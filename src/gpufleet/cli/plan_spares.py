"""`gpufleet plan spares`: how many hot spares keep P(no spare when needed) under a target.

By formula (Palm's theorem: nodes away ~ Poisson(Λ E[T]); a failure finds none left with
P(N ≥ s)), with Erlang B beside it, and — with ``--simulate`` — checked by the simulator.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Annotated

import typer
from rich.table import Table

from gpufleet.cli.common import Output, console, fail, in_range, one_line_errors
from gpufleet.cli.plan import plan_app
from gpufleet.model.health import StepDurations
from gpufleet.sim import reliability as R
from gpufleet.sim.failures import LLAMA3_KINDS, FailureConfig, FailureKind, mean_out_of_service_s
from gpufleet.sim.reliability_study import spares_check

DAY = 86400.0



@plan_app.command("spares")
@one_line_errors
def spares(
    nodes: Annotated[int, typer.Option(help="Nodes the pool protects (a job's, or a fleet's).")] = 256,
    rate: Annotated[float | None, typer.Option(
        help="Failures per 1000 node-days. Default: Llama 3's 3.79 (419 in 110,592 node-days).")] = None,
    repair_days: Annotated[float | None, typer.Option(
        help="Mean time a failed node is away (detection to healthy), days. Default: the health "
             "machine's steps, repair in place 4 h or RMA 14 d by kind (3.77 d).")] = None,
    risk: Annotated[float, typer.Option(help="Target P(no spare when a failure needs one).")] = 0.01,
    simulate: Annotated[bool, typer.Option(help="Check the plan by simulating --years of failures.")]
    = False,
    years: Annotated[float, typer.Option(help="Years simulated with --simulate.")] = 40.0,
    output: Annotated[Output, typer.Option(
        "--output", "-o", help="text (default) or json.")] = Output.TEXT,
) -> None:
    """Spares so that P(no spare when needed) < RISK, by Poisson/Erlang arithmetic (and simulation)."""
    if not 1 <= nodes <= 1_000_000:
        raise fail(f"--nodes: expected 1 to 1,000,000 nodes, got {nodes}")
    in_range("--risk", risk, 1e-9, 0.5)
    in_range("--years", years, 0.01, 50.0)
    cfg = FailureConfig()
    if rate is not None:
        in_range("--rate", rate, 1e-6, 1e5)
        cfg = replace(cfg, scale=rate / (419 / 110.592))
    if repair_days is not None:
        in_range("--repair-days", repair_days, 1e-4, 3650.0)
        # one kind, repaired in place, whose whole out-of-service time is repair_days
        steps = StepDurations(detect_s=0, drain_s=0, diagnose_s=0, preflight_s=0, repair_s=repair_days * DAY)
        total = sum(k.count for k in LLAMA3_KINDS)
        cfg = replace(cfg, kinds=(FailureKind("any", total, False, 0.0, "all kinds"),), steps=steps)
    e_t = mean_out_of_service_s(cfg, 8)
    lam = nodes * cfg.rate_per_node_s(8)
    if lam * e_t > 100_000:
        raise fail(f"--nodes/--rate/--repair-days: {lam * e_t:,.0f} nodes away on average; expected "
                   "at most 100,000")
    s = R.spares_for_pool(nodes, cfg.rate_per_node_s(8), e_t, risk)
    lam = (nodes + s) * cfg.rate_per_node_s(8)  # the idle spares fail too
    out = {"nodes": nodes, "failures_per_day": lam * DAY, "mean_away_days": e_t / DAY,
           "mean_nodes_away": lam * e_t, "spares": s, "p_no_spare": R.no_spare_probability(s, lam, e_t),
           "p_no_spare_one_fewer": R.no_spare_probability(s - 1, lam, e_t) if s > 0 else None,
           "erlang_b": R.erlang_b(lam * e_t, s), "risk": risk}
    if simulate:
        if nodes + s > 20_000 or lam * years * 365 * DAY > 200_000:
            raise fail("--simulate: at most 20,000 nodes and 200,000 simulated failures "
                       "(lower --years or --nodes)")
        chk = spares_check(cfg, nodes, years, risk)
        out |= {"simulated_p_no_spare": chk.p_sim, "simulated_failures": chk.failures_simulated}
    if output is Output.JSON:
        print(json.dumps(out, indent=2))
        return
    t = Table(title=f"Hot spares for {nodes:,} nodes (P(no spare when needed) < {100 * risk:g}%)",
              header_style="bold")
    t.add_column("figure")
    t.add_column("value", justify="right")
    t.add_row("failures per day (Λ)", f"{out['failures_per_day']:.3f}")
    t.add_row("mean time away E[T]", f"{out['mean_away_days']:.2f} d")
    t.add_row("mean nodes away (Λ E[T])", f"{out['mean_nodes_away']:.2f}")
    t.add_row("[bold]spares[/]", f"[bold]{s}[/]")
    t.add_row("P(no spare), Poisson", f"{100 * out['p_no_spare']:.3f}%")
    if out["p_no_spare_one_fewer"] is not None:
        t.add_row(f"P(no spare) with {s - 1}", f"{100 * out['p_no_spare_one_fewer']:.3f}%")
    t.add_row("Erlang B (failures beyond the pool lost)", f"{100 * out['erlang_b']:.3f}%")
    if simulate:
        t.add_row(f"P(no spare), simulated ({years:g} y, {out['simulated_failures']:,} failures)",
                  f"{100 * out['simulated_p_no_spare']:.3f}%")
    console.print(t)
