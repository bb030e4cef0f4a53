"""Reading and writing a live Slurm through slurmrestd (REST API v0.0.38, Slurm 22.05), or
through the client commands when there is no slurmrestd.

slurmrestd answers the same job records as ``squeue --json`` (both are the v0.0.38 data parser),
so jobs go through ``reader.job_from_json`` either way; nodes come as JSON objects whose state is a
base state plus flags (``idle`` + ``["DRAIN"]``), GPUs in ``tres`` (``gres/gpu=8``) and in use in
``gres_used`` (``gpu:h100:8(IDX:0-7)``). Reservations come from ``/reservations`` (or ``scontrol
show reservation -o``); accounts from slurmdbd's ``/slurmdb/v0.0.38/associations`` (or ``sacctmgr
show assoc``). Fair share has no endpoint before Slurm 23.11 (v0.0.40's ``/shares``): it is read
with ``sshare`` from the client commands in both cases.

Auth is JWT (``AuthAltTypes=auth/jwt``): every request carries ``X-SLURM-USER-NAME`` and
``X-SLURM-USER-TOKEN``. ``JwtToken`` either holds a token it was given or mints one with
``scontrol token lifespan=N`` (root or SlurmUser only) and mints the next when 80 % of its life
has passed, so a long-running service never sends an expired token. slurmrestd 22.05 answers a
token it cannot verify with a 500 and ``slurm_load_ctl_conf`` errors, not a 401 (captured in
tests/data/slurmrestd/bad-token.txt): the message says so.

A job is submitted from the same ``SbatchRequest`` the ``sbatch`` writer uses (mapping.py), as
``POST /slurm/v0.0.38/job/submit`` with ``sleep <run time>`` as its script; the answer holds
Slurm's job id.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpufleet.adapters.slurm.accounts import (
    ASSOC_FORMAT,
    Association,
    FairShare,
    account_names,
    associations_from_rest,
    associations_from_sacctmgr,
)
from gpufleet.adapters.slurm.controller import NoController, check_controller
from gpufleet.adapters.slurm.hostlist import expand
from gpufleet.adapters.slurm.mapping import SbatchRequest
from gpufleet.adapters.slurm.queue import NodeState, QueuedJob, QueueSnapshot
from gpufleet.adapters.slurm.reader import (
    Runner,
    SlurmCommandError,
    SlurmReader,
    build_snapshot,
    job_from_json,
    parse_scontrol_kv,
    parse_squeue_json,
)
from gpufleet.adapters.slurm.writer import parse_job_id, sbatch_argv
from gpufleet.model.errors import InputError
from gpufleet.traces.slurm_sacct import parse_tres

API = "v0.0.38"
SSHARE_FORMAT = "Account,User,RawShares,NormShares,RawUsage,EffectvUsage,FairShare"


#: Accounts and fair share change slowly and cost the most to read (slurmdbd: ~0.3 s of the
#: ~0.34 s a whole read took through slurmrestd on the emulated cluster, bench/README.md): they
#: are read at most this often, the queue and nodes every poll.
SLOW_S = 30.0


@dataclass
class Every:
    """A value computed again only when ``period_s`` has passed (or never computed yet)."""

    period_s: float
    clock: Callable[[], float] = time.monotonic
    _at: float = float("-inf")
    _value: Any = None

    def get(self, compute: Callable[[], Any]) -> Any:
        if self.clock() - self._at >= self.period_s:
            self._value, self._at = compute(), self.clock()
        return self._value


class SlurmRefused(SlurmCommandError):
    """Slurm answered and said no (a bad account, a shape no node holds): the caller's fault."""


@dataclass(frozen=True, slots=True)
class SlurmReservation:
    name: str
    nodes: tuple[str, ...]
    start: float
    end: float
    flags: tuple[str, ...] = ()

    def active(self, now: float) -> bool:
        return self.start <= now < self.end


@dataclass(frozen=True)
class SlurmView:
    """One poll: the queue and nodes, and what changes slowly beside them."""

    queue: QueueSnapshot
    reservations: tuple[SlurmReservation, ...] = ()
    accounts: tuple[str, ...] = ()
    fairshare: tuple[FairShare, ...] = ()
    #: The accounts with their parents, shares and GPU limits (what the queues are made of).
    associations: tuple[Association, ...] = ()
    #: Jobs that ended and are still listed (for MinJobAge): job id -> final state (COMPLETED,
    #: CANCELLED, FAILED, TIMEOUT, …).
    ended: dict[str, str] = field(default_factory=dict)


