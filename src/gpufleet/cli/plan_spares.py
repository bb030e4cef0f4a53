"""`gpufleet plan spares`: how many hot spares keep P(no spare when needed) under a target.

By the finite-source formula (studies/reliability.no_spare_probability_finite: the N + s nodes are
independent, a node away for repair cannot fail again, so the number away is Binomial), with the
Poisson answer and Erlang B beside it, and — with ``--simulate`` — checked by the simulator over
seeds, the pool and the pool with one fewer spare, each with its 95% interval.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from gpufleet.cli.common import Output, Table, console, fail, in_range, one_line_errors, working
from gpufleet.cli.plan import emit, out_dir_opt, plan_app
from gpufleet.model.health import StepDurations
from gpufleet.sim.fleet_events.failures import LLAMA3_KINDS, FailureConfig, FailureKind, mean_out_of_service_s
from gpufleet.studies import reliability as R
from gpufleet.studies.reliability_study import spares_check

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
    years: Annotated[float, typer.Option(help="Years simulated per seed with --simulate.")] = 40.0,
    seeds: Annotated[int, typer.Option(help="Seeds simulated with --simulate (the interval's n).")] = 4,
    output: Annotated[Output, typer.Option(
        "--output", "-o", help="text (default) or json.")] = Output.TEXT,
    out: out_dir_opt("spares") = None,
) -> None:
    """Spares so that P(no spare when needed) < RISK, by finite-source arithmetic (a node away
    cannot fail again), Poisson and Erlang B beside it, and with --simulate a seeded check."""
    if not 1 <= nodes <= 1_000_000:
        raise fail(f"--nodes: expected 1 to 1,000,000 nodes, got {nodes}")
    in_range("--risk", risk, 1e-9, 0.5)
    in_range("--years", years, 0.01, 1000.0)
    in_range("--seeds", seeds, 2, 50)
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
    r = cfg.rate_per_node_s(8)
    s = R.spares_for_pool_finite(nodes, r, e_t, risk)
    p_down = R.node_down_probability(r, e_t)
    lam = (nodes + s) * r  # Poisson's view: every node fails at r, away or not
    out_data: dict = {
        "nodes": nodes, "failures_per_day": nodes * r * DAY,
        "failures_per_day_with_spares": (nodes + s) * (1 - p_down) * r * DAY,
        "mean_away_days": e_t / DAY, "node_down_probability": p_down,
        "mean_nodes_away": (nodes + s) * p_down, "spares": s,
        "p_no_spare": R.no_spare_probability_finite(nodes, s, r, e_t),
        "p_no_spare_one_fewer": R.no_spare_probability_finite(nodes, s - 1, r, e_t) if s > 0 else None,
        "p_no_spare_poisson": R.no_spare_probability(s, lam, e_t),
        "spares_poisson": R.spares_for_pool(nodes, r, e_t, risk),
        "erlang_b": R.erlang_b(lam * e_t, s), "risk": risk,
        "formula": "finite source: Σ_{d≥s} π(d)(M−d) / Σ_d π(d)·min(N, M−d), π = Binomial(M = N + s, p)"}
    if simulate:
        if nodes + s > 20_000 or lam * years * 365 * DAY * seeds > 2_000_000:
            raise fail("--simulate: at most 20,000 nodes and 2,000,000 simulated failures "
                       "(lower --years, --seeds or --nodes)")
        runs = range(seeds)
        with working(f"simulating {seeds} seed(s) × {years:g} year(s) of failures"):
            chk = spares_check(cfg, nodes, years, risk, runs, spares=s)
        out_data["simulated"] = {"years_per_seed": years, "failures_simulated": chk.failures_simulated,
                                 "p_no_spare": chk.p_sim.as_dict(),
                                 "agrees": chk.p_sim.contains(out_data["p_no_spare"])}
        if s > 0:
            with working("the same with one spare fewer"):
                fewer = spares_check(cfg, nodes, years, risk, runs, spares=s - 1)
            out_data["simulated"]["p_no_spare_one_fewer"] = fewer.p_sim.as_dict()
            out_data["simulated"]["one_fewer_agrees"] = fewer.p_sim.contains(out_data["p_no_spare_one_fewer"])
    rows = spares_rows(out_data)

    def tables() -> None:
        t = Table(title=f"Hot spares for {nodes:,} nodes (P(no spare when needed) < {100 * risk:g}%)",
                  header_style="bold")
        t.add_column("figure")
        t.add_column("value", justify="right")
        for label, value in rows:
            t.add_row(label, value)
        console.print(t)

    def page() -> str:
        from gpufleet.report.html import Section, render, table
        return render("Hot spares", f"{nodes:,} nodes, P(no spare when needed) < {100 * risk:g}%",
                      [Section("Plan", table(["figure", "value"], rows)),
                       Section("Formula", f"<p>{out_data['formula']}; p = r E[T] / (1 + r E[T]) = "
                               f"{p_down:.5f}. Poisson over the whole pool lets a node away fail again "
                               "and over-states the tail when the fleet is small.</p>")])

    emit("spares", out_data, output, out, tables, page)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.3f}%"


def _ci(e: dict) -> str:
    return f"{100 * e['mean']:.3f}% ± {100 * (e['ci_high'] - e['ci_low']) / 2:.3f}% ({e['seeds']} seeds)"


def spares_rows(o: dict) -> list[tuple[str, str]]:
    """The rows the terminal and the HTML page print."""
    s = o["spares"]
    rows = [("failures per day, the fleet's in-service nodes (N r)", f"{o['failures_per_day']:.3f}"),
            ("failures per day, fleet + spares ((N + s)(1 − p) r)",
             f"{o['failures_per_day_with_spares']:.3f}"),
            ("mean time away E[T]", f"{o['mean_away_days']:.2f} d"),
            ("mean nodes away ((N + s) p)", f"{o['mean_nodes_away']:.2f}"),
            ("spares", f"{s}"),
            ("P(no spare), finite source", _pct(o["p_no_spare"]))]
    if o["p_no_spare_one_fewer"] is not None:
        rows.append((f"P(no spare) with {s - 1}, finite source", _pct(o["p_no_spare_one_fewer"])))
    rows += [(f"P(no spare), Poisson over the pool (would plan {o['spares_poisson']})",
              _pct(o["p_no_spare_poisson"])),
             ("Erlang B (failures beyond the pool lost)", _pct(o["erlang_b"]))]
    sim = o.get("simulated")
    if sim:
        rows.append((f"P(no spare) with {s}, simulated ({sim['years_per_seed']:g} y per seed, "
                     f"{sim['failures_simulated']:,} failures)",
                     f"{_ci(sim['p_no_spare'])}: {'agrees' if sim['agrees'] else 'formula OUTSIDE'}"))
        if "p_no_spare_one_fewer" in sim:
            rows.append((f"P(no spare) with {s - 1}, simulated",
                         f"{_ci(sim['p_no_spare_one_fewer'])}: "
                         f"{'agrees' if sim['one_fewer_agrees'] else 'formula OUTSIDE'}"))
    return rows


_ = Path  # the Path annotation of --out is resolved at runtime by Typer
