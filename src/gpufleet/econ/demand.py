"""Demand curves for the capacity planner: GPUs wanted per hour, and the part that may run on spot.

Sources, all reduced to the same hourly form (Savings Plans settle hour by hour, so the hour is
the unit the commitment is measured against):

* a CSV of ``time_s,gpus`` rows (a step function: ``gpus`` holds from its time to the next row);
* a gpufleet JSON-lines trace: each job wants its GPUs from submit for its run time;
* a simulation's output directory (or its ``summary.json``): the event log ``events-POLICY.jsonl``
  gives when each job really ran, the scenario named in ``summary.json`` gives each job's GPUs;
* the Alibaba 2025 serving trace CSV (``instance_sn,role,…``): one GPU per live HN instance;
* nothing: a built-in, seeded four-week curve (diurnal and weekly cycles on a training base).

Jobs of at most ``max_spot_nodes`` nodes that are not serving are spot-eligible; the rest never go on
spot (econ/spot.py). A CSV carries no job sizes, so a fixed fraction of it is eligible.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpufleet.model.errors import InputError
from gpufleet.model.job import Job, JobKind
from gpufleet.sim.scenario import bundled, bundled_names
from gpufleet.traces.jsonl import read_jobs

HOUR = 3600.0
#: The longest curve planned (5 years of hours): the MILP has two variables per hour.
MAX_HOURS = 5 * 8760


def check_span(source: str, end_s: float) -> None:
    if end_s / HOUR > MAX_HOURS:
        raise InputError(source, "time", f"spans {end_s / HOUR:,.0f} hours; at most {MAX_HOURS:,} "
                         "(5 years) can be planned")


@dataclass(frozen=True)
class Demand:
    """Hourly mean GPUs wanted (``gpus``) and the spot-eligible part of it (``eligible`` ≤ gpus),
    split by gang size in ``eligible_by_nodes`` (nodes → hourly GPUs): a gang of n nodes pays its
    own effective spot price (econ/spot.py). A curve with no job sizes (CSV, built-in) is all
    one-node work."""

    name: str
    gpus: np.ndarray
    eligible: np.ndarray
    eligible_by_nodes: dict[int, np.ndarray] | None = None

    @property
    def hours(self) -> int:
        return len(self.gpus)

    def by_nodes(self) -> dict[int, np.ndarray]:
        """Eligible hourly GPUs per gang size, sizes ascending ({1: eligible} without sizes)."""
        if self.eligible_by_nodes is None:
            return {1: self.eligible}
        return dict(sorted(self.eligible_by_nodes.items()))


def hourly_mean(times: np.ndarray, values: np.ndarray, end: float) -> np.ndarray:
    """Time-weighted mean per hour of a step function (value[i] from times[i] to times[i+1])."""
    n = max(1, math.ceil(end / HOUR))
    seg_end = np.append(times[1:], end)
    out = np.zeros(n)
    for lo, hi, v in zip(times, seg_end, values, strict=True):
        while lo < hi:
            h = int(lo // HOUR)
            if h >= n:
                break
            top = min(hi, (h + 1) * HOUR)
            out[h] += v * (top - lo) / HOUR
            lo = top
    return out


def time_weighted_quantile(times: np.ndarray, values: np.ndarray, end: float, q: float,
                           start: float = 0.0) -> float:
    """The ``q``-quantile over time of a step function (value[i] from times[i] to times[i+1], the
    last to ``end``; 0 before times[0] from ``start``): the smallest v such that demand is at most
    v for a share q of [start, end]. A median over change points counts a one-minute spike as much
    as a quiet day; over time, each value weighs as long as it holds."""
    t = np.asarray(times, float)
    v = np.asarray(values, float)
    if len(t) == 0 or end <= start:
        return 0.0
    edges = np.clip(np.append(t, end), start, end)
    w = np.diff(edges)
    if t[0] > start:
        v, w = np.append(v, 0.0), np.append(w, t[0] - start)
    order = np.argsort(v, kind="stable")
    cum = np.cumsum(w[order])
    k = int(np.searchsorted(cum, q * cum[-1] - 1e-9 * cum[-1]))
    return float(v[order][min(k, len(v) - 1)])


def interval_demand(intervals: Sequence[tuple[float, float, float]], end: float | None = None) -> np.ndarray:
    """Hourly mean of the sum of (start, end, gpus) intervals."""
    if not intervals:
        return np.zeros(1)
    end = end if end is not None else max(e for _, e, _ in intervals)
    deltas: dict[float, float] = {}
    for s, e, g in intervals:
        deltas[s] = deltas.get(s, 0.0) + g
        deltas[e] = deltas.get(e, 0.0) - g
    times = np.array(sorted(deltas))
    values = np.cumsum([deltas[t] for t in times])
    return hourly_mean(times, values, max(end, float(times[-1])))


def spot_eligible(job: Job, gpus_per_node: int, max_spot_nodes: int) -> bool:
    """Not serving (an inference replica lost is a breach, not a restart) and a gang of at most
    ``max_spot_nodes`` nodes. Trace rows carry no checkpoint policy: every batch or training job
    is assumed to restart from checkpoints, whose cost is in the effective spot price."""
    nodes = math.ceil(job.total_gpus / gpus_per_node) if job.total_gpus else 0
    return job.kind is not JobKind.INFERENCE and 0 < nodes <= max_spot_nodes


def from_jobs(name: str, jobs: Sequence[Job], runs: Sequence[tuple[str, float, float]], gpus_per_node: int,
              max_spot_nodes: int) -> Demand:
    """Demand of (job id, start, end) runs; a job run twice (preempted, restarted) counts twice."""
    by_id = {j.id: j for j in jobs}
    all_iv: list[tuple[float, float, float]] = []
    elig_iv: dict[int, list[tuple[float, float, float]]] = {}
    for jid, s, e in runs:
        job = by_id.get(jid)
        if job is None or e <= s or not job.total_gpus:
            continue
        all_iv.append((s, e, float(job.total_gpus)))
        if spot_eligible(job, gpus_per_node, max_spot_nodes):
            nodes = math.ceil(job.total_gpus / gpus_per_node)
            elig_iv.setdefault(nodes, []).append((s, e, float(job.total_gpus)))
    if not all_iv:
        raise InputError(name, "", "no job with GPUs ran; nothing to plan for")
    end = max(e for _, e, _ in all_iv)
    check_span(name, end)
    g = interval_demand(all_iv, end)
    by_nodes = {n: np.pad(el, (0, max(0, len(g) - len(el))))[: len(g)]
                for n, el in ((n, interval_demand(iv, end)) for n, iv in sorted(elig_iv.items()))}
    total = sum(by_nodes.values(), np.zeros_like(g))
    return Demand(name, g, np.minimum(total, g), by_nodes)


def read_csv_curve(path: Path, eligible_fraction: float) -> Demand:
    text = _text(path)
    rows = list(csv.reader(text.splitlines()))
    if not rows:
        raise InputError(str(path), "", "empty file; expected a CSV with columns time_s,gpus")
    header = [c.strip().lower() for c in rows[0]]
    if header[:2] == ["instance_sn", "role"]:
        return read_alibaba_serving(path, eligible_fraction)
    if "time_s" not in header or "gpus" not in header:
        raise InputError(str(path), "header", f"expected columns time_s,gpus (got {','.join(header)})")
    it, ig = header.index("time_s"), header.index("gpus")
    times, values = [], []
    for n, row in enumerate(rows[1:], start=2):
        try:
            t, g = float(row[it]), float(row[ig])
        except (ValueError, IndexError):
            raise InputError(str(path), f"line {n}", "expected numbers in time_s and gpus") from None
        if not (math.isfinite(t) and math.isfinite(g)) or g < 0 or g > 1e7 or t < 0 or t > 1e10:
            raise InputError(str(path), f"line {n}", "expected 0 ≤ time_s ≤ 1e10 and 0 ≤ gpus ≤ 1e7")
        if times and t <= times[-1]:
            raise InputError(str(path), f"line {n}", "time_s must increase from row to row")
        times.append(t)
        values.append(g)
    if not times:
        raise InputError(str(path), "", "no rows after the header")
    end = times[-1] + HOUR if len(times) == 1 else times[-1] + (times[-1] - times[-2])
    check_span(str(path), end)
    g = hourly_mean(np.array(times), np.array(values), end)
    return Demand(path.name, g, g * eligible_fraction)


def read_alibaba_serving(path: Path, eligible_fraction: float = 0.0) -> Demand:
    """GPUs of live HN instances per hour (cluster-trace-gpu-v2025): an instance without a
    creation time was alive at the window's start, one without a deletion time at its end."""
    starts, ends = alibaba_serving_intervals(path)
    end = max(float(ends.max()), float(starts.max()))
    iv = [(float(s), float(e), 1.0) for s, e in zip(starts, ends, strict=True)]
    g = interval_demand(iv, end)
    return Demand(path.name, g, g * eligible_fraction)


