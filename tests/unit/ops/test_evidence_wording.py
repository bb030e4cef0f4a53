"""Issue 29 §4: node evidence nobody here wrote, read right — every wording a message has had, a later
line that supersedes an earlier one, a fault that survives a reboot, and deliberate states that are
not faults. Each bundle is published text (tests/data/ops/PROVENANCE.md, "Issue 29 §4" rows).

Expected verdicts, from the reference and the sources:
- modprobe: kmod prints "modprobe: FATAL: Module nvidia not found in directory /lib/modules/<kver>",
  module-init-tools (before 2011) printed "FATAL: Module nvidia not found." — both mean no module for
  the running kernel (ops-reference §2.1) → kernel_driver, reinstall_driver.
- "NVML: Unable to retrieve NVLink information as all links are inActive" under a GPU of
  `nvidia-smi nvlink -s` (gpud #1085, B200): no link trained → nvlink_fabric, reboot (as for
  inactive links).
- An SXid line with its code and no severity word (gpud PR #338) is still an NVSwitch error, named by
  its code; without the word it is read as fatal (NVIDIA: fatal SXids need the system restarted).
- DCGM's health watch, "Detected clocks event due to thermal violation in GPU 2" (DCGM #270): a
  condition to watch, not a repair → thermal_power, none.
- "MIG mode is in pending enable state" (gpu-operator #1845) and mig-manager's "Mode change pending:
  true" (gpu-operator #668): the mode waits for a GPU reset → gpu_xid, reset_gpu.
- ibstat "State: Down / Physical state: Disabled" (gpud PR #99): a port switched off on purpose —
  a note, not a fault; "Polling" (ib-port-polling) stays a fault.
- Xid 62 then Xid 154 "… to 0x1 (GPU Reset Required)" on the same GPU (NVIDIA developer forum,
  RTX 5080): the 154 line is the driver's verdict → reset_gpu, cited first, with the 62 after it.
- The same GPU falling off the bus in two boots of one kernel log → drain_and_rma (ops-reference
  §1.2: a repeat after reboot is the RMA case).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpufleet.ops.bundle import Source
from gpufleet.ops.diagnose import diagnose
from gpufleet.ops.scan import scan

DATA = Path(__file__).resolve().parents[2] / "data" / "ops" / "bundles"

# bundle → (layer, action, evidence line that must be quoted FIRST: "file:line:", phrase in it)
WORDINGS = {
    "modprobe-old-wording": (
        "kernel_driver", "reinstall_driver", "modprobe.txt:1:", "FATAL: Module nvidia not found."),
    "modprobe-new-wording": (
        "kernel_driver", "reinstall_driver", "modprobe.txt:2:", "not found in directory"),
    "nvlink-all-inactive-b200": (
        "nvlink_fabric", "reboot", "nvidia-smi-nvlink-status.txt:2:", "all links are inActive"),
    "sxid-code-without-severity": (
        "nvlink_fabric", "reboot", "dmesg.txt:1:", "SXid (PCI:0000:84:00.0): 12028"),
    "dcgm-clocks-event-thermal": (
        "thermal_power", "none", "nv-hostengine.log:1:", "clocks event due to thermal violation"),
    "mig-pending-enable": ("gpu_xid", "reset_gpu", "nvidia-smi-mig.txt:2:", "pending enable state"),
    "mig-manager-mode-change-pending": (
        "gpu_xid", "reset_gpu", "mig-manager.log:7:", "Mode change pending: true"),
    "xid62-then-recovery-action": ("gpu_xid", "reset_gpu", "dmesg.txt:3:", "to 0x1 (GPU Reset Required)"),
    # Bumblebee #554 (2014): the old single-line wording, no Xid
    "fallen-off-bus-old-wording": (
        "hardware_pci", "reboot", "dmesg.txt:1:", "GPU at 0000:01:00.0 has fallen off"),
    # k8s-device-plugin #68: the node shows kubelet's old built-in GPU resource, not the plugin's
    "describe-node-alpha-gpu-resource": (
        "device_plugin", "restart_device_plugin", "kubectl-describe-node.txt:2:",
        "alpha.kubernetes.io/nvidia-gpu"),
    "xid79-recurs-after-reboot": (
        "hardware_pci", "drain_and_rma", "dmesg.txt:16:", "NVIDIA GPU 0000:b3:00.0"),
}
# bundle → (phrase of the note that explains it away)
DELIBERATE = {
    "ib-port-disabled": "mlx5_8 port 1 is Down / Disabled: disabled on purpose",
}
# bundles in an older wording that must read as healthy: (the layers they vouch for)
OLD_HEALTHY = {
    # kubeflow #68: `Clocks Throttle Reasons`, the older name of `Clocks Event Reasons`, all clear
    "clocks-throttle-reasons-old-name": ["thermal_power"],
}


@pytest.mark.parametrize("name", sorted(WORDINGS))
def test_each_wording_gives_its_verdict_citing_the_line_that_proves_it(name):
    layer, action, where, phrase = WORDINGS[name]
    d = diagnose(DATA / name)
    assert (d.layer, d.action) == (layer, action), d
    assert d.evidence[0].startswith(where) and phrase in d.evidence[0], d.evidence


@pytest.mark.parametrize("name", sorted(DELIBERATE))
def test_a_deliberate_state_is_a_note_not_a_fault(name):
    d = diagnose(DATA / name)
    assert (d.layer, d.action, d.evidence) == ("none", "none", [])
    assert any(DELIBERATE[name] in n for n in d.notes), d.notes


def test_a_port_polling_for_a_partner_stays_a_fault_beside_a_disabled_one(tmp_path):
    """Disabled is a choice; Polling is a port that wants a link and has none (gpud PR #482)."""
    shutil.copy(DATA / "ib-port-disabled" / "ibstat.txt", tmp_path / "ibstat.txt")
    shutil.copy(DATA / "ib-port-polling" / "ibstat.txt", tmp_path / "ibstat-2.txt")
    d = diagnose(tmp_path)
    assert (d.layer, d.action) == ("network_rdma", "reseat_or_replace_cable")
    assert d.evidence[0].startswith("ibstat-2.txt:") and "mlx5_10" in d.failure


def test_the_sxid_code_names_the_failure():
    d = diagnose(DATA / "sxid-code-without-severity")
    assert d.failure.startswith("SXid 12028 ") and "0000:84:00.0" in d.failure


def test_a_non_fatal_sxid_is_counted_not_acted_on(tmp_path):
    """The ops-reference §1.3 line (gpud sxid/kmsg.go's example): 'Non-fatal' → a note."""
    line = ("nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV "
            "error (First)")
    ref = Path("/work/shared/reference/ops-reference.md")
    if ref.exists():
        assert line in ref.read_text()
    (tmp_path / "dmesg.txt").write_text(line + "\n")
    d = diagnose(tmp_path)
    assert (d.layer, d.action) == ("none", "none")
    assert any("SXid 12028 (non-fatal)" in n for n in d.notes), d.notes


def test_the_recovery_action_supersedes_the_xid_it_sums_up():
    """Xid 62's catalog row and the 154 line agree on reset here; what the test pins is which line
    speaks: the failure is the driver's recovery action, the 154 line comes first, the 62 line after
    it, and the 154 is not also reported as 'an application error'."""
    d = diagnose(DATA / "xid62-then-recovery-action")
    assert d.failure.startswith("driver recovery action now 'GPU Reset Required' after Xid 62")
    assert [e.split(":")[1] for e in d.evidence] == ["3", "1"]
    assert not any("Xid 154" in n for n in d.notes), d.notes


def test_a_fault_in_one_boot_only_is_a_reboot_not_a_replacement():
    d = diagnose(DATA / "xid79-fallen-off-bus" / "dmesg.txt")
    assert d.action == "reboot"


def test_the_earlier_boot_of_a_recurring_fault_is_reported_as_history():
    d = diagnose(DATA / "xid79-recurs-after-reboot")
    assert "2 boots" in d.failure
    came_back = "came back in a later boot [dmesg.txt:1:"
    assert any(n.startswith("history") and came_back in n for n in d.notes), d.notes


def test_kernel_timestamps_jumping_back_mark_a_new_boot(tmp_path):
    """Without the jump (the two copies back to back) the second message is the same boot: the
    driver retrying, not a recurrence — so no escalation."""
    text = (DATA / "xid79-fallen-off-bus" / "dmesg.txt").read_text()
    (tmp_path / "dmesg.txt").write_text(text + text)
    assert diagnose(tmp_path).action == "reboot"


def test_taints_in_a_yaml_node_cite_their_own_line(tmp_path):
    """The `taints:` list of gpu-operator #1316 (as published, under the node's spec; the `spec:` line
    that holds it is added here). The taint used to be cited as line 0: the lookup searched for the
    JSON spelling `"nvidia.com/gpu"` only. Not a fixture."""
    excerpt = ["  taints:", "  - effect: NoSchedule", "    key: nvidia.com/gpu", "    value: present"]
    (tmp_path / "node.yaml").write_text("\n".join(["spec:", *excerpt]) + "\n")
    d = diagnose(tmp_path)
    assert any("nvidia.com/gpu=present:NoSchedule" in n and "node.yaml:4:" in n for n in d.notes), d.notes


@pytest.mark.parametrize(
    ("line", "gpu", "code"),
    [
        # older drivers, without "PCI:" (ops-reference §1.3, from NVIDIA's Xid document via gpud's kmsg.go)
        ("NVRM: Xid (0000:03:00): 14, Channel 00000001", "0000:03:00", 14),
        # newer drivers, with pid and name (NVSentinel #155 comment)
        ("NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus", "0000:44:00", 79),
        # the first line of xid62-then-recovery-action (no pid/name)
        ("NVRM: Xid (PCI:0000:01:00): 62, 323f0f30 0000c3d8 00000000 206dae68 206da022 206da190 206d85f6 "
         "206d8d86", "0000:01:00", 62),
    ],
)
def test_every_xid_line_format_gives_its_gpu_and_code(line, gpu, code):
    found = [f for f, _ in scan(Source("dmesg.txt", "dmesg", [line]))]
    assert [(f.rule, f.subject) for f in found if f.rule.startswith("xid-")] == [(f"xid-{code}", gpu)]


@pytest.mark.parametrize("name", sorted(OLD_HEALTHY))
def test_an_older_wording_of_a_healthy_state_reads_healthy(name):
    d = diagnose(DATA / name)
    assert (d.layer, d.action, d.failure) == ("none", "none", "no fault found"), d
    assert set(OLD_HEALTHY[name]) <= set(d.healthy_layers)


def test_the_old_throttle_name_reads_like_the_new_event_name(tmp_path):
    """The same flag under both section names: HW Thermal Slowdown set Active in the kubeflow #68 block
    reads as a thermal slowdown whichever name the driver printed. Not a fixture."""
    old = (DATA / "clocks-throttle-reasons-old-name" / "nvidia-smi-q.txt").read_text()
    hot = old.replace("HW Thermal Slowdown     : Not Active", "HW Thermal Slowdown     : Active")
    for section in ("Clocks Throttle Reasons", "Clocks Event Reasons"):
        (tmp_path / "nvidia-smi-q.txt").write_text(hot.replace("Clocks Throttle Reasons", section))
        d = diagnose(tmp_path)
        assert (d.layer, d.action) == ("thermal_power", "none"), (section, d)
        assert "HW Thermal Slowdown     : Active" in d.evidence[0]


@pytest.mark.parametrize(
    "line",
    [
        # DCGM #270 (DCGM_FR_CLOCKS_EVENT_THERMAL, newer)
        "'Detected clocks event due to thermal violation in GPU 2. Verify that the cooling on this machine",
        # DCGM_FR_CLOCK_THROTTLE_THERMAL / _POWER (older dcgm_errors.h), %u = 2 (PROVENANCE.md)
        "Detected clock throttling due to thermal violation in GPU 2.",
        "Detected clock throttling due to power violation in GPU 2.",
    ],
)
def test_both_dcgm_clock_wordings_are_a_thermal_power_condition(tmp_path, line):
    (tmp_path / "nv-hostengine.log").write_text(line + "\n")
    d = diagnose(tmp_path)
    assert (d.layer, d.action) == ("thermal_power", "none"), d
