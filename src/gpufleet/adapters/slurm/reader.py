"""Reading a live Slurm: run its commands, parse their output into ``QueueSnapshot`` records.

Every command goes through ``SlurmCli.run`` (subprocess, timeout, ``SLURM_CONF`` passed on), so a
test or a replay can stand in a ``Runner`` that returns captured output instead. Sources, all
available in Slurm 22.05: ``squeue --json`` (OpenAPI v0.0.38; for pending jobs its ``start_time``
is the backfill plan), ``squeue --start`` (the planned nodes), ``scontrol show node -o`` (per-node
GPUs allocated, state and reason) and ``scontrol show job -o`` (``Switches=``, not in the JSON).
The same reader serves a later ``compare``: ``sacct`` returns the trace of what actually started.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from gpufleet.adapters.slurm.hostlist import expand
from gpufleet.adapters.slurm.queue import NodeState, QueuedJob, QueueSnapshot
from gpufleet.model.errors import InputError
from gpufleet.traces.slurm_sacct import SacctTrace, parse_sacct, parse_tres

Runner = Callable[[Sequence[str]], str]
SACCT_FIELDS = ("JobID,JobName,Account,QOS,AllocTRES,ReqTRES,Submit,Start,End,Elapsed,TimelimitRaw,"
                "State,NNodes,Priority,NodeList")
START_FORMAT = "%i|%S|%r|%N|%Y"


class SlurmCommandError(RuntimeError):
    """A Slurm command failed or is missing; the message is one line for the user."""


@dataclass
class SlurmCli:
    """Runs Slurm client commands; ``slurm_conf`` sets SLURM_CONF for them."""

    slurm_conf: str | None = None
    timeout_s: float = 30.0

    def __call__(self, argv: Sequence[str]) -> str:
        env = dict(os.environ)
        if self.slurm_conf:
            env["SLURM_CONF"] = self.slurm_conf
        try:
            done = subprocess.run(list(argv), capture_output=True, text=True, env=env,
                                  timeout=self.timeout_s, check=False)
        except FileNotFoundError:
            raise SlurmCommandError(f"{argv[0]}: command not found (Slurm client not installed?)") from None
        except subprocess.TimeoutExpired:
            what = " ".join(argv[:2])
            raise SlurmCommandError(f"{what}: no answer within {self.timeout_s:.0f} s") from None
        if done.returncode != 0:
            first = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[0]
            raise SlurmCommandError(f"{' '.join(argv[:2])}: exit {done.returncode}: {first}")
        return done.stdout


def _gpus_in(spec: str) -> int:
    """GPUs in a TRES-per spec: ``gres:gpu:8``, ``gres:gpu:h100:8``, ``gpu:2``; 0 when none."""
    for item in spec.split(","):
        parts = item.split(":")
        if "gpu" in parts:
            tail = parts[parts.index("gpu") + 1:]
            if tail and tail[-1].isdigit():
                return int(tail[-1])
            return 1
    return 0


def _epoch(value: object) -> float | None:
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite"):
            return None
        value = value.get("number")
    if isinstance(value, int | float) and value > 0:
        return float(value)
    return None


def _minutes(value: object) -> float | None:
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite"):
            return None
        value = value.get("number")
    if isinstance(value, int | float) and 0 <= value < 0xFFFFFFFE:
        return float(value) * 60
    return None


def job_from_json(j: dict, source: str = "squeue --json") -> QueuedJob:
    nodes = int(j.get("node_count") or 1)
    state = str(j.get("job_state", ""))
    if isinstance(j.get("job_state"), list):
        state = str(j["job_state"][0])
    per_node = _gpus_in(str(j.get("tres_per_node") or ""))
    if not per_node:
        total = parse_tres(str(j.get("tres_alloc_str") or "")).get("gres/gpu") or \
            parse_tres(str(j.get("tres_req_str") or "")).get("gres/gpu") or "0"
        per_node = -(-int(float(total)) // nodes)
    try:
        node_list = tuple(expand(str(j.get("nodes") or ""))) if state != "PENDING" else ()
    except ValueError:
        raise InputError(source, f"job {j.get('job_id')}: nodes",
                         f"bad hostlist {j.get('nodes')!r}") from None
    submit = _epoch(j.get("submit_time")) or 0.0
    start = _epoch(j.get("start_time"))
    return QueuedJob(
        job_id=_job_id(j), name=str(j.get("name", "")), state=state,
        reason=str(j.get("state_reason") or "None"), nodes=nodes, gpus_per_node=per_node,
        submit=submit, priority=int(_epoch(j.get("priority")) or 0), account=str(j.get("account", "")),
        qos=str(j.get("qos", "")), partition=str(j.get("partition", "")),
        time_limit_s=_minutes(j.get("time_limit")), start=start, end=_epoch(j.get("end_time")),
        node_list=node_list, dependency=str(j.get("dependency") or ""),
        required_nodes=tuple(expand(str(j.get("required_nodes") or ""))),
    )


def _job_id(j: dict) -> str:
    task = j.get("array_task_id")
    if isinstance(task, dict):
        task = task.get("number") if task.get("set") else None
    if j.get("array_job_id") and task is not None:
        return f"{j['array_job_id']}_{task}"
    return str(j.get("job_id"))


def parse_squeue_json(text: str, source: str = "squeue --json") -> tuple[QueuedJob, ...]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(source, f"line {e.lineno}", "expected squeue --json output") from None
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), list):
        raise InputError(source, "jobs", "expected a list of jobs (squeue --json)")
    return tuple(job_from_json(j, source) for j in data["jobs"])


def parse_scontrol_kv(line: str) -> dict[str, str]:
    """One ``scontrol show ... -o`` line; values may contain spaces (``Reason=fabric check [root@..]``)."""
    out: dict[str, str] = {}
    for m in re.finditer(r"(\S+?)=(.*?)(?=\s+\S+?=|\s*$)", line.strip()):
        out[m.group(1)] = m.group(2).strip()
    return out


def parse_scontrol_nodes(text: str) -> tuple[NodeState, ...]:
    nodes = []
    for line in text.splitlines():
        if not line.startswith("NodeName="):
            continue
        kv = parse_scontrol_kv(line)
        cfg = parse_tres(kv.get("CfgTRES", ""))
        alloc = parse_tres(kv.get("AllocTRES", ""))
        gpus = int(float(cfg.get("gres/gpu", "0") or 0)) or _gpus_in(kv.get("Gres", ""))
        reason = re.sub(r"\s*\[[^\]]*\]$", "", kv.get("Reason", ""))
        nodes.append(NodeState(kv["NodeName"], kv.get("State", "UNKNOWN"), gpus,
                               int(float(alloc.get("gres/gpu", "0") or 0)), reason,
                               tuple(p for p in kv.get("Partitions", "").split(",") if p)))
    return tuple(nodes)


def parse_scontrol_switches(text: str) -> dict[str, str]:
    """Job id -> ``Switches=`` request (``1@00:05:00``), only for jobs that set one."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        kv = parse_scontrol_kv(line)
        if kv.get("Switches") and "JobId" in kv:
            task = kv.get("ArrayTaskId")
            key = f"{kv['ArrayJobId']}_{task}" if task and kv.get("ArrayJobId") else kv["JobId"]
            out[key] = kv["Switches"]
    return out


