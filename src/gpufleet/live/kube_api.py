"""The few API calls the scheduler makes, behind one small protocol, and their implementation on
the official ``kubernetes`` Python client (optional extra ``k8s-scheduler``).

Objects travel as plain dicts with the wire (camelCase) names — what ``kubectl -o json`` prints
and what the adapters read — so the reader code is the same for a snapshot file and a live
cluster. Lists use ``_preload_content=False`` and parse the JSON body; watches read each event's
``raw_object``. A watch whose resource version is too old (HTTP 410 Gone, as an ``ERROR`` event
or an ``ApiException``) raises ``Gone``: the caller re-lists.

Binding: the server answers a Status, not a Binding, and the generated client then fails to
deserialize after the bind succeeded (kubernetes-client/python#547); ``_preload_content=False``
avoids that, any 2xx is success.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, Protocol


class Gone(Exception):
    """The watch's resourceVersion expired (410): list again, then watch from the new version."""


class ApiError(Exception):
    """A call the API refused; ``status`` is the HTTP code (409: already bound, 404: gone)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class KubeApi(Protocol):
    def list(self, kind: str) -> tuple[list[dict], str]: ...
    def watch(self, kind: str, resource_version: str, timeout_s: int) -> Iterator[dict]: ...
    def bind(self, namespace: str, pod: str, body: dict) -> None: ...
    def delete_pod(self, namespace: str, pod: str) -> None: ...
    def create_event(self, namespace: str, body: dict) -> None: ...
    def patch_pod_status(self, namespace: str, pod: str, body: dict) -> None: ...
    def patch_podgroup(self, api_version: str, namespace: str, name: str, body: dict) -> None: ...
    def patch_podgroup_status(self, api_version: str, namespace: str, name: str, body: dict) -> None: ...
    def acquire_lease(self, namespace: str, name: str, identity: str, duration_s: int,
                      now: float) -> bool: ...


#: "VolcanoPodGroup" is Volcano's ``scheduling.volcano.sh`` PodGroup (its objects say ``kind:
#: PodGroup``); "PodGroup" is scheduler-plugins' ``scheduling.x-k8s.io`` one. Two stores, because the
#: two can share a namespace/name.
#: "KubePodGroup" / "KubeWorkload" are the upstream ``scheduling.k8s.io`` PodGroup (v1alpha2, 1.36+)
#: and Workload (v1alpha1, 1.35; its ``podGroups`` carry the gang policy), alpha APIs a cluster
#: serves only with the ``GenericWorkload`` gate (a 404 lists nothing).
KINDS = ("Node", "Pod", "PodGroup", "VolcanoPodGroup", "KubePodGroup", "KubeWorkload", "ResourceClaim",
         "ResourceClaimTemplate", "ResourceSlice", "DeviceClass")
UPSTREAM_PODGROUPS = ("scheduling.k8s.io", "v1alpha2", "podgroups")
UPSTREAM_WORKLOADS = ("scheduling.k8s.io", "v1alpha1", "workloads")


def _wire_kind(kind: str) -> str:
    wire = {"VolcanoPodGroup": "PodGroup", "KubePodGroup": "PodGroup", "KubeWorkload": "Workload"}
    return wire.get(kind, kind)


def store_kind(obj: dict) -> str:
    """The store a wire object lives in: the three PodGroups (Volcano, scheduler-plugins,
    upstream) apart, and the upstream Workload apart from Kueue's."""
    kind, api = str(obj.get("kind")), str(obj.get("apiVersion", ""))
    if kind == "PodGroup" and api.startswith("scheduling.volcano.sh"):
        return "VolcanoPodGroup"
    if kind in ("PodGroup", "Workload") and api.startswith("scheduling.k8s.io/"):
        return "Kube" + kind
    return kind


