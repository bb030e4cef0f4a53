"""`gpufleet plan serving` and `gpufleet simulate serving`: the inference floor on the Alibaba trace.

Both replay the real serving trace through the simulator under three designs (dedicated, fully
shared, floor-plus-borrow with a sweep of floors) and report late scale-ups and utilisation;
`plan serving` takes every option, `simulate serving` runs the defaults like other scenarios.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from gpufleet.cli.common import Output, Table, console, emit_json, err_console, one_line_errors
from gpufleet.cli.outdir import claim_out_dir
from gpufleet.cli.plan import InputsOpt, OutputOpt, emit, inputs, out_dir_opt, plan_app
from gpufleet.econ.serving import default_trace, run_serving, setup_from
from gpufleet.model.errors import from_validation_error
from gpufleet.report.jsonsafe import write_json


def print_designs(r: dict) -> None:
    t = Table(title=f"Serving pool of {r['pool_gpus']} GPUs: {r['dynamic_replicas']:,} replicas over "
              f"{r['window_days']:g} days (+{r['base_gpus']:,} always-on GPUs)", header_style="bold")
    for col in ("design", "floor", "pool util", "training util", "late / scale-ups", "ready p99", "reclaims"):
        t.add_column(col, justify="left" if col == "design" else "right")
    for d in r["designs"] + r["sweep"]:
        late = f"{d['breaches']} / {d['replicas']} ({100 * d['breach_rate']:.1f}%)"
        if d["breach_rate"] > r["breach_target"]:
            late = f"[red]{late}[/]"
        t.add_row(d["name"], str(d["floor"]), f"{100 * d['total_util']:.1f}%",
                  f"{100 * d['training_util']:.1f}%", late, f"{d['ready_p99_s']:.0f} s",
                  str(d["preemptions"]))
    console.print(t)
    best = r["floor_meeting_target"]
    p = r["reclaim_parts_s"]
    console.print(f"reclaim {r['reclaim_s']:.0f} s (detect {p['detect']:g} + max(grace {p['grace']:g}, "
                  f"checkpoint {p['checkpoint']:g}) + eviction {p['eviction']:g} + load {p['model_load']:g}) "
                  f"× steepest ramp {r['ramp_gpus_per_s']:.4f} GPUs/s "
                  f"→ headroom ≥ {r['headroom_rule_gpus']} GPUs; "
                  f"floor meeting ≤{100 * r['breach_target']:.1f}% late: "
                  + (f"{best['floor']} GPUs" if best else "none in the sweep"))


def compute(trace: Path | None, inputs_file: Path | None, days: float | None, start_day: float | None,
            seed: int, progress: bool) -> tuple[dict, dict[str, str]]:
    cfg = inputs(inputs_file).serving
    over = {k: v for k, v in (("days", days), ("start_day", start_day)) if v is not None}
    try:
        cfg = cfg.model_validate({**cfg.model_dump(), **over})
    except ValidationError as e:
        raise from_validation_error("command line", e, "serving") from None
    path = default_trace(trace if trace is not None else cfg.trace)

    def tick(name: str) -> None:
        if progress:
            err_console.print(f"  simulated {name}", highlight=False)

    r = run_serving(path, setup_from(cfg), seed, tick)
    r["trace"] = str(path)
    return r, cfg.sources


TraceOpt = Annotated[Path | None, typer.Option(
    help="The Alibaba 2025 serving CSV (default: ../shared/data/…).")]


@plan_app.command("serving")
@one_line_errors
def serving(
    trace: TraceOpt = None,
    days: Annotated[float | None, typer.Option(help="Window length in days (default 3; 31 = all).")] = None,
    start_day: Annotated[float | None, typer.Option(help="First day of the window.")] = None,
    seed: Annotated[int, typer.Option(help="Simulation seed.")] = 0,
    inputs_file: InputsOpt = None,
    output: OutputOpt = Output.TEXT,
    out: out_dir_opt("serving") = None,
) -> None:
    """Dedicated inference vs a fully shared pool vs floor-plus-borrow on the real serving trace:
    utilisation, late scale-ups, and the floor that keeps them under the target."""
    r, sources = compute(trace, inputs_file, days, start_day, seed, output is Output.TEXT)

    def page() -> str:
        from gpufleet.report.serving import serving_report
        return serving_report(r, sources)

    emit("serving", r, output, out, lambda: print_designs(r), page)


def simulate_serving(trace: Path | None, out: Path, seed: int | None, progress: bool,
                     output: Output = Output.TEXT) -> None:
    """`gpufleet simulate serving`: the defaults, written like any scenario (summary.json, report.html);
    ``-o json`` prints summary.json's document and nothing else on stdout."""
    run_dir = claim_out_dir(out, "simulate")
    r, sources = compute(trace, None, None, None, seed or 0, progress)
    from gpufleet.report.serving import serving_report

    doc = {"scenario": "serving", "serving": r}
    write_json(out / "summary.json", doc, indent=2)
    (out / "report.html").write_text(serving_report(r, sources))
    run_dir.finish()
    if output is Output.JSON:
        emit_json(doc)
        return
    print_designs(r)
    console.print(f"wrote {out / 'summary.json'}, {out / 'report.html'}")
