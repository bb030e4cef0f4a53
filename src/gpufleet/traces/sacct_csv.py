"""The CSV form of an imported Slurm trace (``gpufleet slurm import-sacct --out t.csv``), both ways.

One row per pod set: a job split unevenly over its nodes has two rows with the same id, in order,
and they are read back as one job with two pod sets. The row carries everything the JSONL form
does (``kind``, ``labels`` as one JSON object, so ``--policy slurm`` still sees the QOS and the
requested CPUs; ``eligible_nodes`` as names joined by ``|``) and what Slurm did (``slurm_state``,
``slurm_start``, ``slurm_end``), so ``simulate --trace t.csv`` replays the same jobs as the
``.jsonl`` and shows the same "what Slurm did" section. A file is recognised by its header, not
by its name; each row is checked by the JSONL reader's own model, so a bad cell is one error
naming the file, the line and the column.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpufleet.model.errors import InputError

if TYPE_CHECKING:
    from gpufleet.traces.slurm_sacct import SacctTrace

CSV_COLUMNS = ("id", "tenant", "submit_time", "run_time", "run_time_estimate", "priority", "pods",
               "gpus_per_pod", "cpus_per_pod", "memory_gb_per_pod", "gpu_models", "slurm_state",
               "slurm_start", "slurm_end", "kind", "labels", "eligible_nodes")
#: Every file this module writes starts with this; older files (before kind/labels) too.
HEADER_START = ",".join(CSV_COLUMNS[:4])


def is_trace_csv(text: str) -> bool:
    return text.lstrip("\ufeff").startswith(HEADER_START)


def write_csv(trace: SacctTrace, path: str | Path) -> None:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for job, rec in zip(trace.jobs, trace.records, strict=True):
        nodes = "" if job.eligible_nodes is None else "|".join(sorted(job.eligible_nodes))
        for ps in job.pod_sets:
            r = ps.request
            writer.writerow([job.id, job.tenant, job.submit_time, job.run_time,
                             "" if job.run_time_estimate is None else job.run_time_estimate, job.priority,
                             ps.replicas, r.gpus, r.cpus, round(r.memory_gb, 3), "|".join(r.gpu_models),
                             rec.state, _cell(rec.start), _cell(rec.end), str(job.kind),
                             json.dumps(dict(job.labels), sort_keys=True), nodes])
    Path(path).write_text(buf.getvalue())


def _cell(v: float | None) -> str | float:
    return "" if v is None else v


def read_csv_rows(path: Path, text: str) -> list[tuple[str, dict[str, Any]]]:
    """(where, JSONL-shaped row) per job, pod sets of one id merged, in file order."""
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    missing = [c for c in CSV_COLUMNS[:11] if c not in (reader.fieldnames or ())]
    if missing:
        raise InputError(f"{path}:1", "header",
                         f"missing column {missing[0]} (expected {', '.join(CSV_COLUMNS)})")
    jobs: dict[str, tuple[str, dict[str, Any]]] = {}
    last = ""
    for no, cells in enumerate(reader, start=2):
        where = f"{path}:{no}"
        if None in cells or any(v is None for v in cells.values()):
            raise InputError(where, "", f"expected {len(reader.fieldnames or ())} comma-separated cells")
        jid = cells["id"]
        pod_set = {"name": f"part{len(jobs[jid][1]['pod_sets'])}" if jid in jobs else "main",
                   "replicas": _number(where, "pods", cells["pods"], int),
                   "gpus": _number(where, "gpus_per_pod", cells["gpus_per_pod"], int),
                   "cpus": _number(where, "cpus_per_pod", cells["cpus_per_pod"], float),
                   "memory_gb": _number(where, "memory_gb_per_pod", cells["memory_gb_per_pod"], float),
                   "gpu_models": [m for m in cells["gpu_models"].split("|") if m]}
        if jid in jobs:
            if jid != last:
                raise InputError(where, "id", f"job {jid!r} again after other jobs (its pod sets' rows "
                                 "must be next to each other)")
            jobs[jid][1]["pod_sets"].append(pod_set)
            continue
        last = jid
        row: dict[str, Any] = {
            "id": jid, "tenant": cells["tenant"],
            "submit_time": _number(where, "submit_time", cells["submit_time"], float),
            "run_time": _number(where, "run_time", cells["run_time"], float),
            "run_time_estimate": _number(where, "run_time_estimate", cells["run_time_estimate"], float)
            if cells["run_time_estimate"] else None,
            "priority": _number(where, "priority", cells["priority"], int),
            "pod_sets": [pod_set],
        }
        if cells.get("kind"):
            row["kind"] = cells["kind"]
        if cells.get("labels"):
            row["labels"] = _labels(where, cells["labels"])
        if cells.get("eligible_nodes"):
            row["eligible_nodes"] = cells["eligible_nodes"].split("|")
        if cells.get("slurm_start"):
            row["slurm"] = {"state": cells.get("slurm_state", ""),
                            "start": _number(where, "slurm_start", cells["slurm_start"], float),
                            "end": _number(where, "slurm_end", cells["slurm_end"], float)
                            if cells.get("slurm_end") else None}
        jobs[jid] = (where, row)
    return list(jobs.values())


def _number(where: str, column: str, text: str, kind: type[int] | type[float]) -> Any:
    try:
        value = float(text) if kind is float else int(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise InputError(where, column, f"expected {'a whole number' if kind is int else 'a finite number'}, "
                         f"got {text!r}")
    return value


def _labels(where: str, text: str) -> dict[str, str]:
    try:
        labels = json.loads(text)
    except json.JSONDecodeError:
        labels = None
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise InputError(where, "labels", f"expected a JSON object of strings, got {text[:60]!r}")
    return labels
