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

from gpufleet.adapters.kubernetes.analyze import analyze as run_analysis
from gpufleet.adapters.kubernetes.nodes import TopologyLabels
from gpufleet.adapters.kubernetes.snapshot import load
from gpufleet.cli.common import console, fail, one_line_errors
from gpufleet.cli.main import app

k8s_app = typer.Typer(help="Read a Kubernetes cluster snapshot (kubectl -o json) and explain it.",
                      no_args_is_help=True)
app.add_typer(k8s_app, name="k8s")


class Output(StrEnum):
    TEXT = "text"
    JSON = "json"


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
) -> None:
    """Allocated vs usable GPUs, stranded GPUs and why, and for each pending pod or gang the chain
    of what holds it back, with the engine's estimated start and who blocks it."""
    if not math.isfinite(assume_runtime_h) or not 0 < assume_runtime_h <= 24 * 365:
        raise fail(f"--assume-runtime-h: expected hours in (0, 8760], got {assume_runtime_h}")
    default = TopologyLabels()
    topo = TopologyLabels(block=tuple(block_label or default.block), rack=tuple(rack_label or default.rack),
                          nvlink=tuple(nvlink_label or default.nvlink))
    snap = load(snapshot)
    if not snap.of("Node"):
        raise fail(f"{snapshot}: no Node objects; include nodes (kubectl get nodes,pods,... -o json)")
    from gpufleet.report.kubernetes import analysis_dict, html_report, text_lines

    result = run_analysis(snap, topology=topo, assume_runtime_s=assume_runtime_h * 3600)
    data = analysis_dict(result)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "analysis.json").write_text(json.dumps(data, indent=2))
        (out / "report.html").write_text(html_report(result))
    if output is Output.JSON:
        typer.echo(json.dumps(data, indent=2))
    else:
        for line in text_lines(result):
            console.print(line, highlight=False, soft_wrap=True)
        if out is not None:
            console.print(f"wrote {out / 'report.html'} and {out / 'analysis.json'}", highlight=False)


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
