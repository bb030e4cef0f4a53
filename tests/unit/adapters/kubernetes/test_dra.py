"""DRA: the NVIDIA driver's published device entry, its DeviceClasses and the driver's and
Kubernetes' documented claims, evaluated with cel-python; copies of the real device are changed
as each test says (a second GPU, MIG placements)."""

import copy

import pytest

from gpufleet.adapters.kubernetes.allocator import allocate, counters_after
from gpufleet.adapters.kubernetes.cel import SelectorError
from gpufleet.adapters.kubernetes.dra import read_claim, read_classes, read_slices

from .conftest import real

pytest.importorskip("celpy")


def classes():
    return read_classes(real("dra/deviceclasses.json")["items"])


def template(name):
    items = real("dra/claimtemplates.json")["items"]
    return read_claim(next(t for t in items if t["metadata"]["name"] == name))


def nvidia_slice():
    return copy.deepcopy(real("dra/resourceslice-nvidia.json")["items"][0])


def test_the_published_gpu_device_reads_with_domain_qualified_attributes():
    devices, _, notes = read_slices([nvidia_slice()])
    (d,) = devices
    assert (d.node, d.name, d.attributes["gpu.nvidia.com/type"]) == ("ipp1-0033", "gpu-0", "gpu")
    assert d.capacity["gpu.nvidia.com/memory"] == 40 * 2**30 * 1000   # 40Gi in milli-bytes
    assert d.attributes["resource.kubernetes.io/pcieRoot"] == "pci0000:64" and notes == []


@pytest.mark.parametrize("claim, ok", [
    ("single-gpu", True), ("a100-gpu", True), ("gpu-over-40gi", False)],
    ids=["any GPU", "A100 by product-name regex", "more than 40Gi (the device has exactly 40Gi)"])
def test_documented_selectors_pick_or_refuse_the_a100(claim, ok):
    devices, counters, _ = read_slices([nvidia_slice()])
    out = allocate(template(claim), devices, classes(), set(), counters)
    assert out.ok is ok
    if ok:
        assert [d.name for d in out.devices["gpu"]] == ["gpu-0"]
    else:
        assert out.reason == "request gpu: 0 free matching device(s), needs 1"


def test_an_allocated_device_is_not_given_twice():
    devices, counters, _ = read_slices([nvidia_slice()])
    out = allocate(template("single-gpu"), devices, classes(), {devices[0].key}, counters)
    assert not out.ok and "0 free matching" in out.reason


def _mig(src, name, profile, parent):
    d = copy.deepcopy(src)
    d["name"] = name
    d["attributes"]["type"] = {"string": "mig"}
    d["attributes"]["profile"] = {"string": profile}
    d["attributes"]["parentUUID"] = {"string": parent}
    return d


def test_match_attribute_keeps_the_four_mig_devices_of_gpu_test4_on_one_parent_gpu():
    """GPU A offers 1g.5gb ×2 + 2g.10gb + 3g.20gb; GPU B lacks the 3g.20gb. The claim's
    matchAttribute on parentUUID must choose all four on A, even though B sorts first."""
    sl = nvidia_slice()
    gpu = sl["spec"]["devices"][0]
    a, b = "GPU-aaaa", "GPU-0000"
    sl["spec"]["devices"] = [
        _mig(gpu, "b-1g-0", "1g.5gb", b), _mig(gpu, "b-1g-1", "1g.5gb", b), _mig(gpu, "b-2g", "2g.10gb", b),
        _mig(gpu, "a-1g-0", "1g.5gb", a), _mig(gpu, "a-1g-1", "1g.5gb", a), _mig(gpu, "a-2g", "2g.10gb", a),
        _mig(gpu, "a-3g", "3g.20gb", a)]
    devices, counters, _ = read_slices([sl])
    out = allocate(template("mig-devices"), devices, classes(), set(), counters)
    assert out.ok
    assert {d.attributes["gpu.nvidia.com/parentUUID"] for ds in out.devices.values() for d in ds} == {a}
    assert out.devices["mig-3g-20gb"][0].name == "a-3g"


