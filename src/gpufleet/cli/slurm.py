"""`gpufleet slurm`: a real Slurm cluster in (configs, history, live queue) and out (configs).

    gpufleet slurm import-conf slurm.conf [--gres gres.conf] [--topology topology.conf] --out fleet.yaml
    gpufleet slurm export-conf fleet.yaml --out DIR
    gpufleet slurm import-sacct sacct.txt --out trace.jsonl|trace.csv
    gpufleet slurm explain JOBID [--slurm-conf PATH | --from CAPTURE_DIR]
    gpufleet slurm compare --slurm-conf PATH [--jobs 200] --out DIR   (real Slurm vs our simulator)

A fleet read from Slurm is written in the explicit per-node YAML form (``fleet: {nodes: [...]}``):
node names, leaves and NVLink domains from a real cluster rarely fit the compact ``groups`` form.
"""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from gpufleet.adapters.slurm.conf import read_text
from gpufleet.adapters.slurm.controller import NoController, check_controller
from gpufleet.adapters.slurm.explain import explain as explain_job
from gpufleet.adapters.slurm.fleet_conf import read_fleet, write_fleet
from gpufleet.adapters.slurm.queue import QueueSnapshot
from gpufleet.adapters.slurm.reader import SlurmCli, SlurmCommandError, SlurmReader, build_snapshot
from gpufleet.cli.common import console, err_console, fail, one_line_errors, working
from gpufleet.cli.main import app
from gpufleet.cli.outdir import claim_out_dir
from gpufleet.model.errors import InputError
from gpufleet.model.fleet import Fleet
from gpufleet.model.fleet_config import load_fleet
from gpufleet.traces.sacct_csv import write_csv
from gpufleet.traces.slurm_sacct import read_sacct, write_jsonl

slurm_app = typer.Typer(help="Read a Slurm cluster's configs, history and queue; write configs.",
                        no_args_is_help=True)
app.add_typer(slurm_app, name="slurm")

#: Each compare job is one sbatch on the emulated cluster (≈45 jobs/s launched): 10,000 is minutes.
MAX_COMPARE_JOBS = 10_000
NODE_FIELDS = ("id", "gpu", "gpus", "cpus", "memory_gb", "zone", "spine", "leaf", "nvlink_domain", "health",
               "weight")


def fleet_to_yaml(fleet: Fleet) -> dict[str, Any]:
    """The per-node fleet form: one mapping per node, fabric as in the compact form."""
    fab = fleet.fabric
    return {"fleet": {
        "name": fleet.name,
        "fabric": {"nic_gbps": fab.nic_gbps, "leaf_oversubscription": fab.leaf_oversubscription,
                   "spine_oversubscription": fab.spine_oversubscription},
        "nodes": [{f: (str(getattr(n, f))) if f in ("id", "health") else getattr(n, f) for f in NODE_FIELDS}
                  for n in fleet.nodes],
    }}


@slurm_app.command("import-conf")
@one_line_errors
def import_conf(
    slurm_conf: Annotated[Path, typer.Argument(help="slurm.conf with NodeName= and PartitionName= lines")],
    out: Annotated[Path, typer.Option("--out", help="fleet YAML to write")],
    gres: Annotated[Path | None, typer.Option(
        "--gres", help="gres.conf (default: the one next to slurm.conf)")] = None,
    topology: Annotated[list[Path] | None, typer.Option(
        "--topology", help="topology.conf, tree or block form; repeat for both (default: "
        "topology.conf and topology-block.conf next to slurm.conf)")] = None,
    gpu: Annotated[str | None, typer.Option(
        "--gpu", help="GPU model for nodes with an untyped gpu GRES")] = None,
) -> None:
    """Read slurm.conf (+ gres.conf, topology.conf) into a gpufleet fleet file."""
    if topology is None:
        beside = (slurm_conf.with_name("topology.conf"), slurm_conf.with_name("topology-block.conf"))
        topology = [p for p in beside if p.is_file()]
    result = read_fleet(slurm_conf, gres, topology, default_gpu=gpu)
    out.write_text(yaml.safe_dump(fleet_to_yaml(result.fleet), sort_keys=False))
    for note in result.notes:
        console.print(f"note: {note}", highlight=False)
    fleet = result.fleet
    console.print(f"wrote {out}: {len(fleet)} nodes, {fleet.total_gpus} GPUs, "
                  f"{len({n.leaf for n in fleet.nodes})} leaves", highlight=False)


