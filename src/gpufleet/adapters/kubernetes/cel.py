"""DRA device selectors evaluated by a real CEL implementation (``cel-python``, extra ``k8s``).

The environment is the one ``CELDeviceSelector`` documents: ``device.driver``,
``device.attributes["<domain>"].<name>`` and ``device.capacity["<domain>"].<name>``, plus the
Kubernetes CEL library functions device selectors use: ``quantity("40Gi")`` and ``semver("1.2.3")``
with ``isGreaterThan`` / ``isLessThan`` / ``compareTo``, ``major()``/``minor()``/``patch()``, and
the strings extension's ``lowerAscii``/``upperAscii``.

Encodings (so CEL's own comparisons stay exact): a quantity is an int of milli-units (40Gi →
42949672960000); a version is ``major·10^12 + minor·10^6 + patch`` (each part < 10^6). An
evaluation error (an attribute the device lacks, read without ``has()``) is, as in Kubernetes,
an error that aborts the allocation: ``SelectorError`` with the expression and the message.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from gpufleet.adapters.kubernetes.quantity import QuantityError, parse_quantity

try:  # optional extra: pip install 'gpufleet[k8s]'
    import celpy
    from celpy import celtypes
except ImportError:  # pragma: no cover - exercised only without the extra
    celpy = None

NEEDS_EXTRA = ("DRA device selectors are CEL expressions, read with the optional extra: "
               "pip install 'gpufleet[k8s]' (cel-python)")
VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)")


class SelectorError(ValueError):
    """A selector that does not compile, or whose evaluation fails on a device."""


def milli(value: str | int | float) -> int:
    return int(round(parse_quantity(value) * 1000))


def version_code(text: str) -> int:
    m = VERSION.match(str(text).strip())
    if not m or any(int(p) >= 10**6 for p in m.groups()):
        raise SelectorError(f"not a semantic version: {text!r}")
    major, minor, patch = (int(p) for p in m.groups())
    return major * 10**12 + minor * 10**6 + patch


def _functions() -> dict[str, Any]:
    def quantity(s):
        try:
            return celtypes.IntType(milli(str(s)))
        except QuantityError as e:
            raise SelectorError(str(e)) from None

    def semver(s):
        return celtypes.IntType(version_code(str(s)))

    return {
        "quantity": quantity, "semver": semver,
        "isGreaterThan": lambda a, b: celtypes.BoolType(a > b),
        "isLessThan": lambda a, b: celtypes.BoolType(a < b),
        "compareTo": lambda a, b: celtypes.IntType((a > b) - (a < b)),
        "major": lambda v: celtypes.IntType(v // 10**12),
        "minor": lambda v: celtypes.IntType(v // 10**6 % 10**6),
        "patch": lambda v: celtypes.IntType(v % 10**6),
        "lowerAscii": lambda s: celtypes.StringType(str(s).lower()),
        "upperAscii": lambda s: celtypes.StringType(str(s).upper()),
    }


@lru_cache(maxsize=512)
def _program(expression: str):
    if celpy is None:
        raise SelectorError(NEEDS_EXTRA)
    env = celpy.Environment()
    try:
        ast = env.compile(expression)
    except Exception as e:  # celpy raises its own CELParseError
        raise SelectorError(f"CEL does not compile: {expression!r}: {str(e).splitlines()[0]}") from None
    return env.program(ast, functions=_functions())


def device_activation(driver: str, attributes: dict[str, dict[str, Any]],
                      capacity: dict[str, dict[str, int]]) -> dict[str, Any]:
    """The ``device`` variable: attributes and capacity grouped by domain (already encoded)."""
    if celpy is None:  # the base install: say which extra reads DRA selectors, not AttributeError
        raise SelectorError(NEEDS_EXTRA)
    return {"device": celpy.json_to_cel({"driver": driver, "attributes": attributes, "capacity": capacity})}


def matches(expression: str, activation: dict[str, Any]) -> bool:
    prog = _program(expression)
    try:
        result = prog.evaluate(activation)
    except Exception as e:
        raise SelectorError(f"{expression!r}: {e}") from None
    if isinstance(result, celpy.CELEvalError):
        raise SelectorError(f"{expression!r}: {result.args[0] if result.args else result}")
    if not isinstance(result, bool | celtypes.BoolType):
        raise SelectorError(f"{expression!r}: result is not a bool")
    return bool(result)
