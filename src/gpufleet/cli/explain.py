"""`gpufleet explain JOB --run DIR`: why a job waited, read from a simulation run's event logs.

Times are told as a run clock (``day 1 02:05:00``: simulated time since the run's start) and
durations (``1.5 h``), never as raw seconds. Each reason names the run's policy and the step of
it that gave the reason: the engine tags a status with the component that decided it (the
``gang-bestfit`` placer, the ``quota`` admitter, the ``easy`` backfiller), and a component's name
alone reads as another policy's (``gang-easy`` places with the ``gang-bestfit`` placer), so
``UNSCHEDULABLE [gang-bestfit]`` under ``gang-easy`` is told as
``UNSCHEDULABLE [gang-easy, place step: gang-bestfit]``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated

import typer

from gpufleet.cli.common import Output, console, fail, one_line_errors
from gpufleet.cli.main import app
from gpufleet.cli.outdir import read_marker
from gpufleet.model.units import duration
from gpufleet.sim.why import JobStory, read_log, run_logs, story

#: The profile fields whose component names tag statuses, and the cycle step each one is.
STEPS = (("admitter", "admit"), ("orderer", "order"), ("placer", "place"), ("reserver", "reserve"),
         ("backfiller", "backfill"), ("preemptor", "preempt"))
_TAG = re.compile(r"^([A-Z_]+) \[([^\]]+)\]")
_T = re.compile(r"\bt=(\d+(?:\.\d+)?)s?")
_SECONDS = re.compile(r"(?<![=\w.])(\d+(?:\.\d+)?)s\b")


def clock(t: float) -> str:
    """Simulated seconds since the run's start as 'day D HH:MM:SS' (day 0 is the first day)."""
    whole = int(round(t))
    days, rest = divmod(whole, 86400)
    return f"day {days} {rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"


def steps_of(policy: str) -> dict[str, str]:
    """Component name -> step for a registered policy; empty for one outside the registry."""
    from gpufleet.policies.registry import PROFILES, profile

    if policy not in PROFILES:
        return {}
    prof = profile(policy)
    out: dict[str, str] = {}
    for attr, step in STEPS:
        name = getattr(getattr(prof, attr), "name", None)
        if isinstance(name, str):
            out.setdefault(name, step)
    return out


def attribute(text: str, policy: str, steps: dict[str, str]) -> str:
    """A reason's tag as the run's policy and its step; its instants (``t=4219``) as run clock
    times and its spans (``4219s``) as durations."""
    def tag(m: re.Match[str]) -> str:
        code, component = m.group(1), m.group(2)
        if component == policy:
            return f"{code} [{policy}]"
        step = steps.get(component)
        return f"{code} [{policy}, {step} step: {component}]" if step else f"{code} [{policy}: {component}]"

    text = _T.sub(lambda m: clock(float(m.group(1))), _TAG.sub(tag, text, count=1))
    return _SECONDS.sub(lambda m: duration(float(m.group(1))), text)


def headline(s: JobStory) -> str:
    head = f"{s.job} under {s.policy}: submitted {clock(s.submitted)}, "
    if s.never_started:
        return head + f"never started (waited {duration(s.waited_s)} to the end of the run)"
    first = s.first_start if s.first_start is not None else s.submitted
    head += ("started at once" if s.waited_before_first_start_s <= 0
             else f"started {clock(first)} after waiting {duration(s.waited_before_first_start_s)}")
    if s.requeues:
        head += f"; sent back to the queue {s.requeues} time(s), waiting {duration(s.waited_s)} in all"
    if s.finished is not None:
        head += f"; finished {clock(s.finished)}"
    return head


def print_story(s: JobStory) -> None:
    steps = steps_of(s.policy)
    console.print(headline(s), highlight=False, markup=False, soft_wrap=True)
    reasons = s.by_reason()
    if reasons:
        console.print("  why it waited (time per reason):", highlight=False)
        total = sum(sec for _, sec in reasons) or 1.0
        for text, sec in reasons:
            line = f"    {duration(sec):>9}  {100 * sec / total:5.1f}%  {attribute(text, s.policy, steps)}"
            console.print(line, highlight=False, markup=False, soft_wrap=True)
    elif s.waited_s > 0:
        console.print("  no wait reasons in this log (run simulated without the decision log)",
                      highlight=False)
    for e in s.events:
        if e["event"] in ("reserve", "backfill", "preempt-notice", "preempt", "failed", "restart"):
            detail = attribute(e.get("detail", ""), s.policy, steps)
            console.print(f"    {clock(e['t'])} {e['event']}: {detail}", highlight=False, markup=False,
                          soft_wrap=True)


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


def story_dict(s: JobStory) -> dict:
    """The story as JSON: seconds as numbers, and each reason with its attributed text."""
    d = s.as_dict()
    steps = steps_of(s.policy)
    for r in d["by_reason"]:
        r["attributed"] = attribute(r["reason"], s.policy, steps)
    return d


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
        print(json.dumps([story_dict(s) for s in stories], indent=2))
        return
    for s in stories:
        print_story(s)
