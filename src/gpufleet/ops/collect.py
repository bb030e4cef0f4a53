"""Gather a diagnosis bundle on a node: each command's output into a file named after it.

Every command runs with a timeout; a tool that is not installed is recorded as absent, a command that
fails is recorded with its exit code, and nothing is fatal: a half-broken node is exactly the one we
collect from. For the GPU tools a failure *is* the evidence ("NVIDIA-SMI has failed because …"), so
their output is kept whatever the exit code. ``MANIFEST.json`` lists what ran, how long, and why a
file is missing.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from gpufleet.model.errors import InputError

MANIFEST = "MANIFEST.json"
LOG_TAIL_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Step:
    file: str
    argv: tuple[str, ...]
    keep_on_failure: bool = False  # the error text is the evidence (GPU tools)
    keep_rcs: tuple[int, ...] = ()  # exit codes whose output is evidence (systemctl: 3 failed, 4 no unit)


@dataclass
class Record:
    file: str
    command: str
    status: str  # ok | failed | absent | timeout | skipped
    rc: int | None = None
    seconds: float = 0.0
    note: str = ""


def steps(node: str, docker_image: str | None) -> list[Step]:
    s = [
        Step("dmesg.txt", ("dmesg", "-T")),
        Step("journal-kernel.txt", ("journalctl", "-k", "--no-pager", "-o", "short-iso", "--since", "-2d")),
        Step("nvidia-smi.txt", ("nvidia-smi",), True),
        Step("nvidia-smi-q.txt", ("nvidia-smi", "-q"), True),
        Step("nvidia-smi-L.txt", ("nvidia-smi", "-L"), True),
        Step("nvidia-smi-nvlink-status.txt", ("nvidia-smi", "nvlink", "-s"), True),
        Step("nvidia-smi-mig.txt", ("nvidia-smi", "mig", "-lgi"), True),
        Step("nvidia-smi-topo-m.txt", ("nvidia-smi", "topo", "-m"), True),
        Step("lspci-vvv.txt", ("lspci", "-vvv")),
        Step("lspci-nn.txt", ("lspci", "-nn")),
        Step("lsmod.txt", ("lsmod",)),
        Step("modprobe.txt", ("modprobe", "-n", "-v", "nvidia"), True),
        Step("uname-a.txt", ("uname", "-a")),
        Step(
            "systemctl-status-nvidia-fabricmanager.txt",
            ("systemctl", "status", "nvidia-fabricmanager", "--no-pager", "-l"),
            keep_rcs=(3, 4),
        ),
        Step("nvidia-container-cli-info.txt", ("nvidia-container-cli", "info"), True),
        Step("ibstat.txt", ("ibstat",)),
        Step("node.json", ("kubectl", "get", "node", node, "-o", "json")),
        Step("kubectl-describe-node.txt", ("kubectl", "describe", "node", node)),
        Step(
            "kubectl-describe-pod-events.txt",
            ("kubectl", "get", "events", "-A", "--field-selector", "reason=UnexpectedAdmissionError"),
        ),
    ]
    if docker_image:
        s.append(
            Step(
                "docker-run.txt", ("docker", "run", "--rm", "--gpus", "all", docker_image, "nvidia-smi"), True
            )
        )
    return s


MAX_TIMEOUT_S = 3600.0


def run_step(step: Step, out: Path, timeout: float) -> Record:
    cmd = " ".join(step.argv)
    if shutil.which(step.argv[0]) is None:
        return Record(step.file, cmd, "absent", note=f"{step.argv[0]} not installed")
    t0 = time.monotonic()
    try:
        p = subprocess.run(
            step.argv, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False
        )
    except subprocess.TimeoutExpired as e:
        partial = (e.stdout or b"") + (e.stderr or b"")
        if partial:
            (out / step.file).write_bytes(partial)
        return Record(
            step.file,
            cmd,
            "timeout",
            None,
            round(time.monotonic() - t0, 2),
            f"killed after {timeout:g} s" + (" (partial output kept)" if partial else ""),
        )
    except OSError as e:
        return Record(step.file, cmd, "failed", None, 0.0, e.strerror or str(e))
    secs = round(time.monotonic() - t0, 2)
    keep = step.keep_on_failure or p.returncode in step.keep_rcs
    body = p.stdout + (p.stderr if (p.returncode != 0 or keep) else b"")
    if p.returncode == 0 or (keep and body.strip()):
        (out / step.file).write_bytes(body)
        status = "ok" if p.returncode == 0 else "failed"
        return Record(
            step.file, cmd, status, p.returncode, secs, "" if status == "ok" else "output kept as evidence"
        )
    said = (p.stderr or p.stdout).decode(errors="replace").strip().splitlines()
    return Record(step.file, cmd, "failed", p.returncode, secs, said[-1][:200] if said else "no output")


def _sysfs_ib(out: Path) -> Record:
    """``/sys/class/infiniband/*/ports/*/{state,phys_state,rate,link_layer}`` as ``path:value`` lines."""
    paths = sorted(glob.glob("/sys/class/infiniband/*/ports/*/*"))
    lines = []
    for p in paths:
        if os.path.basename(p) in ("state", "phys_state", "rate", "link_layer"):
            try:
                lines.append(f"{p}:{Path(p).read_text().strip()}")
            except OSError:
                continue
    if not lines:
        return Record(
            "sys-class-infiniband.txt", "read /sys/class/infiniband", "absent", note="no RDMA devices"
        )
    (out / "sys-class-infiniband.txt").write_text("\n".join(lines) + "\n")
    return Record("sys-class-infiniband.txt", "read /sys/class/infiniband", "ok")


def _tail_file(src: str, name: str, out: Path) -> Record:
    p = Path(src)
    if not p.is_file():
        return Record(name, f"tail {src}", "absent", note=f"{src} not present")
    try:
        size = p.stat().st_size
        with p.open("rb") as fh:
            fh.seek(max(0, size - LOG_TAIL_BYTES))
            (out / name).write_bytes(fh.read())
    except OSError as e:
        return Record(name, f"tail {src}", "failed", note=e.strerror or str(e))
    return Record(name, f"tail {src}", "ok")


def _device_plugin_log(node: str, out: Path, timeout: float) -> Record:
    """Find the device-plugin pod on this node, then keep its log."""
    name = "device-plugin.log"
    if shutil.which("kubectl") is None:
        return Record(name, "kubectl logs <device-plugin pod>", "absent", note="kubectl not installed")
    q = (
        "kubectl",
        "get",
        "pods",
        "-A",
        "--field-selector",
        f"spec.nodeName={node}",
        "-o",
        'jsonpath={range .items[*]}{.metadata.namespace} {.metadata.name}{"\\n"}{end}',
    )
    try:
        p = subprocess.run(q, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        return Record(name, " ".join(q), "timeout", note=f"killed after {timeout:g} s")
    if p.returncode != 0:
        err = p.stderr.decode(errors="replace").strip().splitlines()
        return Record(name, " ".join(q), "failed", p.returncode, note=err[-1][:200] if err else "")
    pods = [ln.split() for ln in p.stdout.decode().splitlines() if "device-plugin" in ln]
    if not pods:
        return Record(name, " ".join(q), "absent", note="no device-plugin pod on this node")
    ns, pod = pods[0][0], pods[0][1]
    return run_step(
        Step(name, ("kubectl", "logs", "-n", ns, pod, "--all-containers", "--tail", "5000"), True),
        out,
        timeout,
    )


def collect(
    out: Path,
    timeout: float = 20.0,
    node: str | None = None,
    docker_image: str | None = None,
    progress: Callable[[Record], None] | None = None,
) -> list[Record]:
    # NaN fails the comparison; the upper bound keeps subprocess's own arithmetic finite (1e308 s
    # overflowed inside it) and an hour per command is already far past any sane collection
    if not 0 < timeout <= MAX_TIMEOUT_S:
        raise InputError("--timeout", "", f"expected seconds in (0, {MAX_TIMEOUT_S:g}] (got {timeout})")
    if out.exists() and not out.is_dir():
        raise InputError(str(out), "", "exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    node = node or socket.gethostname()
    records: list[Record] = []

    def keep(r: Record) -> None:
        records.append(r)
        if progress:
            progress(r)

    for step in steps(node, docker_image):
        keep(run_step(step, out, timeout))
    if not docker_image:
        keep(
            Record(
                "docker-run.txt",
                "docker run --gpus all IMAGE nvidia-smi",
                "skipped",
                note="pass --docker-image to test a GPU container",
            )
        )
    keep(_sysfs_ib(out))
    keep(_tail_file("/var/log/fabricmanager.log", "fabricmanager.log", out))
    keep(_tail_file("/var/log/nv-hostengine.log", "nv-hostengine.log", out))
    keep(_device_plugin_log(node, out, timeout))
    doc = {
        "node": node,
        "collected_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "timeout_s": timeout,
        "steps": [asdict(r) for r in records],
    }
    (out / MANIFEST).write_text(json.dumps(doc, indent=2) + "\n")
    return records
