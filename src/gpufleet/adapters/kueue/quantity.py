"""Kubernetes resource quantities ("9", "300m", "36Gi", "1.5e3", 16), exactly.

Suffixes (Kubernetes apimachinery's resource.Quantity): decimal n u m "" k M G T P E (10^-9 …
10^18) and binary Ki Mi Gi Ti Pi Ei (2^10 … 2^60); a decimal exponent ``e``/``E`` too.
Quantities are parsed to exact fractions, so "100Gi" of memory is 107,374,182,400 bytes and is
written back as "100Gi" (``format_quantity``), never as a rounded decimal.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_DEC = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1),
        "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
        "P": Fraction(10**15), "E": Fraction(10**18)}
_BIN = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_RE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$")
#: Beyond this many GPUs a quantity is a mistake (a binary suffix, an exponent), not a fleet.
MAX_GPUS = 10**6
_LIMIT = Fraction(10**21)  # beyond any real quota of any resource


def _shape() -> str:
    return "a Kubernetes quantity (e.g. 16, \"300m\", \"36Gi\")"


def parse_exact(value: object) -> tuple[Fraction, str]:
    """(the quantity as an exact fraction, its suffix: "" / a decimal or binary suffix / "e"),
    or ValueError naming what a quantity looks like."""
    if isinstance(value, bool):
        raise ValueError(f"{_shape()}, not a boolean")
    if isinstance(value, int):
        x, suffix = Fraction(value), ""
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"a finite, non-negative quantity, not {value!r}")
        x, suffix = Fraction(str(value)), ""
    elif isinstance(value, str) and (m := _RE.match(value.strip())):
        num, exp, suffix = m.groups()
        if exp is not None:
            if abs(int(exp[1:])) > 30:
                raise ValueError(f"a finite, non-negative quantity, not {value!r}")
            x, suffix = Fraction(num) * Fraction(10) ** int(exp[1:]), "e"
        else:
            suffix = suffix or ""
            x = Fraction(num) * (_BIN[suffix] if suffix in _BIN else _DEC[suffix])
    else:
        raise ValueError(f"{_shape()}, not {value!r}")
    if x < 0 or x > _LIMIT:
        raise ValueError(f"a finite, non-negative quantity, not {value!r}")
    return x, suffix


def parse_quantity(value: object) -> float:
    """The quantity as a float, or ValueError naming what a quantity looks like."""
    return float(parse_exact(value)[0])


def parse_gpus(value: object) -> int:
    """A count of GPUs: a whole number, written without a binary suffix ("8Gi" of GPUs is
    8,589,934,592 of them), at most ``MAX_GPUS``; else ValueError."""
    x, suffix = parse_exact(value)
    if suffix in _BIN:
        raise ValueError(f"a whole number of GPUs (e.g. 8), not {value!r} (a binary suffix: "
                         f"{int(x)} GPUs)")
    if x.denominator != 1:
        raise ValueError(f"a whole number of GPUs (e.g. 8), not {value!r}")
    if x > MAX_GPUS:
        raise ValueError(f"a whole number of GPUs up to {MAX_GPUS:,}, not {value!r}")
    return int(x)


def format_quantity(x: Fraction | int) -> int | str:
    """``x`` written exactly and shortest: a plain integer, or the integer mantissa with the
    decimal or binary suffix that gives the shortest text ("100Gi", "16T", "300m")."""
    x = Fraction(x)
    options: list[str] = []
    if x.denominator == 1:
        options.append(str(int(x)))
    for suffix, scale in (*_BIN.items(), *_DEC.items()):
        if suffix and (x / scale).denominator == 1:
            options.append(f"{int(x / scale)}{suffix}")
    if not options:
        raise ValueError(f"{x} has no exact Kubernetes quantity of nano precision")
    best = min(options, key=lambda s: (len(s), s))
    return int(best) if best.isdigit() else best
