"""`gpufleet topology`: the step-time arithmetic behind topology-aware placement.

``gpufleet topology explain --gpu H100-80GB --tp 8 --split 4+4`` prints, for the packed placement
and for the split one, the compute / TP / PP / DP seconds per step, the bus bandwidth each kind
of traffic got, and the slowdown.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

import typer

from gpufleet.cli.common import Output, Table, emit_json, finite, finite_positive, wide_console
from gpufleet.cli.main import app
from gpufleet.model.catalog import UnknownGpuModel, gpu_model
from gpufleet.model.fleet import Fabric, Node, NodeGroup, build_fleet
from gpufleet.model.fleet_config import MAX_GPUS_PER_NODE
from gpufleet.model.parallelism import PROFILES, Parallelism, ParallelismMismatch
from gpufleet.policies.steptime import StepBreakdown, StepKnobs, reference_placement, step_time

topology_app = typer.Typer(help="Explain what topology costs a training job.", no_args_is_help=True)
app.add_typer(topology_app, name="topology")


def _parse_split(split: str, world: int) -> list[int]:
    try:
        parts = [int(p) for p in split.split("+")]
    except ValueError:
        raise typer.BadParameter(f"expected GPUs per node joined by '+', e.g. 4+4 (got {split!r})") from None
    if any(p < 1 for p in parts) or sum(parts) != world:
        raise typer.BadParameter(f"the parts of {split!r} must be positive and add up to the world ({world})")
    return parts


def _split_placement(parts: list[int], group: NodeGroup, fabric: Fabric, across: str) -> list[Node]:
    """Ranks in order on consecutive nodes: ``parts[i]`` ranks on node i of a fleet of such nodes."""
    leaf_size = group.leaf_size if across == "node" else 1
    fleet = build_fleet([NodeGroup(nodes=len(parts), gpu=group.gpu, gpus_per_node=group.gpus_per_node,
                                   leaf_size=leaf_size, nvlink_domain_nodes=group.nvlink_domain_nodes)],
                        fabric)
    out: list[Node] = []
    for node, count in zip(fleet.nodes, parts, strict=True):
        if count > node.gpus:
            raise typer.BadParameter(f"{count} ranks do not fit on a {node.gpus}-GPU node")
        out += [node] * count
    return out


def _rows(ideal: StepBreakdown, actual: StepBreakdown) -> list[tuple[str, str, str]]:
    def sec(x: float) -> str:
        return f"{x:,.2f}"

    def bw(x: float) -> str:
        return f"{x:,.1f}" if x else "-"

    return [
        ("compute s", sec(ideal.compute_s), sec(actual.compute_s)),
        ("TP all-reduce s", sec(ideal.tp_s), sec(actual.tp_s)),
        ("  TP bus GB/s", bw(ideal.tp_gbs), bw(actual.tp_gbs)),
        ("PP bubble + p2p s", sec(ideal.pp_s), sec(actual.pp_s)),
        ("  PP link GB/s", bw(ideal.pp_gbs), bw(actual.pp_gbs)),
        ("DP exposed s", sec(ideal.dp_s), sec(actual.dp_s)),
        ("  DP bus GB/s", bw(ideal.dp_gbs), bw(actual.dp_gbs)),
        ("step s", sec(ideal.step_s), sec(actual.step_s)),
        ("slowdown", "1.00x", f"{actual.step_s / ideal.step_s:.2f}x"),
    ]


#: Largest world (tp × pp × dp) explained: the rank-by-rank model walks every group, and 16,384
#: GPUs is beyond any single training job published so far.
MAX_WORLD = 16_384


@topology_app.command()
def explain(
    gpu: Annotated[str, typer.Option(help="GPU model or alias from the catalog.")] = "H100-80GB",
    tp: Annotated[int, typer.Option(help="Tensor-parallel degree.", min=1, max=MAX_WORLD)] = 8,
    pp: Annotated[int, typer.Option(help="Pipeline-parallel degree.", min=1, max=MAX_WORLD)] = 1,
    dp: Annotated[int, typer.Option(help="Data-parallel degree.", min=1, max=MAX_WORLD)] = 1,
    split: Annotated[str, typer.Option(help="Ranks per node of the split placement, e.g. 4+4.")] = "4+4",
    across: Annotated[str, typer.Option(help="What the split crosses: node (same leaf) or leaf.")] = "node",
    model: Annotated[str, typer.Option(help=f"Training profile: {', '.join(PROFILES)}.")] = "llama-70b",
    gpus_per_node: Annotated[int, typer.Option(help="GPUs per node.", min=1, max=MAX_GPUS_PER_NODE)] = 8,
    domain_nodes: Annotated[int, typer.Option(
        help="Nodes per NVLink domain (18 for NVL72).", min=1, max=72)] = 1,
    leaf_oversubscription: Annotated[float, typer.Option(
        help="Leaf downlink:uplink ratio (1 = non-blocking).", min=1.0, max=1000.0, callback=finite)] = 1.0,
    mfu: Annotated[float, typer.Option(
        help="Compute efficiency of the kernels (model FLOPs utilisation, 0.001 to 1; below 0.1 % the "
             "step time overflows a float).",
        min=0.001, max=1.0, callback=finite_positive)] = 0.5,
    output: Annotated[Output, typer.Option(
        "--output", "-o", help="text: a table; json: one JSON document.")] = Output.TEXT,
) -> None:
    """Step-time breakdown of a job packed into NVLink domains versus split across nodes."""
    console = wide_console()
    if tp * pp * dp > MAX_WORLD:
        raise typer.BadParameter(f"tp × pp × dp = {tp * pp * dp:,} GPUs; at most {MAX_WORLD:,} are explained")
    try:
        canonical = gpu_model(gpu).name
        par = Parallelism(tp=tp, pp=pp, dp=dp)
    except (UnknownGpuModel, ParallelismMismatch) as e:
        raise typer.BadParameter(str(e)) from None
    if model not in PROFILES:
        raise typer.BadParameter(f"unknown profile {model!r}; expected one of {', '.join(PROFILES)}")
    if across not in ("node", "leaf"):
        raise typer.BadParameter(f"--across must be node or leaf (got {across!r})")
    profile = PROFILES[model]
    fabric = Fabric(leaf_oversubscription=leaf_oversubscription)
    knobs = StepKnobs(mfu=mfu)
    group = NodeGroup(nodes=1, gpu=canonical, gpus_per_node=gpus_per_node, nvlink_domain_nodes=domain_nodes)

    packed = reference_placement(par, canonical, gpus_per_node, gpus_per_node * domain_nodes)
    spread = _split_placement(_parse_split(split, par.world_size), group, fabric, across)
    ideal = step_time(packed, profile, par, fabric, knobs)
    actual = step_time(spread, profile, par, fabric, knobs)

    if output is Output.JSON:
        emit_json({"model": profile.name, "gpu": canonical, "tp": tp, "pp": pp, "dp": dp, "split": split,
                   "across": across, "mfu": mfu, "leaf_oversubscription": leaf_oversubscription,
                   "packed": asdict(ideal), "split_placement": asdict(actual),
                   "slowdown": actual.step_s / ideal.step_s})
        return
    where = "nodes, one leaf" if across == "node" else "leaves"
    table = Table(title=f"{profile.name} on {canonical}, {par}, {ideal.micro_batches} micro-batches/step")
    table.add_column("per step")
    table.add_column("packed (ideal)", justify="right")
    table.add_column(f"split {split} across {where}", justify="right")
    for row in _rows(ideal, actual):
        table.add_row(*row)
    console.print(table)
    console.print(
        f"TP: {profile.layers // pp} layers x 4 all-reduces x {ideal.micro_batches} micro-batches of "
        f"{profile.micro_batch}x{profile.seq_len}x{profile.hidden}x{profile.act_bytes} B; ring time "
        "2(n-1)/n x bytes / bus bandwidth + 2(n-1) x alpha. Compute 6 x params x tokens / (GPUs x "
        f"{gpu_model(canonical).bf16_tflops:.0f} TFLOP/s x MFU {mfu})."
    )
