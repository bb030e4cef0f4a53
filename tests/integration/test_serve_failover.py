"""Two ``gpufleet serve`` replicas on one PostgreSQL; kill -9 the scheduler leader under load.

Real processes on loopback ports, a real PostgreSQL database of the test's own. Replica A starts
first and leads (it holds the advisory lock); B follows. A client sends RATE submissions/s for
SECONDS, alternating between the two, each with its own job id and Idempotency-Key; KILL_AT s in,
A gets SIGKILL. A request A did not answer is sent again to B with the same key (what a client
behind a load balancer does). Then:

- B leads within 15 s of the kill (``/healthz`` says ``leader``);
- every acknowledged (201/200) submission is in the store, each id once;
- every job is started exactly once: the fleet (FLEET_GPUS 1-GPU slots) holds them all and no run
  ends within the test (run_time 1 h at speed 1), so each one starts once and stays running; the
  jobs A started before it died are adopted by B where they run (their start time kept), not
  started again, and the ones A stored but never started are started by B.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from tests.integration.test_serve_postgres import pg_url  # noqa: F401 (the fixture)

psycopg = pytest.importorskip("psycopg")

RATE = 150
SECONDS = 6.0
KILL_AT = 2.5
NODES = 150  # × 8 GPUs = 1,200 ≥ RATE × SECONDS = 900 one-GPU jobs
SRC = Path(__file__).resolve().parents[2] / "src"
CLI = [sys.executable, "-c", "from gpufleet.cli.main import app; app()"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def health(port: int) -> dict | None:
    try:
        r = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
        return r.json() if r.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


def start(db: str, fleet: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen([*CLI, "serve", "--port", str(port), "--db", db, "--fleet", str(fleet)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if health(port) is not None:
            return proc
        if proc.poll() is not None:
            raise AssertionError(f"serve exited with {proc.returncode}")
        time.sleep(0.2)
    proc.kill()
    raise AssertionError("serve did not answer /healthz within 60 s")


def body(i: int) -> dict:
    return {"id": f"fo-{i:05d}", "run_time": 3600, "pod_sets": [{"replicas": 1, "gpus": 1}]}


def watch(port: int, seen: list[float]) -> None:
    """From the kill on: the first moment the follower says it leads."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < 30:
        h = health(port)
        if h is not None and h["role"] == "leader":
            seen.append(time.monotonic())
            return
        time.sleep(0.2)


async def load(ports: tuple[int, int], token: str, leader: subprocess.Popen, db: str,
               watcher: threading.Thread) -> tuple[set[int], float, dict]:
    acked: set[int] = set()
    headers = {"Authorization": f"Bearer {token}"}
    clients = [httpx.AsyncClient(base_url=f"http://127.0.0.1:{p}", headers=headers, timeout=10,
                                 limits=httpx.Limits(max_connections=32)) for p in ports]

    async def one(i: int) -> None:
        """Like a client behind a load balancer: A's share falls back to B, and a request that
        timed out is sent again with the same key (the machine is shared: B may be slow)."""
        c = clients[i % 2]
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                r = await c.post("/api/v1/jobs", json=body(i), headers={"Idempotency-Key": f"fo-key-{i}"})
            except httpx.HTTPError:
                c = clients[1]  # A is gone (or slow): B, with the same key
                await asyncio.sleep(0.2)
                continue
            if r.status_code in (200, 201):
                acked.add(i)
                return
            c = clients[1]

    t0 = time.monotonic()
    killed_at = 0.0
    at_kill: dict = {}
    tasks = []
    for i in range(int(RATE * SECONDS)):
        due = t0 + i / RATE
        if due > time.monotonic():
            await asyncio.sleep(due - time.monotonic())
        if not killed_at and time.monotonic() - t0 >= KILL_AT:
            os.kill(leader.pid, signal.SIGKILL)
            killed_at = time.monotonic()
            leader.wait(timeout=10)
            at_kill = rows(db)  # what A had started when it died (B polls the lock once a second)
            watcher.start()
        tasks.append(asyncio.create_task(one(i)))
    await asyncio.gather(*tasks)
    for c in clients:
        await c.aclose()
    return acked, killed_at, at_kill


def rows(db: str) -> dict[str, tuple[str, int, float | None]]:
    with psycopg.connect(db) as conn:
        cur = conn.execute("SELECT id, state, starts, start_time FROM jobs")
        return {r[0]: (r[1], r[2], r[3]) for r in cur}


@pytest.mark.timeout(240)
def test_the_follower_leads_within_15_s_of_a_kill_9_and_no_job_is_lost_or_started_twice(pg_url, tmp_path):  # noqa: F811
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(f"fleet:\n  name: failover\n  groups:\n    - {{nodes: {NODES}, gpu: H100-80GB, "
                     "gpus_per_node: 8, leaf_size: 16}\n")
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run([*CLI, "serve", "token", "create", "--role", "admin", "--db", pg_url],
                         capture_output=True, text=True, env=env, check=True)
    token = out.stdout.strip().splitlines()[-1]
    pa, pb = free_port(), free_port()
    a = start(pg_url, fleet, pa)
    b = None
    try:
        assert health(pa)["role"] == "leader"
        b = start(pg_url, fleet, pb)
        assert health(pb)["role"] == "follower"
        seen: list[float] = []
        watcher = threading.Thread(target=watch, args=(pb, seen), daemon=True)
        acked, killed_at, at_kill = asyncio.run(load((pa, pb), token, a, pg_url, watcher))
        watcher.join(timeout=40)
        assert seen, "B did not lead within 30 s of the kill"
        took_over_s = seen[0] - killed_at
        print(f"acknowledged {len(acked)} of {int(RATE * SECONDS)}; B led {took_over_s:.1f} s after the kill")
        assert took_over_s <= 15
        want = {body(i)["id"] for i in acked}
        deadline = time.monotonic() + 60
        while True:  # B's loop takes up every stored job
            got = rows(pg_url)
            if all(got.get(j, ("", 0, None))[0] == "running" for j in want) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    finally:
        for p in (a, b):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=30)
    assert len(acked) == int(RATE * SECONDS), "a submission got no 201 from either replica"
    assert want <= set(got), "an acknowledged submission is not in the store"
    assert {j: got[j][0] for j in want if got[j][0] != "running"} == {}
    assert {j: got[j][1] for j in want if got[j][1] != 1} == {}, "a job was started more than once"
    by_a = {j: r[2] for j, r in at_kill.items() if r[0] == "running"}
    print(f"running when A died: {len(by_a)}; stored then: {len(at_kill)}")
    assert by_a, "A started nothing before it died: adoption was not tested"
    assert {j: (got[j][2], t) for j, t in by_a.items() if got[j][2] != t} == {}, \
        "B started again a job A had started"
