"""`gpufleet k8s`: a Kubernetes cluster's objects in, the engine's reading out.

    kubectl get nodes,pods,podgroups,resourceclaims,resourceslices,deviceclasses,priorityclasses \\
        -A -o json > snapshot.json
    gpufleet k8s analyze snapshot.json [--output json] [--out DIR]
"""

from __future__ import annotations

import json
import math
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from gpufleet.adapters.kubernetes.analyze import analyze as run_analysis
from gpufleet.adapters.kubernetes.nodes import TopologyLabels
from gpufleet.adapters.kubernetes.snapshot import load
from gpufleet.cli.common import console, err_console, fail, one_line_errors, working
from gpufleet.cli.main import app
from gpufleet.cli.outdir import claim_out_dir
from gpufleet.report.jsonsafe import dumps, write_json

k8s_app = typer.Typer(help="Read a Kubernetes cluster snapshot (kubectl -o json) and explain it.",
                      no_args_is_help=True)
app.add_typer(k8s_app, name="k8s")


class Output(StrEnum):
    TEXT = "text"
    JSON = "json"


class DefragMethod(StrEnum):
    MILP = "milp"
    GREEDY = "greedy"


@k8s_app.command("analyze")
@one_line_errors
def analyze(
    snapshot: Annotated[Path, typer.Argument(
        help="kubectl get nodes,pods,podgroups,... -A -o json output: one file, or a folder of them")],
    output: Annotated[Output, typer.Option("--output", "-o", help="text or json on stdout")] = Output.TEXT,
    out: Annotated[Path | None, typer.Option(
        "--out", help="folder for report.html and analysis.json")] = None,
    assume_runtime_h: Annotated[float, typer.Option(
        "--assume-runtime-h",
        help="hours a pod runs (Kubernetes records none); start estimates use it")] = 24.0,
    rack_label: Annotated[list[str] | None, typer.Option(
        "--rack-label", help="node label naming the rack (our leaf); repeatable")] = None,
    block_label: Annotated[list[str] | None, typer.Option(
        "--block-label", help="node label naming the block (our spine); repeatable")] = None,
    nvlink_label: Annotated[list[str] | None, typer.Option(
        "--nvlink-label", help="node label naming the NVLink domain (default nvidia.com/gpu.clique)")] = None,
    defrag: Annotated[bool, typer.Option(
        help="plan moves of running gangs for the whole cluster (slower on large clusters: "
        "bench/README.md)")] = True,
    defrag_method: Annotated[DefragMethod, typer.Option(
        "--defrag-method", help="milp: most GPUs started, then least GPU-hours moved, proven by "
        "the solver (10 s limit, greedy fallback); greedy: cheapest gang per GPU, step by step")
    ] = DefragMethod.MILP,
    now: Annotated[str | None, typer.Option(
        "--now", help="the time estimates count from, ISO 8601 (e.g. 2025-03-19T23:18:09Z); default: "
        "the latest heartbeat or pod timestamp in the snapshot, printed with its source")] = None,
) -> None:
    """Allocated vs usable GPUs, stranded GPUs and why, and for each pending pod or gang the chain
    of what holds it back, with the engine's estimated start and who blocks it."""
    if not math.isfinite(assume_runtime_h) or not 0 < assume_runtime_h <= 24 * 365:
        raise fail(f"--assume-runtime-h: expected hours in (0, 8760], got {assume_runtime_h}")
    t_now = _iso_time("--now", now) if now is not None else None
    default = TopologyLabels()
    topo = TopologyLabels(block=tuple(block_label or default.block), rack=tuple(rack_label or default.rack),
                          nvlink=tuple(nvlink_label or default.nvlink))
    snap = load(snapshot)
    if not snap.of("Node"):
        raise fail(f"{snapshot}: no Node objects; include nodes (kubectl get nodes,pods,... -o json)")
    from gpufleet.report.kubernetes import analysis_dict, html_report, text_lines

    with working(f"analysing {len(snap.of('Node')):,} nodes and {len(snap.of('Pod')):,} pods "
                 "(engine run, stranding, defrag plan)"):
        result = run_analysis(snap, topology=topo, assume_runtime_s=assume_runtime_h * 3600, defrag=defrag,
                              defrag_method=defrag_method.value, now=t_now)
    data = analysis_dict(result)
    if out is not None:
        run_dir = claim_out_dir(out, "k8s analyze")
        (out / "analysis.json").write_text(json.dumps(data, indent=2))
        (out / "report.html").write_text(html_report(result))
        run_dir.finish()
    if output is Output.JSON:
        typer.echo(json.dumps(data, indent=2))
    else:
        for line in text_lines(result):
            console.print(line, highlight=False, soft_wrap=True)
        if out is not None:
            console.print(f"wrote {out / 'report.html'} and {out / 'analysis.json'}", highlight=False)


