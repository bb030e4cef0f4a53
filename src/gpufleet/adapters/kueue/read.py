"""Read Kueue manifests: YAML files (many documents each), directories of them, and the
``kind: List`` that ``kubectl get … -o yaml`` prints. Every object keeps its file and index,
so a problem can be named in one line (file, object, field)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpufleet.model.errors import InputError

GROUP = "kueue.x-k8s.io"
CONFIG_GROUP = "config.kueue.x-k8s.io"
VERSIONS = ("v1beta1", "v1beta2")
KINDS = ("ResourceFlavor", "ClusterQueue", "Cohort", "LocalQueue", "WorkloadPriorityClass")


@dataclass(frozen=True, slots=True)
class Manifest:
    source: str
    kind: str
    version: str
    name: str
    namespace: str | None
    body: dict[str, Any]

    @property
    def where(self) -> str:
        return f"{self.kind}/{self.name}"

    def error(self, field: str, expected: str) -> InputError:
        return InputError(self.source, f"{self.where}: {field}", expected)


@dataclass(frozen=True, slots=True)
class SnapshotObject(Manifest):
    """A Kueue object of a cluster snapshot (``k8s analyze``), named in errors as the snapshot's
    other objects are: ``ClusterQueue cq.spec.resourceGroups[0]``."""

    def error(self, field: str, expected: str) -> InputError:
        return InputError(self.source, f"{self.kind} {self.name}.{field}", expected)


def _unknown_version(m: Manifest) -> InputError:
    return m.error("apiVersion", f"{GROUP}/{' or '.join(VERSIONS)}, not {m.body.get('apiVersion')!r}")


def snapshot_objects(objects: list[dict[str, Any]], source: str = "snapshot") -> list[SnapshotObject]:
    """The objects of Kueue's group among ``objects`` (one kind of a snapshot, any Kueue kind,
    Workloads too); an object of Kueue's group in a version we do not read is an InputError."""
    out = []
    for o in objects:
        group, _, version = str(o.get("apiVersion", "")).rpartition("/")
        if group != GROUP:
            continue
        meta = o.get("metadata") if isinstance(o.get("metadata"), dict) else {}
        ns = meta.get("namespace")
        m = SnapshotObject(source, str(o.get("kind")), version, str(meta.get("name", "?")),
                           ns if isinstance(ns, str) else None, o)
        if version not in VERSIONS:
            raise _unknown_version(m)
        out.append(m)
    return out


def _files(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out += sorted(q for q in p.rglob("*") if q.suffix in (".yaml", ".yml", ".json") and q.is_file())
        elif p.is_file():
            out.append(p)
        else:
            raise InputError(str(p), "", "no such file or directory")
    if not out:
        raise InputError(", ".join(map(str, paths)), "", "no .yaml, .yml or .json manifests found")
    return out


def read_manifests(paths: list[Path]) -> tuple[list[Manifest], list[str]]:
    """(Kueue objects of the five kinds, notes about every other object skipped)."""
    objects: list[Manifest] = []
    notes: list[str] = []
    for f in _files(paths):
        raw = f.read_bytes()
        if b"\x00" in raw:
            raise InputError(str(f), "", "a YAML or JSON manifest, not a binary file")
        try:
            docs = list(yaml.safe_load_all(raw.decode("utf-8")))
        except (yaml.YAMLError, UnicodeDecodeError) as e:
            line = getattr(getattr(e, "problem_mark", None), "line", None)
            where = f"line {line + 1}" if line is not None else ""
            raise InputError(str(f), where, f"valid YAML ({str(e).splitlines()[0]})") from None
        items: list[tuple[str, Any]] = []
        for i, doc in enumerate(docs):
            if doc is None:
                continue
            if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
                items += [(f"items[{j}]", it) for j, it in enumerate(doc["items"])]
            else:
                items.append((f"document {i + 1}", doc))
        for label, doc in items:
            m = _manifest(str(f), label, doc, notes)
            if m is not None:
                objects.append(m)
    return objects, notes


def _manifest(source: str, label: str, doc: Any, notes: list[str]) -> Manifest | None:
    if not isinstance(doc, dict):
        raise InputError(source, label, "a Kubernetes object (a mapping with apiVersion and kind)")
    api, kind = doc.get("apiVersion"), doc.get("kind")
    if not isinstance(api, str) or not isinstance(kind, str):
        raise InputError(source, label, "apiVersion and kind, both strings")
    group, _, version = api.rpartition("/")
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if group == CONFIG_GROUP and kind == "Configuration":
        return Manifest(source, kind, version, str(name or "kueue-config"), None, doc)
    if group != GROUP or kind not in KINDS:
        notes.append(f"{source}: {kind}/{name or '?'} ({api}): not a quota object, skipped")
        return None
    if version not in VERSIONS:
        raise _unknown_version(Manifest(source, kind, version, str(name or "?"), None, doc))
    if not isinstance(name, str) or not name:
        raise InputError(source, f"{kind} ({label}): metadata.name", "a non-empty string")
    ns = meta.get("namespace") if isinstance(meta, dict) else None
    return Manifest(source, kind, version, name, ns if isinstance(ns, str) else None, doc)
