"""ApiServerDouble: a TEST DOUBLE of the Kubernetes API for the live scheduler, not a fake
cluster. Its objects are the real recorded objects of tests/data/k8s (see PROVENANCE.md), and
its watch events have the wire shape the API server streams (``{"type": ADDED|MODIFIED|DELETED,
"object": {...}}``; an expired resource version is the 410 Gone the official client turns into
an exception). What it models, and nothing more:

- a global resourceVersion that every write bumps; ``list`` returns it, ``watch`` yields the
  events after the version asked for and then ends (a watch with ``timeoutSeconds``);
- ``bookmark()``: a BOOKMARK event per kind (the documented shape: only a resourceVersion);
- ``compact()``: older versions expire, so a watch from before raises ``Gone`` (etcd compaction;
  ``restart()`` does the same and forgets the Lease, as an API server restart would);
- binding: sets ``spec.nodeName`` and ``PodScheduled=True``; 409 if already bound, 404 if gone;
  ``fail_bind`` makes chosen pods' binds fail with a code;
- events and status patches are recorded; a PodGroup patch is applied as a JSON merge patch
  (RFC 7386: objects merge, lists are replaced whole) and recorded; the Lease is a holder and a
  renew time.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator

from gpufleet.live.kube_api import KINDS, ApiError, Gone, store_kind


def _key(obj: dict) -> str:
    m = obj.get("metadata") or {}
    return f"{m.get('namespace') or ''}/{m.get('name')}"


def _kind(obj: dict) -> str:
    """The store a wire object lives in (kube_api.store_kind: the PodGroup kinds apart)."""
    return store_kind(obj)


class ApiServerDouble:
    def __init__(self, objects: list[dict]) -> None:
        self.version = 100
        self.oldest = 0
        self.objects: dict[str, dict[str, dict]] = {k: {} for k in KINDS}
        self.log: list[tuple[int, str, str, dict]] = []    # (version, kind, type, object)
        self.events: list[dict] = []
        self.status_patches: list[tuple[str, dict]] = []
        self.binds: list[tuple[str, str]] = []
        self.deleted: list[str] = []
        self.fail_bind: dict[str, int] = {}
        self.lease: dict | None = None
        self.calls = 0
        self.podgroup_patches: list[tuple[str, dict]] = []
        for o in objects:
            if _kind(o) in self.objects:
                self._write(_kind(o), "ADDED", copy.deepcopy(o))

    def _write(self, kind: str, type_: str, obj: dict) -> None:
        self.version += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.version)
        if type_ == "DELETED":
            self.objects[kind].pop(_key(obj), None)
        else:
            self.objects[kind][_key(obj)] = obj
        self.log.append((self.version, kind, type_, copy.deepcopy(obj)))

    # what a test does to the cluster
    def add(self, obj: dict) -> None:
        self._write(_kind(obj), "ADDED", copy.deepcopy(obj))

    def compact(self) -> None:
        self.oldest = self.version

    def bookmark(self) -> None:
        """A BOOKMARK event per kind at the current version, in the shape of the API's watch
        bookmarks (KEP-956; kubernetes.io api-concepts "Watch bookmarks"): ``{"type": "BOOKMARK",
        "object": {"kind", "apiVersion", "metadata": {"resourceVersion"}}}`` — only the version,
        no object. A watcher that saw it can resume from there after older versions expire."""
        self.version += 1
        for kind in KINDS:
            wire = {"VolcanoPodGroup": "PodGroup", "KubePodGroup": "PodGroup", "KubeWorkload": "Workload"}
            self.log.append((self.version, kind, "BOOKMARK",
                             {"kind": wire.get(kind, kind), "apiVersion": "v1",
                              "metadata": {"resourceVersion": str(self.version)}}))

    def restart(self) -> None:
        self.compact()
        self.lease = None

    # KubeApi
    def list(self, kind: str) -> tuple[list[dict], str]:
        self.calls += 1
        return [copy.deepcopy(o) for _, o in sorted(self.objects[kind].items())], str(self.version)

    def watch(self, kind: str, resource_version: str, timeout_s: int) -> Iterator[dict]:
        self.calls += 1
        since = int(resource_version or 0)
        if since < self.oldest:
            raise Gone(f"too old resource version: {since} ({self.oldest})")
        for v, k, t, o in list(self.log):
            if v > since and k == kind:
                yield {"type": t, "object": copy.deepcopy(o)}

    def bind(self, namespace: str, pod: str, body: dict) -> None:
        key = f"{namespace}/{pod}"
        if key in self.fail_bind:
            raise ApiError(self.fail_bind[key], "injected bind failure")
        obj = self.objects["Pod"].get(key)
        if obj is None:
            raise ApiError(404, f"pods {pod!r} not found")
        if (obj.get("spec") or {}).get("nodeName"):
            raise ApiError(409, f"pod {pod} is already assigned to node {obj['spec']['nodeName']}")
        obj = copy.deepcopy(obj)
        obj["spec"]["nodeName"] = body["target"]["name"]
        obj.setdefault("status", {})["conditions"] = [{"type": "PodScheduled", "status": "True"}]
        self._write("Pod", "MODIFIED", obj)
        self.binds.append((key, body["target"]["name"]))

    def delete_pod(self, namespace: str, pod: str) -> None:
        key = f"{namespace}/{pod}"
        obj = self.objects["Pod"].get(key)
        if obj is None:
            raise ApiError(404, "not found")
        self._write("Pod", "DELETED", copy.deepcopy(obj))
        self.deleted.append(key)

    def create_event(self, namespace: str, body: dict) -> None:
        self.events.append(body)

    def patch_pod_status(self, namespace: str, pod: str, body: dict) -> None:
        key = f"{namespace}/{pod}"
        if key not in self.objects["Pod"]:
            raise ApiError(404, "not found")
        self.status_patches.append((key, body))

    def patch_podgroup(self, api_version: str, namespace: str, name: str, body: dict) -> None:
        key = f"{namespace}/{name}"
        kind = _kind({"kind": "PodGroup", "apiVersion": api_version})
        obj = self.objects[kind].get(key)
        if obj is None:
            raise ApiError(404, "not found")
        self._write(kind, "MODIFIED", _merge(copy.deepcopy(obj), body))
        self.podgroup_patches.append((key, body))

    def patch_podgroup_status(self, api_version: str, namespace: str, name: str, body: dict) -> None:
        """``podgroups/status``: only ``status`` of the body is applied, as the subresource does."""
        self.patch_podgroup(api_version, namespace, name, {"status": body.get("status") or {}})

    def acquire_lease(self, namespace: str, name: str, identity: str, duration_s: int, now: float) -> bool:
        if self.lease and self.lease["holder"] != identity and now - self.lease["renew"] < duration_s:
            return False
        self.lease = {"holder": identity, "renew": now}
        return True


def _merge(target: dict, patch: dict) -> dict:
    """RFC 7386 JSON merge patch: null deletes, objects merge, anything else (lists) replaces."""
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        elif isinstance(v, dict) and isinstance(target.get(k), dict):
            _merge(target[k], v)
        else:
            target[k] = copy.deepcopy(v)
    return target
