"""Load on a real `gpufleet serve` over loopback: submissions/s and their p99, explain p99, and
one what-if's latency, with a large fleet and a deep queue.

`gpufleet serve` is two processes (service/front.py): the front takes the submissions, the
scheduler process runs the loop and answers the rest (passed on by the front). The figures
count the CPU of each.

    python bench/serve_load.py [--nodes 2000] [--pending 100000] [--rate 1000] [--seconds 60]
                               [--replicas 1] [--conns 64] [--explains 500] [--profile FILE]

Steps: write a fleet file (NODES × 8 H100, leaves of 32); put PENDING jobs of 4–64 GPUs straight
into a fresh SQLite store (the service's own Store, as acknowledged submissions), all bigger than
the fleet's free room once the first ones start so they stay pending; start `gpufleet serve` on
it (its scheduler process restores them and leads), and REPLICAS-1 more on the same store
(followers); then, over
HTTP with one token:
1. submissions: RATE per second for SECONDS (open loop: request i is due at i/RATE and its
   latency counts from then; CONNS keep-alive connections, spread over the followers when there
   are any, else the first serve), each a 1-GPU job with its own Idempotency-Key; achieved rate,
   p50/p99 latency; meanwhile ten explains a second through the first serve's front (p50/p99
   under load);
2. explain: EXPLAINS GETs of /jobs/{id}/explain for random pending jobs, one at a time; p50/p99;
3. what-if: POST /whatif for one 64-GPU shape a week ahead, one seed; its wall time.
A benchmark, not a test: it prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def positive(kind):
    def parse(text: str):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not (v > 0) or v != v or v in (float("inf"),):
            raise argparse.ArgumentTypeError(f"expected a finite number above 0, got {text}")
        return v
    return parse


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else float("nan")


def prepare(data: Path, nodes: int, pending: int) -> Path:
    from gpufleet.service.jobs import parse_submission, stored_body
    from gpufleet.service.store import Store
    from gpufleet.service.store.db import body_hash
    fleet = data / "fleet.yaml"
    fleet.write_text(f"fleet:\n  name: bench\n  groups:\n    - {{nodes: {nodes}, gpu: H100-80GB, "
                     "gpus_per_node: 8, leaf_size: 32}\n")
    store = Store(f"sqlite:///{data / 'gpufleet.db'}")
    rng = random.Random(7)
    now = time.time()
    rows = []
    for i in range(pending):
        gpus = rng.choice((4, 8, 16, 32, 64))
        body = {"id": f"p{i:06d}", "tenant": rng.choice(("research", "product", "vision")),
                "run_time": rng.choice((3600, 7200, 14400)),
                "pod_sets": [{"replicas": max(1, gpus // 8), "gpus": min(gpus, 8)}]}
        sub = parse_submission(body)
        rows.append(dict(id=body["id"], seq=i + 1, tenant=body["tenant"], state="pending", priority=0,
                         gpus=gpus, body=stored_body(sub, body["id"], 0.0), submit_time=0.0,
                         start_time=None, end_time=None, idempotency_key=None,
                         body_hash=body_hash(body), submitted_by="bench", created_at=now, updated_at=now))
    from gpufleet.service.store.schema import jobs
    with store.writing() as c:
        for k in range(0, len(rows), 5000):
            c.execute(jobs.insert(), rows[k:k + 5000])
    from gpufleet.service.auth import Auth
    token, _ = Auth(store).create("admin", name="bench")
    store.close()
    (data / "token").write_text(token)
    return fleet


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (/proc/PID/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Conn:
    """One keep-alive HTTP/1.1 connection, requests written and responses read by hand: httpx's
    async pool spends more CPU per request than the server does (measured: the server idled at
    48 submissions/s while the client was saturated), so the generator would measure itself."""

    def __init__(self, host: str, port: int, token: str, auth: str | None = None) -> None:
        self.host, self.port, self.token = host, port, token
        #: The authentication header lines (default: the bearer token).
        self.auth = auth if auth is not None else f"Authorization: Bearer {token}\r\n"
        self.r: asyncio.StreamReader | None = None
        self.w: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: bytes, key: str) -> int:
        head = (f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\n{self.auth}"
                f"Idempotency-Key: {key}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        return await self._send(head + body)

    async def get(self, path: str) -> int:
        return await self._send(f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\n{self.auth}\r\n".encode())

    async def _send(self, data: bytes) -> int:
        if self.w is None:
            self.r, self.w = await asyncio.open_connection(self.host, self.port)
        self.w.write(data)
        assert self.r is not None
        status_line = await self.r.readline()
        length = 0
        while True:
            line = await self.r.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if length:
            await self.r.readexactly(length)
        return int(status_line.split()[1])

    def close(self) -> None:
        if self.w is not None:
            self.w.close()
            self.w = None


async def submissions(host: str, ports: list[int], token: str, rate: float, seconds: float,
                      conns: int = 64, prefix: str = "s", explain: tuple[int, list[str]] | None = None
                      ) -> dict:
    """Open loop: request i is due at t0 + i/rate; a connection takes the next due one. Latency
    counts from the due time, so time spent waiting for a free connection is charged to the
    server (no coordinated omission)."""
    n = int(rate * seconds)
    lat: list[float] = []
    codes: dict[int, int] = {}
    nxt = 0
    t0 = time.perf_counter() + 0.1

    async def worker(k: int) -> None:
        nonlocal nxt
        c = Conn(host, ports[k % len(ports)], token)
        try:
            while nxt < n:
                i = nxt
                nxt += 1
                due = t0 + i / rate
                d = due - time.perf_counter()
                if d > 0:
                    await asyncio.sleep(d)
                body = json.dumps({"id": f"{prefix}{i:07d}", "run_time": 60,
                                   "pod_sets": [{"replicas": 1, "gpus": 1}]}).encode()
                try:
                    code = await c.post("/api/v1/jobs", body, f"bench-{prefix}-{i}")
                except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
                    code = 0
                    c.close()
                lat.append(time.perf_counter() - due)
                codes[code] = codes.get(code, 0) + 1
        finally:
            c.close()

    during: list[float] = []

    async def explains() -> None:
        """Ten explains a second, one at a time, while the submissions run (the leader's)."""
        assert explain is not None
        port, ids = explain
        c = Conn(host, port, token)
        k = 0
        try:
            while nxt < n:
                t = time.perf_counter()
                await c.get(f"/api/v1/jobs/{ids[k % len(ids)]}/explain")
                during.append(time.perf_counter() - t)
                k += 1
                await asyncio.sleep(max(0.0, 0.1 - (time.perf_counter() - t)))
        finally:
            c.close()

    await asyncio.gather(*(worker(k) for k in range(conns)), *([explains()] if explain else []))
    took = time.perf_counter() - t0
    return {"sent": len(lat), "created": codes.get(201, 0),
            "explain_during": {"n": len(during), "p50_ms": round(pct(during, 50) * 1e3, 2),
                               "p99_ms": round(pct(during, 99) * 1e3, 2)},
            "errors": len(lat) - codes.get(201, 0), "achieved_per_s": round(len(lat) / took, 1),
            "p50_ms": round(pct(lat, 50) * 1e3, 2), "p99_ms": round(pct(lat, 99) * 1e3, 2),
            "client_cpu_s": round(time.process_time(), 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=positive(int), default=2000)
    ap.add_argument("--pending", type=positive(int), default=100_000)
    ap.add_argument("--rate", type=positive(float), default=1000.0)
    ap.add_argument("--seconds", type=positive(float), default=60.0)
    ap.add_argument("--conns", type=positive(int), default=64, help="Client connections.")
    ap.add_argument("--replicas", type=positive(int), default=1,
                    help="serve processes on the store: the leader, and REPLICAS-1 followers that take "
                         "the submissions (explains and the what-if go to the leader).")
    ap.add_argument("--explains", type=positive(int), default=500)
    ap.add_argument("--profile", type=Path, default=None,
                    help="Run the server under py-spy and write its collapsed stacks here.")
    a = ap.parse_args()
    import httpx
    data = Path(tempfile.mkdtemp(prefix="serve-bench-"))
    t = time.perf_counter()
    fleet = prepare(data, a.nodes, a.pending)
    prep_s = time.perf_counter() - t
    token = (data / "token").read_text()
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    t = time.perf_counter()
    spy = [str(Path(sys.executable).parent / "py-spy"), "record", "--format", "raw", "-r", "50",
           "-o", str(a.profile), "--"] if a.profile is not None else []

    def serve(p: int, wrap: list[str]) -> subprocess.Popen:
        return subprocess.Popen([*wrap, sys.executable, "-c", "from gpufleet.cli.main import app; app()",
                                 "serve", "--port", str(p), "--data-dir", str(data), "--fleet", str(fleet)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, env=env)

    def wait(p: int, proc: subprocess.Popen, cycled: bool) -> None:
        while True:
            try:
                hz = httpx.get(f"http://127.0.0.1:{p}/healthz", timeout=2).json()
                if not cycled or hz["cycles"] > 0:
                    return
            except (httpx.HTTPError, ValueError):
                pass
            if proc.poll() is not None:
                sys.exit("serve exited during start-up")
            time.sleep(0.5)

    proc = serve(port, spy)
    followers: list[tuple[int, subprocess.Popen]] = []
    base = f"http://127.0.0.1:{port}"
    h = {"Authorization": f"Bearer {token}"}
    rng = random.Random(3)
    ids = [f"p{rng.randrange(a.pending):06d}" for _ in range(a.explains)]
    try:
        wait(port, proc, True)
        start_s = time.perf_counter() - t
        for _ in range(a.replicas - 1):  # followers: the web traffic, none of the loop
            fp = free_port()
            followers.append((fp, serve(fp, [])))
            wait(fp, followers[-1][1], False)
        summary = httpx.get(f"{base}/api/v1/summary", headers=h, timeout=60).json()
        targets = [fp for fp, _ in followers] or [port]
        server = proc.pid
        if spy:  # py-spy's child is the server
            kids = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
            server = int(kids[0]) if kids else proc.pid
        scheduler = httpx.get(f"{base}/healthz", timeout=10).json()["pid"]  # the front passes it on
        pids = [server, scheduler] + [f.pid for _, f in followers]
        cpu0 = [cpu_s(p) for p in pids]
        load0 = os.getloadavg()[0]
        sub = asyncio.run(submissions("127.0.0.1", targets, token, a.rate, a.seconds, a.conns,
                                      explain=(port, ids)))
        used = [cpu_s(p) - c for p, c in zip(pids, cpu0, strict=True)]
        n = sub["created"] or 1
        sub["server_cpu_s"] = {"front": round(used[0], 1), "scheduler": round(used[1], 1),
                               "follower_fronts": [round(u, 1) for u in used[2:]]}
        sub["front_cpu_ms_per_submission"] = round(1e3 * (sum(used[2:]) if followers else used[0]) / n, 3)
        sub["load_average"] = [round(load0, 1), round(os.getloadavg()[0], 1)]
        lat = []
        with httpx.Client(base_url=base, headers=h, timeout=60) as c:
            for jid in ids:
                t = time.perf_counter()
                c.get(f"/api/v1/jobs/{jid}/explain")
                lat.append(time.perf_counter() - t)
            t = time.perf_counter()
            w = c.post("/api/v1/whatif", json={"job": {"run_time": 3600, "pod_sets": [
                {"replicas": 8, "gpus": 8}]}, "seeds": 1, "horizon_s": 7 * 86400})
            whatif_s = time.perf_counter() - t
            last = c.get("/healthz").json()
            cycle = c.get("/api/v1/summary").json()["last_cycle_s"]
    finally:
        server = proc.pid
        if spy:  # py-spy writes its file when the server exits
            kids = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
            server = int(kids[0]) if kids else proc.pid
        os.kill(server, signal.SIGTERM)
        for _, f in followers:
            f.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        for _, f in followers:
            f.wait(timeout=60)
    print(json.dumps({
        "nodes": a.nodes, "replicas": a.replicas, "pending_at_start": summary["pending_jobs"],
        "running_at_start": summary["running_jobs"],
        "prepare_s": round(prep_s, 1), "start_to_first_cycle_s": round(start_s, 1),
        "submit": sub, "explain": {"n": len(lat), "p50_ms": round(pct(lat, 50) * 1e3, 2),
                                   "p99_ms": round(pct(lat, 99) * 1e3, 2)},
        "whatif": {"status": w.status_code, "wall_s": round(whatif_s, 2),
                   "wait_s": w.json().get("wait_median_s") if w.status_code == 200 else None},
        "cycles": last["cycles"], "last_cycle_s": round(cycle, 3)}, indent=2))


if __name__ == "__main__":
    main()
