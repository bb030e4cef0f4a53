"""Load what ``kubectl get nodes,pods,podgroups,... -A -o json`` prints, sorted by kind.

Accepted: one ``List`` (kubectl's client-side wrapper, or a typed ``NodeList``/``PodList``),
one bare object, a folder of such files (one per kind, or several Lists), all JSON. Objects of
kinds we read are kept by kind; every other kind is counted in ``skipped`` (reported, never
silently dropped). A file that is empty, binary, not JSON or not Kubernetes objects gets one
``InputError`` line naming the file and what was expected.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpufleet.adapters.kubernetes import shapes
from gpufleet.model.errors import InputError

#: Kinds the analysis reads. PodGroup covers scheduler-plugins (scheduling.x-k8s.io) and
#: Volcano (scheduling.volcano.sh); the API group tells them apart.
KNOWN_KINDS = ("Node", "Pod", "PodGroup", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice",
               "DeviceClass", "PriorityClass", "Workload", "ClusterQueue", "ResourceFlavor", "LocalQueue",
               "Cohort")
MAX_BYTES = 512 * 2**20


@dataclass
class Snapshot:
    """Objects by kind (plain dicts, as the API returns them) and what was skipped."""

    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    skipped: Counter[str] = field(default_factory=Counter)
    sources: list[str] = field(default_factory=list)
    #: (kind, API group, namespace, name) -> (the object, where it was read): one object per name.
    _seen: dict[tuple[str, str, str, str], tuple[dict[str, Any], str]] = field(
        default_factory=dict, repr=False)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return self.objects.get(kind, [])

    def add(self, obj: dict[str, Any], source: str) -> None:
        kind = obj.get("kind")
        if not isinstance(kind, str) or not kind:
            raise InputError(source, "kind", "every object needs a kind (is this kubectl -o json output?)")
        if kind in KNOWN_KINDS:
            shapes.check(obj, kind)
            if self._duplicate(obj, kind, source):
                return
            self.objects.setdefault(kind, []).append(obj)
        else:
            api = obj.get("apiVersion", "")
            self.skipped[f"{kind} ({api})" if api else kind] += 1


    def _duplicate(self, obj: dict[str, Any], kind: str, source: str) -> bool:
        """True for a second copy of an object already read (two files of one folder listing the
        same Pod): kept once. Two different objects under one name are refused: the API server
        holds one object per kind, namespace and name, so one of them is stale or edited, and
        counting both would count its GPUs twice."""
        meta = obj.get("metadata") or {}
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            return False  # the readers refuse a nameless object with its own message
        group = str(obj.get("apiVersion", "")).rpartition("/")[0]
        key = (kind, group, str(meta.get("namespace") or ""), name)
        seen = self._seen.get(key)
        if seen is None:
            self._seen[key] = (obj, source)
            return False
        if seen[0] == obj:
            return True
        where = f"{key[2]}/{name}" if key[2] else name
        also = f" (also in {seen[1]})" if seen[1] != source else " (twice in this file)"
        raise InputError(source, f"{kind} {where}", f"two different objects with one name{also}; "
                         "a snapshot holds each object once")


def _items(doc: Any, source: str) -> list[Any]:
    if not isinstance(doc, dict):
        raise InputError(source, "", "expected a JSON object (kubectl get ... -o json), got "
                         f"{type(doc).__name__}")
    kind = doc.get("kind")
    if "items" in doc and (kind == "List" or (isinstance(kind, str) and kind.endswith("List"))):
        items = doc["items"]
        if not isinstance(items, list):
            raise InputError(source, "items", "expected a list of objects")
        item_kind = kind[:-4] if kind not in ("List",) else None
        out = []
        for i, it in enumerate(items):
            if not isinstance(it, dict):
                raise InputError(source, f"items[{i}]", "expected an object")
            if item_kind and "kind" not in it:  # typed lists (PodList) may omit item kinds
                it = {**it, "kind": item_kind}
            out.append(it)
        return out
    return [doc]


def load_file(path: Path, snap: Snapshot | None = None) -> Snapshot:
    snap = snap if snap is not None else Snapshot()
    source = str(path)
    try:
        size = path.stat().st_size
    except OSError as e:
        raise InputError(source, "", f"cannot read: {e.strerror or e}") from None
    if size == 0:
        raise InputError(source, "", "empty file; expected kubectl get ... -o json output")
    if size > MAX_BYTES:
        raise InputError(source, "", f"{size} bytes is over the {MAX_BYTES // 2**20} MiB limit")
    raw = path.read_bytes()
    if b"\x00" in raw[:8192]:
        raise InputError(source, "", "binary file; expected kubectl get ... -o json output (text)")
    try:
        doc = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise InputError(source, "", "not UTF-8 text; expected kubectl -o json output") from None
    except json.JSONDecodeError as e:
        raise InputError(source, f"line {e.lineno}", f"not valid JSON ({e.msg}); use kubectl -o json"
                         ) from None
    except RecursionError:
        raise InputError(source, "", "JSON nested too deeply to read (kubectl output is a few levels "
                         "deep; this is not a snapshot)") from None
    try:
        for obj in _items(doc, source):
            snap.add(obj, source)
    except RecursionError:   # a deep object inside a real List (a field check or a comparison)
        raise InputError(source, "", "an object nested too deeply to read; kubectl output is a few "
                         "levels deep") from None
    snap.sources.append(source)
    return snap


def _no_constant(name: str) -> Any:
    raise json.JSONDecodeError(f"{name} is not allowed", name, 0)


def load(path: str | Path) -> Snapshot:
    """A snapshot from one file or every ``*.json`` file in a folder (sorted by name)."""
    p = Path(path)
    if p.is_dir():
        files = sorted(f for f in p.iterdir() if f.suffix == ".json" and f.is_file())
        if not files:
            raise InputError(str(p), "", "folder holds no .json files (kubectl get ... -o json > x.json)")
        snap = Snapshot()
        for f in files:
            load_file(f, snap)
        return snap
    if not p.exists():
        raise InputError(str(p), "", "no such file or folder")
    return load_file(p)
