"""The GPU Operator chain and the NCCL environment, on published outputs (tests/data/ops/PROVENANCE.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.ops.nccl_env import check_nccl_log, check_ports, derive
from gpufleet.ops.operator_chain import (
    CHAIN,
    CUT_OFF,
    bringup,
    chain_status,
    parse_labels,
    parse_pod_listing,
)
from gpufleet.ops.parse_smi import parse_topo
from gpufleet.ops.parse_sys import parse_ibstat, parse_sysfs_ib

DATA = Path(__file__).resolve().parents[2] / "data" / "ops"


def _text(rel: str) -> str:
    return (DATA / rel).read_text()


def test_nfd_pci_0302_label_makes_a_gpu_node_even_without_pci_10de():
    """gpu-operator#78: NFD wrote pci-0302_10de.present (3D controller) but not pci-10de.present; the
    operator's gpuNodeLabels accept either (ops-reference §3.4)."""
    st = chain_status(parse_labels(_text("operator/labels-nfd-t4.txt")))
    assert st.gpu_node and "pci-0302_10de" in st.gpu_node_why
    assert [s.operand for s in st.steps if s.should_run] == [
        "driver",
        "container-toolkit",
        "operator-validator",
        "device-plugin",
        "dcgm-exporter",
        "gpu-feature-discovery",
    ]  # dcgm is off by default, mig-manager needs a MIG-capable GPU


def test_a_node_without_nfd_gpu_labels_runs_nothing():
    st = chain_status({"kubernetes.io/os": "linux"})
    assert not st.gpu_node and not any(s.should_run for s in st.steps)


def test_deploy_labels_decide_what_runs_and_mig_manager_runs_when_labelled():
    st = chain_status(parse_labels(_text("operator/labels-a100-mig.yaml")))
    runs = {s.operand: s.should_run for s in st.steps}
    assert runs["mig-manager"] and runs["device-plugin"] and not runs["dcgm"]


def test_mig_reconfiguration_pauses_the_plugin():
    labels = parse_labels(_text("operator/labels-a100-mig.yaml"))
    labels["nvidia.com/gpu.deploy.device-plugin"] = "paused-for-mig-change"
    plugin = next(s for s in chain_status(labels).steps if s.operand == "device-plugin")
    assert not plugin.should_run and "MIG reconfiguration" in plugin.why


def test_operands_stuck_in_init_are_blamed_on_the_validator_that_writes_toolkit_ready():
    """gpu-operator#1518: toolkit Running, plugin/exporter/GFD in Init waiting for toolkit-ready,
    which the operator-validator writes after validating the toolkit."""
    pods = parse_pod_listing(_text("operator/pods-toolkit-validation-stuck.txt")).pods
    assert pods["container-toolkit"][0] == "Running" and pods["device-plugin"][0] == "Init:0/1"
    st = chain_status(parse_labels(_text("operator/labels-a100-mig.yaml")), pods)
    assert st.blocker == "operator-validator"
    blocked = {s.operand for s in st.steps if s.blocked_by == "operator-validator"}
    assert {"device-plugin", "dcgm-exporter", "gpu-feature-discovery"} <= blocked
    driver = next(s for s in st.steps if s.operand == "driver")
    assert driver.state == "not listed" and not driver.blocked_by  # toolkit Running: driver evidently fine


def test_a_cut_off_pod_listing_says_it_is_incomplete_instead_of_calling_the_validator_missing():
    """gpu-operator#1518's listing stops inside the device-plugin row (3 of the header's 5 columns):
    the operator-validator's row, if any, is below the cut. Its state is unknown — the waiters in
    Init still point at it as the producer of toolkit-ready — and no operand is called missing."""
    listing = parse_pod_listing(_text("operator/pods-toolkit-validation-stuck.txt"))
    assert listing.cut.startswith("line 11 has 3 of 5 columns")  # the 11th and last line
    st = chain_status(parse_labels(_text("operator/labels-a100-mig.yaml")), listing.pods, listing.cut)
    validator = next(s for s in st.steps if s.operand == "operator-validator")
    assert validator.state == CUT_OFF
    assert st.blocker == "operator-validator"
    assert any("pod listing is incomplete" in p for p in st.problems)
    assert not any("has no pod in the list" in p for p in st.problems)


def test_a_whole_listing_without_the_validator_does_call_it_missing():
    """The same listing without its cut row is whole (every row has the header's 5 columns): an
    operand that should run and is absent is then reported as having no pod."""
    text = "\n".join(_text("operator/pods-toolkit-validation-stuck.txt").splitlines()[:-1])
    listing = parse_pod_listing(text)
    assert listing.cut == ""
    labels = parse_labels(_text("operator/labels-a100-mig.yaml"))
    pods = {k: v for k, v in listing.pods.items() if k == "container-toolkit"}
    st = chain_status(labels, pods, listing.cut)
    assert st.blocker == "operator-validator"
    assert any("operator-validator should run but has no pod" in p for p in st.problems)


def test_a_headerless_listing_of_complete_rows_is_not_called_cut():
    assert parse_pod_listing(_text("operator/pods-running.txt")).cut == ""


