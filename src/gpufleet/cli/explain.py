"""`gpufleet explain JOB --run DIR`: why a job waited, read from a simulation run's event logs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from gpufleet.cli.common import Output, console, fail, one_line_errors
from gpufleet.cli.main import app
from gpufleet.cli.outdir import read_marker
from gpufleet.model.units import duration
from gpufleet.sim.why import JobStory, read_log, run_logs, story


def print_story(s: JobStory) -> None:
    head = f"[bold]{s.job}[/] under [bold]{s.policy}[/]: submitted t={s.submitted:.0f}s, "
    if s.never_started:
        head += f"never started (waited {duration(s.waited_s)} to the end of the run)"
    else:
        head += f"started t={s.first_start:.0f}s after waiting {duration(s.waited_s)}"
        if s.finished is not None:
            head += f", finished t={s.finished:.0f}s"
    console.print(head, highlight=False)
    reasons = s.by_reason()
    if reasons:
        console.print("  why it waited (time per reason):", highlight=False)
        total = sum(sec for _, sec in reasons) or 1.0
        for text, sec in reasons:
            console.print(f"    {duration(sec):>9}  {100 * sec / total:5.1f}%  {text}", highlight=False,
                          markup=False)
    elif s.waited_s > 0:
        console.print("  no wait reasons in this log (run simulated without the decision log)",
                      highlight=False)
    for e in s.events:
        if e["event"] in ("reserve", "backfill", "preempt-notice", "preempt", "failed", "restart"):
            console.print(f"    t={e['t']:.0f}s {e['event']}: {e.get('detail', '')}", highlight=False,
                          markup=False)


def this_runs_logs(run: Path) -> dict[str, Path]:
    """The event logs the run in ``run`` wrote (its marker lists them, cli/outdir.py), never a
    stale one beside them; a directory without a marker (an older gpufleet) is read whole."""
    logs = run_logs(run)
    marker = read_marker(run)
    if marker is None:
        return logs
    if not marker.get("finished"):
        raise fail(f"--run {run}: the `gpufleet {marker['command']}` run there did not finish; "
                   "run it again")
    listed = set(marker.get("files", []))
    mine = {name: path for name, path in logs.items() if path.name in listed}
    if not mine:
        raise fail(f"--run {run}: the `gpufleet {marker['command']}` run there wrote no event logs")
    return mine


@app.command()
@one_line_errors
def explain(
    job: Annotated[str, typer.Argument(help="Job id, as in the scenario or trace (e.g. j4020).")],
    run: Annotated[Path, typer.Option(help="The --out directory of a `gpufleet simulate` run.")]
    = Path("gpufleet-out"),
    policy: Annotated[list[str] | None, typer.Option(
        "--policy", "-p", help="Only these policies' logs (repeatable). Default: every log in the run.")]
    = None,
    output: Annotated[Output, typer.Option(
        "--output", "-o", help="text (default) or json.")] = Output.TEXT,
) -> None:
    """Why did JOB wait? Its wait reasons over time, reservations, backfill and evictions."""
    logs = this_runs_logs(run)
    if policy:
        unknown = [p for p in policy if p not in logs]
        if unknown:
            raise fail(f"--policy {unknown[0]}: no events-{unknown[0]}.jsonl in {run} "
                       f"(has {', '.join(logs)})")
        logs = {p: logs[p] for p in policy}
    stories = [s for name, path in logs.items() if (s := story(name, read_log(path), job)) is not None]
    if not stories:
        raise fail(f"{job}: no such job in the event logs of {run}")
    if output is Output.JSON:
        print(json.dumps([s.as_dict() for s in stories], indent=2))
        return
    for s in stories:
        print_story(s)