@slurm_app.command("export-conf")
@one_line_errors
def export_conf(
    fleet_file: Annotated[Path, typer.Argument(help="fleet YAML (compact groups or per-node form)")],
    out: Annotated[Path, typer.Option("--out", help="directory for slurm.conf, gres.conf, topology.conf")],
    controller: Annotated[str, typer.Option(help="SlurmctldHost value")] = "slurmctld",
) -> None:
    """Write slurm.conf, gres.conf and topology.conf (and topology-block.conf) for a fleet."""
    fleet = load_fleet(fleet_file)
    run_dir = claim_out_dir(out, "slurm export-conf")
    for path in write_fleet(fleet, out, controller=controller):
        console.print(f"wrote {path}", highlight=False)
    run_dir.finish()


@slurm_app.command("import-sacct")
@one_line_errors
def import_sacct(
    sacct_file: Annotated[Path, typer.Argument(help="output of sacct --parsable2 (-P) with a header")],
    out: Annotated[Path, typer.Option("--out", help="trace to write: .jsonl, or .csv (the same jobs "
                                      "as a table; simulate --trace reads both)")],
) -> None:
    """Turn Slurm job history into a gpufleet trace (job steps skipped, unstarted jobs listed)."""
    if out.suffix not in (".jsonl", ".csv"):
        raise fail(f"{out}: --out: expected a .jsonl or .csv file name")
    trace = read_sacct(sacct_file)
    (write_csv if out.suffix == ".csv" else write_jsonl)(trace, out)
    for left in trace.not_started + trace.unfinished:
        err_console.print(f"left out: job {left.job_id} ({left.state}): {left.why}", highlight=False,
                          markup=False)
    err_console.print(f"wrote {out}: {trace.summary()}", highlight=False)


@slurm_app.command("import-tenancy")
@one_line_errors
def import_tenancy(
    slurm_conf: Annotated[Path, typer.Argument(
        help="the cluster's slurm.conf (fleet, partitions, half-life)")],
    out: Annotated[Path, typer.Option("--out", help="YAML file to write, with one 'tenancy:' section")],
    assoc: Annotated[Path | None, typer.Option(
        help="saved 'sacctmgr -P show assoc format=Cluster,Account,ParentName,User,Share,GrpTRES,QOS' "
        "(default: ask sacctmgr)")] = None,
    qos: Annotated[Path | None, typer.Option(
        help="saved 'sacctmgr -P show qos format=Name,Priority,Preempt,PreemptMode,GrpTRES,MaxTRESPU' "
        "(default: ask sacctmgr)")] = None,
    cluster: Annotated[str | None, typer.Option(
        help="the cluster's rows to read (default: slurm.conf's ClusterName)")] = None,
) -> None:
    """Accounts (fair share, GPU caps), QOS and partitions of a Slurm cluster as a tenancy config."""
    from gpufleet.adapters.slurm.compare_run import read_cluster
    from gpufleet.adapters.slurm.tenancy_import import ASSOC_FORMAT, QOS_FORMAT, tenancy_from_slurm
    from gpufleet.model.tenancy_config import TenancySpec

    fleet, conf = read_cluster(slurm_conf)
    cli = SlurmCli(str(slurm_conf))
    try:
        assoc_text = read_text(assoc) if assoc else cli(["sacctmgr", "-P", "show", "assoc",
                                                         f"format={ASSOC_FORMAT}"])
        qos_text = read_text(qos) if qos else cli(["sacctmgr", "-P", "show", "qos", f"format={QOS_FORMAT}"])
    except SlurmCommandError as e:
        raise fail(f"{e}; or pass --assoc and --qos files") from None
    got = tenancy_from_slurm(assoc_text, qos_text, conf, fleet, str(assoc or "sacctmgr assoc"),
                             str(qos or "sacctmgr qos"), cluster=cluster)
    spec = TenancySpec.model_validate(got.spec)
    problem = spec.problem()
    if problem is not None:
        raise fail(f"{out}: {problem[0]}: {problem[1]}")
    out.write_text(yaml.safe_dump({"tenancy": got.spec}, sort_keys=False))
    for note in got.notes:
        console.print(f"note: {note}", highlight=False, soft_wrap=True)
    console.print(f"wrote {out}: {len(spec.tenants)} tenants, {len(spec.cohorts)} cohorts, "
                  f"{len(spec.priority_classes)} priority classes", highlight=False, soft_wrap=True)