class OfficialKubeApi:  # pragma: no cover - needs a cluster; the protocol is tested through a double
    """``KubeApi`` on the official client. ``kubeconfig`` None: in-cluster config first, then ~/.kube."""

    def __init__(self, kubeconfig: str | None = None) -> None:
        from kubernetes import client, config
        try:
            if kubeconfig:
                config.load_kube_config(kubeconfig)
            else:
                config.load_incluster_config()
        except config.ConfigException:
            config.load_kube_config()
        self.client = client
        self.core = client.CoreV1Api()
        self.resource = client.ResourceV1Api()
        self.custom = client.CustomObjectsApi()
        self.events = client.EventsV1Api()
        self.coordination = client.CoordinationV1Api()

    def _list_call(self, kind: str) -> tuple[Any, tuple, dict]:
        pg = ("scheduling.x-k8s.io", "v1alpha1", "podgroups")
        vpg = ("scheduling.volcano.sh", "v1beta1", "podgroups")
        return {
            "Node": (self.core.list_node, (), {}),
            "Pod": (self.core.list_pod_for_all_namespaces, (), {}),
            "PodGroup": (self.custom.list_cluster_custom_object, pg, {}),
            "VolcanoPodGroup": (self.custom.list_cluster_custom_object, vpg, {}),
            "KubePodGroup": (self.custom.list_cluster_custom_object, UPSTREAM_PODGROUPS, {}),
            "KubeWorkload": (self.custom.list_cluster_custom_object, UPSTREAM_WORKLOADS, {}),
            "ResourceClaim": (self.resource.list_resource_claim_for_all_namespaces, (), {}),
            "ResourceClaimTemplate": (self.resource.list_resource_claim_template_for_all_namespaces, (), {}),
            "ResourceSlice": (self.resource.list_resource_slice, (), {}),
            "DeviceClass": (self.resource.list_device_class, (), {}),
        }[kind]

    def list(self, kind: str) -> tuple[list[dict], str]:
        from kubernetes.client.exceptions import ApiException
        fn, args, kw = self._list_call(kind)
        try:
            resp = fn(*args, _preload_content=False, **kw)
        except ApiException as e:
            if e.status == 404:   # the CRD or API group is not installed: nothing of that kind
                return [], ""
            raise ApiError(e.status, str(e.reason)) from None
        doc = json.loads(resp.data)
        items = [{**it, "kind": it.get("kind") or _wire_kind(kind)} for it in doc.get("items") or []]
        return items, str((doc.get("metadata") or {}).get("resourceVersion", ""))

    def watch(self, kind: str, resource_version: str, timeout_s: int) -> Iterator[dict]:
        from kubernetes import watch
        from kubernetes.client.exceptions import ApiException
        fn, args, kw = self._list_call(kind)
        w = watch.Watch()
        try:
            for ev in w.stream(fn, *args, resource_version=resource_version, timeout_seconds=timeout_s,
                               allow_watch_bookmarks=True, **kw):
                raw = ev.get("raw_object") or {}
                if ev.get("type") == "ERROR" and raw.get("code") == 410:
                    raise Gone(raw.get("message", "410 Gone"))
                yield {"type": ev.get("type"), "object": {**raw, "kind": raw.get("kind") or _wire_kind(kind)}}
        except ApiException as e:
            if e.status == 410:
                raise Gone(str(e.reason)) from None
            raise ApiError(e.status, str(e.reason)) from None

    def _call(self, fn, *args, **kw) -> None:
        from kubernetes.client.exceptions import ApiException
        try:
            fn(*args, _preload_content=False, **kw)
        except ApiException as e:
            raise ApiError(e.status, str(e.reason)) from None

    def bind(self, namespace: str, pod: str, body: dict) -> None:
        self._call(self.core.create_namespaced_pod_binding, pod, namespace, body)

    def delete_pod(self, namespace: str, pod: str) -> None:
        self._call(self.core.delete_namespaced_pod, pod, namespace)

    def create_event(self, namespace: str, body: dict) -> None:
        self._call(self.events.create_namespaced_event, namespace, body)

    def patch_pod_status(self, namespace: str, pod: str, body: dict) -> None:
        self._call(self.core.patch_namespaced_pod_status, pod, namespace, body)

    def patch_podgroup(self, api_version: str, namespace: str, name: str, body: dict) -> None:
        """A merge patch (the client picks merge-patch for a dict body); Volcano's CRD has no status
        subresource, so its status is patched on the object itself."""
        group, version = api_version.split("/", 1)
        self._call(self.custom.patch_namespaced_custom_object, group, version, namespace, "podgroups", name,
                   body)

    def patch_podgroup_status(self, api_version: str, namespace: str, name: str, body: dict) -> None:
        """A merge patch on ``podgroups/status`` (the upstream PodGroup has a status subresource)."""
        group, version = api_version.split("/", 1)
        self._call(self.custom.patch_namespaced_custom_object_status, group, version, namespace, "podgroups",
                   name, body)

    def acquire_lease(self, namespace: str, name: str, identity: str, duration_s: int, now: float) -> bool:
        """Take or renew the Lease when it is free, ours, or expired; a conflict (409) means another
        replica won the race this round."""
        from kubernetes.client.exceptions import ApiException
        stamp = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        spec = {"holderIdentity": identity, "leaseDurationSeconds": duration_s, "renewTime": stamp}
        try:
            lease = self.coordination.read_namespaced_lease(name, namespace)
        except ApiException as e:
            if e.status != 404:
                raise ApiError(e.status, str(e.reason)) from None
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": name, "namespace": namespace},
                    "spec": {**spec, "acquireTime": stamp}}
            try:
                self.coordination.create_namespaced_lease(namespace, body)
                return True
            except ApiException:
                return False
        holder = lease.spec.holder_identity
        renew = lease.spec.renew_time.timestamp() if lease.spec.renew_time else 0.0
        if holder not in (None, identity) and now - renew < (lease.spec.lease_duration_seconds or duration_s):
            return False
        body = {"metadata": {"name": name, "namespace": namespace,
                             "resourceVersion": lease.metadata.resource_version}, "spec": spec}
        try:
            self.coordination.replace_namespaced_lease(name, namespace, body)
            return True
        except ApiException:
            return False