def _gpus_used(gres_used: str) -> int:
    """``gpu:h100:8(IDX:0-7)`` or ``gpu:2`` → 8 or 2; several GRES entries summed."""
    total = 0
    for item in re.split(r",(?![^(]*\))", gres_used or ""):
        head = item.split("(", 1)[0]
        parts = head.split(":")
        if parts and parts[0] == "gpu" and parts[-1].isdigit():
            total += int(parts[-1])
    return total


def nodes_from_rest(data: dict[str, Any]) -> tuple[NodeState, ...]:
    out = []
    for n in data.get("nodes") or []:
        flags = [str(f).upper() for f in n.get("state_flags") or []]
        state = "+".join([str(n.get("state", "unknown")).upper(), *flags])
        gpus = int(float(parse_tres(str(n.get("tres") or "")).get("gres/gpu", "0") or 0))
        out.append(NodeState(str(n["name"]), state, gpus, _gpus_used(str(n.get("gres_used") or "")),
                             str(n.get("reason") or ""), tuple(str(p) for p in n.get("partitions") or ())))
    return tuple(out)


def reservations_from_rest(data: dict[str, Any]) -> tuple[SlurmReservation, ...]:
    return tuple(SlurmReservation(str(r["name"]), tuple(expand(str(r.get("node_list") or ""))),
                                  float(r.get("start_time") or 0), float(r.get("end_time") or 0),
                                  tuple(str(f) for f in r.get("flags") or ()))
                 for r in data.get("reservations") or [])


def parse_scontrol_reservations(text: str) -> tuple[SlurmReservation, ...]:
    """``scontrol show reservation -o`` (times as ``2026-12-02T21:37:48``, local time)."""
    out = []
    for line in text.splitlines():
        if not line.startswith("ReservationName="):
            continue
        kv = parse_scontrol_kv(line)
        start, end = (time.mktime(time.strptime(kv[k], "%Y-%m-%dT%H:%M:%S"))
                      for k in ("StartTime", "EndTime"))
        nodes = kv.get("Nodes", "")
        names = tuple(expand(nodes)) if nodes not in ("", "(null)") else ()
        out.append(SlurmReservation(kv["ReservationName"], names, start, end,
                                    tuple(f for f in kv.get("Flags", "").split(",") if f)))
    return tuple(out)


def parse_sshare(text: str) -> tuple[FairShare, ...]:
    """``sshare -a -P -o Account,User,RawShares,NormShares,RawUsage,EffectvUsage,FairShare``;
    the header line and the tree's leading spaces are dropped."""
    out = []
    for line in text.splitlines()[1:]:
        cells = [c.strip() for c in line.split("|")]
        if len(cells) < 7 or not cells[0]:
            continue

        def num(s: str) -> float:
            return float(s) if s else 0.0
        out.append(FairShare(cells[0], cells[1], num(cells[3]), num(cells[4]), num(cells[5]),
                             float(cells[6]) if cells[6] else None))
    return tuple(out)


@dataclass
class JwtToken:
    """The token slurmrestd is sent: a fixed one, or minted with ``scontrol token`` and renewed."""

    run: Runner | None = None
    fixed: str | None = None
    user: str = "root"
    lifespan_s: int = 3600
    clock: Callable[[], float] = time.time
    _token: str | None = None
    _minted_at: float = float("-inf")

    def __call__(self) -> str:
        if self.fixed:
            return self.fixed
        if self._token is None or self.clock() - self._minted_at > 0.8 * self.lifespan_s:
            if self.run is None:
                raise SlurmCommandError("slurmrestd: no JWT (set SLURM_JWT, or run where "
                                        "`scontrol token` works)")
            out = self.run(["scontrol", "token", f"username={self.user}", f"lifespan={self.lifespan_s}"])
            m = re.search(r"SLURM_JWT=(\S+)", out)
            if m is None:
                raise SlurmCommandError(f"scontrol token: expected SLURM_JWT=…, got {out.strip()[:80]!r}")
            self._token, self._minted_at = m.group(1), self.clock()
        return self._token


