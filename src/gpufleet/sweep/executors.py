"""Two ways to run cells: local processes (``concurrent.futures``) or tasks on a Ray cluster.

Both take the same cells and call the same ``run_cell``; only where it runs differs, so a grid
gives the same rows on either (tested). Each finished row goes to ``on_done`` as it arrives, which
saves it (resume) and advances the progress bar; the order of arrival does not matter.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any

from gpufleet.sweep.cell import run_cell
from gpufleet.sweep.spec import Cell

OnDone = Callable[[dict[str, Any]], None]


class RayUnavailable(ValueError):
    """Ray is not installed, or its cluster cannot be reached: one line for the user."""


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def run_local(cells: Sequence[Cell], workers: int, on_done: OnDone) -> None:
    """``workers`` processes; 1 runs in this process (no pickling, easiest to debug and profile).

    At most 2 × workers cells are in flight, so a million-cell grid does not queue a million futures.
    """
    if workers <= 1:
        for c in cells:
            on_done(run_cell(c))
        return
    todo = iter(cells)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        running = set()
        for c in todo:
            running.add(pool.submit(run_cell, c))
            if len(running) >= 2 * workers:
                done, running = wait(running, return_when=FIRST_COMPLETED)
                for f in done:
                    on_done(f.result())
        for f in running:
            on_done(f.result())


def reachable(address: str, timeout_s: float = 3.0) -> bool:
    """Whether ``host:port`` (optionally ``ray://host:port``) accepts a TCP connection: checked
    first, because Ray itself retries an unreachable head for minutes before it gives up."""
    hostport = address.removeprefix("ray://")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise RayUnavailable(f"--ray {address}: expected auto, local, HOST:PORT or ray://HOST:PORT")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return True
    except OSError:
        return False


def connect_ray(address: str, num_cpus: int | None = None) -> Any:
    """Join the Ray cluster at ``address`` ("auto": the one this machine belongs to; "local": start a
    private one with ``num_cpus`` CPUs), or keep the Ray already initialised in this process."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable("--ray needs Ray: pip install 'gpufleet[ray]'") from None
    if address not in ("auto", "local") and not reachable(address):
        raise RayUnavailable(f"--ray {address}: nothing answers there (is the Ray head running?)")
    if ray.is_initialized():
        return ray
    try:
        if address == "local":
            ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False,
                     configure_logging=False)
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise RayUnavailable(f"--ray {address}: cannot join a Ray cluster ({first})") from None
    return ray


def run_ray(cells: Sequence[Cell], address: str, on_done: OnDone, workers: int | None = None) -> None:
    """One Ray task per cell (1 CPU each), at most 4 × the cluster's CPUs in flight."""
    ray = connect_ray(address, workers)
    remote = ray.remote(num_cpus=1)(run_cell)
    limit = max(1, 4 * int(ray.cluster_resources().get("CPU", 1)))
    todo = iter(cells)
    running: list[Any] = []
    for c in todo:
        running.append(remote.remote(c))
        if len(running) >= limit:
            done, running = ray.wait(running, num_returns=1)
            for ref in done:
                on_done(ray.get(ref))
    while running:
        done, running = ray.wait(running, num_returns=1)
        for ref in done:
            on_done(ray.get(ref))
