"""`gpufleet plan capacity [--demand CURVE]`: committed / capacity-block / spot / on-demand mix."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer

from gpufleet.cli.common import Output, Table, console, one_line_errors, working
from gpufleet.cli.plan import InputsOpt, OutputOpt, emit, inputs, out_dir_opt, plan_app
from gpufleet.econ.capacity import Prices, plan_capacity, rule_rows
from gpufleet.econ.demand import load_demand
from gpufleet.econ.spot import largest_spot_gang, spot_economics


@plan_app.command("capacity")
@one_line_errors
def capacity(
    demand: Annotated[str | None, typer.Option(
        "--demand", help="CSV of time_s,gpus; a gpufleet .jsonl trace; a `gpufleet simulate --out` "
        "directory (or its summary.json); or the Alibaba 2025 serving CSV. Default: a built-in "
        "4-week curve.")] = None,
    policy: Annotated[str | None, typer.Option(
        help="With a simulation directory: whose event log (default: the first policy).")] = None,
    no_spot: Annotated[bool, typer.Option("--no-spot", help="Leave spot out of the mix.")] = False,
    no_blocks: Annotated[bool, typer.Option("--no-blocks", help="Leave capacity blocks out.")] = False,
    inputs_file: InputsOpt = None,
    output: OutputOpt = Output.TEXT,
    out: out_dir_opt("capacity") = None,
) -> None:
    """Solve the cheapest mix of committed, capacity-block, spot and on-demand GPUs for a demand
    curve (a MILP solved by HiGHS) and compare it with the p50 rule and the break-even argument."""
    cfg = inputs(inputs_file)
    c, s = cfg.capacity, cfg.spot
    node_mtbi_min = s.node_mtbi_h * 60.0
    notice_min = s.notice_s / 60.0
    args = (s.price_ratio, s.checkpoint_write_min, s.restart_min, node_mtbi_min)
    one = spot_economics(*args, 1, notice_min)
    max_nodes = largest_spot_gang(*args, notice_min=notice_min)
    d = load_demand(demand, c.gpus_per_node, max_nodes, c.spot_eligible_fraction, policy)
    sizes = sorted(set(d.by_nodes()) | {1})
    prices = Prices(od=c.od_price_per_gpu_hr, committed_ratio=c.committed_ratio,
                    block=c.capacity_block_price_per_gpu_hr, block_hours=24 * c.capacity_block_days,
                    gpus_per_node=c.gpus_per_node, spot_effective=one.effective_price,
                    spot_by_nodes=tuple((n, spot_economics(*args, n, notice_min).effective_price)
                                        for n in sizes))
    with working("solving the capacity mix (MILP)"):
        plan = plan_capacity(d, prices, use_blocks=not no_blocks, use_spot=not no_spot)
    data = plan.as_dict()
    gangs = [spot_economics(*args, n, notice_min) for n in sorted({1, 2, 4, 8, 16, 32} | set(sizes))]
    against_c = largest_spot_gang(*args, against=c.committed_ratio, notice_min=notice_min)
    loss = ("the checkpoint write fits in the notice: each reclaim loses the notice + restart"
            if one.saves_in_notice else "each reclaim loses half a checkpoint interval + the restart")
    data["spot"] = {"effective_price_one_node": one.effective_price,
                    "checkpoint_interval_min": _finite(one.tau_min), "overhead": one.overhead,
                    "notice_s": s.notice_s, "saves_in_notice": one.saves_in_notice, "loss": loss,
                    "largest_gang_nodes_on_spot": max_nodes,
                    "largest_gang_nodes_beating_commitment": against_c,
                    "break_even": "spot pays against on demand while p_eff < 1, and against a commitment "
                                  f"only where p_eff < c = {c.committed_ratio:g}",
                    "gangs": [{**vars(g), "tau_min": _finite(g.tau_min),
                               "effective_price": _finite(g.effective_price)} for g in gangs],
                    "priced_per_gang": {str(n): _finite(v) for n, v in prices.spot_by_nodes},
                    "rule": f"gangs above {max_nodes} nodes never go on spot: a gang of n nodes is "
                            f"interrupted n times as often; each gang size pays its own p_eff in the MILP"}
    sources = {**c.sources, **s.sources}

    def tables() -> None:
        sol = data["solution"]
        gh, cost = sol["gpu_hours"], sol["costs"]
        t = Table(title=f"Capacity mix for {d.name} ({d.hours} h)", header_style="bold")
        for col in ("tier", "level", "GPU-hours", "$"):
            t.add_column(col, justify="right" if col != "tier" else "left")
        t.add_row("committed", f"{sol['committed_gpus']:,} GPUs", f"{gh['committed']:,.0f}",
                  f"{cost['committed']:,.0f}")
        t.add_row("capacity blocks", f"{sol['block_nodes_per_window']} nodes/window",
                  f"{gh['capacity_block']:,.0f}", f"{cost['capacity_block']:,.0f}")
        by = ", ".join(f"{n}-node {h:,.0f}" for n, h in sol["spot_gpu_hours_by_gang_nodes"].items()
                       if h > 0.5)
        t.add_row("spot", f"p_eff per gang size ({by or 'none'})", f"{gh['spot']:,.0f}",
                  f"{cost['spot']:,.0f}")
        t.add_row("on demand", "", f"{gh['on_demand']:,.0f}", f"{cost['on_demand']:,.0f}")
        t.add_row("[bold]total[/]", "", "", f"[bold]{sol['cost']:,.0f}[/]")
        t.add_row("all on demand", "", "", f"{data['all_on_demand_cost']:,.0f}")
        console.print(t)
        r = Table(title=f"Committed level: break-even utilisation c = {prices.committed_ratio:.2f}",
                  header_style="bold")
        for col in ("rule", "committed GPUs", "fraction of hours used", "$", "cost of"):
            r.add_column(col, justify="right" if col not in ("rule", "cost of") else "left")
        for row in rule_rows(plan):
            r.add_row(row.label, f"{row.committed:,.0f}", f"{row.used_fraction:.3f}", f"{row.cost:,.0f}",
                      row.basis)
        console.print(r)
        g = Table(title=f"Spot by gang size: p_spot {s.price_ratio:g}× OD, node MTBI {s.node_mtbi_h:g} h, "
                  f"checkpoint {s.checkpoint_write_min:g} min, restart {s.restart_min:g} min, "
                  f"notice {s.notice_s:g} s", header_style="bold")
        for col in ("nodes", "gang MTBI", "checkpoint interval", "overhead", "p_eff × OD", "verdict"):
            g.add_column(col, justify="right")
        for x in gangs:
            verdict = ("beats commitment" if x.effective_price < c.committed_ratio else
                       "beats on demand only" if x.effective_price < 1 else "[red]never on spot[/]")
            tau = "saves in the notice" if x.saves_in_notice else f"{x.tau_min:.1f} min (Daly)"
            g.add_row(str(x.nodes), f"{x.mtbi_min:.0f} min", tau, f"{x.overhead:.1%}",
                      f"{x.effective_price:.2f}", verdict)
        console.print(g)
        console.print(f"spot: {loss}; {data['spot']['rule']}; HiGHS {sol['status']} in "
                      f"{sol['solve_s']:.2f} s")

    def page() -> str:
        from gpufleet.report.econ_capacity import capacity_page
        return capacity_page(plan, sources, data["spot"])

    emit("capacity", data, output, out, tables, page)


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None


_ = Path  # the Path annotations above are resolved at runtime by Typer
