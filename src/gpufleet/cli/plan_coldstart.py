"""`gpufleet plan coldstart`: the cold-start chain of a 7B model, its removals, the warm pool."""

from __future__ import annotations

from typing import Annotated

import typer
from pydantic import ValidationError

from gpufleet.cli.common import Output, Table, console, in_range, one_line_errors, working
from gpufleet.cli.plan import InputsOpt, OutputOpt, emit, inputs, out_dir_opt, plan_app
from gpufleet.econ.coldstart import plan_coldstart
from gpufleet.model.errors import from_validation_error


@plan_app.command("coldstart")
@one_line_errors
def coldstart(
    rate: Annotated[float | None, typer.Option(help="Arrival rate, requests/s (overrides inputs).")] = None,
    target: Annotated[float | None, typer.Option(help="Target P(cold start), e.g. 0.01.")] = None,
    seed: Annotated[int, typer.Option(help="First seed of the warm-pool simulation.")] = 1,
    seeds: Annotated[int, typer.Option(help="Seeds simulated per pool size (the interval's n).")] = 8,
    arrivals: Annotated[int, typer.Option(help="Arrivals per simulated run.")] = 1_000_000,
    inputs_file: InputsOpt = None,
    output: OutputOpt = Output.TEXT,
    out: out_dir_opt("coldstart") = None,
) -> None:
    """Time each link of a 7B model's cold start, what deleting each buys, and the warm pool that
    keeps cold starts under a target (Erlang B, checked by a seeded simulation of N and N − 1
    warm instances with 95% intervals over seeds)."""
    in_range("--seeds", seeds, 2, 100)
    in_range("--arrivals", arrivals, 10_000, 20_000_000)
    in_range("--seed", seed, 0, 2**31)
    cfg = inputs(inputs_file).coldstart
    over = {k: v for k, v in (("arrival_rate_per_s", rate), ("target_cold_probability", target))
            if v is not None}
    try:
        cfg = cfg.model_validate({**cfg.model_dump(), **over})
    except ValidationError as e:
        raise from_validation_error("command line", e, "coldstart") from None
    c = cfg.figures
    with working("timing the cold start and simulating the warm pool"):
        plan = plan_coldstart(c, seed, arrivals, seeds)
    plan["target"] = c["target_cold_probability"]

    def tables() -> None:
        from gpufleet.report.econ_coldstart import pool_check_rows
        t = Table(title=f"Cold start of a {plan['weights_gb']:g} GB model", header_style="bold")
        for col in ("link", "seconds", "arithmetic"):
            t.add_column(col, justify="right" if col == "seconds" else "left")
        for lk in plan["variants"][0]["links"]:
            t.add_row(lk["name"], f"{lk['seconds']:.2f}", lk["arithmetic"])
        console.print(t)
        v = Table(title="What deleting links buys", header_style="bold")
        for col in ("variant", "seconds", "saves"):
            v.add_column(col, justify="left" if col == "variant" else "right")
        for x in plan["variants"]:
            v.add_row(x["name"], f"{x['total_s']:.1f}", f"{x['saves_s']:.1f} s ({x['saves_pct']:.0f}%)")
        console.print(v)
        wp = plan["warm_pool"]
        w = Table(title=f"Warm pool: λ = {c['arrival_rate_per_s']:g}/s, S = {c['hold_s']:g} s, "
                  f"target P(cold) < {c['target_cold_probability']:g}", header_style="bold")
        w.add_column("quantity")
        w.add_column("value", justify="right")
        w.add_row("offered load A", f"{wp['offered_erlangs']:.1f} erlangs")
        w.add_row("warm instances (Erlang B)", f"{wp['size_loss']} (P(cold) {wp['p_cold']:.4f})")
        for row in pool_check_rows(wp, seeds, arrivals):
            w.add_row(*row)
        w.add_row("warm instances for P(wait) (Erlang C)", f"{wp['size_wait']}")
        w.add_row(f"square-root staffing A + {wp['z']:.3f}·√A", f"{wp['sqrt_staffing']:.1f}")
        w.add_row("cost", f"${wp['cost_per_hr']:,.0f}/hr, {wp['utilisation']:.0%} busy")
        w.add_row("p99 burst during one cold start", f"{wp['burst_spare_cold']} requests")
        console.print(w)

    def page() -> str:
        from gpufleet.report.econ_coldstart import coldstart_page
        return coldstart_page(plan, cfg.sources)

    emit("coldstart", plan, output, out, tables, page)