def test_running_pods_leave_no_blocker_behind_them():
    pods = parse_pod_listing(_text("operator/pods-running.txt")).pods
    assert pods["gpu-feature-discovery"][0] == "Running" and "driver" not in pods
    st = chain_status(parse_labels(_text("operator/labels-nfd-t4.txt")), pods)
    assert st.blocker not in ("container-toolkit", "gpu-feature-discovery")


def test_bringup_arithmetic_by_hand_vs_operator():
    """ceil(16/3) = 6 rounds × 60 min = 360 min by hand; the operator's daemonsets run everywhere at
    once; a driver upgrade at maxParallelUpgrades=1 is 16 × 15 = 240 min."""
    b = bringup(16, 60, 3, 20, 15)
    assert (b.by_hand_minutes, b.operator_minutes, b.upgrade_minutes) == (360, 20, 240)


def test_chain_order_is_the_state_manager_order():
    assert [o.name for o in CHAIN][:4] == [
        "driver",
        "container-toolkit",
        "operator-validator",
        "device-plugin",
    ]


def test_labels_that_are_not_labels_are_rejected():
    with pytest.raises(ValueError):
        parse_labels("just some words")


def test_each_gpu_gets_its_pix_nic_and_the_unattached_nic_is_left_out():
    """nccl#1453: GPU0's PIX NIC is NIC8 … GPU7's is NIC1; NIC0 is SYS to every GPU."""
    env = derive(parse_topo(_text("nccl/topo-h100-9nic.txt").splitlines()))
    assert {p.gpu: p.nic for p in env.pairs}["GPU0"] == "NIC8"
    assert all(p.link == "PIX" for p in env.pairs)
    assert any("NIC0" in n for n in env.notes)


def test_nccl_ib_hca_names_devices_not_nvidia_smi_aliases():
    """NCCL matches NCCL_IB_HCA against ibv device names (mlx5_0, …; ops-reference §7.1), so
    '=NIC1,…' would select no HCA. The fixture (nccl#1453) was captured without its 'NIC Legend'
    lines: no NCCL_IB_HCA, and a problem naming the aliases. With legend lines in nvidia-smi's own
    format (constructed here: NICn → mlx5_n, as on a node whose RDMA devices enumerate in PCI
    order), the export lists the eight GPU-near devices and leaves the front-end mlx5_0 out."""
    topo = parse_topo(_text("nccl/topo-h100-9nic.txt").splitlines())
    bare = derive(topo)
    assert "NCCL_IB_HCA" not in bare.env
    assert any("NIC1, NIC2" in p and "aliases" in p for p in bare.problems)
    named = derive(topo, {f"NIC{i}": f"mlx5_{i}" for i in range(9)})
    assert named.env["NCCL_IB_HCA"] == "=" + ",".join(f"mlx5_{i}" for i in range(1, 9))
    assert not named.problems and any("mlx5_0" in n for n in named.notes)
    listed = _text("nccl/topo-h100-9nic.txt") + "\nNIC Legend:\n\n" + "".join(
        f"  NIC{i}: mlx5_{i}\n" for i in range(9))
    assert derive(parse_topo(listed.splitlines())).env == named.env


def test_a_gpu_whose_nearest_nic_is_across_the_cpu_is_a_half_bandwidth_pair():
    lines = _text("nccl/topo-h100-9nic.txt").splitlines()
    # GPU0 row with its PIX NIC (NIC8) unplugged from the matrix: what remains nearest is NODE
    lines[1] = lines[1].replace("\tPIX\t0-79", "\tSYS\t0-79")
    env = derive(parse_topo(lines))
    assert any(p.startswith("GPU0: nearest NIC NIC5 is NODE") for p in env.problems)


def test_nccl_falling_back_to_sockets_between_two_hosts_is_detected():
    out = check_nccl_log(_text("bundles/nccl-socket-two-nodes/nccl-debug.log").splitlines(), [], "log")
    assert out and "fell back to sockets" in out[0]


def test_a_single_host_nccl_run_over_loopback_is_not_called_a_fallback():
    """nccl#352: every line is host ds-ml-01-0 and NET/Socket lists only [0]lo — the network
    transport is not used between GPUs of one node."""
    out = check_nccl_log(_text("nccl/nccl-socket-fallback.log").splitlines(), [], "log")
    assert out and "loopback only" in out[0] and not any("fell back" in o for o in out)


def test_nccl_using_fewer_hcas_than_the_topology_offers_is_detected():
    out = check_nccl_log(_text("nccl/nccl-ib-one-hca.log").splitlines(), ["mlx5_0", "mlx5_1"], "log")
    assert out == ["log: NCCL used 1 HCA(s), not mlx5_1: a port down or filtered by NCCL_IB_HCA"]


def test_down_ports_and_healthy_ports_from_ibstat_and_sysfs():
    assert (
        "Down / Polling"
        in check_ports(parse_ibstat(_text("bundles/ib-port-polling/ibstat.txt").splitlines()), "ibstat")[0]
    )
    healthy = parse_sysfs_ib(_text("bundles/healthy-h100/sys-class-infiniband.txt").splitlines())
    assert len(healthy) == 9 and check_ports(healthy, "sysfs") == []  # 8×400 IB + a 200 Gb/s Ethernet bond