def _iso_time(flag: str, text: str) -> float:
    """An ISO 8601 time with a zone (``Z`` or an offset) as Unix seconds, or one line, exit 2."""
    from datetime import datetime

    try:
        t = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise fail(f"{flag}: expected an ISO 8601 time such as 2025-03-19T23:18:09Z, got {text!r}") from None
    if t.tzinfo is None:
        raise fail(f"{flag}: {text!r} has no time zone; add Z (UTC) or an offset such as +02:00")
    return t.timestamp()


@k8s_app.command("export-claims")
@one_line_errors
def export_claims_cmd(
    trace: Annotated[Path, typer.Argument(help="our jobs, one JSON object per line (gpufleet trace JSONL)")],
    out: Annotated[Path | None, typer.Option("--out", help="file for the List of templates (default stdout)")]
    = None,
    namespace: Annotated[str, typer.Option(help="namespace of the templates")] = "default",
    output: Annotated[Output, typer.Option("--output", "-o", help="json, or text for YAML")] = Output.JSON,
) -> None:
    """Write a DRA ResourceClaimTemplate (resource.k8s.io/v1) for every GPU pod set of our jobs."""
    import yaml

    from gpufleet.adapters.kubernetes.export import dns_name, export_claims
    from gpufleet.traces.jsonl import read_jobs

    if dns_name(namespace) != namespace:
        raise fail(f"--namespace: expected a DNS label (a-z, 0-9, -), got {namespace!r}")
    doc, notes = export_claims(read_jobs(trace), namespace)
    text = json.dumps(doc, indent=2) if output is Output.JSON else yaml.safe_dump(doc, sort_keys=True)
    if out is None:
        typer.echo(text)
    else:
        out.write_text(text)
        console.print(f"wrote {out}: {len(doc['items'])} ResourceClaimTemplate(s)", highlight=False)
    for n in notes:
        console.print(f"note: {n}", highlight=False)


@k8s_app.command("scheduler")
@one_line_errors
def scheduler_cmd(
    name: Annotated[str, typer.Option("--name", help="schedulerName of the pods this scheduler places")]
    = "gpufleet",
    kubeconfig: Annotated[str | None, typer.Option(
        "--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube/config)")] = None,
    identity: Annotated[str, typer.Option(help="this replica's name in the leader Lease")] = "gpufleet-0",
    lease_namespace: Annotated[str, typer.Option(help="namespace of the leader Lease")] = "kube-system",
    interval_s: Annotated[float, typer.Option("--interval-s", help="seconds between cycles")] = 5.0,
    assume_runtime_h: Annotated[float, typer.Option(
        "--assume-runtime-h", help="hours a pod runs, for start estimates")] = 24.0,
    metrics_port: Annotated[int, typer.Option(help="port for /metrics (0: none)")] = 0,
    health_port: Annotated[int, typer.Option(
        help="port for /healthz: 200 while cycles succeed, 503 after an API or connection error (0: none)")]
    = 0,
    once: Annotated[bool, typer.Option("--once", help="run one cycle, print what it did, exit")] = False,
    policy: Annotated[str, typer.Option(
        "--policy", help="engine profile that decides the gangs (gpufleet simulate --help lists them)")]
    = "gang-conservative",
) -> None:
    """Run gpufleet as a secondary scheduler: bind whole gangs of pods with schedulerName NAME,
    explain the others as Events and PodScheduled conditions."""
    from gpufleet.policies.registry import PROFILES
    if policy not in PROFILES:
        raise fail(f"--policy {policy!r}: expected one of {', '.join(PROFILES)}")
    if not math.isfinite(interval_s) or not 0.1 <= interval_s <= 3600:
        raise fail(f"--interval-s: expected seconds in [0.1, 3600], got {interval_s}")
    if not math.isfinite(assume_runtime_h) or not 0 < assume_runtime_h <= 24 * 365:
        raise fail(f"--assume-runtime-h: expected hours in (0, 8760], got {assume_runtime_h}")
    for flag, port in (("--metrics-port", metrics_port), ("--health-port", health_port)):
        if not 0 <= port <= 65535:
            raise fail(f"{flag}: expected 0..65535, got {port}")
    try:
        from gpufleet.live.k8s_scheduler import KubeScheduler, SchedulerConfig
        from gpufleet.live.kube_api import OfficialKubeApi
    except ImportError as e:
        raise fail(f"the scheduler needs the extra: pip install 'gpufleet[k8s]' ({e.name} missing)") from None
    try:
        api = OfficialKubeApi(kubeconfig)
    except Exception as e:  # the client raises ConfigException and friends
        raise fail(f"cannot load a Kubernetes configuration: {str(e).splitlines()[0]}") from None
    sched = KubeScheduler(api, SchedulerConfig(name=name, identity=identity, lease_namespace=lease_namespace,
                                               assume_runtime_s=assume_runtime_h * 3600, profile=policy))
    if metrics_port and sched.metrics.registry is not None:
        from prometheus_client import start_http_server
        start_http_server(metrics_port, registry=sched.metrics.registry)
    if health_port:
        from gpufleet.live.health import serve_health
        serve_health(sched.health, health_port)
    if once:
        r = sched.tick()
        console.print(f"leader: {r.leader}; bound {len(r.bound)} pod(s); {len(r.waiting)} waiting; "
                      f"{len(r.rolled_back)} gang(s) rolled back", highlight=False)
        for pod, node in r.bound:
            console.print(f"bound {pod} -> {node}", highlight=False)
        for pod, why in sorted(r.waiting.items()):
            console.print(f"waiting {pod}: {why}", highlight=False)
        return
    sched.run(interval_s, stop=lambda: False)


