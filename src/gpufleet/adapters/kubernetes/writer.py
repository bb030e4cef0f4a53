"""What the scheduler writes, as API bodies (pure): a Binding, an Event, a pod condition patch.

Shapes from core/v1: ``POST /api/v1/namespaces/{ns}/pods/{name}/binding`` takes a Binding whose
``target`` is the Node; an ``events.k8s.io/v1`` Event names the pod in ``regarding``; the
``PodScheduled=False, reason=Unschedulable`` condition goes through ``pods/status`` so autoscalers
and Kueue see it (kube-scheduler does the same).

PodGroups, from their published CRDs:

- Volcano ``scheduling.volcano.sh/v1beta1`` (config/crd/volcano/bases/scheduling.volcano.sh_podgroups.yaml):
  ``status.conditions[]`` of ``{type, status, reason, message, lastTransitionTime, transitionID}``;
  Volcano itself writes ``type: Unschedulable, status: "True", reason: NotEnoughResources`` for a
  gang it cannot place (volcano.sh docs, "PodGroup Condition Reason"). The CRD has no status
  subresource, and a CRD list has no merge key, so the patch is a JSON merge patch of the whole
  list: the other conditions are carried over and ours replaces the old ``Unschedulable`` one.
- scheduler-plugins ``scheduling.x-k8s.io/v1alpha1`` (manifests/coscheduling/crd.yaml): its status
  has only ``phase, occupiedBy, running, succeeded, failed, scheduleStartTime`` — no conditions;
  the structural schema would prune a ``conditions`` field silently. The reason goes into an Event
  whose ``regarding`` is the PodGroup (``kubectl describe podgroup`` shows it) instead.
- upstream ``scheduling.k8s.io/v1alpha2`` PodGroup (kubernetes.io docs, "PodGroup API" and its
  lifecycle page; KEP-4671): ``status.conditions[]`` are ``metav1.Condition``s; the scheduler's is
  ``PodGroupScheduled``, ``False`` with reason ``Unschedulable`` when the group cannot be placed.
  Written through ``podgroups/status`` as a JSON merge patch of the whole list (the client's
  patch for a dict body), the other conditions carried over.
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


VOLCANO_UNSCHEDULABLE = "Unschedulable"


def volcano_podgroup_condition(existing: list, message: str, now: float, transition_id: str) -> dict:
    """A merge patch for a Volcano PodGroup: ``existing`` conditions kept, except an older
    ``Unschedulable`` one, which ours replaces (same shape and reason as Volcano's own)."""
    kept = [c for c in existing if isinstance(c, dict) and c.get("type") != VOLCANO_UNSCHEDULABLE]
    ours = {"type": VOLCANO_UNSCHEDULABLE, "status": "True", "reason": "NotEnoughResources",
            "message": message[:1024], "lastTransitionTime": _rfc3339(now), "transitionID": transition_id}
    return {"status": {"conditions": [*kept, ours]}}


def volcano_podgroup_scheduled(existing: list, now: float, transition_id: str) -> dict:
    """Once the gang is bound: our ``Unschedulable`` condition goes, and ``Scheduled`` is set the
    way Volcano writes it (its documented PodGroup example: ``reason: tasks in gang are ready to
    be scheduled``), so no stale reason stays on the PodGroup."""
    kept = [c for c in existing if isinstance(c, dict) and c.get("type") not in (VOLCANO_UNSCHEDULABLE,
                                                                                   "Scheduled")]
    ours = {"type": "Scheduled", "status": "True", "reason": "tasks in gang are ready to be scheduled",
            "lastTransitionTime": _rfc3339(now), "transitionID": transition_id}
    return {"status": {"conditions": [*kept, ours]}}


def upstream_podgroup_condition(existing: list, message: str, now: float) -> dict:
    """A merge patch for ``podgroups/status`` of an upstream PodGroup: ``existing`` conditions
    kept, except an older ``PodGroupScheduled``, which ours (``False``/``Unschedulable``) replaces."""
    kept = [c for c in existing if isinstance(c, dict) and c.get("type") != "PodGroupScheduled"]
    ours = {"type": "PodGroupScheduled", "status": "False", "reason": "Unschedulable",
            "message": message[:1024], "lastTransitionTime": _rfc3339(now)}
    return {"status": {"conditions": [*kept, ours]}}


def podgroup_event(namespace: str, name: str, uid: str, api_version: str, *, note: str, now: float,
                   controller: str, instance: str) -> dict:
    """A ``FailedScheduling`` Warning about a PodGroup (scheduler-plugins' CRD has no conditions)."""
    body = event(namespace, name, uid, reason="FailedScheduling", note=note, type_="Warning",
                 action="Scheduling", now=now, controller=controller, instance=instance)
    body["regarding"] = {"apiVersion": api_version, "kind": "PodGroup", "namespace": namespace,
                         "name": name, "uid": uid}
    return body
