"""One scheduler leader among ``serve`` replicas, and the change log that feeds it.

Every replica serves the API and stores what it is asked (a submission is durable on the 201,
whichever replica took it); one replica, the leader, runs the live loop and its effects. The
store is the only channel between them: each mutation appends a row to ``changes`` in its own
transaction (store/db.py, numbered in commit order), and the leader, at every tick, reads the rows
past the last one it applied and turns them into loop commands. A new leader first notes the
last number, then rebuilds the world from the store (running jobs adopted where they run, pending
ones queued, held ones kept out, node states and quota edits re-applied), then applies the rows
after that number; every command is idempotent (a job already in the world is not submitted
again), so a change seen both ways is applied once.

Who leads (``Leadership``):

- PostgreSQL: the replica holding ``pg_try_advisory_lock(LEADER_LOCK)`` on a dedicated connection
  (a session lock: PostgreSQL drops it when that connection ends, and a kill -9 ends it at once,
  the kernel closing the socket). Followers try again every ``poll_s``, so one leads again within
  about a second of the leader's death. The leader checks its connection as often; if it broke,
  the lock may be someone else's, and it stops acting (its loop stops) before anything else.
- SQLite: the process holding a POSIX lock (``lockf``) on ``<database>.leader``; the kernel drops
  it when the process dies. Replicas then share one machine and its disk (a leader and followers
  that take the web traffic: bench/serve_load.py ``--replicas``). POSIX locks belong to the
  process, so services opened one after another in one process (tests, a restart) all lead.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection, text

from gpufleet.service.store import Store

#: pg_advisory_lock key of the scheduler leader ("gpul" in ASCII).
LEADER_LOCK = 0x6770756C
log = logging.getLogger("gpufleet.leader")


class Leadership:
    def __init__(self, store: Store, poll_s: float = 1.0) -> None:
        self.store = store
        self.poll_s = poll_s
        self.leading = False
        self._conn: Connection | None = None
        self._fd: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def try_lead(self) -> bool:
        """Take the lock if it is free; whether this replica leads now."""
        if self.leading:
            return True
        if self.store.sqlite:
            return self._lock_file()
        try:
            if self._conn is None:
                self._conn = self.store.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            got = bool(self._conn.execute(text(f"SELECT pg_try_advisory_lock({LEADER_LOCK})")).scalar())
        except Exception as e:  # the database is away: try again later
            log.warning("leader lock: %s", e)
            self._drop()
            return False
        self.leading = got
        return got

    def _lock_file(self) -> bool:
        path = self.store.engine.url.database
        if not path or path == ":memory:":
            self.leading = True
            return True
        if self._fd is None:
            self._fd = os.open(f"{path}.leader", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        self.leading = True
        return True

    def still_leading(self) -> bool:
        if self.store.sqlite:
            return True
        try:
            assert self._conn is not None
            self._conn.execute(text("SELECT 1"))
            return True
        except Exception:
            self._drop()
            self.leading = False
            return False

    def _drop(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):  # closing a broken connection
                self._conn.close()
            self._conn = None

    def watch(self, on_lead: Callable[[], None], on_lost: Callable[[], None]) -> None:
        """Run on a thread: wait for the lock (``on_lead`` once taken), then watch it (``on_lost``
        if the connection that holds it broke)."""
        def run() -> None:
            while not self._stop.is_set():
                if not self.leading:
                    if self.try_lead():
                        on_lead()
                elif not self.still_leading():
                    on_lost()
                    return
                self._stop.wait(self.poll_s)
        self._thread = threading.Thread(target=run, name="gpufleet-leadership", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._drop()
        if self._fd is not None:
            os.close(self._fd)  # releases the lock
            self._fd = None


def commands_of(rows: list[dict[str, Any]], fresh: dict[str, Any], store: Store
                ) -> list[tuple[dict[str, Any], Any]]:
    """The change rows with what each needs: a submitted job (from ``fresh``, the jobs this
    replica stored itself, else its record), a released or re-prioritised job's record as it is
    now (its body holds the new priority); records read in one query."""
    need = {r["target"] for r in rows if r["kind"] in ("release", "priority")
            or (r["kind"] == "submit" and r["target"] not in fresh)}
    recs = store.bodies(sorted(need)) if need else {}
    out = []
    for r in rows:
        got = fresh.pop(r["target"], None) if r["kind"] == "submit" else None
        out.append((r, got if got is not None else recs.get(r["target"])))
    return out
