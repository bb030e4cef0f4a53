import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.adapters.kubernetes.quantity import GIB, QuantityError, cpu_cores, memory_gb, parse_quantity


@pytest.mark.parametrize("text, expected", [
    ("1900m", 1.9),                     # 1900 × 10^-3 cores
    ("2", 2.0),
    ("16367668Ki", 16367668 * 1024.0),  # the RKE2 node's memory, in bytes
    ("500Mi", 500 * 2**20),
    ("1e3", 1000.0),
    ("1.5G", 1.5e9),
    (8, 8.0),
], ids=["millicores", "whole cores", "kibibytes", "mebibytes", "exponent", "decimal giga", "a JSON number"])
def test_a_kubernetes_quantity_reads_as_its_value_in_base_units(text, expected):
    assert math.isclose(parse_quantity(text), expected)


def test_memory_is_counted_in_gib_and_cpu_in_cores():
    """40Gi = 40 × 2^30 bytes = 40 GiB; 250m = 0.25 cores."""
    assert memory_gb("40Gi") == 40.0 and parse_quantity("40Gi") == 40 * GIB
    assert cpu_cores("250m") == 0.25


@pytest.mark.parametrize("bad", ["", "lots", "12Qi", "-1", "nan", "1e999", True])
def test_what_is_not_a_usable_quantity_is_refused_with_its_text(bad):
    with pytest.raises(QuantityError):
        parse_quantity(bad)


@pytest.mark.parametrize("text", ["8Gi", "-1", "NaN", "1.5", "1e400", "500m", "", "eight"],
                         ids=["a memory size (8,589,934,592)", "negative", "NaN", "a fraction", "overflow",
                              "millis", "empty", "a word"])
def test_a_gpu_count_that_is_not_a_whole_number_of_devices_is_refused(text):
    from gpufleet.adapters.kubernetes.quantity import device_count

    with pytest.raises(QuantityError):
        device_count(text)


def test_a_node_with_a_nonsense_gpu_count_is_refused_naming_the_node_and_field(nori):
    """It was read as 0 GPUs ("1.5", "NaN") or 8,589,934,592 ("8Gi", then numpy asked for 64 GiB)."""
    import copy

    from gpufleet.adapters.kubernetes.nodes import TopologyLabels, read_node
    from gpufleet.model.errors import InputError

    for bad in ("8Gi", "1.5", "NaN", "-1"):
        n = copy.deepcopy(nori)
        n["status"]["allocatable"]["nvidia.com/gpu"] = bad
        with pytest.raises(InputError) as err:
            read_node(n, TopologyLabels())
        assert f"Node {n['metadata']['name']}.status.capacity/allocatable" in str(err.value)
        assert repr(bad) in str(err.value)


def test_a_pod_asking_for_half_a_gpu_is_refused_naming_the_pod():
    from gpufleet.adapters.kubernetes.pods import read_pod
    from gpufleet.model.errors import InputError

    res = {"nvidia.com/gpu": "0.5"}
    obj = {"metadata": {"name": "half", "namespace": "ml"},
           "spec": {"containers": [{"name": "c", "resources": {"limits": res, "requests": res}}]}}
    with pytest.raises(InputError) as err:
        read_pod(obj)
    assert "Pod ml/half.spec.containers[].resources" in str(err.value) and "'0.5'" in str(err.value)


@given(st.integers(min_value=0, max_value=4096))
def test_every_whole_count_up_to_the_bound_reads_as_itself_in_every_spelling(n):
    from gpufleet.adapters.kubernetes.quantity import device_count

    assert device_count(str(n)) == device_count(n) == device_count(f"{n}e0") == n
