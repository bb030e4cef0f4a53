"""`node diagnose` on bundles of real tool output (tests/data/ops/PROVENANCE.md says where each came from).

Each expected verdict follows from the reference's layer order (ops-reference §0) and the catalogued
meaning of the lines (§1.2, §2): e.g. Xid 119 is a GSP RPC timeout whose NVIDIA resolution bucket is
RESET_GPU; a GPU that fell off the bus needs a node reboot (RESTART_BM).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.ops import rules, xid
from gpufleet.ops.bundle import load_bundle
from gpufleet.ops.diagnose import NOTHING, diagnose
from gpufleet.ops.layers import LAYER_ORDER
from gpufleet.ops.verdict import ACTION_WHY

DATA = Path(__file__).resolve().parents[2] / "data" / "ops" / "bundles"

# bundle → (layer, action, a file that must be quoted in the evidence)
EXPECTED = {
    "xid79-fallen-off-bus": ("hardware_pci", "reboot", "dmesg.txt"),
    "driver-library-mismatch": ("kernel_driver", "reboot", "nvidia-smi.txt"),
    "driver-not-loaded": ("kernel_driver", "reinstall_driver", "nvidia-smi.txt"),
    "xid119-gsp-timeout": ("gpu_xid", "reset_gpu", "dmesg.txt"),
    "xid48-row-remap-pending": ("gpu_xid", "reset_gpu", "dmesg.txt"),
    "fabricmanager-version-mismatch": (
        "nvlink_fabric",
        "reinstall_driver",
        "systemctl-status-nvidia-fabricmanager.txt",
    ),
    "toolkit-not-configured": ("container_toolkit", "fix_runtime_config", "docker-run.txt"),
    "plugin-nvml-not-injected": ("container_toolkit", "fix_runtime_config", "device-plugin.log"),
    "ib-port-polling": ("network_rdma", "reseat_or_replace_cable", "ibstat.txt"),
    "nccl-socket-two-nodes": ("network_rdma", "reseat_or_replace_cable", "nccl-debug.log"),
    "allocatable-stuck-at-zero": ("device_plugin", "restart_device_plugin", "node.yaml"),
    "remap-pending-smi-q": ("gpu_xid", "reset_gpu", "nvidia-smi-q.txt"),
    "nvlink-links-inactive": ("nvlink_fabric", "reboot", "nvidia-smi-nvlink-status.txt"),
    "node-cordoned": ("kubernetes", "remove_taint", "kubectl-describe-node.txt"),
    "nouveau-owns-gpu": ("kernel_driver", "reinstall_driver", "dmesg.txt"),
    "xid74-nvlink": ("nvlink_fabric", "reboot", "dmesg.txt"),
    # HW Slowdown by the power brake (l4rz, C4130): a facility condition to watch, no node action
    "hw-power-brake-c4130": ("thermal_power", "none", "nvidia-smi-q.txt"),
    # gpu-operator #2511: the GPU never finished registering with the NVSwitch fabric
    "fabric-state-in-progress": ("nvlink_fabric", "restart_fabricmanager", "nvidia-smi-q.txt"),
    # k8s-device-plugin #253: MIG enabled with no MIG devices under mig-strategy=single
    "mig-invalid-single-strategy": ("device_plugin", "restart_device_plugin", "device-plugin.log"),
}
HEALTHY = [
    "a100-nvswitch-healthy",
    "idle-l40s-low-pcie-gen",
    "fabricmanager-no-nvswitch",
    "gpu-taint-is-normal",
]
# healthy-h100 (its -q is one of 8 GPU blocks) and history-cleared-by-reload (assembled from two
# machines: driver 550.144.03 in its dmesg, 565.57.01 in its nvidia-smi) find no fault either, but
# say first that the bundle is incomplete: test_bundle_integrity.INCOMPLETE


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_failure_mode_is_named_with_its_layer_action_and_quoted_evidence(name):
    layer, action, evidence_file = EXPECTED[name]
    d = diagnose(DATA / name)
    assert (d.layer, d.action) == (layer, action), d
    assert any(e.startswith(f"{evidence_file}:") for e in d.evidence), d.evidence
    assert d.confirm, "a fault comes with the command that confirms it"


@pytest.mark.parametrize("name", HEALTHY)
def test_normal_conditions_are_not_faults(name):
    d = diagnose(DATA / name)
    assert (d.layer, d.action, d.failure) == ("none", "none", "no fault found"), d
    assert d.healthy_layers, "the layers it could check are listed as healthy"


def test_a_gpu_off_the_bus_is_the_cause_and_the_unhealthy_plugin_its_collateral():
    d = diagnose(DATA / "xid79-fallen-off-bus")
    assert d.layer == "hardware_pci"
    assert any(c.startswith("device_plugin:") for c in d.collateral)
    assert "device_plugin" in d.downstream_layers and "device_plugin" not in d.healthy_layers


def test_a_driver_that_is_not_loaded_explains_the_toolkit_error():
    d = diagnose(DATA / "driver-not-loaded")
    assert d.layer == "kernel_driver"
    assert "container_toolkit" in d.downstream_layers
    assert any(e.startswith("docker-run.txt:1:") for e in d.evidence)


def test_a_plugin_that_cannot_load_nvml_on_a_working_host_is_a_runtime_config_fault():
    d = diagnose(DATA / "plugin-nvml-not-injected")
    assert d.layer == "container_toolkit"
    assert {"hardware_pci", "kernel_driver"} <= set(d.healthy_layers)


def test_an_xid_burst_before_a_driver_reload_with_healthy_gpus_now_is_history(tmp_path):
    """The bundle's nvidia-smi (nvsim, 565.57.01) is another machine's than its dmesg (which loads
    550.144.03): as it stands it is a mixed bundle, and a mixed bundle's live check clears nothing
    (test_bundle_integrity). The rule itself is shown on the same real table with its two version
    fields set to the dmesg's 550.144.03, standing for a check taken on the same node after the
    reload. Not a fixture."""
    shutil.copy(DATA / "history-cleared-by-reload" / "dmesg.txt", tmp_path / "dmesg.txt")
    table = (DATA / "history-cleared-by-reload" / "nvidia-smi.txt").read_text()
    assert table.count("565.57.01") == 2
    (tmp_path / "nvidia-smi.txt").write_text(table.replace("565.57.01", "550.144.03"))
    d = diagnose(tmp_path)
    assert (d.layer, d.incomplete) == ("none", [])
    assert any(n.startswith("history") and "Xid 119" in n for n in d.notes)


def test_a_live_check_from_another_driver_version_does_not_clear_the_log():
    d = diagnose(DATA / "history-cleared-by-reload")
    assert (d.layer, d.action, d.confident) == ("gpu_xid", "reset_gpu", False)
    assert not any(n.startswith("history") and "Xid 119" in n for n in d.notes)


def test_the_same_burst_without_a_later_reload_is_current():
    d = diagnose(DATA / "xid119-gsp-timeout")
    assert d.layer == "gpu_xid" and not any(n.startswith("history") for n in d.notes)


def test_a_reload_right_after_a_gpu_fell_off_does_not_clear_it():
    """The NVSentinel log prints the driver load banner after the fallen-off message; with no live
    check saying the GPU is back, the fault stays current."""
    only_dmesg = diagnose(DATA / "xid79-fallen-off-bus" / "dmesg.txt")
    assert only_dmesg.layer == "hardware_pci"


def test_the_multi_line_fallen_off_message_is_quoted_whole():
    d = diagnose(DATA / "xid79-fallen-off-bus")
    quoted = [e for e in d.evidence if e.startswith("dmesg.txt:")]
    assert [q.split(":")[1] for q in quoted] == ["1", "2", "3"]


def test_an_idle_gpu_at_low_pcie_generation_is_noted_as_normal():
    d = diagnose(DATA / "idle-l40s-low-pcie-gen")
    assert any("PCIe gen 1 of 4 while idle" in n for n in d.notes)


def test_the_usual_gpu_taint_is_not_a_kubernetes_fault():
    d = diagnose(DATA / "gpu-taint-is-normal")
    assert any("nvidia.com/gpu=true:NoSchedule" in n for n in d.notes)


def test_a_file_with_an_unknown_name_is_recognised_by_its_content(tmp_path):
    shutil.copy(DATA / "healthy-h100" / "nvidia-smi-q.txt", tmp_path / "gpu-dump-node17")
    shutil.copy(DATA / "ib-port-polling" / "ibstat.txt", tmp_path / "capture-3")
    b = load_bundle(tmp_path)
    assert {s.name: s.kind for s in b.sources} == {"gpu-dump-node17": "nvidia-smi-q", "capture-3": "ibstat"}
    assert diagnose(tmp_path).layer == "network_rdma"


def test_an_empty_folder_says_nothing_was_found(tmp_path):
    d = diagnose(tmp_path)
    assert (d.layer, d.failure) == ("none", NOTHING)


def test_a_binary_file_is_set_aside_with_a_reason(tmp_path):
    (tmp_path / "core.bin").write_bytes(bytes(range(256)) * 40)
    (tmp_path / "empty.log").write_text("")
    d = diagnose(tmp_path)
    assert d.failure == NOTHING
    assert sorted(d.skipped) == ["core.bin: binary, not a text log", "empty.log: empty"]


def test_a_truncated_log_still_yields_its_complete_lines(tmp_path):
    text = (DATA / "xid119-gsp-timeout" / "dmesg.txt").read_text()
    (tmp_path / "dmesg.txt").write_text(text[: text.index("Expected function 103") + 10])
    d = diagnose(tmp_path)
    assert (d.layer, d.action) == ("gpu_xid", "reset_gpu")


def test_adding_an_xid_is_one_row_in_the_catalog(tmp_path, monkeypatch):
    line = (DATA / "xid48-row-remap-pending" / "dmesg.txt").read_text().splitlines()[0]
    (tmp_path / "dmesg.txt").write_text(line.replace("): 48,", "): 999,") + "\n")
    assert diagnose(tmp_path).action == "reset_gpu"  # unknown Xid: conservative default
    monkeypatch.setitem(xid.XID, 999, xid.XidInfo("TEST_ONLY", "gpu_xid", "drain_and_rma", "test row"))
    assert diagnose(tmp_path).action == "drain_and_rma"


def test_the_xid_code_is_not_confused_with_the_pci_domain():
    m = xid.XID_RE.search("NVRM: Xid (PCI:0002:00:00): 13, pid=2519562, name=python3, Graphics Exception")
    assert m and m.group(2) == "13"


def test_every_rule_and_xid_names_a_known_layer_and_action():
    layers = set(LAYER_ORDER)
    for r in rules.RULES:
        assert r.layer in layers and r.action in ACTION_WHY, r.id
    for code, info in xid.XID.items():
        assert info.layer in layers and info.action in ACTION_WHY, code


ALL_FILES = sorted(p for p in DATA.rglob("*") if p.is_file())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(ALL_FILES), min_size=1, max_size=6, unique=True))
def test_any_mix_of_real_files_gives_a_verdict_whose_evidence_is_verbatim(tmp_path_factory, files):
    root = tmp_path_factory.mktemp("mix")
    for i, f in enumerate(files):
        shutil.copy(f, root / f"{i}-{f.name}")
    d = diagnose(root)
    assert d.layer in ("none", *LAYER_ORDER) and d.action in ACTION_WHY
    for e in d.evidence:
        if e.startswith("…"):
            continue
        name, line, text = e.split(":", 2)
        assert (root / name).read_text().splitlines()[int(line) - 1].strip() == text.strip()


def test_capacity_without_allocatable_quotes_both_lines_of_the_node_object():
    """kubelet keeps capacity at N and writes allocatable 0 when the plugin's devices are all unhealthy
    (ops-reference §2.5); both numbers are the evidence."""
    d = diagnose(DATA / "allocatable-stuck-at-zero")
    assert d.evidence == ['node.yaml:13: nvidia.com/gpu: "0"', 'node.yaml:21: nvidia.com/gpu: "16"']
    assert "capacity 16 GPUs but allocatable 0" in d.failure


def test_the_mig_layout_is_read_and_reported_as_a_note():
    """DCGM#138: each H100 carries 1g.10gb@2:1, 1g.10gb@3:1, 2g.20gb@0:2, 3g.40gb@4:4 —
    1 + 1 + 2 + 3 = 7 compute slices, memory slices 0–7 each used once."""
    d = diagnose(DATA / "mig-layout-h100")
    assert d.layer == "none"
    assert any(
        "GPU 0 MIG layout 2g.20gb@0:2, 1g.10gb@2:1, 1g.10gb@3:1, 3g.40gb@4:4 (7/7 compute slices)" in n
        for n in d.notes
    )