def test_partitionable_devices_share_their_counter_set():
    """Kubernetes docs: two devices each consume 6Gi of an 8Gi counter, so one fits, not two."""
    devices, counters, notes = read_slices(real("dra/resourceslices-partitionable.json")["items"])
    assert notes == [] and len(devices) == 2
    cls = {"example": ()}
    from gpufleet.adapters.kubernetes.dra import Claim, Request
    one = Claim("ns", "one", (Request("r", "example", ()),))
    two = Claim("ns", "two", (Request("r", "example", (), count=2),))
    assert allocate(one, devices, cls, set(), counters).ok
    assert not allocate(two, devices, cls, set(), counters).ok
    left = counters_after(devices, counters, {devices[0].key})
    assert not allocate(one, devices, cls, {devices[0].key}, left).ok   # 8Gi - 6Gi = 2Gi < 6Gi


def test_allocation_mode_all_fails_when_one_matching_device_is_taken():
    from gpufleet.adapters.kubernetes.dra import Claim, Request
    devices, counters, _ = read_slices([nvidia_slice()])
    claim = Claim("ns", "all", (Request("r", "gpu.nvidia.com", (), mode="All"),))
    assert allocate(claim, devices, classes(), set(), counters).ok
    out = allocate(claim, devices, classes(), {devices[0].key}, counters)
    assert not out.ok and "already allocated (allocationMode All)" in out.reason


def test_a_selector_reading_an_attribute_the_device_lacks_aborts_with_the_expression():
    from gpufleet.adapters.kubernetes.dra import Claim, Request
    devices, counters, _ = read_slices([nvidia_slice()])
    expr = "device.attributes['gpu.nvidia.com'].nope == 1"
    bad = Claim("ns", "bad", (Request("r", "gpu.nvidia.com", (expr,)),))
    with pytest.raises(SelectorError, match="nope"):
        allocate(bad, devices, classes(), set(), counters)


def test_only_the_newest_generation_of_a_pool_counts_and_an_incomplete_pool_is_noted():
    old, new = nvidia_slice(), nvidia_slice()
    new["spec"]["pool"]["generation"] = 2
    new["spec"]["pool"]["resourceSliceCount"] = 2
    new["spec"]["devices"][0]["name"] = "gpu-1"
    devices, _, notes = read_slices([old, new])
    assert [d.name for d in devices] == ["gpu-1"]
    assert notes == ["pool gpu.nvidia.com/ipp1-0033: 1 of 2 slices present (incomplete; the scheduler waits)"]


def test_counts_strand_the_qualifying_gpus_of_mixed_nodes_that_claims_use():
    """Node a: 8 GPUs of 80Gi. Node b: 4 of 80Gi + 4 of 40Gi. Pods want 2 GPUs of > 40Gi.
    Claims: a 8//2 = 4 pods, b 4//2 = 2 pods, 0 unusable. Counts: b is mixed (a count could be
    handed a 40Gi GPU), so its 4 qualifying GPUs are unusable: 4 pods, 4 GPUs stranded."""
    from gpufleet.adapters.kubernetes.dra import Request
    from gpufleet.adapters.kubernetes.stranding import counts_vs_claims
    sl = nvidia_slice()
    gpu = sl["spec"]["devices"][0]
    devs = []
    for node, mems in (("a", ["80Gi"] * 8), ("b", ["80Gi"] * 4 + ["40Gi"] * 4)):
        for i, mem in enumerate(mems):
            d = copy.deepcopy(gpu)
            d["name"], d["capacity"]["memory"]["value"] = f"gpu-{i}", mem
            s = copy.deepcopy(sl)
            s["spec"]["nodeName"], s["spec"]["pool"]["name"], s["spec"]["devices"] = node, node, [d]
            devs.append(s)
    for s in devs:
        s["spec"]["pool"]["resourceSliceCount"] = 8
    devices, _, _ = read_slices(devs)
    by_node = {}
    for d in devices:
        by_node.setdefault(d.node, []).append(d)
    req = Request("gpus", "gpu.nvidia.com",
                  ("device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('40Gi'))",), count=2)
    r = counts_vs_claims(by_node, req, classes(), set())
    assert (r.qualifying, r.unusable_counts, r.unusable_claims, r.mixed_nodes) == (12, 4, 0, 1)
    assert (r.pods_counts, r.pods_claims) == (4, 6)