@k8s_app.command("hybrid")
@one_line_errors
def hybrid_cmd(
    nodes: Annotated[int, typer.Option(help="nodes in the fleet (8 GPUs each)")] = 32,
    days: Annotated[float, typer.Option(help="days of arrivals")] = 3.0,
    slurm_share: Annotated[float, typer.Option(help="static split: fraction of nodes in the Slurm partition")]
    = 0.6,
    training_load: Annotated[float, typer.Option(help="offered GPU load of training gangs (0-1)")] = 0.45,
    service_load: Annotated[float, typer.Option(help="mean offered GPU load of services (0-1)")] = 0.30,
    drain_min: Annotated[float, typer.Option(
        help="minutes to hand a drained node to the other side (reboot, kubelet/slurmd join); "
        "15 is an assumption, no sourced figure")] = 15.0,
    rebalance_min: Annotated[float, typer.Option(help="minutes between dynamic-split decisions")] = 30.0,
    seed: Annotated[int, typer.Option(help="workload seed")] = 0,
    output: Annotated[Output, typer.Option("--output", "-o", help="text or json")] = Output.TEXT,
    out: Annotated[Path | None, typer.Option(
        "--out", help="directory for summary.json and report.html (default: none written)")] = None,
    progress: Annotated[bool, typer.Option(help="show which arm is being simulated (stderr)")] = True,
) -> None:
    """Slurm partition for training gangs + Kubernetes pool for services on one fleet: static split,
    dynamic split (nodes lent on demand, each move drained) and all-Kubernetes, same workload."""
    from gpufleet.cli.common import Table
    from gpufleet.studies.hybrid import ARMS, HybridSpec, k8s_limits, run_arm, workload

    checks = [(1 <= nodes <= 512, f"--nodes: expected 1..512, got {nodes}"),
              (math.isfinite(days) and 0 < days <= 30, f"--days: expected (0, 30], got {days}"),
              (math.isfinite(slurm_share) and 0 <= slurm_share <= 1,
               f"--slurm-share: expected 0..1, got {slurm_share}"),
              (math.isfinite(training_load) and 0 <= training_load <= 2,
               f"--training-load: expected 0..2, got {training_load}"),
              (math.isfinite(service_load) and 0 <= service_load <= 2,
               f"--service-load: expected 0..2, got {service_load}"),
              (math.isfinite(drain_min) and 0 <= drain_min <= 1440,
               f"--drain-min: expected 0..1440, got {drain_min}"),
              (math.isfinite(rebalance_min) and 1 <= rebalance_min <= 1440,
               f"--rebalance-min: expected 1..1440, got {rebalance_min}"),
              (0 <= seed < 2**32, f"--seed: expected 0..{2**32 - 1} (numpy's seed range), got {seed}")]
    for ok, msg in checks:
        if not ok:
            raise fail(msg)
    spec = HybridSpec(nodes=nodes, days=days, slurm_share=slurm_share, training_load=training_load,
                      service_load=service_load, drain_s=drain_min * 60, rebalance_s=rebalance_min * 60,
                      seed=seed)
    run_dir = claim_out_dir(out, "k8s hybrid") if out is not None else None
    result: dict[str, dict[str, float]] = {}
    with Progress(TextColumn("[bold]{task.description:<16}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err_console, disable=not progress) as bar:
        task = bar.add_task("generating", total=len(ARMS))
        jobs = workload(spec)
        for arm in ARMS:
            bar.update(task, description=arm)
            result[arm] = run_arm(spec, jobs, arm).summary()
            bar.advance(task)
    allk = result["all-k8s"]
    limits = k8s_limits(nodes, int(allk["k8s_peak_pods"]), int(allk["k8s_peak_pods_per_node"]))
    doc = {"spec": spec.__dict__, "arms": result, "all_k8s_limits": limits}
    if out is not None and run_dir is not None:
        from gpufleet.report.html import Section, render, table

        write_json(out / "summary.json", doc, indent=2)
        rows = [[key, *_cells(result, key)] for key in next(iter(result.values()))]
        (out / "report.html").write_text(render(
            "Slurm partition + Kubernetes pool", f"{nodes} nodes x 8 GPUs, {days:g} days, seed {seed}",
            [Section("Arms side by side", table(["", *result], rows))]))
        run_dir.finish()
    if output is Output.JSON:
        typer.echo(dumps(doc, indent=2))
        return
    table = Table(title=f"{nodes} nodes x 8 GPUs, {days:g} days, static split {slurm_share:.0%} Slurm")
    table.add_column("")
    for arm in result:
        table.add_column(arm, justify="right")
    for key in next(iter(result.values())):
        table.add_row(key, *_cells(result, key))
    console.print(table)
    u, lim = limits["used"], limits["limits"]
    console.print(f"all-Kubernetes as one cluster: {u['nodes']} of {lim['nodes']} nodes, peak {u['pods']} of "
                  f"{lim['pods']} pods, {u['pods_per_node']} of {lim['pods_per_node']} pods per node "
                  f"(documented limits, {limits['source']}); "
                  + ("within them" if not limits["breached"] else f"breaks: {', '.join(limits['breached'])}")
                  + ". Neither stack has an operating cost in this model (docs/kubernetes.md).",
                  highlight=False)
    if out is not None:
        console.print(f"wrote {out / 'summary.json'}, {out / 'report.html'}", highlight=False)


def _cells(result: dict[str, dict[str, float]], key: str) -> list[str]:
    return [f"{r[key]:.3f}" if isinstance(r[key], float) else str(r[key]) for r in result.values()]


def simulate_hybrid(args: list[str], seed: int | None, output: str, out: Path | None = None,
                    progress: bool = True) -> None:
    """``gpufleet simulate hybrid [OPTIONS]``: the same command as ``gpufleet k8s hybrid``.
    ``simulate`` parses its own ``--seed``/``--output`` first, so those are passed on; every other
    option is left to ``hybrid``, which checks it (a bad one: one line, exit 2; Typer prints usage
    errors itself, through common.plain_cli_style, and exits 2)."""
    import click

    forwarded = [*args, *(["--seed", str(seed)] if seed is not None else []),
                 *(["--output", output] if output != "text" else []),
                 *(["--out", str(out)] if out is not None else []),
                 *([] if progress and output == "text" else ["--no-progress"])]
    command = typer.main.get_command(k8s_app).commands["hybrid"]   # type: ignore[attr-defined]
    try:
        rc = command.main(args=forwarded, prog_name="gpufleet simulate hybrid", standalone_mode=False)
    except click.ClickException as e:
        raise fail(f"simulate hybrid: {e.format_message()} (its options: gpufleet k8s hybrid --help)") \
            from None
    if rc:   # a typer.Exit(code) from hybrid comes back as a return value here
        raise typer.Exit(rc)
