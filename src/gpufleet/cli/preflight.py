"""`gpufleet preflight`: the gate a node passes before it joins the pool or a gang starts on it.

``preflight run`` runs the checks (``--quick``: the two-minute gate; ``--long``: plus DCGM level 3)
and exits 0 only when every check ran and passed; a check that cannot run here (``skipped: why``)
holds the gate (exit 1) unless ``--waive NAME`` says it does not apply, and the waiver is recorded
in the result.
``preflight plan`` shows which checks fit the gate and the payoff arithmetic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpufleet.cli.common import Output, Table, console, emit_json, one_line_errors, working
from gpufleet.cli.main import app
from gpufleet.model.errors import InputError
from gpufleet.ops.gate_plan import plan
from gpufleet.ops.preflight import (
    CATALOG,
    LONG,
    QUICK,
    CheckResult,
    GateVerdict,
    Options,
    as_dicts,
    gate_verdict,
    run_preflight,
)

preflight_app = typer.Typer(
    help="Pre-flight gate: check a node before work lands on it.", no_args_is_help=True
)
app.add_typer(preflight_app, name="preflight")


@preflight_app.command("run")
@one_line_errors
def run_cmd(
    quick: Annotated[bool, typer.Option("--quick", help="The two-minute gate (default).")] = False,
    long: Annotated[bool, typer.Option("--long", help="The gate plus dcgmi diag -r 3 (~15 min).")] = False,
    storage: Annotated[
        list[Path] | None, typer.Option(help="A path that must be writable (repeatable).")
    ] = None,
    min_busbw: Annotated[float | None, typer.Option(help="NCCL all-reduce busbw floor, GB/s.")] = None,
    fleet_tflops: Annotated[
        float | None, typer.Option(help="Fleet median GEMM TFLOP/s for this GPU.")
    ] = None,
    fleet_hbm: Annotated[float | None, typer.Option(help="Fleet median HBM copy GB/s for this GPU.")] = None,
    min_nic_gbps: Annotated[
        float | None, typer.Option(help="Slowest acceptable RDMA port rate, Gb/s.")
    ] = None,
    waive: Annotated[list[str] | None, typer.Option(
        "--waive", metavar="CHECK",
        help="A check that cannot run on this node and does not apply to it (repeatable), e.g. nvlink "
        "on a PCIe node; without it a check that cannot run fails the gate.")] = None,
    output: Annotated[Output, typer.Option("--output", "-o", help="text or json")] = Output.TEXT,
) -> None:
    """Run the pre-flight checks on this node; exit 0 only if every check ran (or was waived) and passed."""
    if quick and long:
        raise InputError("--quick/--long", "", "expected one of them, not both")
    names = LONG if long else QUICK
    for w in waive or []:
        if w not in names:
            raise InputError("--waive", "", f"{w!r} is not a check of this gate ({', '.join(names)})")
    for name, v in (
        ("--min-busbw", min_busbw),
        ("--fleet-tflops", fleet_tflops),
        ("--fleet-hbm", fleet_hbm),
        ("--min-nic-gbps", min_nic_gbps),
    ):
        if v is not None and not (0 < v < 1e6):
            raise InputError(name, "", f"expected a positive number below 1e6 (got {v})")
    opts = Options(list(storage or []), min_busbw, fleet_tflops, fleet_hbm, min_nic_gbps)
    with working(f"running the {'long' if long else 'quick'} pre-flight checks"):
        results = run_preflight(long=long, opts=opts)
    verdict = gate_verdict(results, waive or [])
    if output == "json":
        checks = as_dicts(results)
        for c in checks:
            c["waived"] = c["name"] in verdict.waived
        emit_json({**verdict.as_dict(), "checks": checks})
    else:
        t = Table(title=f"pre-flight ({'long' if long else 'quick'})")
        for col in ("check", "status", "value", "threshold", "seconds", "detail"):
            t.add_column(col)
        colour = {"pass": "green", "fail": "red", "warn": "yellow", "skipped": "dim"}
        for r in results:
            val = f"{r.value:g} {r.unit}" if r.value is not None else ""
            thr = f"{r.threshold:g} {r.unit}" if r.threshold is not None else ""
            t.add_row(r.name, f"[{colour[r.status]}]{r.status}[/]", val, thr, f"{r.seconds:g}", r.detail)
        console.print(t)
        console.print(gate_summary(verdict, results), highlight=False, soft_wrap=True, markup=False)
    if not verdict.passed:
        raise typer.Exit(1)


def gate_summary(v: GateVerdict, results: list[CheckResult]) -> str:
    why = {r.name: r.detail.removeprefix("skipped: ") for r in results}
    parts = []
    if v.failed:
        parts.append("FAILED: " + ", ".join(v.failed))
    if v.not_run:
        parts.append("NOT RUN (fails the gate; --waive CHECK if it does not apply here): "
                     + "; ".join(f"{n} ({why[n]})" for n in v.not_run))
    if not parts and v.ran == 0:
        parts.append(f"no verdict: none of the {len(results)} checks ran (nothing here was measured)")
    head = "gate FAILED: " if parts else f"gate passed: {v.ran} of {len(results)} checks ran and passed"
    tail = [f"waived: {', '.join(v.waived)}"] if v.waived else []
    if v.unused_waivers:
        tail.append(f"unused waiver(s): {', '.join(v.unused_waivers)} ran, their results stand")
    return head + "; ".join(parts) + ("; " if tail else "") + "; ".join(tail)


@preflight_app.command("plan")
@one_line_errors
def plan_cmd(
    bad_node_rate: Annotated[
        float, typer.Option(help="Share of nodes that would break a gang start.")
    ] = 0.02,
    nodes: Annotated[int, typer.Option(help="Nodes in a gang.")] = 64,
    gpus_per_node: Annotated[int, typer.Option(help="GPUs per node.")] = 8,
    failed_start_hours: Annotated[
        float, typer.Option(help="Hours a failed start costs the whole gang (detect, drain, reschedule).")
    ] = 0.5,
    gate_seconds: Annotated[float, typer.Option(help="Time budget of the quick gate.")] = 120.0,
    output: Annotated[Output, typer.Option("--output", "-o", help="text or json")] = Output.TEXT,
) -> None:
    """Which checks fit the two-minute gate, and what the gate and the long diagnostic save."""
    p = plan(bad_node_rate, nodes, gpus_per_node, failed_start_hours, gate_seconds)
    if output == "json":
        emit_json(p.to_dict())
        return
    t = Table(title="checks (catch = assumed share of bad nodes each detects)")
    for col in ("check", "seconds", "catch", "catch/s", "in gate", "what"):
        t.add_column(col)
    gate = set(p.options[1].checks)
    for s in sorted(CATALOG.values(), key=lambda s: -s.catch / s.seconds):
        t.add_row(
            s.name,
            f"{s.seconds:g}",
            f"{s.catch:.2f}",
            f"{s.catch / s.seconds:.3f}",
            "yes" if s.name in gate else "long only",
            s.what,
        )
    console.print(t)
    n, g, h = p.nodes, p.gpus_per_node, p.failed_start_hours
    console.print(
        f"P(start fails, no gate) = 1 − (1 − {p.bad_node_rate:g})^{n} = {p.p_fail_no_gate:.3f}; "
        f"a failed start costs {n}×{g}×{h:g} = {n * g * h:,.0f} GPU-h",
        highlight=False,
    )
    o = Table(title="per gang start")
    for col in ("option", "seconds", "catch", "P(fail)", "saving GPU-h", "cost GPU-h", "net GPU-h"):
        o.add_column(col)
    for opt in p.options:
        o.add_row(
            opt.name,
            f"{opt.seconds:g}",
            f"{opt.catch:.3f}",
            f"{opt.p_fail_start:.3f}",
            f"{opt.saving_gpu_h:,.1f}",
            f"{opt.cost_gpu_h:,.1f}",
            f"{opt.net_gpu_h:,.1f}",
        )
    console.print(o)
    be = p.break_even_rate_long
    best = max(p.options, key=lambda o: o.net_gpu_h)
    long_opt = p.options[2]
    if be is None:
        tail = (
            f"the long diagnostic never nets more than the gate before a start at these figures (its "
            f"{long_opt.seconds:g} s on all {n} nodes costs more than the extra bad nodes it catches): "
            "keep it for nodes back from repair or failing the gate."
        )
    else:
        tail = (
            f"the long diagnostic nets more than the gate once the bad-node rate exceeds {be:.3f} "
            "(nodes back from repair are such a population)."
        )
    console.print(f"best per start: {best.name}; {tail}", highlight=False)
