"""The edges of ``POST /api/v1/jobs`` (issue 24 §2): a trace line can be posted as it is, bad
input is a 4xx naming the field and the reason, never a 500. The fleet (conftest): 8 nodes of
8 GPUs, 64 in all."""

from __future__ import annotations

import json

import pytest
from tests.unit.service.conftest import job_body
from typer.testing import CliRunner

from gpufleet.cli.main import app
from gpufleet.model.errors import InputError
from gpufleet.traces.jsonl import read_jobs


def _post_raw(served, data: bytes):
    return served.client.post("/api/v1/jobs", content=data,
                              headers={**served.admin, "Content-Type": "application/json"})


def test_the_service_clock_stamps_submit_time_whatever_the_body_says(served):
    """Clock at 100 s: a job posted with submit_time 5 (the past) or 10**6 (the future) arrives at 100."""
    served.tick()
    served.tick(100)
    for jid, posted in (("past", 5.0), ("future", 1e6)):
        assert served.post_job({**job_body(jid), "submit_time": posted}).status_code == 201
        got = served.client.get(f"/api/v1/jobs/{jid}", headers=served.viewer).json()
        assert got["submit_time"] == pytest.approx(100)


@pytest.mark.parametrize("field, patch", [
    ("pod_sets.0.gpus", {"pod_sets": [{"replicas": 1, "gpus": True}]}),
    ("pod_sets.0.replicas", {"pod_sets": [{"replicas": True, "gpus": 1}]}),
    ("run_time", {"run_time": False}),
    ("priority", {"priority": True}),
])
def test_a_boolean_where_a_number_belongs_is_refused_with_its_field(served, field, patch):
    r = served.post_job({**job_body("j1"), **patch})
    assert r.status_code == 422
    assert r.json()["error"]["field"] == field


def test_the_trace_reader_refuses_a_boolean_gpu_count_naming_line_and_field(tmp_path):
    p = tmp_path / "t.jsonl"
    row = {**job_body("j1"), "submit_time": 0, "pod_sets": [{"replicas": 1, "gpus": True}]}
    p.write_text(json.dumps(row) + "\n")
    with pytest.raises(InputError, match=r"t\.jsonl:1: pod_sets\[0\]\.gpus: .*integer"):
        read_jobs(p)


@pytest.mark.parametrize("data", [
    b"not json", b"\xff\xfe{}", b"", b"[]", b"[" + json.dumps(job_body("a")).encode() + b"]",
    b'{"id": "a", "run_time": 1e400, "pod_sets": [{"replicas": 1, "gpus": 1}]}',
    b'{"id": "a", "run_time": NaN, "pod_sets": [{"replicas": 1, "gpus": 1}]}',
    b'{"id": "a", "run_time": Infinity, "pod_sets": [{"replicas": 1, "gpus": 1}]}',
    b'{"id": "a", "run_time": -1, "pod_sets": [{"replicas": 1, "gpus": 1}]}',
    b'{"id": "a", "run_time": 1, "pod_sets": [{"replicas": 1, "gpus": 1000000000000000000000000000000}]}',
])
def test_a_malformed_body_is_a_4xx_with_a_field_and_a_reason(served, data):
    r = _post_raw(served, data)
    assert 400 <= r.status_code < 500, r.text
    err = r.json()["error"]
    assert err["field"] and err["message"]


def test_serve_with_an_empty_tenancy_file_says_so_in_one_line_and_exits_2(tmp_path):
    empty = tmp_path / "tenancy.yaml"
    empty.write_text("")
    r = CliRunner().invoke(app, ["serve", "--tenancy", str(empty), "--data-dir", str(tmp_path / "d")])
    assert r.exit_code == 2
    assert "tenancy.yaml" in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("data, status, message", [
    (b"{not json", 422, "body: not valid JSON: Expecting property name enclosed in double quotes "
                        "(at character 1)"),
    (b'{"id": "a",}', 422, "body: not valid JSON: Expecting property name enclosed in double quotes "
                           "(at character 11)"),
    (b"\xff{}", 422, "body: not valid JSON: not UTF-8 (invalid start byte at byte 0)"),
], ids=["a bare word", "a trailing comma", "a byte that is not UTF-8"])
def test_a_body_that_is_not_json_says_so_on_the_field_body(served, data, status, message):
    """It used to read "0: JSON decode error" on the field "0" (the character's position), and a
    byte that is not UTF-8 "There was an error parsing the body" on no field, a 400."""
    r = _post_raw(served, data)
    assert r.status_code == status
    assert (r.json()["error"]["field"], r.json()["error"]["message"]) == ("body", message)