def _first_available(*names):
    """One request ``gpu`` whose firstAvailable subrequests are the ``exactly`` bodies of these
    published claim templates, in this order, each named after its template."""
    items = {t["metadata"]["name"]: t for t in real("dra/claimtemplates.json")["items"]}
    subs = [{"name": n, **items[n]["spec"]["spec"]["devices"]["requests"][0]["exactly"]} for n in names]
    return read_claim({"kind": "ResourceClaim", "metadata": {"name": "fa", "namespace": "ns"},
                       "spec": {"devices": {"requests": [{"name": "gpu", "firstAvailable": subs}]}}})


def test_first_available_tries_the_next_subrequest_when_the_first_cannot_be_met():
    """The published A100 (40Gi) cannot meet 'more than 40Gi', the first choice; the second, the
    A100 by product name, takes gpu-0, recorded under gpu/a100-gpu as the API names results.
    In the other order the first choice already fits and is taken."""
    devices, counters, _ = read_slices([nvidia_slice()])
    out = allocate(_first_available("gpu-over-40gi", "a100-gpu"), devices, classes(), set(), counters)
    assert out.ok and {k: [d.name for d in v] for k, v in out.devices.items()} == {"gpu/a100-gpu": ["gpu-0"]}
    out = allocate(_first_available("single-gpu", "gpu-over-40gi"), devices, classes(), set(), counters)
    assert out.ok and list(out.devices) == ["gpu/single-gpu"]
    out = allocate(_first_available("gpu-over-40gi"), devices, classes(), set(), counters)
    assert not out.ok and "0 free matching" in out.reason


def test_the_allocator_takes_the_fit_that_strands_the_fewest_devices():
    """The Kubernetes docs' partitionable slices (counter set gpu-1-counters, 8Gi; device-1 and
    device-2 each consume 6Gi), plus, as copies changed here: a second counter set
    gpu-2-counters of 8Gi with device-3 (2Gi of it) and device-4 (all 8Gi: the whole GPU), and
    device-5 taking 2Gi of gpu-1. device-1 is allocated, so gpu-1 has 8 − 6 = 2Gi left.
    A claim for any one device of the class (device-2 no longer fits: 2Gi < 6Gi):
    - first fit (name order) takes device-3: gpu-2 keeps 6Gi < 8Gi, so device-4 is stranded;
    - device-4 takes all of gpu-2: device-3 is stranded;
    - device-5 uses gpu-1's last 2Gi, which nothing else there could use (device-2 needs 6Gi):
      nothing newly stranded. The best fit is device-5."""
    from gpufleet.adapters.kubernetes.dra import Claim, Request
    items = copy.deepcopy(real("dra/resourceslices-partitionable.json")["items"])
    counters_slice, devices_slice = items
    gpu2 = copy.deepcopy(counters_slice["spec"]["sharedCounters"][0])
    gpu2["name"] = "gpu-2-counters"
    counters_slice["spec"]["sharedCounters"].append(gpu2)
    template_dev = devices_slice["spec"]["devices"][0]
    for name, cset, size in (("device-3", "gpu-2-counters", "2Gi"), ("device-4", "gpu-2-counters", "8Gi"),
                             ("device-5", "gpu-1-counters", "2Gi")):
        d = copy.deepcopy(template_dev)
        d["name"] = name
        d["consumesCounters"] = [{"counterSet": cset, "counters": {"memory": {"value": size}}}]
        devices_slice["spec"]["devices"].append(d)
    devices, counters, notes = read_slices(items)
    assert notes == [] and len(devices) == 5
    used = {next(d.key for d in devices if d.name == "device-1")}
    left = counters_after(devices, counters, used)
    claim = Claim("ns", "one", (Request("r", "example", ()),))
    out = allocate(claim, devices, {"example": ()}, used, left)
    assert out.ok and [d.name for d in out.devices["r"]] == ["device-5"]
