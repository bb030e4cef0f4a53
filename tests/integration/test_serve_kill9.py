"""kill -9 the service while submissions arrive; restart it; every acknowledged job is there once.

A real ``gpufleet serve`` process on a loopback port and its SQLite store; a client sends about
500 submissions/s (each with its own job id and Idempotency-Key) for 3 s and the server is killed
with SIGKILL 1.5 s in. After the restart the client retries every submission that got no answer,
with the same key (what a client does after a timeout), and the store is read back: every job
that got a 201 or 200 is there, each id once, and the retries added none twice.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

RATE = 500
SECONDS = 3.0
KILL_AT = 1.5
SRC = Path(__file__).resolve().parents[2] / "src"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(data: Path, port: int) -> tuple[subprocess.Popen, str | None]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen(
        [sys.executable, "-c", "from gpufleet.cli.main import app; app()", "serve", "--port", str(port),
         "--data-dir", str(data), "--speed", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    token = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            raise AssertionError(f"serve exited: {proc.stdout.read()}")
        time.sleep(0.2)
    else:
        proc.kill()
        raise AssertionError("serve did not answer /healthz within 60 s")
    return proc, token


def first_token(proc: subprocess.Popen) -> str:
    """The admin token printed on the first start (its own line, before the server answered)."""
    os.set_blocking(proc.stdout.fileno(), False)
    text = proc.stdout.read() or ""
    for line in text.splitlines():
        if line.startswith("gf_"):
            return line.strip()
    raise AssertionError(f"no admin token in the first start's output: {text!r}")


def body(i: int) -> dict:
    return {"id": f"k9-{i:05d}", "run_time": 600, "pod_sets": [{"replicas": 1, "gpus": 1}]}


async def load(port: int, token: str, proc: subprocess.Popen) -> tuple[set[int], set[int]]:
    acked: set[int] = set()
    lost: set[int] = set()
    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=64)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers=headers, limits=limits,
                                 timeout=5) as client:
        async def one(i: int) -> None:
            try:
                r = await client.post("/api/v1/jobs", json=body(i), headers={"Idempotency-Key": f"key-{i}"})
                if r.status_code in (200, 201):
                    acked.add(i)
                else:
                    lost.add(i)
            except httpx.HTTPError:
                lost.add(i)

        t0 = time.monotonic()
        tasks = []
        killed = False
        for i in range(int(RATE * SECONDS)):
            due = t0 + i / RATE
            now = time.monotonic()
            if due > now:
                await asyncio.sleep(due - now)
            if not killed and time.monotonic() - t0 >= KILL_AT:
                os.kill(proc.pid, signal.SIGKILL)
                killed = True
            tasks.append(asyncio.create_task(one(i)))
        await asyncio.gather(*tasks)
    return acked, lost


@pytest.mark.timeout(300)
def test_every_acknowledged_submission_survives_a_kill_9_exactly_once(tmp_path):
    port = free_port()
    proc, _ = start(tmp_path, port)
    token = first_token(proc)
    acked, lost = asyncio.run(load(port, token, proc))
    proc.wait(timeout=30)
    print(f"acknowledged before the kill: {len(acked)}; unanswered: {len(lost)}")
    assert acked, "no submission was acknowledged before the kill"
    assert lost, "the kill came after every submission: nothing was tested"
    proc, _ = start(tmp_path, port)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}",
                          headers={"Authorization": f"Bearer {token}"}, timeout=30) as c:
            for i in sorted(lost):  # the client's retries, same keys
                r = c.post("/api/v1/jobs", json=body(i), headers={"Idempotency-Key": f"key-{i}"})
                assert r.status_code in (200, 201), r.text
            ids: list[str] = []
            after = None
            while True:
                params = {"limit": 1000, **({"after": after} if after else {})}
                page = c.get("/api/v1/jobs", params=params).json()
                ids += [j["id"] for j in page["jobs"]]
                after = page["next"]
                if after is None:
                    break
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert len(ids) == len(set(ids))
    assert {body(i)["id"] for i in acked} <= set(ids)
    assert set(ids) == {body(i)["id"] for i in acked | lost}
