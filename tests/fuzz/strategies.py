"""Shared fuzzing strategies: nasty values, and mutations of a valid document.

Mutating a valid document reaches deep validators (a field's bound, a cross-reference, the
fleet-size checks) far more often than random documents, which stop at the first missing key.
"""

from __future__ import annotations

import copy
import json
import math
import os
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

#: ``make fuzz`` without atheris sets GPUFLEET_FUZZ_SCALE (e.g. 50) for a long hypothesis run.
SCALE = max(1, int(os.environ.get("GPUFLEET_FUZZ_SCALE", "1")))

#: Every fuzz test: bounded examples, a per-example time bound (a hang fails the test), no example
#: database written into the repository. ``make test`` runs them at scale 1. The bound is far above
#: an example's cost (the first one pays a CLI module's import, about 1 s): on a loaded CI machine
#: a tight one fails healthy code ("Unreliable test timings").
FAST = settings(max_examples=120 * SCALE, deadline=timedelta(seconds=20), database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
SLOW = settings(FAST, max_examples=8 * SCALE, deadline=timedelta(seconds=60))

NASTY_STRINGS = ["nan", "NaN", ".nan", "inf", "-inf", ".inf", "1e400", "-0", "", " ", "0x10", "1_000",
                 "H100", "A100-80GB", "L40S", "gang-easy", "3g.40gb", "\x00", "é", "☃", "a" * 300,
                 "1e8", "-1", "null", "{", "[", "'", "#", "1e30", "99999999999999999999",
                 "9223372036854775808", "4.5", "1e-9"]

nasty_scalars = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(2**70), 2**70),
    st.integers(-3, 70),
    st.sampled_from([0, 1, -1, 10**8, 10**18, 1e8, 1e308, -1e308, 0.5, 1e-300]),
    st.text(max_size=12),
    st.sampled_from(NASTY_STRINGS),
    st.none(),
    st.booleans(),
)
nasty_values = st.one_of(
    nasty_scalars,
    st.lists(nasty_scalars, max_size=3),
    st.dictionaries(st.sampled_from(["a", "id", "nodes", "gpu", "name", "x"]), nasty_scalars, max_size=3),
)


def paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path into ``doc`` (dict keys and list indices), the root excluded."""
    out: list[tuple] = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.append((*prefix, k))
            out += paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.append((*prefix, i))
            out += paths(v, (*prefix, i))
    return out


def _set(doc: Any, path: tuple, value: Any, delete: bool) -> None:
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    if delete and isinstance(parent, dict):
        parent.pop(path[-1], None)
    else:
        parent[path[-1]] = value


@st.composite
def mutated(draw: st.DrawFn, base: dict, max_mutations: int = 3) -> Any:
    """``base`` with 1..max_mutations fields replaced by nasty values, deleted, or an unknown key added."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, max_mutations))):
        where = paths(doc)
        if not where:
            break
        path = draw(st.sampled_from(where))
        action = draw(st.sampled_from(["replace", "replace", "replace", "delete", "add"]))
        try:
            if action == "add":
                target = doc
                for p in path[:-1]:
                    target = target[p]
                if isinstance(target, dict):
                    target[draw(st.sampled_from(["extra", "nodes", "weight", "days"]))] = draw(nasty_values)
            else:
                _set(doc, path, draw(nasty_values), action == "delete")
        except (KeyError, IndexError, TypeError):
            continue
    return doc


def strict_json_loads(text: str) -> Any:
    """Parse as an RFC 8259 parser does: ``NaN``/``Infinity`` are errors."""
    def refuse(name: str) -> None:
        raise AssertionError(f"non-finite number {name} in JSON output")
    return json.loads(text, parse_constant=refuse)


def all_finite(obj: Any) -> bool:
    if isinstance(obj, float):
        return math.isfinite(obj)
    if isinstance(obj, dict):
        return all(all_finite(v) for v in obj.values())
    if isinstance(obj, list | tuple):
        return all(all_finite(v) for v in obj)
    return True