CAPTURED = ("squeue.json", "scontrol-nodes.txt", "squeue-start.txt", "scontrol-jobs.txt")


def captured_snapshot(directory: Path) -> QueueSnapshot:
    """A snapshot from files saved as tests/data/slurm/capture.sh saves them (the last two optional)."""
    texts = []
    for i, name in enumerate(CAPTURED):
        path = directory / name
        if not path.is_file() and i >= 2:
            texts.append("")
            continue
        texts.append(read_text(path))
    stamp = directory / "captured-at.txt"
    try:
        taken_at = datetime.fromisoformat(read_text(stamp).strip()).timestamp() if stamp.is_file() \
            else (directory / CAPTURED[0]).stat().st_mtime
    except ValueError:
        raise InputError(str(stamp), "", "expected an ISO time (date -Iseconds)") from None
    squeue_json, nodes, start, jobs = texts
    return build_snapshot(squeue_json, nodes, start, jobs, taken_at=taken_at)


@slurm_app.command("explain")
@one_line_errors
def explain(
    job_id: Annotated[str, typer.Argument(help="Slurm job id (array task as 123_4)")],
    slurm_conf: Annotated[str | None, typer.Option(
        "--slurm-conf", envvar="SLURM_CONF", help="slurm.conf of the cluster to ask")] = None,
    timeout: Annotated[float, typer.Option(help="seconds to wait for each Slurm command")] = 30.0,
    from_dir: Annotated[Path | None, typer.Option(
        "--from", help="explain from captured output (squeue.json, scontrol-nodes.txt, ...) in DIR")] = None,
) -> None:
    """Why a job waits, what blocks it and when it would start (Slurm's plan and the engine's)."""
    from gpufleet.adapters.slurm.compare_run import read_cluster
    from gpufleet.adapters.slurm.controller import conf_path

    if not math.isfinite(timeout) or not 0 < timeout <= 3600:
        raise fail(f"--timeout: expected seconds in (0, 3600], got {timeout}")
    reader = None
    try:
        if from_dir is not None:
            snapshot = captured_snapshot(from_dir)
            cluster_conf = from_dir / "slurm.conf"
        else:
            check_controller(slurm_conf)
            reader = SlurmReader(SlurmCli(slurm_conf, timeout))
            snapshot = reader.snapshot()
            cluster_conf = conf_path(slurm_conf)
    except (SlurmCommandError, NoController) as e:
        raise fail(str(e)) from None
    if snapshot.job(job_id) is None:
        line, found = finished_line(reader, job_id)
        if not found:
            raise fail(line)
        console.print(line, highlight=False, markup=False, soft_wrap=True)
        return
    fleet, conf = read_cluster(cluster_conf) if cluster_conf.is_file() else (None, None)
    text = explain_job(snapshot, job_id, fleet, conf).text()
    console.print(text, highlight=False, markup=False, soft_wrap=True)


def finished_line(reader: SlurmReader | None, job_id: str) -> tuple[str, bool]:
    """One line for a job that is not in the queue: how it ended, from sacct when we can ask
    (True), or where to look (False: an error)."""
    if reader is not None:
        try:
            trace = reader.sacct([job_id])
        except (SlurmCommandError, InputError):
            trace = None
        if trace is not None:
            for rec in trace.records:
                if rec.job_id == job_id:
                    return (f"job {job_id}: not in the queue: it ended {rec.state} after "
                            f"{(rec.end or rec.start or 0) - (rec.start or 0):.0f} s on "
                            f"{rec.node_list or '-'} (sacct -j {job_id})"), True
            for left in (*trace.unfinished, *trace.not_started):
                if left.job_id == job_id:
                    return f"job {job_id}: not in the queue; sacct says {left.state}: {left.why}", True
    return f"job {job_id}: not in the queue (finished jobs: see sacct -j {job_id})", False


