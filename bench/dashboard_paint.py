"""The dashboard's first paint with 2,000 nodes and 100,000 pending jobs, in headless Chromium.

    python bench/dashboard_paint.py                       # 2,000 nodes × 8 H100, 100,000 pending
    python bench/dashboard_paint.py --nodes 200 --jobs 10000

Builds a real service in-process (SQLite store in a temporary folder, the virtual source, the
default gang-easy profile), fills the fleet ~90 % with running 8-GPU jobs through one engine cycle,
then queues the pending jobs (1–8 pods of 8 GPUs, 8 tenants) straight into the live source — the
store does not need them to draw pages, and 100,000 API submissions would measure the API, not the
pages — runs one more cycle so every pending job has the engine's status, and serves the app with
uvicorn on a thread. Chromium (tests/browser/chrome.py: Debian's, headless) then opens each page
``--repeat`` times; per page the median of:
- ``fcp_ms``: first-contentful-paint (Paint Timing API);
- ``response_ms``: navigation start → last byte of the HTML (the server's share);
Then the live update, ``--probes`` times (medians): a job is submitted through the API while
/jobs?q=<its id> is open; the time until its row is on screen, counted from the decision (a loop
sink marks the tick whose cycle decided on the job: the event, the snapshot, the stream, the
fragment fetch and the swap follow) and from the POST's answer (adds the wait for the loop's next
tick and its cycle over 100,000 pending jobs). Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

import httpx  # noqa: E402
import uvicorn  # noqa: E402
from chrome import paint_timings, start_chrome  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from gpufleet.live.source import LiveEvent  # noqa: E402
from gpufleet.service.app import create_app  # noqa: E402
from gpufleet.service.config import ServiceConfig  # noqa: E402
from gpufleet.service.runtime import Service  # noqa: E402
from gpufleet.testing.builders import fleet, job  # noqa: E402

PAGES = ("/", "/queues", "/jobs", "/jobs?state=pending&sort=gpus&dir=desc", "/jobs?q=p0999",
         "/nodes", "/history", "/studies")


def build(nodes: int, jobs: int, data: Path) -> tuple[Service, float]:
    leaves = max(1, nodes // 16)
    cfg = ServiceConfig(fleet=fleet().leaves(leaves, nodes=16, gpus=8).build(), data_dir=data,
                        run_loop=False, tick_s=0.5)
    svc = Service(cfg)
    running = int(leaves * 16 * 0.9)
    fill = [job(f"r{i:05d}").tenant(f"t{i % 8}").gpus(8).runs(86400.0 + i).build() for i in range(running)]
    pend = [job(f"p{i:06d}").tenant(f"t{i % 8}").gpus(8).gang(1 + i % 8).runs(3600.0 + i).build()
            for i in range(jobs)]

    def put(batch):  # noqa: ANN001, ANN202
        def cmd(src, now):  # noqa: ANN001, ANN202
            for j in batch:
                src.submit(j, now)
            return [LiveEvent(now, "submit", detail=f"{len(batch)} jobs")]
        return cmd
    svc.loop.post(put(fill))
    svc.tick()
    svc.loop.post(put(pend))
    t0 = time.perf_counter()
    svc.tick()
    return svc, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--probes", type=int, default=3, help="live updates timed (median)")
    ap.add_argument("--skip-pages", action="store_true", help="time the live update only")
    ap.add_argument("--loop-running", action="store_true",
                    help="time the pages with the loop ticking (a snapshot published every 0.5 s)")
    a = ap.parse_args()
    if not (1 <= a.nodes <= 100_000 and 0 <= a.jobs <= 1_000_000 and 1 <= a.repeat <= 50
            and 1 <= a.probes <= 50):
        ap.error("--nodes 1..100000, --jobs 0..1000000, --repeat 1..50, --probes 1..50")
    with tempfile.TemporaryDirectory() as tmp:
        t_build = time.perf_counter()
        svc, cycle_s = build(a.nodes, a.jobs, Path(tmp))
        t_build = time.perf_counter() - t_build
        token, _ = svc.auth.create("admin", name="bench")
        app = create_app(svc.config, svc)
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
        th = threading.Thread(target=server.run, daemon=True)
        th.start()
        while not server.started:
            time.sleep(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        url = f"http://127.0.0.1:{port}"
        driver = start_chrome()
        try:
            driver.get(f"{url}/?token={token}")
            rows = {}
            if a.loop_running:
                svc.loop.start()
            for page in () if a.skip_pages else PAGES:
                fcp, resp = [], []
                for _ in range(a.repeat):
                    driver.get(url + page)
                    WebDriverWait(driver, 60).until(lambda d: d.execute_script(
                        "return performance.getEntriesByType('paint').length > 1"))
                    fcp.append(paint_timings(driver)["first-contentful-paint"])
                    resp.append(driver.execute_script(
                        "const n = performance.getEntriesByType('navigation')[0]; return n.responseEnd"))
                row = rows[page] = {"fcp_ms": round(statistics.median(fcp)),
                                    "response_ms": round(statistics.median(resp))}
                print(f"{page:45s} first paint {row['fcp_ms']:6d} ms   HTML {row['response_ms']:6d} ms",
                      flush=True)
            decided: dict[str, float] = {}

            def mark(events: list[LiveEvent]) -> None:  # a loop sink: runs right after the cycle
                for ev in events:
                    if ev.job is not None and ev.job.startswith("live-probe"):
                        decided.setdefault(ev.job, time.perf_counter())
            svc.loop.sinks.append(mark)
            svc.loop.start()   # (a no-op when it runs already)
            after_201, after_decision = [], []
            for k in range(a.probes):
                jid = f"live-probe-{k}"
                driver.get(url + f"/jobs?q={jid}")
                WebDriverWait(driver, 30).until(lambda d: d.find_element(By.ID, "live-status")
                                                .get_attribute("data-state") == "live")
                body = {"id": jid, "tenant": "t0", "run_time": 60, "pod_sets": [{"replicas": 1, "gpus": 1}]}
                r = httpx.post(url + "/api/v1/jobs", json=body, headers={"Authorization": f"Bearer {token}"},
                               timeout=60)
                assert r.status_code == 201, r.text
                t_post = time.perf_counter()
                WebDriverWait(driver, 120, poll_frequency=0.02).until(
                    lambda d, jid=jid: d.execute_script(
                        "return document.getElementById('jobs-table').textContent").find(jid) >= 0)
                t_screen = time.perf_counter()
                after_201.append(t_screen - t_post)
                after_decision.append(t_screen - decided[jid])
            update_s = statistics.median(after_201)
            decision_s = statistics.median(after_decision)
            loop_cycle_s = svc.loop.last.duration_s
        finally:
            driver.quit()
            svc.stop()
            server.should_exit = True
            th.join(timeout=30)
    print(f"update on screen {decision_s * 1000:.0f} ms after the decision, {update_s * 1000:.0f} ms after "
          f"the submission's 201 (medians of {a.probes}; the loop's last cycle over the queue: "
          f"{loop_cycle_s * 1000:.0f} ms); build {t_build:.1f} s, first cycle over {a.jobs:,} pending "
          f"{cycle_s:.1f} s")
    print(json.dumps({"nodes": a.nodes, "jobs": a.jobs, "pages": rows, "update_ms": round(update_s * 1000),
                      "decision_to_screen_ms": round(decision_s * 1000),
                      "decision_to_screen_all_ms": [round(x * 1000) for x in after_decision],
                      "loop_cycle_ms": round(loop_cycle_s * 1000), "first_cycle_s": round(cycle_s, 2)}))

if __name__ == "__main__":
    main()
