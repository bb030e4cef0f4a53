"""The scheduler process of ``gpufleet serve``: the live loop (when this replica leads) and the
full API over it, on a loopback port of its own; and ``Scheduler``, the front's handle on it.

The front (service/front.py) starts it with ``multiprocessing``'s spawn (a fresh interpreter:
no threads or connections inherited) and passes on to it every request but submissions. The
child asks the kernel for SIGKILL when its parent dies (``PR_SET_PDEATHSIG``), so a kill -9 of
``serve`` ends both at once: the SQLite leader lock or the PostgreSQL advisory lock is freed and
another replica (or the restarted one) leads. If the child dies on its own, the front starts it
again; meanwhile the front keeps acknowledging submissions, and the new child restores the world
from the store and applies them.

The child lowers the interpreter's switch interval (5 → 1 ms): a request (an explain) waits for
the loop's thread to let go of the GIL at most that long per hand-off.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import replace
from multiprocessing.connection import Connection

import uvicorn

from gpufleet.service.app import create_app
from gpufleet.service.config import ServiceConfig
from gpufleet.service.runtime import Service

PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the front stops it on a clean exit only
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def advertised(host: str, port: int) -> str:
    """The URL other fronts reach this scheduler at (a wildcard host: this machine's name)."""
    name = socket.getfqdn() if host in ("0.0.0.0", "::", "") else host
    return f"http://{name if ':' not in name else f'[{name}]'}:{port}"


def run(cfg: ServiceConfig, host: str, parent: int, reply: Connection) -> None:
    """The child: bind, build the service (restore when it leads), report the port, serve."""
    _die_with_parent(parent)
    os.setpgrp()  # a Ctrl-C in the terminal reaches the front only, which stops this in order
    sys.setswitchinterval(0.001)
    try:
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, 0))
        sock.listen(2048)
        port = sock.getsockname()[1]
        svc = Service(replace(cfg, advertise_url=advertised(host, port)))
    except Exception as e:  # the store or the source cannot be opened: the front says so
        reply.send(("error", str(e).splitlines()[0] if str(e) else type(e).__name__))
        return
    if svc.leading and svc.config.advertise_url:  # before the front passes anything on
        svc.store.set_meta("leader_url", svc.config.advertise_url)
    reply.send(("ready", f"http://{host if ':' not in host else f'[{host}]'}:{port}", svc.restored,
                svc.leading))
    reply.close()
    server = uvicorn.Server(uvicorn.Config(create_app(svc.config, svc), log_level="warning",
                                           access_log=False, timeout_graceful_shutdown=5))
    server.run(sockets=[sock])


class SchedulerDied(Exception):
    """The scheduler process could not start (its one-line reason)."""


class Scheduler:
    """The front's side: start the child, know its URL, start it again if it dies, stop it."""

    def __init__(self, cfg: ServiceConfig, host: str, start_timeout_s: float = 600.0) -> None:
        self.cfg, self.host, self.timeout = cfg, host, start_timeout_s
        self._ctx = multiprocessing.get_context("spawn")
        self._proc: multiprocessing.process.BaseProcess | None = None
        self._stopping = threading.Event()
        self.url = ""
        self.restored = 0
        self.leading = False
        self._watch: threading.Thread | None = None

    def start(self) -> None:
        """Start the child and wait until it listens (SchedulerDied if it could not)."""
        ours, theirs = self._ctx.Pipe(duplex=False)
        proc = self._ctx.Process(target=run, args=(self.cfg, self.host, os.getpid(), theirs),
                                 name="gpufleet-scheduler", daemon=False)
        proc.start()
        theirs.close()
        deadline = time.monotonic() + self.timeout
        while not ours.poll(0.2):
            if not proc.is_alive() or time.monotonic() > deadline:
                proc.kill()
                raise SchedulerDied(f"the scheduler process exited during start-up ({proc.exitcode})")
        msg = ours.recv()
        ours.close()
        if msg[0] != "ready":
            proc.join(timeout=10)
            raise SchedulerDied(msg[1])
        self._proc, self.url, self.restored, self.leading = proc, msg[1], msg[2], msg[3]
        if self._watch is None:
            self._watch = threading.Thread(target=self._keep, name="gpufleet-scheduler-watch", daemon=True)
            self._watch.start()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _keep(self) -> None:
        while not self._stopping.is_set():
            proc = self._proc
            if proc is not None:
                proc.join(timeout=0.5)
                if proc.is_alive() or self._stopping.is_set():
                    continue
                print(f"gpufleet serve: the scheduler process ended ({proc.exitcode}); starting it again",
                      file=sys.stderr, flush=True)
            try:
                self.start()
            except SchedulerDied as e:
                print(f"gpufleet serve: the scheduler did not start again: {e}", file=sys.stderr, flush=True)
                self._stopping.wait(5)

    def stop(self) -> None:
        self._stopping.set()
        proc = self._proc
        if proc is not None and proc.is_alive():
            proc.terminate()  # uvicorn's graceful shutdown: the loop stops, the store closes
            proc.join(timeout=15)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=5)
