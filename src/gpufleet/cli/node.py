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

from gpufleet.cli.common import Output, console, one_line_errors
from gpufleet.cli.main import app
from gpufleet.cli.outdir import claim_out_dir
from gpufleet.model.errors import InputError
from gpufleet.model.health import HealthState, IllegalTransition
from gpufleet.ops.collect import Record, collect
from gpufleet.ops.diagnose import Diagnosis, diagnose
from gpufleet.ops.health_moves import verdict_moves
from gpufleet.ops.nccl_env import check_nccl_log, check_ports, derive
from gpufleet.ops.operator_chain import bringup, chain_status, parse_labels, parse_pod_listing
from gpufleet.ops.parse_smi import parse_topo
from gpufleet.ops.parse_sys import parse_ibstat, parse_sysfs_ib
from gpufleet.ops.verdict import health_verdict

node_app = typer.Typer(
    help="Node operations: diagnose, collect, operator chain, NCCL environment.", no_args_is_help=True
)
app.add_typer(node_app, name="node")


def _health_path(d: Diagnosis, state: HealthState) -> list[str]:
    """The node's states along the health machine this verdict moves it through (model/health.py)."""
    try:
        moves = verdict_moves(state, d.layer, d.action)
    except IllegalTransition as e:
        raise typer.BadParameter(str(e), param_hint="--node-state") from None
    return [str(state)] + [str(m.to) for m in moves] if moves else []


def _print_diagnosis(d: Diagnosis, state: HealthState) -> None:
    def row(label: str, value: str) -> None:
        console.print(f"[bold]{label:<9}[/] {value}", highlight=False, soft_wrap=True)

    row("layer", d.layer)
    row("failure", d.failure)
    for why in d.incomplete:  # before the action: the verdict below is only what these files show
        row("warning", f"incomplete bundle: {why}")
    row("action", d.action + ("" if d.confident else "  (not confident: the bundle is incomplete)"))
    path = _health_path(d, state)
    if path:
        v = health_verdict(d.layer, d.action, state)
        row("health", f"{' → '.join(path)}  (fleet label {v.fleet_label}: {v.why})")
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
    output: Annotated[Output, typer.Option("--output", "-o", help="text or json")] = Output.TEXT,
    node_state: Annotated[HealthState, typer.Option(
        "--node-state", help="The node's health state now; the verdict moves it along the health "
        "state machine from there.")] = HealthState.HEALTHY,
) -> None:
    """Name the root cause of a node's GPU trouble from the outputs of its tools."""
    d = diagnose(bundle)
    if output == "json":
        doc = d.to_dict()
        path = _health_path(d, node_state)  # checks the walk first: one line on an illegal move
        doc["health"] = health_verdict(d.layer, d.action, node_state).to_dict()
        doc["health_path"] = path
        console.print_json(json.dumps(doc))
    else:
        _print_diagnosis(d, node_state)


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

    run_dir = claim_out_dir(out, "node collect")
    records = collect(out, timeout=timeout, node=node, docker_image=docker_image, progress=show)
    run_dir.finish()
    got = sum(r.status in ("ok", "failed", "timeout") and (out / r.file).exists() for r in records)
    console.print(
        f"{got} files written to {out} (MANIFEST.json lists every step); next: gpufleet node diagnose {out}",
        highlight=False,
    )


