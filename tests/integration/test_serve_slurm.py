"""``gpufleet serve --source slurm`` against the real emulated Slurm and its real slurmrestd.

A real ``serve`` process reads the package's cluster (8 nodes × 8 H100, conftest.py) through
slurmrestd with a JWT it mints itself (``scontrol token``). The cluster is filled with sbatch
jobs first, so a job submitted through our API must wait: it goes to Slurm (``job/submit``),
comes back with Slurm's job id, is in squeue, and ``…/explain`` gives the engine's reason, its
reservation on the filling jobs' nodes and those jobs as blockers.

Then slurmrestd is stopped (§7 of issue 24): the service stays up, ``/healthz`` and the summary
say the source is unreachable, since when and why, and a submission is refused with a 503
(nothing stored). A job sbatch'ed meanwhile is in the service's world within a few reads of
slurmrestd's return.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from .test_serve_kill9 import first_token, free_port

pytestmark = pytest.mark.slurm
SRC = Path(__file__).resolve().parents[2] / "src"


def serve(slurm, data: Path, port: int, *extra: str) -> subprocess.Popen:
    env = {**slurm.env, "PYTHONPATH": str(SRC)}
    env.pop("SLURM_JWT", None)
    return subprocess.Popen(
        [sys.executable, "-c", "from gpufleet.cli.main import app; app()", "serve", "--port", str(port),
         "--data-dir", str(data), "--source", "slurm", "--slurm-conf", slurm.slurm_conf,
         "--poll-s", "1", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def wait_http(url: str, proc: subprocess.Popen, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            raise AssertionError(f"serve exited: {proc.stdout.read()}")
        time.sleep(0.3)
    raise AssertionError(f"{url} did not answer within {timeout:.0f} s")


def until(pred, timeout: float = 60, every: float = 0.5):  # noqa: ANN001, ANN201
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f} s; last: {value!r}")
        time.sleep(every)


@pytest.fixture
def served(slurm, tmp_path):  # noqa: ANN001, ANN201
    port = free_port()
    proc = serve(slurm, tmp_path / "data", port, "--slurmrestd", slurm.restd_url)
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", proc)
        token = first_token(proc)
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=15,
                              headers={"Authorization": f"Bearer {token}"})
        yield client, proc
        client.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        slurm.restd_start()  # a test that stopped it leaves the cluster as it found it


def fill(slurm, minutes: int = 3) -> list[str]:  # noqa: ANN001
    """Every node busy: two 4-node jobs of 8 GPUs each (limit ``minutes``)."""
    return [slurm.run("sbatch", "--parsable", "-A", "research", "-N", "4", "--gres=gpu:8", f"-t{minutes}",
                      "-o", "/dev/null", "--wrap", "sleep 600").strip() for _ in range(2)]


def test_serve_reads_slurm_submits_to_it_and_explains_a_waiting_job(slurm, served):  # noqa: ANN001
    client, _ = served
    health = until(lambda: (h := client.get("/healthz").json())["source_reachable"] and h)
    assert health["source"] == "slurm" and "slurmrestd" in health["source_detail"]
    nodes = client.get("/api/v1/nodes").json()
    assert len(nodes) == 8 and {n["gpus"] for n in nodes} == {8}
    about = client.get("/api/v1/source").json()["about"]
    assert about["via"] == "slurmrestd" and len(about["partitions"]["gpu"]) == 8
    assert {"research", "prod"} <= set(about["accounts"])                 # slurmdbd, over JWT
    assert {("research", "root"), ("prod", "root")} <= {(f["account"], f["user"]) for f in about["fairshare"]}

    fillers = fill(slurm)
    running = until(lambda: len(slurm.run("squeue", "-h", "-t", "R", "-o", "%i").split()) == 2)
    assert running
    until(lambda: client.get("/api/v1/summary").json()["running_jobs"] == 2)

    body = {"tenant": "prod", "run_time": 120, "pod_sets": [{"replicas": 2, "gpus": 8}]}
    r = client.post("/api/v1/jobs", json=body, headers={"Idempotency-Key": "serve-slurm-1"})
    assert r.status_code == 201, r.text
    jid = r.json()["id"]
    assert jid.isdigit() and int(jid) > max(int(f) for f in fillers)        # Slurm's job id
    again = client.post("/api/v1/jobs", json=body, headers={"Idempotency-Key": "serve-slurm-1"})
    assert again.status_code == 200 and again.json()["id"] == jid           # a retry sends nothing
    queue = slurm.run("squeue", "-h", "-o", "%i|%a|%D|%b|%T").split()
    assert f"{jid}|prod|2|gres:gpu:8|PENDING" in queue
    assert len([q for q in queue if q.split("|")[0] not in fillers]) == 1

    e = until(lambda: (x := client.get(f"/api/v1/jobs/{jid}/explain").json()).get("code") and x)
    assert e["state"] == "pending" and e["reason"] == "capacity", e
    assert e["summary"].startswith("waiting (capacity)")
    assert set(e["blockers"]) <= set(fillers) and e["blockers"]
    assert e["estimated_start"] is not None and e["planned_nodes"]

    # hold and release through our API are Slurm's hold and release
    assert client.post(f"/api/v1/jobs/{jid}/hold").status_code == 200
    assert slurm.run("squeue", "-h", "-j", jid, "-o", "%r").strip().startswith("JobHeld")
    held = until(lambda: (x := client.get(f"/api/v1/jobs/{jid}/explain").json())["reason"] == "held" and x)
    assert held["summary"].startswith("waiting in slurm (JobHeld")
    assert client.post(f"/api/v1/jobs/{jid}/release").status_code == 200
    assert not slurm.run("squeue", "-h", "-j", jid, "-o", "%r").strip().startswith("JobHeld")

    # cancel through our API is Slurm's cancel; the record stays cancelled once Slurm lists it so
    assert client.post(f"/api/v1/jobs/{jid}/cancel").json()["state"] == "cancelled"
    until(lambda: slurm.run("squeue", "-h", "-j", jid, "-o", "%T").strip() in ("CANCELLED", ""))
    until(lambda: client.get(f"/api/v1/jobs/{jid}/explain").json()["state"] == "cancelled")
    time.sleep(2.5)                                                      # two more reads
    assert client.get(f"/api/v1/jobs/{jid}").json()["state"] == "cancelled"

    bad = client.post("/api/v1/jobs", json={**body, "tenant": "nosuchaccount"})
    assert bad.status_code == 422 and "slurm refused" in bad.json()["error"]["message"].lower(), bad.text
    assert "Invalid account" in bad.json()["error"]["message"]


def test_slurmrestd_going_away_is_reported_and_caught_up_on(slurm, served):  # noqa: ANN001
    client, proc = served
    until(lambda: client.get("/healthz").json()["source_reachable"])
    slurm.restd_stop()
    down = until(lambda: (h := client.get("/healthz").json())["source_reachable"] is False and h, timeout=30)
    assert down["status"] == "degraded" and down["source_since"] is not None
    assert "cannot connect" in down["source_last_error"]
    summary = client.get("/api/v1/summary").json()
    assert summary["source_reachable"] is False and summary["source_since"] == down["source_since"]
    refused = client.post("/api/v1/jobs", json={"run_time": 60, "pod_sets": [{"replicas": 1, "gpus": 1}]})
    assert refused.status_code == 503 and client.get("/api/v1/jobs").json()["jobs"] == []
    meanwhile = slurm.run("sbatch", "--parsable", "-A", "research", "--gres=gpu:1", "-t1", "-o", "/dev/null",
                          "--wrap", "sleep 120").strip()
    time.sleep(2)
    assert proc.poll() is None and client.get("/healthz").status_code == 200   # still up
    slurm.restd_start()
    back = until(lambda: (h := client.get("/healthz").json())["source_reachable"] and h, timeout=30)
    assert back["source_since"] > down["source_since"] and "cannot connect" in back["source_last_error"]
    summary = until(lambda: (s := client.get("/api/v1/summary").json())["running_jobs"] == 1 and s)
    assert summary["source_reachable"] is True
    e = client.get(f"/api/v1/jobs/{meanwhile}/explain").json()
    assert e["state"] == "running"


def test_without_slurmrestd_the_client_commands_are_read(slurm, tmp_path):  # noqa: ANN001
    port = free_port()
    proc = serve(slurm, tmp_path / "data", port)
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", proc)
        token = first_token(proc)
        h = {"Authorization": f"Bearer {token}"}
        health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).json()
        assert health["source_reachable"] and "slurm commands" in health["source_detail"]
        r = httpx.post(f"http://127.0.0.1:{port}/api/v1/jobs", headers=h, timeout=30,
                       json={"tenant": "research", "run_time": 60, "pod_sets": [{"replicas": 1, "gpus": 2}]})
        assert r.status_code == 201, r.text
        assert r.json()["id"] in slurm.queue_ids()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert os.path.exists(tmp_path / "data" / "gpufleet.db")


def test_the_queues_are_sacctmgrs_accounts_with_their_limits_and_running_jobs(slurm, tmp_path):  # noqa: ANN001
    """prod gets ``GrpTRES=gres/gpu=16`` first (the service reads accounts at its start, then every
    30 s). Each account without sub-accounts (as ``sacctmgr show assoc`` lists them) is a queue in
    its parent's cohort. Slurm guarantees no account GPUs, so every nominal is 0: prod may borrow
    up to its limit, 16 (basis GrpTRES); research, with no limit, without one (basis shares). A
    2-GPU job sbatch'ed to research is its usage, all borrowed. A quota edit is refused: Slurm
    owns the limit."""
    slurm.run("sacctmgr", "-i", "modify", "account", "prod", "set", "GrpTRES=gres/gpu=16")
    port = free_port()
    proc = serve(slurm, tmp_path / "data", port, "--slurmrestd", slurm.restd_url)
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", proc)
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=15,
                              headers={"Authorization": f"Bearer {first_token(proc)}"})
        rows = [r.split("|") for r in slurm.run("sacctmgr", "-n", "-P", "show", "assoc",
                                                "format=Account,ParentName,User,Share,GrpTRES").split()]
        accounts = {a: (p, g) for a, p, u, _, g in rows if not u and a != "root"}
        leaves = {a for a in accounts if a not in {p for p, _ in accounts.values()}}
        assert {"research", "prod"} <= leaves and accounts["prod"][1] == "gres/gpu=16"
        job = slurm.run("sbatch", "--parsable", "-A", "research", "--gres=gpu:2", "-t2", "-o", "/dev/null",
                        "--wrap", "sleep 300").strip()
        def read() -> dict | None:
            got = {q["name"]: q for q in client.get("/api/v1/queues").json()}
            return got if got.get("research", {}).get("running_gpus") == 2 else None
        qs = until(read, timeout=60)
        assert set(qs) == leaves
        for name in leaves:
            assert qs[name]["cohort"] == accounts[name][0], name
        (prod,) = qs["prod"]["flavors"]
        assert (prod["nominal"], prod["borrowing_limit"], qs["prod"]["nominal_basis"]) == (0, 16, "GrpTRES")
        (research,) = qs["research"]["flavors"]
        assert qs["research"]["nominal_basis"] == "shares" and research["nominal"] == 0
        assert research["borrowing_limit"] is None and research["borrowed"] == 2
        assert research["usage"] == 2 and qs["research"]["running_jobs"] == 1
        assert qs["research"]["share_from"] == "sshare" and qs["research"]["weighted_share"] is not None
        r = client.put(f"/api/v1/queues/prod/quota/{prod['flavor']}", json={"nominal": 32})
        assert r.status_code == 409 and "sacctmgr modify account" in r.json()["error"]["message"]
        slurm.run("scancel", job)
        client.close()
    finally:
        slurm.run("sacctmgr", "-i", "modify", "account", "prod", "set", "GrpTRES=gres/gpu=-1", check=False)
        proc.terminate()
        proc.wait(timeout=20)