@slurm_app.command("compare")
@one_line_errors
def compare(
    out: Annotated[Path, typer.Option("--out", help="directory for report.html and compare.json")],
    slurm_conf: Annotated[str | None, typer.Option(
        "--slurm-conf", envvar="SLURM_CONF",
        help="slurm.conf of the cluster (gres.conf, topology.conf beside it)")] = None,
    jobs: Annotated[int, typer.Option(help="sleep jobs to submit")] = 200,
    seed: Annotated[int, typer.Option(help="workload seed")] = 1,
    account: Annotated[str, typer.Option(help="Slurm account every job is charged to")] = "research",
    backfill: Annotated[str, typer.Option(help="our side: conservative (Slurm's) or easy")] = "conservative",
    node_choice: Annotated[str, typer.Option(
        help="our side's nodes: best-fit (gang best fit) or cons-tres (Slurm's lowest-switch best fit, "
        "then slurm.conf order)")] = "best-fit",
    timeout: Annotated[float, typer.Option(help="seconds to wait for the jobs to finish")] = 300.0,
) -> None:
    """Run a workload on a real Slurm and in our simulator; report how close the schedules are."""
    import json
    import shlex
    import sys
    import time

    from gpufleet.adapters.slurm.compare_run import compare_workload, read_cluster, replay, run_on_slurm
    from gpufleet.cli.common import Table
    from gpufleet.report.slurm_compare import summary_rows, write_report

    if not slurm_conf:
        raise fail("--slurm-conf: expected the cluster's slurm.conf (or SLURM_CONF set)")
    if not 2 <= jobs <= MAX_COMPARE_JOBS:
        raise fail(f"--jobs: expected 2 to {MAX_COMPARE_JOBS} jobs, got {jobs}")
    if not math.isfinite(timeout) or not 0 < timeout <= 86400:
        raise fail(f"--timeout: expected seconds in (0, 86400], got {timeout}")
    if node_choice not in ("best-fit", "cons-tres"):
        raise fail(f"--node-choice: expected best-fit or cons-tres, got {node_choice!r}")
    if backfill not in ("conservative", "easy"):
        raise fail(f"--backfill: expected conservative or easy, got {backfill!r}")
    fleet, conf = read_cluster(slurm_conf)
    try:
        check_controller(slurm_conf)
    except NoController as e:
        raise fail(str(e)) from None
    run_dir = claim_out_dir(out, "slurm compare")
    workload = compare_workload(jobs, seed=seed, account=account, max_nodes=min(4, len(fleet)),
                                max_gpus=min(n.gpus for n in fleet.nodes))
    started = time.monotonic()
    try:
        with working(f"running {jobs} sleep jobs on Slurm (at most {timeout:g} s)"):
            run = run_on_slurm(SlurmCli(slurm_conf), workload, timeout_s=timeout)
    except (SlurmCommandError, TimeoutError) as e:
        raise fail(str(e)) from None
    with working("replaying them through the engine"):
        cmp = replay(fleet, conf, workload, run, backfill, slurm_nodes=node_choice == "cons-tres")
    meta = {"wall_s": round(time.monotonic() - started, 1), "submit_s": round(run.submit_s, 1),
            "drain_s": round(run.drain_s, 1),
            "cluster": f"{len(fleet)} nodes, {fleet.total_gpus} GPUs ({slurm_conf})",
            "workload": f"{jobs} sleep jobs, seed {seed}: 1-4 nodes x 1/2/4/8 GPUs, 1-6 s, limits 1-2 min",
            "command": "gpufleet " + " ".join(shlex.quote(a) for a in sys.argv[1:])}
    html_path, json_path = write_report(cmp, meta, out)
    run_dir.finish()
    tab = Table(title="Slurm vs simulator")
    tab.add_column("measure")
    tab.add_column("value", justify="right")
    for name, value in summary_rows(cmp, meta):
        tab.add_row(str(name), str(value))
    console.print(tab)
    console.print(f"wrote {html_path} and {json_path}", highlight=False)
    summary = {k: v for k, v in cmp.agreement.as_dict().items() if k != "disagreements"}
    console.print(json.dumps({**summary, "policy": cmp.profile, "wall_s": meta["wall_s"]}), highlight=False,
                  soft_wrap=True)
