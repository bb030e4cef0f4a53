import math

import pytest

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