def rest_job(request: SbatchRequest, command: str, workdir: str = "/tmp") -> dict[str, Any]:
    """The v0.0.38 ``job/submit`` body for the sbatch request (the same fields, by their REST names)."""
    job: dict[str, Any] = {"name": request.job_name, "nodes": request.nodes,
                           "time_limit": request.time_minutes, "current_working_directory": workdir,
                           "standard_output": "/dev/null", "environment": {"PATH": "/bin:/usr/bin"}}
    if request.ntasks_per_node is not None:
        job["tasks_per_node"] = request.ntasks_per_node
    typed = f"{request.gpu_type}:" if request.gpu_type else ""
    if request.gpus_total is not None:
        job["gpus"] = f"{typed}{request.gpus_total}"
    elif request.gpus_per_node:
        job["gpus_per_node"] = f"{typed}{request.gpus_per_node}"
    for key, value in (("constraints", request.constraint), ("account", request.account),
                       ("qos", request.qos), ("partition", request.partition)):
        if value:
            job[key] = value
    if request.cpus_per_task:
        job["cpus_per_task"] = request.cpus_per_task
    if request.mem_per_node_mb:
        job["memory_per_node"] = request.mem_per_node_mb
    return {"script": f"#!/bin/sh\n{command}\n", "job": job}


def _unreachable(errors: list[str]) -> bool:
    """slurmrestd is up but slurmctld does not answer (its errors say so)."""
    return any(w in e.lower() for e in errors for w in ("unable to contact", "connection refused",
                                                       "socket timed out", "zero bytes"))


def _errors(data: dict[str, Any]) -> list[str]:
    return [str(e.get("description") or e.get("error") or e) for e in data.get("errors") or []
            if isinstance(e, dict)]


