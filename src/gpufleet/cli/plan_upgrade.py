"""`gpufleet plan upgrade`: driver-upgrade wave sizes against rollout time and capacity lost.

Each plan is worked by arithmetic (studies/upgrade_plan.py) and, with ``--simulate``, replayed in the
simulator (fleet_events/upgrade.py) with Llama 3's failure rates on the way: on ``--fleet``/``--trace``,
or on a fleet of ``--nodes`` each busy with a job that checkpoints every ``--checkpoint-minutes``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated

import typer

from gpufleet.cli.common import Output, Table, console, fail, in_range, one_line_errors
from gpufleet.cli.plan import emit, out_dir_opt, plan_app
from gpufleet.model.driver_compat import kernel_ok, placement
from gpufleet.model.health import StepDurations
from gpufleet.studies import upgrade_plan as P

#: Default wave sizes, as shares of the fleet (the GPU Operator's maxUnavailable default is 25%).
DEFAULT_SHARES = (0.01, 0.025, 0.05, 0.10, 0.25)
MAX_SIM_NODES = 4096



@plan_app.command("upgrade")
@one_line_errors
def upgrade(
    nodes: Annotated[int, typer.Option(
        help="Nodes to upgrade (ignored with --fleet: its nodes).")] = 2000,
    fleet: Annotated[Path | None, typer.Option(help="Fleet YAML (with --trace): plan for its nodes and "
                                                    "replay the trace with --simulate.")] = None,
    trace: Annotated[Path | None, typer.Option(
        help="Job trace replayed with --simulate (with --fleet).")] = None,
    wave: Annotated[list[int] | None, typer.Option(
        help="Nodes per wave; repeat for several plans. Default: 1%, 2.5%, 5%, 10%, 25% of the "
             "fleet.")] = None,
    canary: Annotated[int | None, typer.Option(
        help="Canary nodes upgraded and watched first (default 1% of the fleet, ≥ 1; 0: none).")] = None,
    max_unavailable: Annotated[float, typer.Option(
        help="Largest share of the fleet out at once (GPU Operator default 25%).")] = 0.25,
    node_minutes: Annotated[float, typer.Option(
        help="Upgrade of one node: driver + Fabric Manager, reboot, validation (≈4–10 min).")] = 8.0,
    drain_timeout: Annotated[float, typer.Option(
        help="Seconds a job gets to reach its next checkpoint before it is stopped (operator: "
             "300).")] = 300.0,
    checkpoint_minutes: Annotated[float, typer.Option(
        help="Checkpoint period of the jobs on the nodes (0: an idle fleet, no drain).")] = 30.0,
    soak_minutes: Annotated[float, typer.Option(help="Time the canary is watched before the rest.")] = 60.0,
    fail_rate: Annotated[float, typer.Option(
        help="Share of nodes that fail validation with a good driver (an assumption).")] = 0.01,
    bad_fail_rate: Annotated[float, typer.Option(
        help="Share of canary nodes that fail with a bad driver (an assumption).")] = 0.5,
    rollback_share: Annotated[float, typer.Option(
        help="Roll back when more than this share of the canary fails.")] = 0.25,
    gpus_per_node: Annotated[int, typer.Option(help="GPUs per node (ignored with --fleet).")] = 8,
    simulate: Annotated[bool, typer.Option(help="Replay every plan in the simulator, failures on.")] = False,
    seed: Annotated[int, typer.Option(help="First seed of the simulated failures and upgrade draws.")] = 0,
    seeds: Annotated[int, typer.Option(
        help="Seeds replayed per plan with --simulate: the simulated GPU-hours lost and rollout "
             "time are means with 95% intervals over them.")] = 4,
    from_driver: Annotated[str | None, typer.Option(
        help="Driver before the upgrade, e.g. 550.54.14 (with --to-driver and --image-cuda: which "
             "images may land on upgraded nodes).")] = None,
    to_driver: Annotated[str | None, typer.Option(help="Driver after the upgrade, e.g. 580.65.06.")] = None,
    image_cuda: Annotated[list[str] | None, typer.Option(
        help="CUDA version a job image was built with (repeat), e.g. 12.4, 13.0.")] = None,
    image_nccl: Annotated[list[str] | None, typer.Option(
        help="NCCL of each --image-cuda image, in the same order, e.g. 2.27.3+cuda12.9 (a bare 2.27.3: "
             "the release's build for the image's CUDA major).")] = None,
    kernel: Annotated[str | None, typer.Option(
        help="Linux kernel of the nodes, e.g. 5.15.0: a driver whose module does not support it fails "
             "validation on every node (open modules: ≥ 3.10 before R560, ≥ 4.15 from R560).")] = None,
    output: Annotated[Output, typer.Option("--output", "-o", help="text (default) or json.")] = Output.TEXT,
    out_dir: out_dir_opt("upgrade") = None,
) -> None:
    """Wave size vs total rollout time vs capacity lost, for a driver upgrade over the fleet."""
    scn = None
    if fleet is not None or trace is not None:
        if fleet is None or trace is None:
            raise fail("--fleet and --trace go together")
        from gpufleet.cli.simulate import resolve_scenario
        scn = resolve_scenario(None, fleet, trace)
        nodes = len(scn.fleet.nodes)
        gpus_per_node = max(n.gpus for n in scn.fleet.nodes)
    if not 1 <= nodes <= 1_000_000:
        raise fail(f"--nodes: expected 1 to 1,000,000 nodes, got {nodes}")
    if not 0 <= seed < 2**63 - 100:
        raise fail(f"--seed: expected 0 to 2**63 − 101, got {seed}")
    if not 1 <= seeds <= 100:
        raise fail(f"--seeds: expected 1 to 100, got {seeds}")
    if not 1 <= gpus_per_node <= 1024:
        raise fail(f"--gpus-per-node: expected 1 to 1,024, got {gpus_per_node}")
    in_range("--max-unavailable", max_unavailable, 1e-6, 1.0)
    in_range("--node-minutes", node_minutes, 0.0, 7 * 24 * 60)
    in_range("--drain-timeout", drain_timeout, 0.0, 7 * 86400)
    in_range("--checkpoint-minutes", checkpoint_minutes, 0.0, 30 * 24 * 60)
    in_range("--soak-minutes", soak_minutes, 0.0, 30 * 24 * 60)
    for name, v in (("--fail-rate", fail_rate), ("--bad-fail-rate", bad_fail_rate),
                    ("--rollback-share", rollback_share)):
        in_range(name, v, 0.0, 1.0)
    budget = max(1, math.ceil(max_unavailable * nodes))
    c = max(1, math.ceil(0.01 * nodes)) if canary is None else canary
    if not 0 <= c <= budget:
        raise fail(f"--canary: expected 0 to {budget:,} nodes (--max-unavailable of {nodes:,}), got {c}")
    waves = sorted({max(1, math.ceil(s * nodes)) for s in DEFAULT_SHARES}) if not wave else list(wave)
    for w in waves:
        if not 1 <= w <= budget:
            raise fail(f"--wave {w}: expected 1 to {budget:,} nodes (--max-unavailable "
                       f"{100 * max_unavailable:g}% of {nodes:,})")
    tau = checkpoint_minutes * 60.0
    compat_rows = []
    if from_driver is not None or to_driver is not None or image_cuda or image_nccl or kernel:
        if from_driver is None or to_driver is None or not image_cuda:
            raise fail("--from-driver, --to-driver and --image-cuda go together (--image-nccl and "
                       "--kernel need them)")
        if image_nccl and len(image_nccl) != len(image_cuda):
            raise fail(f"--image-nccl: expected one per --image-cuda ({len(image_cuda)}), got "
                       f"{len(image_nccl)}")
        ncs = list(image_nccl or [None] * len(image_cuda))
        for cv, nc in zip(image_cuda, ncs, strict=True):
            try:
                compat_rows.append(placement(cv, from_driver, to_driver, nccl=nc))
            except ValueError as e:
                opt = "--image-nccl" if str(e).startswith("nccl") else "--image-cuda"
                raise fail(f"{opt}: {str(e).split(': ', 1)[-1]}") from None
    kernel_row = None
    if kernel is not None:
        assert from_driver is not None and to_driver is not None
        try:
            (old_ok, why_old) = kernel_ok(from_driver, kernel)
            (new_ok, why_new) = kernel_ok(to_driver, kernel)
        except ValueError as e:
            raise fail(f"--kernel: {str(e).split(': ', 1)[-1]}") from None
        if not old_ok:
            raise fail(f"--kernel: {why_old}: the fleet could not run --from-driver today")
        kernel_row = {"kernel": kernel, "new_driver_ok": new_ok, "why": why_new}
    if kernel_row is not None and not kernel_row["new_driver_ok"]:
        fail_rate = 1.0  # the module does not load: every node fails validation (upgrade_stack.py)
    plans = [P.plan(nodes, w, c, node_minutes * 60, tau, drain_timeout, soak_minutes * 60, fail_rate,
                    bad_fail_rate, rollback_share) for w in waves]
    busy = nodes if tau > 0 else 0
    repair_s = StepDurations().out_of_service_s()  # a failed upgrade is repaired in place
    rows = []
    for p in plans:
        row = {"wave": p.wave, "waves": p.waves, "canary": p.canary, "rollout_hours": p.rollout_s / 3600,
               "max_nodes_out": p.max_out, "max_capacity_out_pct": 100 * p.max_out / nodes,
               "capacity_gpu_hours_out": p.node_out_s * gpus_per_node / 3600,
               "job_gpu_hours_lost": P.job_loss_s(busy, tau, drain_timeout, node_minutes * 60, p.failed_nodes,
                                                  repair_s) * gpus_per_node / 3600,
               "failed_nodes": p.failed_nodes, "p_false_rollback": p.p_false_rollback,
               "p_bad_driver_caught": p.p_bad_caught}
        rows.append(row)
    drivers = (from_driver, to_driver) if compat_rows and from_driver and to_driver else None
    if simulate:
        from gpufleet.studies.upgrade_replay import replay
        if scn is None and nodes > MAX_SIM_NODES:
            raise fail(f"--simulate: at most {MAX_SIM_NODES:,} nodes without --fleet/--trace, got {nodes:,}")
        from gpufleet.studies.estimate import t_interval
        for row, p in zip(rows, plans, strict=True):
            runs = [replay(scn, nodes, gpus_per_node, p, node_minutes * 60, drain_timeout, tau,
                           soak_minutes * 60, fail_rate, bad_fail_rate, rollback_share, sd,
                           drivers=drivers, images=tuple(image_cuda or ()), nccls=tuple(image_nccl or ()),
                           kernel=kernel) for sd in range(seed, seed + seeds)]
            row |= runs[0]  # one seed's run in full (failures, drained jobs, waiting jobs)
            for key, plan_key in (("sim_job_gpu_hours_lost", "job_gpu_hours_lost"),
                                  ("sim_rollout_hours", "rollout_hours")):
                est = t_interval(r[key] for r in runs)
                row[key] = est.mean
                row[f"{key}_ci"] = est.as_dict()
                row[f"{key}_verdict"] = est.verdict(row[plan_key])
    out = {"nodes": nodes, "gpus_per_node": gpus_per_node, "canary": c, "max_unavailable": max_unavailable,
           "node_minutes": node_minutes, "drain_timeout_s": drain_timeout,
           "checkpoint_minutes": checkpoint_minutes, "soak_minutes": soak_minutes, "plans": rows}
    if compat_rows:
        out["compatibility"] = {"from_driver": from_driver, "to_driver": to_driver, "images": compat_rows}
        if kernel_row is not None:
            out["compatibility"]["kernel"] = kernel_row
    if output is Output.JSON and out_dir is None:
        print(json.dumps(out, indent=2))
        return
    emit("upgrade", out, output, out_dir, lambda: _print(out, simulate), lambda: _page(out))


def _page(out: dict) -> str:
    from gpufleet.report.html import Section, render, table

    cols = ["wave", "waves", "rollout_hours", "max_nodes_out", "capacity_gpu_hours_out", "job_gpu_hours_lost",
            "failed_nodes"]
    sim = [k for k in ("sim_rollout_hours", "sim_capacity_gpu_hours_out", "sim_job_gpu_hours_lost",
                       "sim_failed_nodes") if out["plans"] and k in out["plans"][0]]
    rows = [[f"{r[k]:,.1f}" if isinstance(r[k], float) else f"{r[k]:,}" for k in cols + sim]
            for r in out["plans"]]
    return render("Driver upgrade waves", f"{out['nodes']:,} nodes, {out['node_minutes']:g} min each",
                  [Section("Plans", table(cols + sim, rows))])


def _print(out: dict, simulated: bool) -> None:
    t = Table(title=f"Driver upgrade of {out['nodes']:,} nodes ({out['node_minutes']:g} min each, "
                    f"drain ≤ {out['drain_timeout_s']:g} s)", header_style="bold")
    for col in ("wave", "waves", "rollout", "most out", "GPU-h out", "job GPU-h lost", "failed"):
        t.add_column(col, justify="right")
    if simulated:
        for col in ("sim rollout", "sim GPU-h out", "sim job GPU-h lost", "sim failed"):
            t.add_column(col, justify="right")
    images = simulated and "compatibility" in out  # jobs whose image runs on no node wait
    if images:
        t.add_column("sim jobs waiting", justify="right")
        t.add_column("sim held GPU-h", justify="right")
    for r in out["plans"]:
        cells = [f"{r['wave']:,}", f"{r['waves']:,}", f"{r['rollout_hours']:,.1f} h",
                 f"{r['max_nodes_out']:,} ({r['max_capacity_out_pct']:.1f}%)",
                 f"{r['capacity_gpu_hours_out']:,.0f}", f"{r['job_gpu_hours_lost']:,.0f}",
                 f"{r['failed_nodes']:.1f}"]
        if simulated:
            lost = r["sim_job_gpu_hours_lost_ci"]
            half = (lost["ci_high"] - lost["ci_low"]) / 2
            cells += [f"{r['sim_rollout_hours']:,.1f} h", f"{r['sim_capacity_gpu_hours_out']:,.0f}",
                      f"{lost['mean']:,.0f} ± {half:,.0f} ({r['sim_job_gpu_hours_lost_verdict']})",
                      f"{r['sim_failed_nodes']}"]
        if images:
            cells += [f"{r['sim_jobs_waiting_at_end']:,}", f"{r['sim_driver_wait_gpu_hours']:,.0f}"]
        t.add_row(*cells)
    console.print(t)
    first = out["plans"][0]
    if out["canary"]:
        console.print(f"canary of {out['canary']} nodes, soak {out['soak_minutes']:g} min: P(rollback with "
                      f"a good driver) = {first['p_false_rollback']:.2g}; P(a bad driver caught) = "
                      f"{first['p_bad_driver_caught']:.3f}")
    console.print("GPU-h out: every node is out once, for its drain and upgrade, whatever the wave; "
                  "the wave size trades rollout time against the capacity out at once.")
    if "compatibility" in out:
        cm = out["compatibility"]
        t = Table(title=f"Job images during the rollout {cm['from_driver']} → {cm['to_driver']}",
                  header_style="bold")
        for col in ("image CUDA", "NCCL", "old driver", "new driver", "may run on"):
            t.add_column(col)
        for r in cm["images"]:
            t.add_row(r["cuda"], r["nccl"] or "-", r["old_driver"], r["new_driver"], r["may_run_on"])
        console.print(t)
        kr = cm.get("kernel")
        if kr is not None:
            verdict = ("the new driver's module supports it" if kr["new_driver_ok"]
                       else f"{kr['why']}; every node fails validation: upgrade the kernel first")
            console.print(f"kernel {kr['kernel']}: {verdict}")
