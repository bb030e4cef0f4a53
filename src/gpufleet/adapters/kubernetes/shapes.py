"""The JSON types of the fields the readers use, checked before reading.

A snapshot edited by hand or produced by another tool may carry a list where a map belongs, or a
number for a name; each such field gets one ``InputError`` naming the object and the path, not a
traceback deep in the engine. ``*`` walks the items of a list (or the values of a map).
Absent fields and ``null`` are fine: the readers default them.
"""

from __future__ import annotations

from gpufleet.model.errors import InputError

MAP, LIST, STR, INT, BOOL = dict, list, str, int, bool
_META = {("metadata",): MAP, ("metadata", "name"): STR, ("metadata", "namespace"): STR,
         ("metadata", "labels"): MAP, ("metadata", "labels", "*"): STR, ("metadata", "annotations"): MAP,
         ("metadata", "annotations", "*"): STR, ("metadata", "creationTimestamp"): STR,
         ("spec",): MAP, ("status",): MAP}
_RESOURCES = {"resources": MAP, ("resources", "limits"): MAP, ("resources", "requests"): MAP,
              ("resources", "claims"): LIST}

SHAPES: dict[str, dict[tuple, type]] = {
    "Node": {**_META, ("spec", "taints"): LIST, ("spec", "taints", "*"): MAP, ("spec", "unschedulable"): BOOL,
             ("status", "capacity"): MAP, ("status", "allocatable"): MAP, ("status", "conditions"): LIST,
             ("status", "conditions", "*"): MAP, ("status", "conditions", "*", "type"): STR,
             ("status", "conditions", "*", "status"): STR},
    "Pod": {**_META, ("spec", "containers"): LIST, ("spec", "containers", "*"): MAP,
            ("spec", "initContainers"): LIST, ("spec", "initContainers", "*"): MAP,
            **{("spec", c, "*", *((k,) if isinstance(k, str) else k)): t
               for c in ("containers", "initContainers") for k, t in _RESOURCES.items()},
            ("spec", "nodeSelector"): MAP, ("spec", "nodeSelector", "*"): STR, ("spec", "tolerations"): LIST,
            ("spec", "tolerations", "*"): MAP, ("spec", "affinity"): MAP, ("spec", "resourceClaims"): LIST,
            ("spec", "resourceClaims", "*"): MAP, ("spec", "nodeName"): STR, ("spec", "schedulerName"): STR,
            ("spec", "priority"): INT, ("status", "phase"): STR, ("status", "conditions"): LIST,
            ("status", "conditions", "*"): MAP, ("status", "startTime"): STR,
            ("status", "resourceClaimStatuses"): LIST, ("status", "resourceClaimStatuses", "*"): MAP},
    "PodGroup": {**_META},
}


def _walk(value, path: tuple, want: type, where: str, done: str) -> None:
    if not path:
        if value is None:
            return
        ok = isinstance(value, want) and not (want is INT and isinstance(value, bool))
        if not ok:
            name = {MAP: "a map", LIST: "a list"}.get(want, want.__name__)
            raise InputError("snapshot", f"{where}.{done}", f"expected {name}, got {type(value).__name__}")
        return
    head, rest = path[0], path[1:]
    if value is None:
        return
    if head == "*":
        items = (value.items() if isinstance(value, dict)
                 else enumerate(value) if isinstance(value, list) else ())
        for k, v in items:
            _walk(v, rest, want, where, f"{done}[{k}]")
        return
    if isinstance(value, dict) and head in value:
        _walk(value[head], rest, want, where, f"{done}.{head}" if done else head)


def check(obj: dict, kind: str) -> None:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    where = f"{kind} {meta.get('namespace') + '/' if isinstance(meta.get('namespace'), str) else ''}" \
            f"{meta.get('name', '?')}"
    for path, want in sorted(SHAPES.get(kind, {}).items(), key=lambda kv: len(kv[0])):
        _walk(obj, path, want, where, "")