@node_app.command("operator-status")
@one_line_errors
def operator_status_cmd(
    labels: Annotated[
        Path, typer.Option(help="Node labels: `kubectl get node -o json|yaml`, key: value or key=value.")
    ],
    pods: Annotated[
        Path | None, typer.Option(help="`kubectl get pods -n gpu-operator` output (optional).")
    ] = None,
    nodes: Annotated[
        int, typer.Option(help="Nodes to bring up, for the by-hand vs operator arithmetic.")
    ] = 16,
    minutes_per_node: Annotated[float, typer.Option(help="By-hand minutes per node (assumption).")] = 60.0,
    engineers: Annotated[int, typer.Option(help="Engineers working in parallel by hand.")] = 1,
    operator_minutes: Annotated[
        float, typer.Option(help="Operator bring-up minutes, any N (assumption).")
    ] = 20.0,
    output: Annotated[Output, typer.Option("--output", "-o", help="text or json")] = Output.TEXT,
) -> None:
    """What the GPU Operator should run on this node, in what order, and what blocks it."""
    for flag, value, ok, what in (
        ("--nodes", nodes, 1 <= nodes <= 100_000, "an integer from 1 to 100000"),
        ("--engineers", engineers, 1 <= engineers <= 10_000, "an integer from 1 to 10000"),
        ("--minutes-per-node", minutes_per_node, 0 < minutes_per_node < 1e5, "minutes in (0, 100000)"),
        ("--operator-minutes", operator_minutes, 0 < operator_minutes < 1e5, "minutes in (0, 100000)"),
    ):
        if not ok:  # NaN fails every comparison, so it lands here too
            raise InputError(flag, "", f"expected {what} (got {value})")
    lab = parse_labels(_read_text(labels))
    listing = parse_pod_listing(_read_text(pods)) if pods else None
    st = chain_status(lab, listing.pods if listing else None, listing.cut if listing else "")
    b = bringup(nodes, minutes_per_node, engineers, operator_minutes)
    if output == "json":
        doc = st.to_dict() | {"bringup": b.__dict__}
        console.print_json(json.dumps(doc))
        return
    console.print(f"GPU node: {'yes' if st.gpu_node else 'no'} — {st.gpu_node_why}", highlight=False)
    for i, s in enumerate(st.steps, 1):
        mark = "run " if s.should_run else "skip"
        extra = f"  BLOCKED behind {s.blocked_by}" if s.blocked_by else ""
        extra = "  ← BLOCKS the chain" if st.blocker == s.operand else extra
        console.print(
            f"{i}. {mark} {s.operand:<22} state={s.state:<12} waits for {s.waits_for or '-':<18} "
            f"({s.why}){extra}",
            highlight=False,
            soft_wrap=True,
        )
    if st.blocker:
        blk = next(s for s in st.steps if s.operand == st.blocker)
        console.print(
            f"blocker: {blk.operand} ({blk.state}); what comes after it waits for: {blk.produces}",
            highlight=False,
            soft_wrap=True,
        )
    for p in st.problems:
        console.print(f"problem: {p}", highlight=False)
    console.print(
        f"bring-up of {b.nodes} nodes: by hand ceil({nodes}/{engineers})×{minutes_per_node:g} min = "
        f"{b.by_hand_minutes:,.0f} min; with the operator ≈ {b.operator_minutes:g} min (daemonsets run on "
        f"all nodes at once); a driver upgrade at maxParallelUpgrades=1 walks them one by one: "
        f"{b.nodes}×15 = {b.upgrade_minutes:,.0f} min",
        highlight=False,
        soft_wrap=True,
    )


def _read_text(path: Path) -> str:
    if path.is_dir():
        raise InputError(str(path), "", "is a folder, expected a file")
    if not path.exists():
        raise InputError(str(path), "", "no such file")
    if not path.is_file():
        raise InputError(str(path), "", "not a regular file (a device or pipe), expected a text file")
    raw = path.read_bytes()
    if b"\x00" in raw[:8192]:
        raise InputError(str(path), "", "binary file, expected text")
    if not raw.strip():
        raise InputError(str(path), "", "empty file, expected a tool's text output")
    return raw.decode("utf-8", errors="replace")


@node_app.command("nccl-env")
@one_line_errors
def nccl_env_cmd(
    topo: Annotated[Path, typer.Option(help="`nvidia-smi topo -m` output.")],
    nccl_log: Annotated[Path | None, typer.Option(help="An NCCL_DEBUG=INFO log to check.")] = None,
    ib: Annotated[
        Path | None, typer.Option(help="ibstat or sys-class-infiniband.txt output to check.")
    ] = None,
    nic_legend: Annotated[Path | None, typer.Option(
        help="NIC legend lines 'NIC0: mlx5_0' (as `nvidia-smi topo -m` prints under 'NIC Legend'), "
             "for a topology captured without them.")] = None,
    output: Annotated[Output, typer.Option("--output", "-o", help="text or json")] = Output.TEXT,
) -> None:
    """NCCL_IB_HCA (device names), NIC per GPU and GDR level from the topology; half-bandwidth
    failures from logs."""
    t = parse_topo(_read_text(topo).splitlines())
    if t is None:
        raise InputError(
            str(topo), "", "not an `nvidia-smi topo -m` output (no 'GPU0 … CPU Affinity' header)"
        )
    legend = None
    if nic_legend is not None:
        import re

        legend = {m.group(1): m.group(2) for ln in _read_text(nic_legend).splitlines()
                  if (m := re.match(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$", ln))}
        if not legend:
            raise InputError(str(nic_legend), "", "no 'NICn: device' lines (e.g. 'NIC0: mlx5_0')")
    env = derive(t, legend)
    hcas = env.env.get("NCCL_IB_HCA", "=").lstrip("=").split(",") if env.env else []
    if ib:
        lines = _read_text(ib).splitlines()
        ports = parse_ibstat(lines) or parse_sysfs_ib(lines)
        if not ports:
            raise InputError(str(ib), "", "no ports found (expected `ibstat` output or "
                             "/sys/class/infiniband/*/ports/*/{state,rate} path:value lines)")
        env.problems += check_ports(ports, ib.name)
    if nccl_log:
        env.problems += check_nccl_log(
            _read_text(nccl_log).splitlines(), [h for h in hcas if h], nccl_log.name
        )
    if output == "json":
        console.print_json(json.dumps(env.to_dict()))
        return
    for p in env.pairs:
        console.print(f"{p.gpu:<6} → {p.nic:<10} {p.link}", highlight=False)
    for k, v in env.env.items():
        console.print(f"export {k}='{v}'", highlight=False)
    for p in env.problems:
        console.print(f"problem: {p}", highlight=False, soft_wrap=True)
    for n in env.notes:
        console.print(f"note: {n}", highlight=False, soft_wrap=True)
