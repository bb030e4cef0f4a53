"""The nudge from a process that stored a change to the scheduler leader: wake up, read the log.

The change log (store/db.py) is the only channel between the processes of a service; without a
nudge the leader finds a new row at its next tick, up to ``tick_s`` (0.5 s) later, and a job that
fits waits that long to start. With one, the leader ticks within ``LiveLoop.wake_gap_s`` of the
commit. The nudge carries nothing: losing one costs at most a tick, never a change.

- PostgreSQL: ``NOTIFY gpufleet_changes`` inside the transaction that numbers change-log rows, so
  it is delivered at commit and only then (PostgreSQL folds the notices of one transaction into
  one); the leader holds a ``LISTEN`` connection of its own. It reaches a leader on another
  machine.
- SQLite (one machine, one disk): a datagram on a Linux abstract-namespace Unix socket named after
  the database file, sent after the commit returned. Abstract names have no file to clean up
  after a kill -9 and no 108-byte path limit; a datagram nobody listens for is refused at once
  (no leader: nothing to wake).
"""

from __future__ import annotations

import hashlib
import logging
import socket
import threading
from collections.abc import Callable

import psycopg

CHANNEL = "gpufleet_changes"
log = logging.getLogger("gpufleet.wake")


def _address(database: str) -> bytes:
    """The abstract socket name of a SQLite database's leader (same file, same name)."""
    digest = hashlib.sha256(database.encode()).hexdigest()[:24]
    return b"\0gpufleet-wake-" + digest.encode()


class Nudge:
    """The sending side on SQLite (PostgreSQL's NOTIFY is a statement in the transaction)."""

    def __init__(self, database: str | None) -> None:
        self._addr = _address(database) if database and database != ":memory:" else None
        self._sock: socket.socket | None = None

    def send(self) -> None:
        if self._addr is None:
            return
        try:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                self._sock.setblocking(False)
            self._sock.sendto(b"!", self._addr)
        except OSError:  # no leader listening, or its queue is full: it is awake already
            pass

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


class Listener:
    """The leader's side: a thread that calls ``on_nudge`` for each nudge received."""

    def __init__(self, on_nudge: Callable[[], None], *, sqlite_db: str | None = None,
                 pg_conninfo: str | None = None, poll_s: float = 0.5) -> None:
        self._on = on_nudge
        self._db, self._pg, self._poll = sqlite_db, pg_conninfo, poll_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpufleet-wake", daemon=True)

    def start(self) -> Listener:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if self._pg is not None:
                    self._listen_pg()
                elif self._db and self._db != ":memory:":
                    self._listen_socket()
                else:
                    return
            except Exception as e:  # the database went away, or another leader has the name
                log.debug("wake listener: %s", e)
            self._stop.wait(self._poll)

    def _listen_socket(self) -> None:
        assert self._db is not None
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            s.bind(_address(self._db))
            s.settimeout(self._poll)
            while not self._stop.is_set():
                try:
                    s.recv(64)
                except TimeoutError:
                    continue
                self._on()

    def _listen_pg(self) -> None:
        assert self._pg is not None
        with psycopg.connect(self._pg, autocommit=True) as conn:
            conn.execute(f"LISTEN {CHANNEL}")
            while not self._stop.is_set():
                got = False
                for _ in conn.notifies(timeout=self._poll):
                    got = True
                    break
                if got:
                    self._on()


def listener_for(store_url: object, sqlite: bool, on_nudge: Callable[[], None]) -> Listener:
    """The listener for a store's database (``store_url``: its SQLAlchemy URL object)."""
    url = store_url
    if sqlite:
        return Listener(on_nudge, sqlite_db=getattr(url, "database", None))
    conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)  # type: ignore[attr-defined]
    return Listener(on_nudge, pg_conninfo=conninfo)