def parse_squeue_start(text: str) -> dict[str, tuple[str, ...]]:
    """Job id -> nodes Slurm plans to start it on (``squeue --start -o '%i|%S|%r|%N|%Y'``)."""
    out: dict[str, tuple[str, ...]] = {}
    for line in text.splitlines():
        cells = line.split("|")
        if len(cells) < 5 or not cells[0].strip():
            continue
        planned = cells[4].strip()
        if planned and planned != "(null)":
            out[cells[0].strip()] = tuple(expand(planned))
    return out


def build_snapshot(squeue_json: str, nodes_text: str, start_text: str = "", jobs_text: str = "",
                   taken_at: float | None = None) -> QueueSnapshot:
    """A snapshot from captured command output; finished jobs still listed by squeue are dropped."""
    planned = parse_squeue_start(start_text)
    switches = parse_scontrol_switches(jobs_text)
    jobs = tuple(
        replace(j, planned_nodes=planned.get(j.job_id, ()), switches=switches.get(j.job_id, ""))
        for j in parse_squeue_json(squeue_json) if j.pending or j.running
    )
    now = time.time() if taken_at is None else taken_at
    return QueueSnapshot(now, jobs, parse_scontrol_nodes(nodes_text))


@dataclass
class SlurmReader:
    run: Runner

    def snapshot(self) -> QueueSnapshot:
        taken_at = time.time()
        return build_snapshot(
            self.run(["squeue", "--json"]),
            self.run(["scontrol", "show", "node", "-o"]),
            self.run(["squeue", "--start", "-h", "-o", START_FORMAT]),
            self.run(["scontrol", "show", "job", "-o"]),
            taken_at,
        )

    def sacct(self, job_ids: Sequence[str] = (), since: str | None = None) -> SacctTrace:
        """The history as a trace: by job id (never-eligible jobs included) or since a time.

        slurmdbd lags slurmctld by a second or so, and a fresh record can be a placeholder
        (JobName ``allocation``, no time limit) until the job's own record is merged; such jobs
        are in ``unfinished``, not ``jobs``. Poll until every job you expect is in ``jobs``, and
        match them by job id.
        """
        argv = ["sacct", "-a", "-P", "-o", SACCT_FIELDS]
        if job_ids:
            argv += ["-j", ",".join(job_ids)]
        elif since:
            argv += ["-S", since]
        return parse_sacct(self.run(argv), "sacct")