@dataclass
class SlurmRest:
    """slurmrestd at ``url`` (``http://127.0.0.1:6820``); every call raises ``SlurmCommandError``
    (one line) when slurmrestd cannot be reached or fails, ``SlurmRefused`` when Slurm says no."""

    url: str
    token: Callable[[], str]
    user: str = "root"
    timeout_s: float = 10.0
    #: sshare (fair share) and the node/job control commands slurmrestd 22.05 lacks.
    cli: Runner | None = None
    name: str = "slurmrestd"
    _slow: Every = field(default_factory=lambda: Every(SLOW_S))

    def _call(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url.rstrip("/") + path, data=data, method=method, headers={
            "X-SLURM-USER-NAME": self.user, "X-SLURM-USER-TOKEN": self.token(),
            "Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                text = resp.read().decode()
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            try:
                errs = _errors(json.loads(text))
            except ValueError:
                errs = [text.strip()[:200]]
            bad_token = e.code == 500 and any("unable to load" in x for x in errs)
            hint = " (slurmrestd 22.05 answers 500 to a token it cannot verify: check the JWT)" \
                if bad_token else ""
            # Slurm's own refusals (an invalid account, an unknown job id) come as a 500 too,
            # with Slurm's error; a broken token or an absent slurmctld is not the caller's fault
            kind = SlurmRefused if errs and not bad_token and e.code < 502 and not _unreachable(errs) \
                else SlurmCommandError
            raise kind(f"slurmrestd {method} {path}: HTTP {e.code}: "
                       f"{'; '.join(errs) or 'no detail'}{hint}") from None
        except (urllib.error.URLError, OSError) as e:
            why = getattr(e, "reason", None) or e
            raise SlurmCommandError(f"slurmrestd {self.url}: cannot connect ({why})") from None
        try:
            out = json.loads(text)
        except ValueError:
            raise SlurmCommandError(f"slurmrestd {method} {path}: not JSON: {text.strip()[:80]!r}") from None
        return out if isinstance(out, dict) else {}

    def get(self, what: str) -> dict[str, Any]:
        return self._call("GET", f"/slurm/{API}/{what}")

    def view(self) -> SlurmView:
        taken_at = time.time()
        every = tuple(job_from_json(x, "slurmrestd /jobs") for x in self.get("jobs").get("jobs") or [])
        queue = QueueSnapshot(taken_at, tuple(j for j in every if j.pending or j.running),
                              nodes_from_rest(self.get("nodes")))
        res = reservations_from_rest(self.get("reservations"))
        assocs, shares = self._slow.get(self._accounts_and_shares)
        return SlurmView(queue, res, account_names(assocs), shares, ended=_ended(every), associations=assocs)

    def _accounts_and_shares(self) -> tuple[tuple[Association, ...], tuple[FairShare, ...]]:
        try:
            assocs = associations_from_rest(self._call("GET", f"/slurmdb/{API}/associations"))
        except SlurmCommandError:
            assocs = ()  # slurmdbd absent or not on JWT: the queue is still read
        return assocs, _sshare(self.cli)

    def submit(self, request: SbatchRequest, command: str) -> str:
        out = self._call("POST", f"/slurm/{API}/job/submit", rest_job(request, command))
        errs = _errors(out)
        if out.get("job_id") is None:
            raise SlurmRefused(f"slurmrestd job/submit: {'; '.join(errs) or 'no job id in the answer'}")
        return str(out["job_id"])

    def cancel(self, job_id: str) -> None:
        out = self._call("DELETE", f"/slurm/{API}/job/{job_id}")
        if _errors(out):
            raise SlurmRefused(f"slurmrestd cancel {job_id}: {'; '.join(_errors(out))}")

    def control(self, argv: list[str]) -> None:
        if self.cli is None:
            raise SlurmCommandError(f"{argv[0]}: no Slurm client commands here")
        self.cli(argv)


def _ended(jobs: tuple[QueuedJob, ...]) -> dict[str, str]:
    return {j.job_id: j.state for j in jobs if not (j.pending or j.running)}


def _sshare(cli: Runner | None) -> tuple[FairShare, ...]:
    if cli is None:
        return ()
    try:
        return parse_sshare(cli(["sshare", "-a", "-P", "-o", SSHARE_FORMAT]))
    except SlurmCommandError:
        return ()  # no slurmdbd: no fair share, the queue is still read


@dataclass
class SlurmCommands:
    """The same operations through the client commands (squeue/scontrol --json and -o, sbatch,
    scancel, sacctmgr, sshare): what a ``--source slurm`` without slurmrestd reads."""

    run: Runner
    name: str = "slurm commands"
    #: The slurm.conf the commands read: each read first opens one TCP connection to a
    #: slurmctld it names (controller.py, 2 s), so a controller that is gone costs 2 s, not the
    #: clients' MessageTimeout × retries (40 s measured in ``slurm compare``). None: no check.
    slurm_conf: str | None = None
    check: bool = False
    reader: SlurmReader = field(init=False)
    _slow: Every = field(default_factory=lambda: Every(SLOW_S))

    def __post_init__(self) -> None:
        self.reader = SlurmReader(self.run)

    def view(self) -> SlurmView:
        if self.check:
            try:
                check_controller(self.slurm_conf)
            except NoController as e:
                raise SlurmCommandError(str(e)) from None
        taken_at = time.time()
        squeue = self.run(["squeue", "--json"])
        queue = build_snapshot(squeue, self.run(["scontrol", "show", "node", "-o"]),
                               "", self.run(["scontrol", "show", "job", "-o"]), taken_at)
        res = parse_scontrol_reservations(self.run(["scontrol", "show", "reservation", "-o"]))
        assocs, shares = self._slow.get(self._accounts_and_shares)
        return SlurmView(queue, res, account_names(assocs), shares, ended=_ended(parse_squeue_json(squeue)),
                         associations=assocs)

    def _accounts_and_shares(self) -> tuple[tuple[Association, ...], tuple[FairShare, ...]]:
        try:
            assocs = associations_from_sacctmgr(self.run(["sacctmgr", "-P", "show", "assoc",
                                                          f"format={ASSOC_FORMAT}"]))
        except (SlurmCommandError, InputError):
            assocs = ()
        return assocs, _sshare(self.run)

    def submit(self, request: SbatchRequest, command: str) -> str:
        try:
            return parse_job_id(self.run(sbatch_argv(request, command)))
        except SlurmCommandError as e:
            if "exit 1" in str(e):
                raise SlurmRefused(str(e)) from None
            raise

    def cancel(self, job_id: str) -> None:
        self.run(["scancel", job_id])

    def control(self, argv: list[str]) -> None:
        self.run(argv)
