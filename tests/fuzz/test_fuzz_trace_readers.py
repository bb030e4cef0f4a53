"""Fuzzing the trace readers (gpufleet JSON lines, openb CSV): a result or one error line naming
the file, never another exception or a hang; what loads has finite, non-negative numbers."""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.model.errors import InputError
from gpufleet.traces.jsonl import read_jobs
from gpufleet.traces.openb import NODE_COLUMNS, POD_COLUMNS, OpenbFormatError, read_nodes, read_pods

from .strategies import FAST, NASTY_STRINGS, mutated, nasty_scalars

ROW = {"id": "17", "tenant": "prod", "submit_time": 0.0, "run_time": 3600.0, "run_time_estimate": 7200.0,
       "priority": 0, "kind": "training", "labels": {"slurm.qos": "normal"},
       "pod_sets": [{"name": "main", "replicas": 2, "gpus": 8, "cpus": 64, "memory_gb": 500,
                     "gpu_models": ["H100-80GB"]}]}


@FAST
@given(st.lists(mutated(ROW, max_mutations=2) | st.just(ROW), min_size=1, max_size=4),
       st.sampled_from(["\n", "\r\n"]))
def test_mutated_trace_rows_load_or_are_one_line(tmp_path_factory, rows, newline):
    path = tmp_path_factory.mktemp("fz") / "t.jsonl"
    # Python's json writes NaN/Infinity for non-finite floats: exactly what a sloppy writer emits.
    path.write_text(newline.join(json.dumps(r) for r in rows) + newline)
    try:
        jobs = read_jobs(path)
    except InputError as e:
        assert "\n" not in str(e) and str(path) in str(e)
        return
    for j in jobs:
        assert math.isfinite(j.submit_time) and j.submit_time >= 0
        assert math.isfinite(j.run_time) and j.run_time >= 0
        assert all(ps.replicas >= 1 and ps.request.gpus >= 0 for ps in j.pod_sets)


@FAST
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_arbitrary_bytes_as_a_trace_are_one_line(tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("fz") / "t.jsonl"
    path.write_bytes(raw)
    try:
        read_jobs(path)
    except InputError as e:
        assert "\n" not in str(e) and str(path) in str(e)


cells = st.one_of(nasty_scalars.map(str), st.sampled_from(NASTY_STRINGS), st.integers(0, 10**6).map(str),
                  st.sampled_from(["0", "1", "2", "8", "1000", "500", "P100", "V100M32", "T4|P100", "nan"]))


def csv_text(header: list[str], rows: list[list[str]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


@st.composite
def openb_csv(draw: st.DrawFn, columns: tuple[str, ...]) -> str:
    header = list(columns) + draw(st.lists(st.sampled_from(["gpu_spec", "qos", "extra"]), max_size=2,
                                           unique=True))
    if draw(st.booleans()):
        header = draw(st.permutations(header))
    if draw(st.integers(0, 9)) == 0:
        header = header[:-1]  # a missing column
    rows = draw(st.lists(st.lists(cells, min_size=len(header), max_size=len(header)), max_size=5))
    return csv_text(header, rows)


def _check_columns(result) -> None:
    for name in ("cpu_milli", "memory_mib", "gpus", "num_gpu", "gpu_milli"):
        arr = getattr(result, name, None)
        if arr is not None:
            assert arr.dtype == np.int64 and (arr >= 0).all()


@FAST
@given(openb_csv(NODE_COLUMNS))
def test_fuzzed_openb_node_lists_load_or_are_one_line(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("fz") / "nodes.csv"
    path.write_text(text)
    try:
        nodes = read_nodes(path)
    except OpenbFormatError as e:
        assert "\n" not in str(e) and str(path) in str(e)
        return
    _check_columns(nodes)
    assert nodes.gpus.sum() > 0


@FAST
@given(openb_csv(POD_COLUMNS))
def test_fuzzed_openb_pod_lists_load_or_are_one_line(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("fz") / "pods.csv"
    path.write_text(text)
    try:
        pods = read_pods(path)
    except OpenbFormatError as e:
        assert "\n" not in str(e) and str(path) in str(e)
        return
    _check_columns(pods)
    assert (pods.gpu_milli <= 1000).all()


@FAST
@given(st.binary(max_size=200))
def test_arbitrary_bytes_as_openb_files_are_one_line(tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("fz") / "x.csv"
    path.write_bytes(raw)
    for read in (read_nodes, read_pods):
        try:
            read(path)
        except OpenbFormatError as e:
            assert "\n" not in str(e) and str(path) in str(e)
