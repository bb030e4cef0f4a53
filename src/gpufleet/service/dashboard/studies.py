"""Studies as background jobs: one runs at a time, a few wait, the last ones are kept with their
results; the page polls a study's card for its progress and then its table.

Why one at a time: a study is seconds to minutes of simulation in the serving process, on the
cores the loop and the requests share; two at once would only both be slower. Why bounded:
``MAX_WAITING`` studies may wait (a further one is refused with 429, saying so), ``MAX_KEPT``
finished ones are kept (the oldest finished is forgotten first). A study reads the snapshot
published when it was asked for, so what it answers is the fleet as the asker saw it.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from gpufleet.engine.profile import Profile
from gpufleet.live.snapshot import LiveSnapshot
from gpufleet.service.dashboard import study_kinds
from gpufleet.service.errors import ApiError

MAX_WAITING = 4
MAX_KEPT = 20


@dataclass
class Study:
    id: str
    kind: str
    words: str
    by: str
    asked: float
    state: str = "waiting"      # waiting, running, done, failed
    done: int = 0
    total: int = 0
    started: float | None = None
    finished: float | None = None
    table: study_kinds.Table | None = None
    error: str = ""

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 0


class Studies:
    def __init__(self, profile_of: Callable[[LiveSnapshot], Profile]) -> None:
        self._profile_of = profile_of
        self._queue: queue.SimpleQueue[tuple[Study, study_kinds.Params, LiveSnapshot]] = queue.SimpleQueue()
        # a daemon: stopping the service does not wait for a study to finish
        self._worker = threading.Thread(target=self._work, name="gpufleet-study", daemon=True)
        self._worker.start()
        self._lock = threading.Lock()
        self._studies: OrderedDict[str, Study] = OrderedDict()
        self._ids = itertools.count(1)

    def submit(self, params: study_kinds.Params, snap: LiveSnapshot, by: str) -> Study:
        with self._lock:
            waiting = sum(1 for s in self._studies.values() if s.state == "waiting")
            if waiting >= MAX_WAITING:
                raise ApiError(429, f"{waiting} studies are waiting already; try again when one has run")
            study = Study(f"s{next(self._ids)}", params.kind, params.words, by, time.time())
            self._studies[study.id] = study
            self._forget_old()
        self._queue.put((study, params, snap))
        return study

    def _work(self) -> None:
        while True:
            self._run(*self._queue.get())

    def _forget_old(self) -> None:
        finished = [k for k, s in self._studies.items() if s.state in ("done", "failed")]
        for k in finished[: max(0, len(self._studies) - MAX_KEPT)]:
            del self._studies[k]

    def _run(self, study: Study, params: study_kinds.Params, snap: LiveSnapshot) -> None:
        study.state, study.started = "running", time.time()

        def progress(done: int, total: int) -> None:
            study.done, study.total = done, total

        try:
            study.table = study_kinds.run(params, snap, self._profile_of(snap), progress)
            study.state = "done"
        except ApiError as e:
            study.state, study.error = "failed", e.message
        except Exception as e:  # noqa: BLE001 - a study's bug must not kill the worker; it is shown
            study.state, study.error = "failed", f"{type(e).__name__}: {str(e)[:300]}"
        finally:
            study.finished = time.time()

    def get(self, study_id: str) -> Study | None:
        with self._lock:
            return self._studies.get(study_id)

    def recent(self) -> list[Study]:
        with self._lock:
            return list(reversed(self._studies.values()))

    def wait(self, study_id: str, timeout_s: float = 60.0) -> Study | None:
        """Until the study has finished (tests and scripts); None for an unknown id."""
        end = time.monotonic() + timeout_s
        while (s := self.get(study_id)) is not None and s.state in ("waiting", "running"):
            if time.monotonic() > end:
                break
            time.sleep(0.05)
        return s
