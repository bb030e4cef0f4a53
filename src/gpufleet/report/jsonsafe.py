"""JSON that strict parsers accept: no bare ``NaN`` or ``Infinity`` ever reaches a file.

Python's ``json`` writes ``NaN``/``Infinity`` by default, which RFC 8259 parsers (jq, JavaScript's
``JSON.parse``, Go, serde) reject. Every JSON file and ``--output json`` line goes through
``dumps``: a non-finite float becomes ``null`` (a statistic that has no value), numpy scalars
become Python numbers, and ``allow_nan=False`` makes any miss an error instead of a bad file.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np


def finite(obj: Any) -> Any:
    """``obj`` with every non-finite float replaced by None (recursively), numpy scalars unwrapped."""
    if isinstance(obj, dict):
        return {str(k): finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [finite(v) for v in obj.tolist()]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def dumps(obj: Any, **kwargs: Any) -> str:
    return json.dumps(finite(obj), allow_nan=False, **kwargs)


def write_json(path: Path, obj: Any, **kwargs: Any) -> None:
    path.write_text(dumps(obj, **kwargs))
