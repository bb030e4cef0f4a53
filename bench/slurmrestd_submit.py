"""The same submission load on slurmrestd (the test Slurm of this machine) and on `gpufleet serve`,
side by side in one run: submissions/s achieved and their p50/p99, and the ratio.

    python bench/slurmrestd_submit.py [--rate 200] [--seconds 10] [--conns 16]

Steps: bring up the emulated Slurm the integration tests use (tools/slurm-emulated-cluster.sh:
Debian's slurmctld 22.05, 8 slurmd, slurmdbd on a private MariaDB, slurmrestd with JWT
auth: slurmrestd 22.05 refuses to start without slurmdbd) in a folder and
on ports of its own; mint a token (`scontrol token`); then RATE submissions/s for SECONDS (open
loop, latency from each request's due time, CONNS keep-alive connections, the hand-written client
of bench/serve_load.py) of one-GPU `sleep 600` jobs to `POST /slurm/v0.0.38/job/submit`; then
the same load on a fresh `gpufleet serve` (SQLite store, 8 × 8-GPU virtual fleet) to
`POST /api/v1/jobs`. The cluster is purged at the end. A benchmark: it prints, asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_load import Conn, free_port, pct, positive, prepare  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "slurm-emulated-cluster.sh"


def cluster_env() -> dict[str, str]:
    base = random.Random(os.getpid()).randrange(21000, 32000, 100)
    root = f"/tmp/gpufleet-bench-slurm-{base}"
    return dict(os.environ, SLURMTEST_DIR=root, SLURMTEST_NODES="8", SLURMTEST_NODES_PER_LEAF="4",
                SLURMTEST_ACCOUNTING="slurmdbd", SLURMTEST_CLUSTER="gfbench",
                SLURMTEST_CTLD_PORT=str(base), SLURMTEST_DBD_PORT=str(base + 1),
                SLURMTEST_MYSQL_PORT=str(base + 2), SLURMTEST_RESTD_PORT=str(base + 3),
                SLURMTEST_NODE_PORT_BASE=str(base + 10), SLURM_CONF=f"{root}/etc/slurm.conf")


async def load(port: int, auth: str, path: str, body_of, rate: float, seconds: float, conns: int,
               ok: tuple[int, ...]) -> dict:
    n = int(rate * seconds)
    lat: list[float] = []
    codes: dict[int, int] = {}
    nxt = 0
    t0 = time.perf_counter() + 0.1

    async def worker() -> None:
        nonlocal nxt
        c = Conn("127.0.0.1", port, "", auth=auth)
        try:
            while nxt < n:
                i = nxt
                nxt += 1
                due = t0 + i / rate
                if due > time.perf_counter():
                    await asyncio.sleep(due - time.perf_counter())
                try:
                    code = await c.post(path, json.dumps(body_of(i)).encode(), f"k-{i}")
                except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
                    code = 0
                    c.close()
                lat.append(time.perf_counter() - due)
                codes[code] = codes.get(code, 0) + 1
        finally:
            c.close()

    await asyncio.gather(*(worker() for _ in range(conns)))
    took = time.perf_counter() - t0
    good = sum(codes.get(k, 0) for k in ok)
    return {"sent": len(lat), "accepted": good, "codes": codes, "achieved_per_s": round(good / took, 1),
            "p50_ms": round(pct(lat, 50) * 1e3, 2), "p99_ms": round(pct(lat, 99) * 1e3, 2)}


def slurm_body(i: int) -> dict:
    return {"script": "#!/bin/sh\nsleep 600\n",
            "job": {"name": f"bench-{i}", "nodes": 1, "time_limit": 60, "gpus_per_node": "1",
                    "current_working_directory": "/tmp", "standard_output": "/dev/null",
                    "environment": {"PATH": "/bin:/usr/bin"}}}


def gpufleet_body(i: int) -> dict:
    return {"id": f"b{i:07d}", "run_time": 600, "pod_sets": [{"replicas": 1, "gpus": 1}]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=positive(float), default=200.0)
    ap.add_argument("--seconds", type=positive(float), default=10.0)
    ap.add_argument("--conns", type=positive(int), default=16)
    a = ap.parse_args()
    env = cluster_env()
    out: dict = {"rate": a.rate, "seconds": a.seconds, "conns": a.conns}
    t = time.perf_counter()
    up = subprocess.run(["bash", str(SCRIPT), "up"], env=env, capture_output=True, text=True, timeout=600)
    if up.returncode != 0:
        subprocess.run(["bash", str(SCRIPT), "purge"], env=env, capture_output=True, timeout=300)
        sys.exit(f"the test Slurm did not come up: {up.stderr[-2000:]}")
    out["slurm_up_s"] = round(time.perf_counter() - t, 1)
    try:
        tok = subprocess.run(["scontrol", "token", "lifespan=3600"], env=env, capture_output=True,
                             text=True, check=True).stdout.strip().split("=", 1)[1]
        auth = f"X-SLURM-USER-NAME: root\r\nX-SLURM-USER-TOKEN: {tok}\r\n"
        port = int(env["SLURMTEST_RESTD_PORT"])
        out["slurmrestd"] = asyncio.run(load(port, auth, "/slurm/v0.0.38/job/submit", slurm_body, a.rate,
                                             a.seconds, a.conns, (200,)))
    finally:
        subprocess.run(["bash", str(SCRIPT), "purge"], env=env, capture_output=True, timeout=300)
    data = Path(tempfile.mkdtemp(prefix="serve-vs-slurm-"))
    fleet = prepare(data, 8, 0)
    token = (data / "token").read_text()
    gport = free_port()
    proc = subprocess.Popen([sys.executable, "-c", "from gpufleet.cli.main import app; app()", "serve",
                             "--port", str(gport), "--data-dir", str(data), "--fleet", str(fleet)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    try:
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{gport}/healthz", timeout=2)
                break
            except httpx.HTTPError:
                if proc.poll() is not None:
                    sys.exit("serve exited during start-up")
                time.sleep(0.3)
        out["gpufleet"] = asyncio.run(load(gport, f"Authorization: Bearer {token}\r\n", "/api/v1/jobs",
                                           gpufleet_body, a.rate, a.seconds, a.conns, (201,)))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    s, g = out["slurmrestd"], out["gpufleet"]
    rate_s = s["achieved_per_s"]
    out["ratio_achieved"] = round(g["achieved_per_s"] / rate_s, 2) if rate_s else None
    out["ratio_p99"] = round(s["p99_ms"] / g["p99_ms"], 2) if g["p99_ms"] else None
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
