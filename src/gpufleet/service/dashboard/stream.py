"""The browser's decision stream (``/ui/events``): pushed as soon as a decision is published.

The path from a decision to the screen: the loop's cycle decides, its sinks run (the store, the
event ring, then ``Notifier.observe``), the loop publishes the new snapshot, the stream sends one
message, the page fetches its live fragments, which read that snapshot. Two rules keep it short
and right:

- **Pushed, not polled.** ``observe`` wakes every open stream at once (``call_soon_threadsafe`` on
  each stream's event loop) instead of each stream looking at the ring every 100 ms: up to 100 ms
  less, and no work while nothing happens (a stream still looks once a second, for a lost wake).
- **Never ahead of the snapshot.** The sinks run *before* the loop publishes the snapshot the
  decision is in, so a fragment fetched on the wake alone could show the world of the tick before.
  ``observe`` remembers the snapshot published when it ran; a stream sends only once the loop has
  published a newer one (taking a snapshot of 100,000 pending jobs costs tens of ms; the stream
  looks every 5 ms, at most 1 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable

from gpufleet.live.snapshot import LiveSnapshot
from gpufleet.live.source import LiveEvent
from gpufleet.service.events import EventRing

WAKE_TIMEOUT_S = 1.0
PUBLISH_POLL_S = 0.005
PUBLISH_LIMIT_S = 1.0


class Notifier:
    def __init__(self, snapshot: Callable[[], LiveSnapshot]) -> None:
        self._snapshot = snapshot
        self._lock = threading.Lock()
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        #: The snapshot that was current when the last events came (the one they are *not* in).
        self.stale: LiveSnapshot | None = None

    def observe(self, events: list[LiveEvent]) -> None:
        """A loop sink (the loop's thread, before the snapshot with these events is published)."""
        if not events:
            return
        self.stale = self._snapshot()
        with self._lock:
            waiters = list(self._waiters)
        for loop, ev in waiters:
            with contextlib.suppress(RuntimeError):  # that stream's event loop has closed
                loop.call_soon_threadsafe(ev.set)

    def subscribe(self) -> asyncio.Event:
        ev = asyncio.Event()
        with self._lock:
            self._waiters.add((asyncio.get_running_loop(), ev))
        return ev

    def unsubscribe(self, ev: asyncio.Event) -> None:
        with self._lock:
            self._waiters = {w for w in self._waiters if w[1] is not ev}

    async def published(self, stale: LiveSnapshot | None) -> None:
        """Wait until the loop has published a snapshot newer than ``stale``."""
        waited = 0.0
        while stale is not None and self._snapshot() is stale and waited < PUBLISH_LIMIT_S:
            await asyncio.sleep(PUBLISH_POLL_S)
            waited += PUBLISH_POLL_S


async def messages(ring: EventRing, notifier: Notifier, after: int,
                   disconnected: Callable[[], Awaitable[bool]]) -> AsyncIterator[str]:
    """SSE text: one ``message`` per batch of decisions (its kinds and count), ``id`` numbered as
    the API's stream, from the decision after ``after``."""
    seq = after
    wake = notifier.subscribe()
    try:
        yield "retry: 2000\n\n"
        while not await disconnected():
            wake.clear()
            batch, _ = ring.after(seq)
            if batch:
                await notifier.published(notifier.stale)
                seq = batch[-1][0]
                kinds = sorted({ev["kind"] for _, ev in batch})
                yield f"id: {seq}\ndata: {json.dumps({'kinds': kinds, 'n': len(batch)})}\n\n"
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), WAKE_TIMEOUT_S)
    finally:
        notifier.unsubscribe(wake)
