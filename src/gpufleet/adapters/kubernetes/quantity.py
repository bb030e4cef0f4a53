"""Kubernetes resource quantities ("1900m", "16367668Ki", "2Ti", "1e3") as numbers.

The grammar (apimachinery ``resource.Quantity``): a signed decimal number, then an optional
suffix: binary ``Ki Mi Gi Ti Pi Ei`` (powers of 1024), decimal ``n u m k M G T P E`` (powers of
1000; ``m`` is milli) or an exponent ``e3``/``E3``. CPU is read in cores ("1900m" = 1.9),
memory in our ``memory_gb`` unit, which counts 2^30 bytes (a 2 TiB node is ``memory_gb: 2048``).
"""

from __future__ import annotations

import math
import re

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
            "P": 1e15, "E": 1e18}
_RE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$")
GIB = float(2**30)


class QuantityError(ValueError):
    """Not a Kubernetes quantity; the message names the text."""


def parse_quantity(text: str | int | float) -> float:
    """The value of a quantity in base units (bytes, cores, devices).

    >>> parse_quantity("1900m"), parse_quantity("16367668Ki"), parse_quantity("40Gi") / GIB
    (1.9, 16760492032.0, 40.0)
    """
    if isinstance(text, bool):
        raise QuantityError(f"not a quantity: {text!r}")
    if isinstance(text, int | float):
        value = float(text)
    else:
        m = _RE.match(str(text).strip())
        if not m:
            raise QuantityError(f"not a quantity: {text!r} (expected e.g. 4, 1900m, 64Gi)")
        number, exponent, suffix = m.groups()
        value = float(number)
        if exponent:
            power = int(exponent[1:])
            if abs(power) > 30:
                raise QuantityError(f"not a usable quantity: {text!r} (exponent out of range)")
            value *= 10.0 ** power
        elif suffix:
            value *= _BINARY.get(suffix) or _DECIMAL[suffix]
    if not math.isfinite(value) or value < 0:
        raise QuantityError(f"not a usable quantity: {text!r} (expected a finite value >= 0)")
    return value


def cpu_cores(text: str | int | float) -> float:
    return parse_quantity(text)


#: More devices of one kind than any node or pod has (NVL72 racks are 72 GPUs; a node's device plugin
#: advertises at most a few hundred shared replicas): above it the text is a slip ("8Gi" is
#: 8,589,934,592), not a count.
MAX_DEVICES = 4096


def device_count(text: str | int | float) -> int:
    """An extended-resource count (``nvidia.com/gpu``, a MIG profile): Kubernetes requires whole
    numbers for extended resources, so "1.5" and "500m" are refused as it refuses them, and so is a
    count above MAX_DEVICES ("8Gi"), instead of being truncated to 1 or believed.

    >>> device_count("8"), device_count(8), device_count("1e1")
    (8, 8, 10)
    """
    value = parse_quantity(text)
    if value != int(value):
        raise QuantityError(f"not a device count: {text!r} (extended resources are whole numbers)")
    if value > MAX_DEVICES:
        raise QuantityError(f"not a device count: {text!r} is {value:,.0f} devices "
                            f"(at most {MAX_DEVICES:,} on one node or pod)")
    return int(value)


def memory_gb(text: str | int | float) -> float:
    """Memory in GiB (our ``memory_gb`` unit): bytes / 2^30."""
    return parse_quantity(text) / GIB
