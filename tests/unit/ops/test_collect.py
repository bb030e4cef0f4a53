"""`node collect` on this machine (no GPU here): it gathers what exists, records the rest as absent,
and never fails because a tool is missing, slow, or broken."""

from __future__ import annotations

import json
import shutil

import pytest

from gpufleet.model.errors import InputError
from gpufleet.ops.collect import MANIFEST, Step, collect, run_step
from gpufleet.ops.diagnose import diagnose
from gpufleet.ops.layers import LAYER_ORDER


def test_a_missing_tool_is_recorded_as_absent_and_writes_no_file(tmp_path):
    r = run_step(Step("x.txt", ("no-such-tool-gpufleet",)), tmp_path, 5)
    assert (r.status, r.note) == ("absent", "no-such-tool-gpufleet not installed")
    assert not (tmp_path / "x.txt").exists()


def test_a_slow_command_is_killed_at_its_timeout(tmp_path):
    r = run_step(Step("slow.txt", ("sleep", "5")), tmp_path, 0.3)
    assert r.status == "timeout" and r.seconds < 4.5  # killed: the command alone takes 5 s


def test_a_gpu_tool_failure_keeps_its_message_as_evidence(tmp_path):
    msg = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    r = run_step(Step("nvidia-smi.txt", ("sh", "-c", f'echo "{msg}"; exit 9'), True), tmp_path, 5)
    assert (r.status, r.rc) == ("failed", 9)
    assert (tmp_path / "nvidia-smi.txt").read_text().strip() == msg
    assert diagnose(tmp_path).layer == "kernel_driver"


def test_an_ordinary_failure_keeps_only_its_last_line_in_the_manifest(tmp_path):
    r = run_step(
        Step("lsx.txt", ("sh", "-c", "echo noise >&2; echo 'the real reason' >&2; exit 1")), tmp_path, 5
    )
    assert (r.status, r.note) == ("failed", "the real reason")
    assert not (tmp_path / "lsx.txt").exists()


def test_collect_on_a_machine_without_gpus_records_every_step(tmp_path):
    out = tmp_path / "bundle"
    records = collect(out, timeout=5, node="test-node")
    doc = json.loads((out / MANIFEST).read_text())
    assert [s["file"] for s in doc["steps"]] == [r.file for r in records]
    by_file = {r.file: r for r in records}
    if shutil.which("nvidia-smi") is None:
        assert by_file["nvidia-smi.txt"].status == "absent"
    assert by_file["docker-run.txt"].status == "skipped"
    for r in records:
        assert r.status in ("ok", "failed", "absent", "timeout", "skipped")
        if r.status == "ok":
            assert (out / r.file).exists()
    d = diagnose(out)  # whatever was gathered, the diagnosis reads it without error
    assert d.layer in ("none", *LAYER_ORDER)


@pytest.mark.parametrize("timeout", [0, -1, float("nan")])
def test_a_timeout_that_is_not_positive_is_bad_input(tmp_path, timeout):
    with pytest.raises(InputError):
        collect(tmp_path / "b", timeout=timeout)
