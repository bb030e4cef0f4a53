"""`gpufleet node`: diagnose a node from a bundle of command outputs, collect such a bundle,
read the GPU Operator chain, derive the NCCL environment.

``gpufleet node diagnose BUNDLE_DIR`` walks the layers in isolation order (PCI → driver → GPU state →
fabric → toolkit → plugin → Kubernetes → RDMA → thermal) and names the first layer with a current
fault, the lines that show it, the action, and the command that confirms it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from gpufleet.cli.common import console, one_line_errors
from gpufleet.cli.main import app
from gpufleet.ops.collect import Record, collect
from gpufleet.ops.diagnose import Diagnosis, diagnose
from gpufleet.ops.verdict import health_event

node_app = typer.Typer(
    help="Node operations: diagnose, collect, operator chain, NCCL environment.", no_args_is_help=True
)
app.add_typer(node_app, name="node")


def _check_output(output: str) -> None:
    if output not in ("text", "json"):
        raise typer.BadParameter(f"expected 'text' or 'json' (got {output!r})", param_hint="--output")


def _print_diagnosis(d: Diagnosis) -> None:
    def row(label: str, value: str) -> None:
        console.print(f"[bold]{label:<9}[/] {value}", highlight=False, soft_wrap=True)

    row("layer", d.layer)
    row("failure", d.failure)
    row("action", d.action)
    event = health_event(d.layer, d.action)
    if event.events:
        row("health", f"{' → '.join(event.events)}  ({event.why})")
    if d.evidence:
        console.print("[bold]evidence[/]", highlight=False)
        for e in d.evidence:
            console.print(f"  {e}", highlight=False, soft_wrap=True, markup=False)
    if d.confirm:
        row("confirm", d.confirm)
    if d.healthy_layers:
        row("healthy", ", ".join(d.healthy_layers))
    if d.downstream_layers:
        row("after", ", ".join(d.downstream_layers) + "  (depend on the root cause: re-check after the fix)")
    for title, items in (("collateral", d.collateral), ("notes", d.notes), ("skipped", d.skipped)):
        if items:
            console.print(f"[bold]{title}[/]", highlight=False)
            for it in items:
                console.print(f"  {it}", highlight=False, soft_wrap=True, markup=False)


@node_app.command("diagnose")
@one_line_errors
def diagnose_cmd(
    bundle: Annotated[
        Path, typer.Argument(help="Folder of command outputs from one node (or one log file).")
    ],
    output: Annotated[str, typer.Option("--output", "-o", help="text or json")] = "text",
) -> None:
    """Name the root cause of a node's GPU trouble from the outputs of its tools."""
    _check_output(output)
    d = diagnose(bundle)
    if output == "json":
        doc = d.to_dict()
        doc["health_event"] = health_event(d.layer, d.action).to_dict()
        console.print_json(json.dumps(doc))
    else:
        _print_diagnosis(d)


@node_app.command("collect")
@one_line_errors
def collect_cmd(
    out: Annotated[Path, typer.Option("--out", help="Folder to write the bundle into (created).")],
    timeout: Annotated[float, typer.Option(help="Seconds allowed per command.")] = 20.0,
    node: Annotated[
        str | None, typer.Option(help="Kubernetes node name (default: this host's name).")
    ] = None,
    docker_image: Annotated[
        str | None, typer.Option(help="Also run `docker run --gpus all IMAGE nvidia-smi` (pulls the image).")
    ] = None,
) -> None:
    """Run the diagnosis commands on this node and write their outputs as a bundle."""

    def show(r: Record) -> None:
        mark = {"ok": "[green]ok[/]", "absent": "[dim]absent[/]", "skipped": "[dim]skipped[/]"}.get(
            r.status, f"[yellow]{r.status}[/]"
        )
        note = f"  ({r.note})" if r.note else ""
        console.print(f"{mark:<22} {r.file:<44}{note}", highlight=False, soft_wrap=True)

    records = collect(out, timeout=timeout, node=node, docker_image=docker_image, progress=show)
    got = sum(r.status in ("ok", "failed", "timeout") and (out / r.file).exists() for r in records)
    console.print(
        f"{got} files written to {out} (MANIFEST.json lists every step); next: gpufleet node diagnose {out}",
        highlight=False,
    )
