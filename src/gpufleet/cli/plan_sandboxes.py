"""`gpufleet plan sandboxes`: runc, gVisor, Firecracker, full VMs: hosts and cost for a session mix."""

from __future__ import annotations

from typing import Annotated

import typer
from pydantic import ValidationError

from gpufleet.cli.common import Output, Table, console, one_line_errors, working
from gpufleet.cli.plan import InputsOpt, OutputOpt, emit, inputs, out_dir_opt, plan_app
from gpufleet.econ.sandboxes import plan_sandboxes
from gpufleet.model.errors import from_validation_error


@plan_app.command("sandboxes")
@one_line_errors
def sandboxes(
    sessions: Annotated[int | None, typer.Option(help="Concurrent sessions (default 50,000).")] = None,
    inputs_file: InputsOpt = None,
    output: OutputOpt = Output.TEXT,
    out: out_dir_opt("sandboxes") = None,
) -> None:
    """Place each session class in the cheapest sandbox boundary that isolates it enough and offers
    its GPU mode; count hosts (RAM, CPU or GPU bound) and compare with single-boundary designs."""
    cfg = inputs(inputs_file).sandboxes
    if sessions is not None:
        try:
            cfg = cfg.model_validate({**cfg.model_dump(), "sessions": sessions})
        except ValidationError as e:
            raise from_validation_error("command line", e, "sandboxes") from None
    with working("placing the session classes"):
        plan = plan_sandboxes(cfg)

    def tables() -> None:
        t = Table(title="Sandbox tiers", header_style="bold")
        for col in ("tier", "isolation", "overhead MiB", "start", "GPU access"):
            t.add_column(col, justify="left" if col in ("tier", "GPU access") else "right")
        for x in plan["tiers"]:
            t.add_row(x["tier"], str(x["isolation"]), f"{x['overhead_mib']:g}",
                      "not measured" if x["start_ms"] is None else f"{x['start_ms']:g} ms",
                      ", ".join(x["gpu"]) or "none")
        console.print(t)
        first = next(iter(plan["designs"]))
        d = Table(title=f"{first}: {plan['sessions']:,} sessions", header_style="bold")
        for col in ("class", "sessions", "tier", "GPU", "hosts", "binds", "$/hr"):
            d.add_column(col, justify="right" if col in ("sessions", "hosts", "$/hr") else "left")
        for p in plan["designs"][first]["placements"]:
            d.add_row(p["cls"], f"{p['sessions']:,}", p["tier"], p["gpu"], f"{p['hosts']} {p['host_type']}",
                      p["binds"], f"{p['cost_per_hr']:,.0f}")
        console.print(d)
        c = Table(title="Designs compared", header_style="bold")
        for col in ("design", "CPU hosts", "GPU hosts", "$/hr"):
            c.add_column(col, justify="left" if col == "design" else "right")
        for name, x in plan["designs"].items():
            c.add_row(name, str(x["hosts"]["cpu_host"]), str(x["hosts"]["gpu_host"]),
                      f"{x['cost_per_hr']:,.0f}")
        console.print(c)

    def page() -> str:
        from gpufleet.report.econ_sandboxes import sandboxes_page
        return sandboxes_page(plan, cfg.sources)

    emit("sandboxes", plan, output, out, tables, page)
