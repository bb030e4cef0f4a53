"""What the scheduler writes, as API bodies (pure): a Binding, an Event, a pod condition patch.

Shapes from core/v1: ``POST /api/v1/namespaces/{ns}/pods/{name}/binding`` takes a Binding whose
``target`` is the Node; an ``events.k8s.io/v1`` Event names the pod in ``regarding``; the
``PodScheduled=False, reason=Unschedulable`` condition goes through ``pods/status`` so autoscalers
and Kueue see it (kube-scheduler does the same).
"""

from __future__ import annotations

from datetime import UTC, datetime


def _micro(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def binding(namespace: str, pod: str, node: str) -> dict:
    return {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}


def event(namespace: str, pod: str, uid: str, *, reason: str, note: str, type_: str, action: str,
          now: float, controller: str, instance: str) -> dict:
    """An events.k8s.io/v1 Event about one pod; the name is unique per pod and time."""
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": f"{pod}.{int(now * 1e6):x}", "namespace": namespace},
            "eventTime": _micro(now), "reportingController": controller, "reportingInstance": instance,
            "action": action, "reason": reason, "note": note[:1024], "type": type_,
            "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": pod, "uid": uid}}


def unschedulable_condition(message: str, now: float) -> dict:
    """A strategic-merge patch for ``pods/status`` (conditions merge by ``type``)."""
    return {"status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                       "message": message[:1024], "lastTransitionTime": _rfc3339(now),
                                       "lastProbeTime": None}]}}
