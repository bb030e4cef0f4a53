"""The ``slurm`` source: a real Slurm, read every few seconds; the engine explains, Slurm decides.

Each poll (``poll_s`` of wall time apart, on the loop's thread) reads one ``SlurmView`` through
slurmrestd or the client commands (adapters/slurm/rest.py) and rebuilds the world from it: the
node table, the running jobs on their nodes and the pending jobs that wait for capacity or
priority, all through ``engine_view.cycle_input`` — the same reading ``gpufleet slurm explain``
gives, so ``/api/v1/jobs/{id}/explain`` answers every pending Slurm job with the engine's reason
chain and estimate. The source is an observer: ``apply`` keeps the engine's reservations (for
the planned nodes and blockers) and binds nothing; Slurm starts jobs itself.

Events come from the difference between two polls: a job first seen pending is ``submit``, one
now running ``start``, one no longer pending or running ``cancel`` when Slurm lists it CANCELLED
and ``finish`` otherwise (with its final state; squeue lists ended jobs only for MinJobAge), so
the store's records of jobs submitted through our API follow Slurm.

When Slurm cannot be read (slurmrestd stopped, slurmctld unreachable), the source keeps the last
world it read, reports ``health().ok = False`` with the time it went away and the error, and
tries again every poll; the first good poll after that catches up (every job that started or
ended meanwhile is one event) and says ``source-up``. Nothing on the loop's thread raises: a
drain that Slurm refuses is an event with the error, not a dead loop.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import ClassVar, Protocol

from gpufleet.adapters.slurm.accounting import FinishedRun, read_runs
from gpufleet.adapters.slurm.accounts import account_shares, account_tenancy
from gpufleet.adapters.slurm.conf import SlurmConf
from gpufleet.adapters.slurm.controller import conf_path
from gpufleet.adapters.slurm.engine_view import cycle_input, fleet_from_snapshot
from gpufleet.adapters.slurm.fleet_conf import read_fleet
from gpufleet.adapters.slurm.mapping import MappingError, SbatchRequest, to_sbatch
from gpufleet.adapters.slurm.queue import QueueSnapshot
from gpufleet.adapters.slurm.reader import SlurmCli, SlurmCommandError
from gpufleet.adapters.slurm.rest import SLOW_S, JwtToken, SlurmCommands, SlurmRefused, SlurmRest, SlurmView
from gpufleet.adapters.slurm.writer import sleep_command
from gpufleet.engine.profile import Profile
from gpufleet.engine.snapshot import NodeTable
from gpufleet.live.source import LiveEvent, PolledSource, QueueFacts, SourceRefused, SourceUnavailable
from gpufleet.model.errors import InputError
from gpufleet.model.fleet import Fabric, Fleet
from gpufleet.model.job import Job
from gpufleet.policies.slurm_like import slurm_like_profile


class SlurmApi(Protocol):
    """What the source needs from Slurm: ``SlurmRest`` or ``SlurmCommands``."""

    name: str

    def view(self) -> SlurmView: ...
    def submit(self, request: SbatchRequest, command: str) -> str: ...
    def cancel(self, job_id: str) -> None: ...
    def control(self, argv: list[str]) -> None: ...


@dataclass
class SlurmSource(PolledSource):
    api: SlurmApi
    #: The fleet of slurm.conf (GPU models, topology); None: nodes as scontrol lists them.
    base_fleet: Fleet | None = None
    conf: SlurmConf | None = None
    poll_s: float = 3.0
    wall: Callable[[], float] = time.time
    name: str = "slurm"
    view: SlurmView | None = None
    #: Slurm owns the accounts' limits: a quota edit through the service is refused with this.
    quota_owner: ClassVar[str] = (
        "Slurm owns the accounts' GPU limits: change one with `sacctmgr modify account NAME set "
        "GrpTRES=gres/gpu=N`; the service shows it at its next accounts read (at most 30 s)")
    #: Slurm's accounting (sacct): the jobs that ended since an epoch second; None: not read.
    accounting: Callable[[float], tuple[FinishedRun, ...]] | None = None
    _facts: dict[str, QueueFacts] = field(default_factory=dict, init=False)
    _runs: tuple[float, float, tuple[FinishedRun, ...]] | None = field(default=None, init=False)
    _runs_lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        self._fleet = self.base_fleet if self.base_fleet is not None else Fleet((), Fabric(), "slurm")
        self._table = NodeTable.from_fleet(self._fleet)

    @property
    def profile(self) -> Profile | None:
        return self._inp.profile if self._inp is not None else None

    def waiting(self) -> dict[str, tuple[str, str]]:
        """Pending jobs Slurm holds back for a reason no capacity resolves (held, a dependency,
        a QOS or association limit): job id → (Slurm's reason, what it means)."""
        q = self.view.queue if self.view is not None else None
        if q is None:
            return {}
        return {j.job_id: (j.reason, j.wait_reason.explanation) for j in q.jobs
                if j.pending and j.job_id not in self._pending}

    def about(self) -> dict[str, object]:
        """What was read beside the queue: partitions, reservations, accounts, fair share."""
        v = self.view
        if v is None:
            return {"via": self.api.name, "polls": self.polls, "failures": self.failures}
        parts: dict[str, list[str]] = {}
        for n in v.queue.nodes:
            for p in n.partitions:
                parts.setdefault(p, []).append(n.name)
        return {
            "via": self.api.name, "polls": self.polls, "failures": self.failures, "read_at": v.queue.taken_at,
            "partitions": {p: sorted(ns) for p, ns in sorted(parts.items())},
            "reservations": [{"name": r.name, "nodes": list(r.nodes), "start": r.start, "end": r.end,
                              "active": r.active(v.queue.taken_at)} for r in v.reservations],
            "accounts": list(v.accounts),
            "fairshare": [{"account": f.account, "user": f.user, "norm_shares": f.norm_shares,
                           "raw_usage": f.raw_usage, "effective_usage": f.effective_usage,
                           "fairshare": f.fairshare} for f in v.fairshare],
        }

    def queue_facts(self) -> dict[str, QueueFacts]:
        """Per account: its nominal's basis and its sshare fair share (adapters/slurm/accounts.py)."""
        return self._facts

    def finished_runs(self, since: float) -> tuple[FinishedRun, ...]:
        """Every job Slurm ran that ended at or after ``since``, from sacct (on the caller's
        thread; read again at most every ``SLOW_S`` seconds, as the accounts are). Nothing when
        there is no accounting to read (no slurmdbd) or it fails: History then has the jobs
        submitted through the service only."""
        if self.accounting is None:
            return ()
        with self._runs_lock:
            at = self.wall()
            if self._runs is None or at - self._runs[0] >= SLOW_S or since < self._runs[1]:
                try:
                    self._runs = (at, since, self.accounting(since))
                except (SlurmCommandError, InputError, ValueError):
                    self._runs = (at, since, ())
            return tuple(r for r in self._runs[2] if r.end_time >= since)

    def label(self) -> str:
        return self.api.name

    def read_summary(self) -> str:
        q = self.view.queue if self.view is not None else None
        if q is None:
            return "0 nodes, 0 pending, 0 running"
        return (f"{len(q.nodes)} nodes, {sum(j.pending for j in q.jobs)} pending, "
                f"{sum(j.running for j in q.jobs)} running")

    # --- polling ------------------------------------------------------------------------------
    def poll(self, now: float) -> list[LiveEvent]:
        """Read Slurm once; the events of what changed since the last good read."""
        self.polls += 1
        try:
            view = self.api.view()
        except (SlurmCommandError, InputError, ValueError, KeyError, TypeError) as e:
            # unreachable, refused, or an answer we cannot read: the loop goes on, health says why
            return self._failed(now, str(e).splitlines()[0] if str(e) else type(e).__name__)
        events = self._answered(now, self.api.name)
        self.view = view
        return events + self._rebuild(view.queue, view, now)

    def _rebuild(self, snap: QueueSnapshot, view: SlurmView, now: float) -> list[LiveEvent]:
        fleet = fleet_from_snapshot(snap, self.base_fleet)
        inp = cycle_input(snap, fleet, self.conf)
        self._fleet, self._inp, self._table = fleet, inp, inp.nodes
        self._pending = {str(p.job.id): p.job for p in inp.pending}
        self._running = {str(r.job.id): r for r in inp.running}
        self._read_accounts(view, fleet)
        oos = {n.name: n.state.split("+")[-1].lower() for n in snap.nodes if not n.schedulable}
        for r in view.reservations:
            if r.active(snap.taken_at):
                for n in r.nodes:
                    oos.setdefault(n, f"reservation {r.name}")
        self.out_of_service = oos
        state = {j.job_id: ("running" if j.running else "pending") for j in snap.jobs}

        def started(jid: str) -> LiveEvent:
            q = snap.job(jid)
            at = q.start if q is not None and q.start is not None else now
            return LiveEvent(at, "start", jid, detail=",".join(q.node_list) if q else "")

        def ended(jid: str) -> LiveEvent:
            final = view.ended.get(jid)
            return LiveEvent(now, "cancel" if final == "CANCELLED" else "finish", jid,
                             detail=final or "no longer in Slurm's queue")

        return self._changes(state, now, "Slurm", started, ended)

    def _read_accounts(self, view: SlurmView, fleet: Fleet) -> None:
        """Slurm's accounts as the tenancy the Queues page and ``/api/v1/queues`` show (not given
        to the engine: Slurm enforces its limits and names them as the job's reason)."""
        cluster = self.conf.cluster_name if self.conf is not None else None
        accounts = account_tenancy(view.associations, fleet, cluster) if view.associations else None
        self.tenancy = accounts.tenancy if accounts is not None else None
        shares = account_shares(view.fairshare)
        basis = accounts.basis if accounts is not None else {}
        self._facts = {name: QueueFacts(basis.get(name), shares.get(name))
                       for name in sorted(basis.keys() | shares.keys())}

    # --- the engine ---------------------------------------------------------------------------
    def default_profile(self) -> Profile:
        return slurm_like_profile(None)

    # --- effects: Slurm does them -------------------------------------------------------------
    def send(self, job: Job) -> str:
        """Submit to Slurm now (the caller's thread); Slurm's job id."""
        try:
            request = to_sbatch(job)
        except MappingError as e:
            raise SourceRefused(str(e)) from None
        if str(job.tenant) == "default":
            request = replace(request, account=None)  # the user's default account
        try:
            return self.api.submit(request, sleep_command(job))
        except SlurmRefused as e:
            raise SourceRefused(str(e)) from None
        except SlurmCommandError as e:
            raise SourceUnavailable(str(e)) from None

    def control(self, action: str, job_id: str, priority: int | None = None) -> None:
        """cancel / hold / release / priority, done by Slurm now (the caller's thread)."""
        try:
            if action == "cancel":
                self.api.cancel(job_id)
            elif action in ("hold", "release"):
                self.api.control(["scontrol", action, job_id])
            elif action == "priority":
                self.api.control(["scontrol", "update", f"JobId={job_id}", f"Priority={priority}"])
            else:
                raise SourceRefused(f"{action}: not a Slurm job action")
        except SlurmRefused as e:
            raise SourceRefused(str(e)) from None
        except SlurmCommandError as e:
            raise SourceUnavailable(str(e)) from None
        self.read_again()

    def submit(self, job: Job, now: float) -> None:
        """Already in Slurm (``send``), or restored after a restart: the next poll shows it."""

    def withdraw(self, job_id: str, now: float) -> Job | None:
        job = self._pending.get(job_id) or (self._running[job_id].job if job_id in self._running else None)
        try:
            self.api.cancel(job_id)
        except SlurmCommandError:
            return None
        return job

    def replace(self, job: Job) -> None:
        """Priority changes go to Slurm through ``control``; the next poll shows them."""

    def set_schedulable(self, node: str, ok: bool) -> None:
        argv = ["scontrol", "update", f"NodeName={node}", "State=RESUME" if ok else "State=DRAIN"]
        if not ok:
            argv.append("Reason=gpufleet")
        with contextlib.suppress(SlurmCommandError):  # the next poll shows the node as Slurm has it
            self.api.control(argv)
        self.read_again()


def slurm_source(*, rest_url: str | None, slurm_conf: str | None, jwt: str | None = None,
                 user: str = "root", fleet: Fleet | None = None, poll_s: float = 3.0) -> SlurmSource:
    """The source for ``gpufleet serve --source slurm``: slurmrestd at ``rest_url`` (JWT: the
    one given, else minted and renewed with ``scontrol token``), or the client commands when no
    URL is given. The fleet: the one given, else slurm.conf's (GPU models and topology, when the
    file is readable here), else the nodes as Slurm lists them (GPU counts only)."""
    cli = SlurmCli(slurm_conf)
    conf: SlurmConf | None = None
    path = conf_path(slurm_conf)
    if path.is_file():
        try:
            topo = [path.with_name("topology.conf")] if path.with_name("topology.conf").is_file() else []
            read = read_fleet(path, topology_paths=topo)
            conf = read.conf
            fleet = fleet if fleet is not None else read.fleet
        except (InputError, OSError):
            conf = None  # unreadable here (another machine's paths): Slurm's own listing stands
    api: SlurmApi
    if rest_url:
        api = SlurmRest(rest_url, JwtToken(run=cli, fixed=jwt, user=user), user=user, cli=cli)
    else:
        api = SlurmCommands(cli, slurm_conf=slurm_conf, check=True)
    return SlurmSource(api, fleet if fleet is not None and fleet.nodes else None, conf, poll_s,
                       accounting=lambda since: read_runs(cli, since))
