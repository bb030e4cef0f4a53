"""The pre-flight gate: real checks on a GPU node, each with a time budget and a threshold.

Every check decides for itself whether it can run here; when it cannot (no GPU, tool not installed,
no RDMA device) it reports ``skipped`` with the reason, not a failed measurement. The gate's verdict
(``gate_verdict``) does not pass such a node either: a check that did not run proved nothing, so it
holds the gate with its reason until the operator waives it by name for nodes where it does not
apply (a PCIe node has no NVLink to check). Tools run as child processes with the check's budget as
a hard timeout.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gpufleet.ops.parse_smi import parse_nvlink_status
from gpufleet.ops.parse_sys import parse_sysfs_ib
from gpufleet.ops.preflight_parse import parse_dcgmi_diag, parse_nccl_tests

RATIO = 0.9  # a GPU below 90 % of the reference (fleet median, else node median) fails


@dataclass(frozen=True)
class CheckSpec:
    """A check in the catalogue. ``seconds`` is its typical duration (DCGM's documented level
    durations; for our own checks, the budget we give them); ``catch`` is the assumed share of bad
    nodes it detects — an input to ``preflight plan``, not a measured figure."""

    name: str
    seconds: float
    budget: float
    catch: float
    what: str


CATALOG: dict[str, CheckSpec] = {
    c.name: c
    for c in (
        CheckSpec("nic", 1, 5, 0.20, "RDMA ports ACTIVE/LinkUp at their peers' rate (sysfs)"),
        CheckSpec("nvlink", 1, 10, 0.10, "no inactive NVLink (nvidia-smi nvlink -s)"),
        CheckSpec("storage", 2, 10, 0.05, "each --storage path is mounted, writable and readable"),
        CheckSpec("dcgm_quick", 10, 60, 0.30, "dcgmi diag -r 1: driver, persistence, row remap, inforom, FM"),
        CheckSpec("hbm", 10, 60, 0.10, "device-to-device copy GB/s ≥ 90 % of the reference"),
        CheckSpec("gemm", 20, 90, 0.15, "bf16 GEMM TFLOP/s ≥ 90 % of the reference"),
        CheckSpec("nccl", 30, 180, 0.25, "all_reduce_perf over the node's GPUs: completes, no #wrong, busbw"),
        CheckSpec("dcgm_long", 900, 1500, 0.60, "dcgmi diag -r 3: memory, stress, power, PCIe (~15 min)"),
    )
}
QUICK = ("nic", "nvlink", "storage", "dcgm_quick", "hbm", "gemm", "nccl")
LONG = (*QUICK, "dcgm_long")


@dataclass
class CheckResult:
    name: str
    status: str  # pass | fail | warn | skipped
    detail: str
    value: float | None = None
    threshold: float | None = None
    unit: str = ""
    seconds: float = 0.0


@dataclass
class Options:
    storage: list[Path] = field(default_factory=list)
    min_busbw: float | None = None
    fleet_tflops: float | None = None
    fleet_hbm: float | None = None
    min_nic_gbps: float | None = None


def _run(argv: list[str], budget: float) -> tuple[int | None, str]:
    """(exit code or None on timeout, stdout+stderr)."""
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=budget, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return None, out
    return p.returncode, p.stdout + p.stderr


def check_nic(opts: Options) -> CheckResult:
    lines = []
    for p in sorted(glob.glob("/sys/class/infiniband/*/ports/*/*")):
        if os.path.basename(p) in ("state", "phys_state", "rate", "link_layer"):
            try:
                lines.append(f"{p}:{Path(p).read_text().strip()}")
            except OSError:
                continue
    ports = parse_sysfs_ib(lines)
    if not ports:
        return CheckResult("nic", "skipped", "skipped: no RDMA device under /sys/class/infiniband")
    down = [f"{p.device}/{p.port}" for p in ports if not p.active]
    tops: dict[str, float] = {}
    for p in ports:
        if p.active and p.rate_gbps:
            tops[p.link_layer] = max(tops.get(p.link_layer, 0.0), p.rate_gbps)
    floor = opts.min_nic_gbps
    slow = [
        f"{p.device}/{p.port} {p.rate_gbps:g}"
        for p in ports
        if p.active and p.rate_gbps and (p.rate_gbps < tops[p.link_layer] or (floor and p.rate_gbps < floor))
    ]
    low = min((p.rate_gbps or 0) for p in ports if p.active) if any(p.active for p in ports) else 0
    if down or slow:
        return CheckResult(
            "nic", "fail", f"down: {down or '-'}; below rate: {slow or '-'}", low, floor, "Gb/s"
        )
    return CheckResult("nic", "pass", f"{len(ports)} ports ACTIVE/LinkUp", low, floor, "Gb/s")


def check_nvlink(opts: Options) -> CheckResult:
    if shutil.which("nvidia-smi") is None:
        return CheckResult("nvlink", "skipped", "skipped: nvidia-smi not installed (no NVIDIA driver)")
    rc, out = _run(["nvidia-smi", "nvlink", "-s"], CATALOG["nvlink"].budget)
    gpus = parse_nvlink_status(out.splitlines())
    if rc != 0 or not any(g.links for g in gpus):
        return CheckResult("nvlink", "skipped", "skipped: no NVLink reported on this node")
    bad = {g.index: g.inactive for g in gpus if g.inactive}
    links = sum(len(g.links) for g in gpus)
    if bad:
        return CheckResult("nvlink", "fail", f"inactive links per GPU: {bad}", float(links), None, "links")
    return CheckResult(
        "nvlink", "pass", f"{links} links active on {len(gpus)} GPUs", float(links), None, "links"
    )


def check_storage(opts: Options) -> CheckResult:
    if not opts.storage:
        return CheckResult("storage", "skipped", "skipped: no --storage path given")
    bad = []
    for path in opts.storage:
        try:
            with tempfile.NamedTemporaryFile(dir=path, prefix=".gpufleet-preflight-") as fh:
                fh.write(b"gpufleet preflight\n")
                fh.flush()
                os.fsync(fh.fileno())
                fh.seek(0)
                if fh.read() != b"gpufleet preflight\n":
                    bad.append(f"{path}: read back differs")
        except OSError as e:
            bad.append(f"{path}: {e.strerror or e}")
    if bad:
        return CheckResult("storage", "fail", "; ".join(bad))
    return CheckResult("storage", "pass", f"{len(opts.storage)} path(s) writable and readable")


def _dcgm(name: str, level: int) -> CheckResult:
    if shutil.which("dcgmi") is None:
        return CheckResult(name, "skipped", "skipped: dcgmi not installed (DCGM absent)")
    rc, out = _run(["dcgmi", "diag", "-r", str(level)], CATALOG[name].budget)
    if rc is None:
        return CheckResult(name, "fail", f"dcgmi diag -r {level} did not finish within its budget")
    d = parse_dcgmi_diag(out)
    if not d.ran:
        last = out.strip().splitlines()[-1] if out.strip() else f"exit {rc}"
        return CheckResult(name, "skipped", f"skipped: dcgmi diag did not run ({last[:120]})")
    if d.failed:
        return CheckResult(name, "fail", f"failed: {', '.join(d.failed)}")
    if d.warned:
        return CheckResult(name, "warn", f"warnings: {', '.join(d.warned)}")
    return CheckResult(name, "pass", f"{len(d.results)} tests passed or skipped by DCGM")


def check_dcgm_quick(opts: Options) -> CheckResult:
    return _dcgm("dcgm_quick", 1)


def check_dcgm_long(opts: Options) -> CheckResult:
    return _dcgm("dcgm_long", 3)


def _bench(name: str, kind: str, reference: float | None, unit: str) -> CheckResult:
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return CheckResult(name, "skipped", "skipped: torch not installed")
    budget = CATALOG[name].budget
    rc, out = _run([sys.executable, "-m", "gpufleet.ops.gpubench", kind, "--seconds", "3"], budget)
    rows = []
    for line in out.splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    if rows and "skipped" in rows[0]:
        return CheckResult(name, "skipped", f"skipped: {rows[0]['skipped']}")
    values = {r["gpu"]: r["value"] for r in rows if "value" in r}
    if rc is None or not values:
        return CheckResult(
            name,
            "fail",
            f"benchmark did not finish within {budget:g} s"
            if rc is None
            else f"benchmark failed: {out.strip()[-160:]}",
        )
    ref = reference if reference else statistics.median(values.values())
    floor = RATIO * ref
    slow = {g: v for g, v in values.items() if v < floor}
    where = "fleet median" if reference else "node median"
    status = "fail" if slow else "pass"
    detail = (
        f"GPUs below {RATIO:.0%} of the {where} {ref:.1f}: {slow}"
        if slow
        else f"{len(values)} GPUs ≥ {RATIO:.0%} of the {where} {ref:.1f}"
    )
    return CheckResult(name, status, detail, min(values.values()), floor, unit)


def check_gemm(opts: Options) -> CheckResult:
    return _bench("gemm", "gemm", opts.fleet_tflops, "TFLOP/s")


def check_hbm(opts: Options) -> CheckResult:
    return _bench("hbm", "hbm", opts.fleet_hbm, "GB/s")


def check_nccl(opts: Options) -> CheckResult:
    exe = shutil.which("all_reduce_perf")
    if exe is None:
        return CheckResult("nccl", "skipped", "skipped: nccl-tests all_reduce_perf not installed")
    if shutil.which("nvidia-smi") is None:
        return CheckResult("nccl", "skipped", "skipped: no NVIDIA driver")
    rc, out = _run(["nvidia-smi", "-L"], 10)
    ngpu = sum(1 for ln in out.splitlines() if ln.startswith("GPU "))
    if ngpu < 2:
        return CheckResult("nccl", "skipped", f"skipped: {ngpu} GPU(s): an all-reduce needs two")
    rc, out = _run([exe, "-b", "512M", "-e", "1G", "-f", "2", "-g", str(ngpu)], CATALOG["nccl"].budget)
    r = parse_nccl_tests(out)
    if rc is None or not r.complete:
        return CheckResult(
            "nccl",
            "fail",
            "all_reduce_perf did not finish within its budget"
            if rc is None
            else f"all_reduce_perf failed (exit {rc})",
        )
    if r.wrong:
        return CheckResult("nccl", "fail", f"{r.wrong} results with #wrong > 0", r.avg_busbw, None, "GB/s")
    if opts.min_busbw and (r.avg_busbw or 0) < opts.min_busbw:
        return CheckResult(
            "nccl", "fail", f"busbw below {opts.min_busbw:g}", r.avg_busbw, opts.min_busbw, "GB/s"
        )
    return CheckResult("nccl", "pass", f"{ngpu} GPUs, avg busbw", r.avg_busbw, opts.min_busbw, "GB/s")


CHECKS = {
    "nic": check_nic,
    "nvlink": check_nvlink,
    "storage": check_storage,
    "dcgm_quick": check_dcgm_quick,
    "hbm": check_hbm,
    "gemm": check_gemm,
    "nccl": check_nccl,
    "dcgm_long": check_dcgm_long,
}


def run_preflight(long: bool = False, opts: Options | None = None) -> list[CheckResult]:
    opts = opts or Options()
    out = []
    for name in LONG if long else QUICK:
        t0 = time.monotonic()
        try:
            r = CHECKS[name](opts)
        except OSError as e:  # a tool that exists but cannot be executed
            r = CheckResult(name, "skipped", f"skipped: {e.strerror or e}")
        r.seconds = round(time.monotonic() - t0, 2)
        out.append(r)
    return out


def as_dicts(results: list[CheckResult]) -> list[dict]:
    return [asdict(r) for r in results]


@dataclass(frozen=True)
class GateVerdict:
    """What a gate run decides. It passes only when every check it requires ran and passed (a
    ``warn`` passes), or could not run and was waived by name: a check that cannot run (no driver,
    no tool, no device) measured nothing, so it fails the gate with its reason unless the operator
    says it does not apply here (``--waive nvlink`` on a PCIe node). A gate in which nothing ran
    never passes, waived or not. A waiver names a check that could not run; one for a check that
    ran changes nothing (its result stands) and is reported as unused."""

    passed: bool
    failed: tuple[str, ...]
    not_run: tuple[str, ...]
    waived: tuple[str, ...]
    unused_waivers: tuple[str, ...]
    ran: int

    def as_dict(self) -> dict:
        return {"passed": self.passed, "checks_run": self.ran, "failed": list(self.failed),
                "not_run": list(self.not_run), "waived": list(self.waived),
                "unused_waivers": list(self.unused_waivers)}


def gate_verdict(results: list[CheckResult], waive: Iterable[str] = ()) -> GateVerdict:
    waivers = set(waive)
    failed = tuple(r.name for r in results if r.status == "fail")
    skipped = [r.name for r in results if r.status == "skipped"]
    ran = len(results) - len(skipped)
    waived = tuple(n for n in skipped if n in waivers)
    not_run = tuple(n for n in skipped if n not in waivers)
    unused = tuple(sorted(waivers - set(waived)))
    return GateVerdict(not failed and not not_run and ran > 0, failed, not_run, waived, unused, ran)
