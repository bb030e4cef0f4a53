"""The browser's decision stream: pushed when a decision is published, never ahead of the snapshot
the page's fragments will read (service/dashboard/stream.py)."""

from __future__ import annotations

import asyncio
import threading
import time

from gpufleet.service.dashboard import stream
from gpufleet.service.dashboard.stream import Notifier, messages

from .test_pages import submit


def test_the_message_comes_at_once_but_only_when_the_snapshot_holds_the_decision(
        served, monkeypatch) -> None:
    """A sink after the notifier holds the loop for 0.3 s before it publishes (a slow store): the
    stream wakes on the decision, but sends only once the new snapshot is out, so a fragment
    fetched on the message shows the job. The stream's look-again timeout is set to 30 s, so a
    message within a few seconds can only have come from the push."""
    monkeypatch.setattr(stream, "WAKE_TIMEOUT_S", 30.0)
    s = served
    s.tick()
    notifier = Notifier(s.svc.snapshot)
    s.svc.loop.sinks.append(notifier.observe)
    s.svc.loop.sinks.append(lambda events: time.sleep(0.3) if events else None)
    seen: dict[str, object] = {}

    async def read() -> None:
        async def connected() -> bool:
            return False
        gen = messages(s.svc.events, notifier, s.svc.events.last, connected)
        assert (await anext(gen)).startswith("retry:")
        threading.Timer(0.1, s.tick).start()      # the loop's next turn decides on the new job
        t0 = time.perf_counter()
        seen["message"] = await anext(gen)
        seen["after_s"] = time.perf_counter() - t0
        snap = s.svc.snapshot()
        seen["job_in_snapshot"] = "fresh" in snap.running or "fresh" in snap.pending
        await gen.aclose()

    submit(s, "fresh", gpus=8)
    asyncio.run(read())
    assert '"kinds": ["start", "submit"]' in str(seen["message"])
    assert seen["job_in_snapshot"] is True
    assert 0.3 <= float(seen["after_s"]) < 5.0   # 0.1 s until the tick + the 0.3 s sink, not the timeout
