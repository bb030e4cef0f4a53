"""Kubernetes resource quantities ("9", "300m", "36Gi", "1.5e3", 16) as numbers.

Suffixes (Kubernetes apimachinery's resource.Quantity): decimal n u m "" k M G T P E (10^-9 …
10^18) and binary Ki Mi Gi Ti Pi Ei (2^10 … 2^60); a decimal exponent ``e``/``E`` too.
"""

from __future__ import annotations

import math
import re

_DEC = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
        "P": 1e15, "E": 1e18}
_BIN = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_RE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$")


def parse_quantity(value: object) -> float:
    """The quantity as a float, or ValueError naming what a quantity looks like."""
    if isinstance(value, bool):
        raise ValueError("a Kubernetes quantity (e.g. 16, \"300m\", \"36Gi\"), not a boolean")
    if isinstance(value, int | float):
        x = float(value)
    elif isinstance(value, str) and (m := _RE.match(value.strip())):
        num, exp, suffix = m.groups()
        scale = _BIN.get(suffix or "") or _DEC.get(suffix or "", 1.0)
        x = float(num) * (10.0 ** int(exp[1:]) if exp else scale)
    else:
        raise ValueError(f"a Kubernetes quantity (e.g. 16, \"300m\", \"36Gi\"), not {value!r}")
    if not math.isfinite(x) or x < 0:
        raise ValueError(f"a finite, non-negative quantity, not {value!r}")
    return x