#: Length of the Alibaba 2025 serving window (31 days), used for instances never deleted in it.
ALIBABA_WINDOW_S = 31 * 86400.0


def alibaba_serving_intervals(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) seconds of every GPU serving instance (role HN) of the Alibaba 2025 trace."""
    starts, ends = [], []
    with path.open(newline="") as f:
        for n, row in enumerate(csv.DictReader(f), start=2):
            if row.get("role") != "HN":
                continue
            try:
                s = float(row["creation_time"] or 0.0)
                e = float(row["deletion_time"] or ALIBABA_WINDOW_S)
            except (KeyError, ValueError):
                raise InputError(str(path), f"line {n}",
                                 "expected creation_time/deletion_time numbers") from None
            if e > s:
                starts.append(s)
                ends.append(e)
    if not starts:
        raise InputError(str(path), "role", "no HN (GPU) instance in the trace")
    return np.array(starts), np.array(ends)


def read_simulation(path: Path, gpus_per_node: int, max_spot_nodes: int, policy: str | None = None) -> Demand:
    """A simulation output directory (or its summary.json) with its event log."""
    d = path if path.is_dir() else path.parent
    summary_path = d / "summary.json"
    try:
        summary = json.loads(summary_path.read_text())
        scn_name = summary["scenario"]
        policies = list(summary["policies"])
    except FileNotFoundError:
        raise InputError(str(summary_path), "",
                         "no summary.json; expected `gpufleet simulate --out` output") from None
    except (ValueError, KeyError, TypeError):
        raise InputError(str(summary_path), "scenario", "expected a gpufleet simulate summary") from None
    pol = policy or policies[0]
    log = d / f"events-{pol}.jsonl"
    if not log.exists():
        raise InputError(str(log), "", f"no event log for policy {pol!r}")
    if scn_name not in bundled_names():
        raise InputError(str(summary_path), "scenario",
                         f"{scn_name!r} is not a bundled scenario; give its trace instead")
    jobs = bundled(scn_name).jobs()
    runs: list[tuple[str, float, float]] = []
    open_: dict[str, float] = {}
    for n, line in enumerate(log.read_text().splitlines(), start=1):
        try:
            ev = json.loads(line)
            t, kind, jid = float(ev["t"]), ev["event"], ev["job"]
        except (ValueError, KeyError, TypeError):
            raise InputError(str(log), f"line {n}", "expected an event {t, event, job}") from None
        if kind == "start":
            open_[jid] = t
        elif kind in ("finish", "preempt") and jid in open_:
            runs.append((jid, open_.pop(jid), t))
    end = max((e for _, _, e in runs), default=0.0)
    runs += [(jid, s, max(end, s + HOUR)) for jid, s in open_.items()]
    return from_jobs(f"{scn_name}/{pol}", jobs, runs, gpus_per_node, max_spot_nodes)


def read_trace(path: Path, gpus_per_node: int, max_spot_nodes: int) -> Demand:

    jobs = read_jobs(path)
    runs = [(j.id, j.submit_time, j.submit_time + j.run_time) for j in jobs]
    return from_jobs(path.name, jobs, runs, gpus_per_node, max_spot_nodes)


def builtin(seed: int = 7, weeks: int = 4, eligible_fraction: float = 0.3) -> Demand:
    """Four weeks of hourly demand: a 300-GPU training base, an inference load with a daily peak
    (±35%) and quiet weekends, and noise: the shape that makes a mix worth solving."""
    rng = np.random.default_rng(seed)
    h = np.arange(weeks * 168)
    day = 1.0 + 0.35 * np.sin(2 * np.pi * (h % 24 - 8) / 24)
    week = np.where((h // 24) % 7 >= 5, 0.7, 1.0)
    serving = 200.0 * day * week
    training = 300.0 + 60.0 * np.sin(2 * np.pi * h / (24 * 9)) + rng.normal(0, 25, len(h))
    g = np.maximum(0.0, serving + training)
    return Demand(f"built-in 4-week curve (seed {seed})", g, g * eligible_fraction)


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        raise InputError(str(path), "", "no such file") from None
    except UnicodeDecodeError:
        raise InputError(str(path), "", "binary file; expected a CSV of time_s,gpus") from None


def load_demand(arg: str | None, gpus_per_node: int, max_spot_nodes: int, eligible_fraction: float,
                policy: str | None = None) -> Demand:
    """Pick the reader by what ``arg`` is (module docstring)."""
    if arg is None:
        return builtin(eligible_fraction=eligible_fraction)
    p = Path(arg)
    if p.is_dir() or p.name == "summary.json":
        return read_simulation(p, gpus_per_node, max_spot_nodes, policy)
    if not p.exists():
        raise InputError(arg, "", "no such file (expected a CSV, a .jsonl trace or a simulation directory)")
    if p.suffix in (".jsonl", ".json"):
        return read_trace(p, gpus_per_node, max_spot_nodes)
    return read_csv_curve(p, eligible_fraction)
