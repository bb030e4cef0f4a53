"""The leader wakes on a submission another process stored, instead of sleeping out its tick.

A real service with its loop on a thread and a 5 s tick, over a real SQLite store; the
submission is stored through a second ``Store`` on the same file (what the front process, or a
replica, does). Without the nudge the loop would find the row at its next tick, 5 s later; with
it, the job (8 GPUs on an empty 64-GPU fleet: it fits) starts within one cycle, well under 1 s.
"""

from __future__ import annotations

import time

from tests.unit.service.conftest import FLEET, TestClient, job_body

from gpufleet.service.app import create_app
from gpufleet.service.config import ServiceConfig
from gpufleet.service.jobs import parse_submission, stored_body
from gpufleet.service.runtime import Service
from gpufleet.service.store import Store
from gpufleet.service.store.db import JobRecord, body_hash

TICK_S = 5.0


def stored_elsewhere(url: str, jid: str) -> float:
    """Store a job through another Store (as another process would); when it was committed."""
    other = Store(url)
    try:
        body = job_body(jid, gpus=8)
        now = time.time()
        rec = JobRecord(jid, "default", "pending", 0, 8, stored_body(parse_submission(body), jid, 0.0), 0.0,
                        None, None, None, body_hash(body), "front", now, now)
        other.add_job(rec)
        return time.monotonic()
    finally:
        other.close()


def started_within(svc: Service, jid: str, limit_s: float) -> float | None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        if jid in svc.live().running:
            return time.monotonic()
        time.sleep(0.01)
    return None


def test_a_job_stored_by_another_process_starts_well_under_the_tick(tmp_path):
    cfg = ServiceConfig(fleet=FLEET, data_dir=tmp_path / "d", tick_s=TICK_S, argon2_time_cost=1,
                        argon2_memory_kib=1024)
    svc = Service(cfg)
    with TestClient(create_app(cfg, svc)):
        time.sleep(0.5)  # the loop's first tick is over: it now waits out its 5 s tick
        committed = stored_elsewhere(svc.store.url, "woken")
        started = started_within(svc, "woken", TICK_S)
        assert started is not None, "not started within a tick"
        assert started - committed < 1.0, f"started {started - committed:.2f} s after the commit"
        assert svc.store.job("woken").state == "running"
    svc.store.close()


def test_a_second_submission_during_the_wait_wakes_the_loop_again(tmp_path):
    """Two wakes in a row: the first woken tick clears the wake, the second job still starts fast
    (the wake is not a one-shot)."""
    cfg = ServiceConfig(fleet=FLEET, data_dir=tmp_path / "d", tick_s=TICK_S, argon2_time_cost=1,
                        argon2_memory_kib=1024)
    svc = Service(cfg)
    with TestClient(create_app(cfg, svc)):
        time.sleep(0.5)
        for jid in ("first", "second"):
            committed = stored_elsewhere(svc.store.url, jid)
            started = started_within(svc, jid, TICK_S)
            assert started is not None and started - committed < 1.0, jid
            time.sleep(0.2)
    svc.store.close()
