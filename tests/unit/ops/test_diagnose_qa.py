"""The QA pass over `node diagnose`: every bundle's verdict quotes the *line* that shows the fault
(not just its file), every fixture bundle is covered by a verdict test, and any bytes under any file
name the bundle reader knows give a verdict or "nothing found" — never an exception — in bounded time.

Expected lines were read against /work/shared/reference/ops-reference.md: §1.2 Xid catalog (48 then
63 → drain and reset; 74 → check nvlink; 79 → reboot; 119 → GSP hang, reset), §2 per-layer strings
(NVML "Driver/library version mismatch", "couldn't communicate with the NVIDIA driver", docker's
'could not select device driver "" with capabilities: [[gpu]]', the plugin's "could not load NVML
library"), §NCCL ("NET/IB : No device found." = no ACTIVE IB/RoCE port, Socket fallback).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.ops.bundle import NAME_KINDS
from gpufleet.ops.diagnose import NOTHING, diagnose
from gpufleet.ops.layers import LAYER_ORDER
from gpufleet.ops.verdict import ACTION_WHY

DATA = Path(__file__).resolve().parents[2] / "data" / "ops" / "bundles"

# bundle → evidence lines (file:line: and a phrase of that line) that must be quoted
EVIDENCE_LINES = {
    "xid79-fallen-off-bus": [("dmesg.txt:3:", "fallen off the bus")],
    "driver-library-mismatch": [("nvidia-smi.txt:1:", "Driver/library version mismatch"),
                                ("dmesg.txt:1:", "API mismatch")],
    "driver-not-loaded": [("nvidia-smi.txt:1:", "couldn't communicate with the NVIDIA driver")],
    "xid119-gsp-timeout": [("dmesg.txt:3:", "): 119, ")],
    "xid48-row-remap-pending": [("dmesg.txt:1:", "): 48, "), ("dmesg.txt:2:", "): 63, ")],
    "fabricmanager-version-mismatch": [("systemctl-status-nvidia-fabricmanager.txt:2:",
                                        "doesn't match with driver version")],
    "toolkit-not-configured": [("docker-run.txt:1:", 'could not select device driver ""')],
    "plugin-nvml-not-injected": [("device-plugin.log:2:", "could not load NVML library")],
    "ib-port-polling": [("ibstat.txt:9:", "State: Down")],
    # nccl-tests#179: two hosts, both on NET/Socket over Ethernet — the fallback really costs bandwidth
    "nccl-socket-two-nodes": [("nccl-debug.log:6:", "NET/IB : No device found.")],
    # the nested line under "HW Slowdown : Active" (the parser used to drop its parent section)
    "hw-power-brake-c4130": [("nvidia-smi-q.txt:7:", "HW Power Brake Slowdown       : Active")],
    "fabric-state-in-progress": [("nvidia-smi-q.txt:2:", "In Progress")],
    "mig-invalid-single-strategy": [("device-plugin.log:6:", "migEnabled=true was not configured")],
    "allocatable-stuck-at-zero": [("node.yaml:13:", '"0"'), ("node.yaml:21:", '"16"')],
    "remap-pending-smi-q": [("nvidia-smi-q.txt:4:", "Pending")],
    # "2 of 6 NVLinks inactive" quotes both down links (it quoted only the first before the QA pass)
    "nvlink-links-inactive": [("nvidia-smi-nvlink-status.txt:5:", "Link 3: <inactive>"),
                              ("nvidia-smi-nvlink-status.txt:7:", "Link 5: <inactive>")],
    "node-cordoned": [("kubectl-describe-node.txt:6:", "Unschedulable:      true")],
    "nouveau-owns-gpu": [("dmesg.txt:3:", "No NVIDIA graphics adapter probed")],
    "xid74-nvlink": [("dmesg.txt:1:", "): 74, ")],
}
# bundles whose verdict is "no fault" and what they must still report
NORMAL_NOTES = {
    "describe-node-capacity-equals-allocatable": (["device_plugin", "kubernetes"], None),
    "plugin-unhealthy-cleared-by-restart": (["device_plugin"], "history (cleared by a later restart)"),
    "mig-layout-h100": (["gpu_xid"], "MIG layout"),
    "fabricmanager-no-nvswitch": (["nvlink_fabric"], "NV_WARN_NOTHING_TO_DO"),
    # nvsim A40×10: SW Power Cap Active on an idle board (P8, PCIe gen 1 of 4): both normal
    "power-cap-a40": (["thermal_power", "hardware_pci"], "SW power cap active"),
    # nccl#352: one host (ds-ml-01-0), two ranks, NET/Socket on lo only — not a fabric fault
    "nccl-socket-fallback": (["network_rdma"], "single-node NCCL run over loopback"),
}


@pytest.mark.parametrize("name", sorted(EVIDENCE_LINES))
def test_the_evidence_is_the_line_that_shows_the_fault(name):
    d = diagnose(DATA / name)
    for prefix, phrase in EVIDENCE_LINES[name]:
        assert any(e.startswith(prefix) and phrase in e for e in d.evidence), (prefix, phrase, d.evidence)


@pytest.mark.parametrize("name", sorted(NORMAL_NOTES))
def test_bundles_with_harmless_or_past_trouble_are_healthy_and_say_why(name):
    healthy, note = NORMAL_NOTES[name]
    d = diagnose(DATA / name)
    assert (d.layer, d.action, d.evidence) == ("none", "none", [])
    assert set(healthy) <= set(d.healthy_layers), d.healthy_layers
    if note:
        assert any(note in n for n in d.notes), d.notes


def test_every_fixture_bundle_has_a_verdict_test():
    """A bundle added to tests/data/ops/bundles without an expected verdict fails here."""
    import importlib.util

    covered = set(EVIDENCE_LINES) | set(NORMAL_NOTES)
    for module, tables in (("test_diagnose.py", ("EXPECTED", "HEALTHY")),
                           ("test_evidence_wording.py", ("WORDINGS", "DELIBERATE", "OLD_HEALTHY")),
                           ("test_bundle_integrity.py", ("INCOMPLETE",))):
        spec = importlib.util.spec_from_file_location(f"_td_{module[:-3]}", Path(__file__).with_name(module))
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for table in tables:
            covered |= set(getattr(mod, table))
    assert {p.name for p in DATA.iterdir() if p.is_dir()} <= covered


def test_a_header_less_smi_q_excerpt_names_no_made_up_gpu():
    """The excerpt has no 'GPU 0000:…' header; the failure used to read 'GPU ?: row remap pending'."""
    d = diagnose(DATA / "remap-pending-smi-q")
    assert "GPU ?" not in d.failure and d.failure.startswith("a GPU (no bus id in this excerpt): row remap")


KNOWN_NAMES = sorted(NAME_KINDS)
TEXTY = st.lists(st.sampled_from([
    "NVRM: Xid (PCI:0000:52:00): 79, pid=1, GPU has fallen off the bus.", "NVRM: fallen off the bus",
    "Pending                           : Yes", "GPU 00000000:1B:00.0", "    Link 3: <inactive>",
    "State: Down", "Physical state: Polling", "nvidia.com/gpu: \"0\"", "Taints: x=y:NoSchedule",
    "-- Boot 1234 --", "\\", "\t", "", ":::", "GPU0\tGPU1\tNIC0\tCPU Affinity", "Link 0: 25 GB/s",
]), max_size=30).map("\n".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(KNOWN_NAMES),
       content=st.one_of(st.binary(max_size=4096), TEXTY.map(str.encode),
                         st.text(max_size=2000).map(lambda s: s.encode("utf-8", "surrogatepass"))))
def test_any_bytes_under_any_known_file_name_give_a_verdict_not_an_exception(tmp_path_factory, name, content):
    root = tmp_path_factory.mktemp("fuzz")
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_bytes(content)
    start = time.monotonic()
    d = diagnose(root)
    assert time.monotonic() - start < 5.0
    assert d.layer in ("none", *LAYER_ORDER) and d.action in ACTION_WHY
    assert d.layer != "none" or d.action == "none"
    if d.failure == NOTHING:
        assert d.layer == "none" and not d.evidence


@pytest.mark.parametrize(
    ("field", "layer", "action"),
    [
        ("Remapping Failure Occurred        : No", "gpu_xid", "drain_and_rma"),
        ("    HW Thermal Slowdown           : Not Active", "thermal_power", "none"),
        ("SW Thermal Slowdown               : Not Active", "thermal_power", "none"),
    ],
)
def test_flags_without_a_published_capture_are_read_from_a_real_block_with_that_flag_set(
    tmp_path, field, layer, action
):
    """No published `nvidia-smi -q` with a row-remap failure or a thermal slowdown active and a
    citable source was found (PROVENANCE.md). The rule is still exercised on real output: the real A40
    block (power-cap-a40) with that one flag set to the value nvidia-smi prints when it is set
    ("Yes" / "Active", the values of the same fields in the other captures). Not a fixture."""
    text = (DATA / "power-cap-a40" / "nvidia-smi-q.txt").read_text()
    assert text.count(field) == 1
    flipped = field.replace(": Not Active", ": Active").replace(": No", ": Yes")
    (tmp_path / "nvidia-smi-q.txt").write_text(text.replace(field, flipped))
    d = diagnose(tmp_path)
    assert (d.layer, d.action) == (layer, action), d
    assert any(flipped.strip() in e for e in d.evidence), d.evidence
