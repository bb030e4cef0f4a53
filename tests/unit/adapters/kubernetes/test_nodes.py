"""The real RKE2 GPU node "nori", and copies of it changed the way each documented failure
changes a node (the change is written in each test)."""

import pytest

from gpufleet.adapters.kubernetes.gpu_labels import catalog_model
from gpufleet.adapters.kubernetes.nodes import TopologyLabels, read_node
from gpufleet.model.fleet import NodeHealth


def layer(node, name):
    return next(la for la in node.layers if la.name == name)


def test_the_real_gpu_node_reads_as_one_allocatable_gpu_with_every_layer_up(nori):
    n = read_node(nori, TopologyLabels())
    assert n.node.gpus == 1 and n.gpu.product == "NVIDIA-A16-4Q" and n.gpu.physical == 1
    assert n.node.cpus == 2 and n.node.memory_gb == 15   # 16367668Ki = 15.6 GiB, floored
    assert [la.name for la in n.layers] == ["node", "driver", "container-toolkit", "device-plugin",
                                            "allocatable"]
    assert all(la.ok for la in n.layers)
    assert layer(n, "driver").detail == "driver 550.90.07 (pre-installed on the host)"
    assert n.node.health is NodeHealth.HEALTHY


def test_cpu_only_nodes_report_the_node_layer_only_and_their_zone(aks_nodes):
    n = read_node(aks_nodes[1], TopologyLabels())
    assert [la.name for la in n.layers] == ["node"] and n.node.gpus == 0
    assert n.node.zone == "1"    # topology.kubernetes.io/zone: "1"


def test_without_driver_labels_the_driver_layer_is_the_one_named(nori):
    """GFD writes cuda.driver* labels only when it loaded NVML: removing them = no driver."""
    for k in [k for k in nori["metadata"]["labels"] if k.startswith("nvidia.com/cuda.driver")]:
        del nori["metadata"]["labels"][k]
    n = read_node(nori, TopologyLabels())
    assert n.blocker.name == "driver" and "could not load the driver" in n.blocker.detail
    assert n.node.gpus == 0 and n.node.health.schedulable   # CPU pods may still run there


def test_a_mig_change_pauses_the_device_plugin_layer(nori):
    """mig-manager sets deploy.device-plugin=paused-for-mig-change while it reconfigures."""
    nori["metadata"]["labels"]["nvidia.com/gpu.deploy.device-plugin"] = "paused-for-mig-change"
    nori["metadata"]["labels"]["nvidia.com/mig.config.state"] = "pending"
    n = read_node(nori, TopologyLabels())
    assert n.blocker.name == "device-plugin" and "paused-for-mig-change" in n.blocker.detail


def test_a_plugin_that_never_registered_leaves_no_gpu_in_capacity(nori):
    del nori["status"]["capacity"]["nvidia.com/gpu"], nori["status"]["allocatable"]["nvidia.com/gpu"]
    n = read_node(nori, TopologyLabels())
    assert n.gpu.is_gpu_node and n.blocker.name == "device-plugin"
    assert "has not registered" in n.blocker.detail


def test_an_unhealthy_gpu_shows_as_allocatable_below_capacity(nori):
    nori["status"]["allocatable"]["nvidia.com/gpu"] = "0"
    n = read_node(nori, TopologyLabels())
    assert n.blocker.name == "allocatable" and n.blocker.detail.startswith("1 of 1 device(s) unhealthy")
    assert n.node.gpus == 0


@pytest.mark.parametrize("status, expected", [("False", "Ready=False"), ("Unknown", "Ready=Unknown")])
def test_a_node_that_is_not_ready_fails_the_first_layer(nori, status, expected):
    ready = next(c for c in nori["status"]["conditions"] if c["type"] == "Ready")
    ready["status"] = status
    n = read_node(nori, TopologyLabels())
    assert n.blocker.name == "node" and n.blocker.detail.startswith(expected)
    assert n.node.health is NodeHealth.DOWN


def test_a_cordoned_node_is_draining(nori):
    nori["spec"]["unschedulable"] = True
    n = read_node(nori, TopologyLabels())
    assert n.node.health is NodeHealth.DRAINING and "cordoned" in n.blocker.detail


def test_rack_block_and_clique_labels_become_leaf_spine_and_nvlink_domain(nori):
    nori["metadata"]["labels"].update({"topology.kubernetes.io/zone": "z1", "example.com/rack": "r7",
                                       "nvidia.com/gpu.clique": "abc.1"})
    n = read_node(nori, TopologyLabels(rack=("example.com/rack",)))
    assert (n.node.zone, n.node.leaf, n.node.nvlink_domain) == ("z1", "z1/z1/r7", "abc.1")


@pytest.mark.parametrize("product, model", [
    ("NVIDIA-H100-80GB-HBM3", "H100-80GB"), ("NVIDIA-A100-SXM4-40GB", "A100-40GB"),
    ("A100-SXM4-40GB-MIG-1g.5gb", "A100-40GB"), ("NVIDIA-H200", "H200-141GB"),
    ("NVIDIA-A16-4Q", "NVIDIA-A16-4Q"), ("Tesla-T4-SHARED", "Tesla-T4"),
], ids=lambda v: v)
def test_gfd_product_names_map_to_our_catalog_or_stay_as_written(product, model):
    assert catalog_model(product) == model


def _without_gfd(nori):
    """nori with every label GPU Feature Discovery writes removed (GFD not deployed): nvidia.com/
    labels other than the operator's gpu.deploy.* ones, and NFD's list of them."""
    labels = nori["metadata"]["labels"]
    for k in [k for k in labels if k.startswith("nvidia.com/") and not k.startswith("nvidia.com/gpu.deploy")]:
        del labels[k]
    labels.pop("nfd.node.kubernetes.io/feature-labels", None)
    (nori["metadata"].get("annotations") or {}).pop("nfd.node.kubernetes.io/feature-labels", None)
    return nori


def test_a_node_without_gfd_labels_whose_plugin_registered_gpus_is_not_driver_down(nori):
    """No GFD labels is absent evidence, not a fault: the device plugin registered nori's GPU,
    which it can only do through a loaded driver, so the node's GPU is usable."""
    n = read_node(_without_gfd(nori), TopologyLabels())
    assert layer(n, "driver").ok and "no GPU Feature Discovery labels" in layer(n, "driver").detail
    assert n.blocker is None and n.node.gpus == 1


def test_a_node_without_gfd_labels_and_no_registered_gpu_names_the_device_plugin_not_the_driver(nori):
    nori = _without_gfd(nori)
    nori["metadata"]["labels"]["feature.node.kubernetes.io/pci-10de.present"] = "true"
    for k in ("capacity", "allocatable"):
        nori["status"][k].pop("nvidia.com/gpu", None)
    n = read_node(nori, TopologyLabels())
    assert layer(n, "driver").detail == "unknown: no GPU Feature Discovery labels on this node"
    assert n.blocker is not None and n.blocker.name == "device-plugin"
