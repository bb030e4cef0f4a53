"""Issue 29 §4: a file is recognised by its content whatever its name, and a cut or mixed bundle is
reported as such ("incomplete bundle: …") instead of diagnosed confidently.

The arithmetic behind each expectation:
- healthy-h100/nvidia-smi-q.txt says "Attached GPUs : 8" and holds one GPU block (PROVENANCE: the
  header and the first block of nvsim's 8-GPU output): 1 of 8 read.
- power-cap-a40/nvidia-smi-q.txt: "Attached GPUs : 10", one block: 1 of 10.
- history-cleared-by-reload is assembled from two machines (PROVENANCE): its dmesg loads driver
  550.144.03 (line 51), its nvidia-smi reports 565.57.01 (line 2): two versions, a mixed bundle.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from gpufleet.model.errors import InputError
from gpufleet.ops.bundle import load_bundle
from gpufleet.ops.diagnose import diagnose
from gpufleet.ops.integrity import driver_versions

DATA = Path(__file__).resolve().parents[2] / "data" / "ops" / "bundles"
BENCH = DATA.parent / "bench"

# bundle → the reason that must be reported
INCOMPLETE = {
    "healthy-h100": "nvidia-smi-q.txt: 1 of 8 GPU blocks ('Attached GPUs : 8' at line 7)",
    "power-cap-a40": "nvidia-smi-q.txt: 1 of 10 GPU blocks ('Attached GPUs : 10' at line 7)",
    "history-cleared-by-reload": "2 driver versions, 550.144.03 (dmesg.txt:51), 565.57.01 (nvidia-smi.txt:2)",
}


@pytest.mark.parametrize("name", sorted(INCOMPLETE))
def test_a_cut_or_mixed_bundle_is_reported_as_such_and_not_confident(name):
    d = diagnose(DATA / name)
    assert not d.confident
    assert any(INCOMPLETE[name] in why for why in d.incomplete), d.incomplete


@pytest.mark.parametrize("name", ["healthy-h100", "power-cap-a40"])
def test_no_fault_in_a_cut_bundle_says_incomplete_first(name):
    d = diagnose(DATA / name)
    assert (d.layer, d.action) == ("none", "none")
    assert d.failure == "incomplete bundle: no fault found in what was read (1 warning below)"


def test_a_whole_bundle_of_one_node_is_confident():
    d = diagnose(DATA / "idle-l40s-low-pcie-gen")  # table and -q of one L40S, both 550.127.05
    assert (d.incomplete, d.confident, d.failure) == ([], True, "no fault found")


def test_a_fault_in_an_incomplete_bundle_is_named_but_not_confident(tmp_path):
    shutil.copy(DATA / "xid119-gsp-timeout" / "dmesg.txt", tmp_path / "dmesg.txt")
    shutil.copy(DATA / "healthy-h100" / "nvidia-smi-q.txt", tmp_path / "nvidia-smi-q.txt")
    d = diagnose(tmp_path)
    assert (d.layer, d.action, d.confident) == ("gpu_xid", "reset_gpu", False)
    assert d.failure.startswith("Xid 119") and d.incomplete


def test_a_kernel_log_under_any_name_is_read_as_one(tmp_path):
    """The gpud Xid 119 log names `nv-hostengine` on its lines (pid=…, name=nv-hostengine); by the DCGM
    banner pattern alone it was taken for a DCGM log and lost the kernel log's boot markers."""
    shutil.copy(DATA / "xid119-gsp-timeout" / "dmesg.txt", tmp_path / "log1")
    b = load_bundle(tmp_path)
    assert [(s.name, s.kind) for s in b.sources] == [("log1", "dmesg")]
    assert diagnose(tmp_path).layer == "gpu_xid"


def test_smi_q_saved_under_the_table_s_name_is_read_as_q(tmp_path):
    shutil.copy(DATA / "power-cap-a40" / "nvidia-smi-q.txt", tmp_path / "nvidia-smi.txt")
    shutil.copy(DATA / "xid79-fallen-off-bus" / "dmesg.txt", tmp_path / "foo.txt")
    d = diagnose(tmp_path)
    assert d.sources == {"nvidia-smi.txt": "nvidia-smi-q (by its content; the name says nvidia-smi)",
                         "foo.txt": "dmesg"}
    assert any("SW power cap active" in n for n in d.notes), d.notes
    assert d.layer == "hardware_pci"


def test_a_fifo_in_the_bundle_is_set_aside_and_makes_it_incomplete(tmp_path):
    shutil.copy(DATA / "xid74-nvlink" / "dmesg.txt", tmp_path / "dmesg.txt")
    os.mkfifo(tmp_path / "nvidia-smi.txt")  # would block a reader forever
    d = diagnose(tmp_path)
    assert d.layer == "nvlink_fabric" and not d.confident
    assert d.skipped == ["nvidia-smi.txt: not a regular file (FIFO), not read"] == d.incomplete


def test_a_broken_link_is_incomplete(tmp_path):
    (tmp_path / "dmesg.txt").symlink_to(tmp_path / "gone.txt")
    d = diagnose(tmp_path)
    assert d.incomplete == ["dmesg.txt: not a regular file (broken symbolic link), not read"]
    assert d.failure == "incomplete bundle: nothing found in the files that could be read (1 warning below)"


def test_a_fifo_given_as_the_bundle_is_one_line_of_bad_input(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(InputError, match="is a FIFO, expected a bundle folder or a text file"):
        diagnose(tmp_path / "pipe")


def test_a_table_cut_before_its_border_is_incomplete(tmp_path):
    lines = (DATA / "healthy-h100" / "nvidia-smi.txt").read_text().splitlines()
    cut = next(i for i, ln in enumerate(lines) if "|   3  " in ln)  # stop inside GPU 3's rows
    (tmp_path / "nvidia-smi.txt").write_text("\n".join(lines[: cut + 1]) + "\n")
    d = diagnose(tmp_path)
    assert d.incomplete == [f"nvidia-smi.txt: the nvidia-smi table ends at line {cut + 1} without its "
                            "closing border: cut"]


def test_open_and_proprietary_module_banners_both_give_the_driver_version():
    """NVSentinel #155 (open kernel module 570.158.01) and gpud's pstore log (proprietary 550.144.03)."""
    for path, version in ((DATA / "xid79-fallen-off-bus" / "dmesg.txt", "570.158.01"),
                          (BENCH / "dmesg-boot.txt", "550.144.03")):
        src = load_bundle(path).sources[0]
        assert [v for v, _ in driver_versions(src)] == [version]
