"""The dashboard over ``gpufleet serve --source slurm``, in headless Chromium, against the real
emulated Slurm (8 nodes × 8 H100, conftest.py) and its slurmrestd.

The cluster is filled with two 4-node sbatch jobs, then a 2-node job submitted through our API
waits for capacity. Each page must render Slurm's world with no console error and no serious or
critical axe-core finding: the Overview counts the waiting job and shows it as the biggest
waiting gang; the Jobs table lists the fillers and the waiting job by Slurm's ids; the job page
gives the engine's reason (capacity) and the fillers as blockers; the Queues page has Slurm's
accounts as queues in root's cohort (nominal 0 each: prod borrows up to its GrpTRES limit, set for the
test, research without limit); History has the two short jobs
that ran before the fill, one for research through our API and one sbatch'ed for prod (from
Slurm's accounting); the Nodes map has the 8 nodes,
and a node's page its health layers (every node busy: allocatable 8 of 8, none free); a node
drained in Slurm (``scontrol update State=DRAIN``) keeps its layers ok and has none allocatable;
a study (other policies on today's queue) runs on Slurm's world with today's policy first.
Screenshots go to build/browser-artifacts/slurm-*.png.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import httpx
import pytest

from .test_serve_kill9 import first_token, free_port
from .test_serve_slurm import fill, serve, until, wait_http

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "browser"))
from chrome import axe_violations, console_errors, missing_browser, screenshot, start_chrome  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

pytestmark = [pytest.mark.slurm, pytest.mark.browser]
ARTIFACTS = Path(os.environ.get("GPUFLEET_BROWSER_ARTIFACTS", ROOT / "build" / "browser-artifacts"))


def page(driver, url: str, name: str) -> str:  # noqa: ANN001
    """Open ``url``; its text once the live stream is connected, after the console and axe checks."""
    driver.get(url)
    until(lambda: driver.find_element(By.ID, "live-status").get_attribute("data-state") == "live", timeout=20,
          every=0.1)
    screenshot(driver, ARTIFACTS, f"slurm-{name}")
    assert console_errors(driver) == [], name
    assert axe_violations(driver) == [], name
    return driver.find_element(By.TAG_NAME, "main").text


def test_every_page_over_the_slurm_source_in_a_real_browser(slurm, tmp_path) -> None:  # noqa: ANN001
    why = missing_browser()
    if why is not None:
        pytest.skip(why)
    port = free_port()
    # read at the service's start: prod's queue borrows up to its GrpTRES, research without limit
    slurm.run("sacctmgr", "-i", "modify", "account", "prod", "set", "GrpTRES=gres/gpu=16")
    proc = serve(slurm, tmp_path / "data", port, "--slurmrestd", slurm.restd_url)
    driver = drained = None
    try:
        base = f"http://127.0.0.1:{port}"
        wait_http(f"{base}/healthz", proc)
        token = first_token(proc)
        api = httpx.Client(base_url=base, timeout=15, headers={"Authorization": f"Bearer {token}"})
        until(lambda: api.get("/healthz").json()["source_reachable"])
        # History's per-tenant parts: a short job through our API and one sbatch'ed beside it,
        # both finished (and in Slurm's accounting) before the fill
        done = api.post("/api/v1/jobs", json={"tenant": "research", "run_time": 5,
                                              "pod_sets": [{"replicas": 1, "gpus": 2}]})
        assert done.status_code == 201, done.text
        beside = slurm.run("sbatch", "--parsable", "-A", "prod", "--gres=gpu:1", "-t1", "-o", "/dev/null",
                           "--wrap", "sleep 3").strip()
        until(lambda: api.get(f"/api/v1/jobs/{done.json()['id']}").json()["state"] == "finished", timeout=60)
        until(lambda: slurm.run("sacct", "-X", "-n", "-P", "-j", f"{beside},{done.json()['id']}",
                                "-o", "State").split() == ["COMPLETED", "COMPLETED"], timeout=60)
        fillers = fill(slurm)
        until(lambda: api.get("/api/v1/summary").json()["running_jobs"] == 2)
        r = api.post("/api/v1/jobs", json={"tenant": "prod", "run_time": 120,
                                           "pod_sets": [{"replicas": 2, "gpus": 8}]})
        assert r.status_code == 201, r.text
        jid = r.json()["id"]
        until(lambda: api.get(f"/api/v1/jobs/{jid}/explain").json().get("reason") == "capacity")

        driver = start_chrome()
        driver.get(f"{base}/?token={token}")
        console_errors(driver)
        overview = page(driver, f"{base}/", "overview")
        assert "1 job blocked" in overview or "1 pending" in overview, overview
        assert jid in overview and "slurm" in overview

        jobs = page(driver, f"{base}/jobs", "jobs")
        assert all(f in jobs for f in fillers) and jid in jobs

        job = page(driver, f"{base}/jobs/{jid}", "job")
        assert "capacity" in job and any(f in job for f in fillers), job

        # Slurm's accounts as queues: root's cohort with research (idle) and prod (1 pending)
        queues = page(driver, f"{base}/queues", "queues")
        assert "cohort root" in queues and "no GrpTRES: borrows freely" in queues, queues
        assert "0 / 0\nborrows up to its GrpTRES" in queues, queues
        named = {r.get_attribute("data-queue")
                 for r in driver.find_elements(By.CSS_SELECTOR, "tr[data-queue]")}
        assert {"research", "prod"} <= named, named
        assert "sshare" in queues

        # History: both finished jobs by their accounts (2 GPUs for about 5 s; 1 GPU for about 3 s)
        history = page(driver, f"{base}/history", "history")
        assert "2 finished jobs" in history and "research" in history and "prod" in history, history
        by = {t["tenant"]: t for t in api.get("/api/v1/history").json()}
        assert by["research"]["finished"] == 1 and 0 < by["research"]["gpu_hours"] < 2 * 60 / 3600
        assert by["prod"]["finished"] == 1 and 0 < by["prod"]["gpu_hours"] < 60 / 3600
        assert 0 <= by["research"]["wait_mean_s"] < 60

        nodes = api.get("/api/v1/nodes").json()
        fleet = page(driver, f"{base}/nodes", "nodes")
        assert len(nodes) == 8 and all(n["name"] in fleet for n in nodes)

        node = page(driver, f"{base}/nodes/{nodes[0]['name']}", "node")
        rows = {row.get_attribute("data-layer"): row.get_attribute("data-state")
                for row in driver.find_elements(By.CSS_SELECTOR, "#layers tbody tr")}
        assert rows == {"driver": "ok", "toolkit": "ok", "device_plugin": "ok", "allocatable": "ok"}, rows
        assert "8 of 8 GPUs (0 free)" in node

        # drained in Slurm (scontrol): the layers stay ok, allocatable goes out, on the same page
        last = drained = nodes[-1]["name"]
        slurm.run("scontrol", "update", f"NodeName={last}", "State=DRAIN", "Reason=dashboard-test")
        until(lambda: api.get(f"/api/v1/nodes/{last}").json()["state"] != "up")
        page(driver, f"{base}/nodes/{last}", "node-drained")
        rows = {row.get_attribute("data-layer"): row.get_attribute("data-state")
                for row in driver.find_elements(By.CSS_SELECTOR, "#layers tbody tr")}
        assert rows == {"driver": "ok", "toolkit": "ok", "device_plugin": "ok", "allocatable": "out"}, rows
        assert api.get(f"/api/v1/nodes/{last}/health").json()["state"] == "draining"

        # a study over Slurm's world: other policies on today's queue, today's first
        page(driver, f"{base}/studies", "studies")
        driver.find_element(By.ID, "run-policies").click()
        table = until(lambda: driver.find_elements(By.CSS_SELECTOR, "#studies-list table"), timeout=120)
        assert "(today)" in table[0].find_elements(By.CSS_SELECTOR, "tbody tr")[0].text
        assert console_errors(driver) == []
        api.close()
    finally:
        if driver is not None:
            driver.quit()
        proc.terminate()
        proc.wait(timeout=20)
        if drained is not None:
            slurm.run("scontrol", "update", f"NodeName={drained}", "State=RESUME", check=False)
        slurm.run("sacctmgr", "-i", "modify", "account", "prod", "set", "GrpTRES=gres/gpu=-1", check=False)
