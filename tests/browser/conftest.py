"""One real ``gpufleet serve`` process and one headless Chromium for every browser test.

The service runs the default fleet (64 nodes × 8 H100s = 512 GPUs, 4 leaves) with the bundled
tenancy scenario's four queues in cohort ``ml`` (research 96, product 64 + 64 borrowable, vision
64, interns 32 + 32), at speed 1, so nothing finishes while the tests look. The workload, posted
through the API as an admin before the browser starts:

- research: three 32-GPU gangs (4 pods × 8 GPUs): 96 GPUs, its whole nominal quota; they run;
- product: one 256-GPU gang (32 pods × 8): over what product may use (64 nominal + 64 borrowed =
  128), so admission refuses it: the blocked gang the Overview must show.

Screenshots go to ``build/browser-artifacts/`` (or ``$GPUFLEET_BROWSER_ARTIFACTS``), kept after
the run for CI to upload and for people to look at.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from chrome import missing_browser, start_chrome  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TENANCY = ROOT / "src" / "gpufleet" / "scenarios" / "tenancy.yaml"
ARTIFACTS = Path(os.environ.get("GPUFLEET_BROWSER_ARTIFACTS", ROOT / "build" / "browser-artifacts"))
RUN_S = 36_000.0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    why = missing_browser()
    for item in items:
        if "tests/browser" not in str(item.fspath):
            continue
        item.add_marker(pytest.mark.browser)
        # under CI a missing browser is a failure (the browser fixture says why), not a skip
        if why is not None and not os.environ.get("CI"):
            item.add_marker(pytest.mark.skip(reason=why))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gpufleet(*args: str) -> list[str]:
    return [sys.executable, "-c", "from gpufleet.cli.main import app; app()", *args]


@dataclass
class Server:
    url: str
    data_dir: Path
    admin: str
    viewer: str
    member: str
    blocked_gang: str
    proc: subprocess.Popen
    #: The fleet's node names in order (the default fleet's first and last: h100-g0-n0000, …).
    nodes: list[str] = field(default_factory=list)

    def api(self, token: str | None = None) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token or self.admin}"},
                            timeout=30)

    def submit(self, jid: str, tenant: str, pods: int, gpus: int = 8, run_time: float = RUN_S) -> None:
        body = {"id": jid, "tenant": tenant, "run_time": run_time,
                "pod_sets": [{"replicas": pods, "gpus": gpus}]}
        with self.api() as c:
            r = c.post("/api/v1/jobs", json=body, headers={"Idempotency-Key": jid})
            assert r.status_code in (200, 201), r.text

    def wait_for(self, predicate, what: str, timeout: float = 30.0):  # noqa: ANN001, ANN201
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = predicate()
            if got:
                return got
            time.sleep(0.2)
        raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def _token(data_dir: Path, *args: str) -> str:
    out = subprocess.run(gpufleet("serve", "token", "create", *args, "--data-dir", str(data_dir)),
                         capture_output=True, text=True, timeout=120, check=True)
    return out.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data_dir = tmp_path_factory.mktemp("serve-data")
    port = _free_port()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(gpufleet("serve", "--port", str(port), "--data-dir", str(data_dir),
                                     "--tenancy", str(TENANCY)),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    admin = ""
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not admin:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("gf_"):
                admin = line.strip()
        assert admin, "gpufleet serve printed no admin token:\n" + "".join(lines)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        s = Server(url, data_dir, admin, _token(data_dir, "--role", "viewer", "--name", "watcher"),
                   _token(data_dir, "--role", "member", "--tenant", "research", "--name", "ada"),
                   "product-big", proc)
        for i in range(3):
            s.submit(f"research-{i}", "research", pods=4)
        s.submit(s.blocked_gang, "product", pods=32)

        def settled() -> bool:
            with s.api() as c:
                summary = c.get("/api/v1/summary").json()
            return summary["running_jobs"] == 3 and summary["pending_by_reason"]["quota"] == 1
        with s.api() as c:
            s.nodes = [n["name"] for n in c.get("/api/v1/nodes").json()]
        s.wait_for(settled, "three research gangs running and the product gang refused by quota")
        yield s
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)


@pytest.fixture(scope="session")
def browser(server: Server) -> Iterator:
    """Closed before the server stops (it depends on it), so no open event stream holds the
    server's graceful shutdown."""
    driver = start_chrome()
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
