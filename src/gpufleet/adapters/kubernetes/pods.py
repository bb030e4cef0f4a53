"""Pods → requests; pods + PodGroups + workload labels → gangs.

A pod's request is what kube-scheduler counts: per resource, the sum over containers, raised
to the largest init container (``max(sum(containers), max(init))``), requests or else limits
(extended resources such as ``nvidia.com/gpu`` are set in limits and default requests to them).

Gangs, first match wins (the pods of one gang share the key):

| source | pod field | gang |
|---|---|---|
| PodGroup ``scheduling.k8s.io/v1alpha2`` 1.36+ | ``spec.schedulingGroup.podGroupName`` | the PodGroup (1) |
| Workload ``scheduling.k8s.io/v1alpha1`` (1.35) | ``spec.workloadRef`` (2) | the Workload's pod group (1) |
| scheduler-plugins PodGroup | label ``scheduling.x-k8s.io/pod-group`` | that PodGroup (``minMember``) |
| Volcano PodGroup | annotation ``scheduling.k8s.io/group-name`` | that PodGroup (``minMember``) |
| Kueue plain pod group | label ``kueue.x-k8s.io/pod-group-name`` | the group |
| JobSet | label ``jobset.sigs.k8s.io/jobset-name`` | the JobSet |
| Kubeflow PyTorchJob / MPIJob | label ``training.kubeflow.org/job-name`` | the job |
| LeaderWorkerSet | labels ``leaderworkerset.sigs.k8s.io/name`` + ``group-index`` | one replica group |

Anything else is a gang of one. (1) ``gang.minCount`` of ``schedulingPolicy`` (PodGroup) or of
``podGroups[].policy`` (v1alpha1 Workload). (2) ``{name, podGroup, podGroupReplicaKey}``: one gang
per replica key. The upstream kinds are alpha (feature gate ``GenericWorkload``;
gang enforcement ``GangScheduling``): https://kubernetes.io/docs/concepts/workloads/podgroup-api/,
…/workload-api/, …/pods/scheduling-group/, …/pods/workload-reference/ (KEP-4671). A ``basic``
policy schedules each pod on its own; a pod naming a PodGroup or Workload that does not exist
stays pending (the scheduler needs the policy first).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from gpufleet.adapters.kubernetes.affinity import Term, read_terms
from gpufleet.adapters.kubernetes.gpu_labels import GPU_RESOURCE, MIG_RESOURCE, catalog_model
from gpufleet.adapters.kubernetes.quantity import (
    QuantityError,
    cpu_cores,
    device_count,
    memory_gb,
)
from gpufleet.model.errors import InputError

GANG_LABELS = (
    ("scheduling.x-k8s.io/pod-group", "PodGroup"),
    ("pod-group.scheduling.sigs.k8s.io", "PodGroup"),
    ("kueue.x-k8s.io/pod-group-name", "Kueue pod group"),
    ("jobset.sigs.k8s.io/jobset-name", "JobSet"),
    ("training.kubeflow.org/job-name", "Kubeflow job"),
)
VOLCANO_ANNOTATIONS = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")
LWS_NAME, LWS_GROUP = "leaderworkerset.sigs.k8s.io/name", "leaderworkerset.sigs.k8s.io/group-index"
PRODUCT_LABEL = "nvidia.com/gpu.product"


def timestamp(text: str | None) -> float | None:
    """RFC 3339 (``2025-03-19T20:40:47Z``) as epoch seconds; None when absent or unreadable."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, key: str, value: str, effect: str) -> bool:
        """The core/v1 rule: effects match (empty tolerates all), then an empty key with Exists
        tolerates every taint, Exists matches the key, Equal matches key and value."""
        if self.effect and self.effect != effect:
            return False
        if not self.key:
            return self.operator == "Exists"
        if self.key != key:
            return False
        return self.operator == "Exists" or self.value == value


@dataclass(frozen=True, slots=True)
class KubePod:
    namespace: str
    name: str
    phase: str
    node_name: str
    scheduler: str
    priority: int
    created: float | None
    started: float | None
    gpus: int
    mig: dict[str, int]
    cpus: float
    memory_gb: float
    gpu_models: tuple[str, ...]
    node_selector: dict[str, str] = field(hash=False)
    tolerations: tuple[Toleration, ...] = ()
    #: (kind, name) per spec.resourceClaims entry: ("claim", name) or ("template", name); a
    #: template whose claim was generated names that claim (status.resourceClaimStatuses).
    claims: tuple[tuple[str, str], ...] = ()
    gang: tuple[str, str] = ("", "")       # (kind, key)
    message: str = ""                      # PodScheduled=False message, when present
    owners: tuple[tuple[str, str], ...] = ()   # (kind, name) of metadata.ownerReferences
    labels: tuple[tuple[str, str], ...] = ()
    #: required node affinity terms (affinity.py); empty: none
    affinity: tuple[Term, ...] = ()
    #: ``spec.schedulingGates`` names (e.g. Kueue's ``kueue.x-k8s.io/admission``): while any is
    #: set, no scheduler considers the pod (Pod Scheduling Readiness, GA in 1.30)
    gates: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def pending(self) -> bool:
        return self.phase == "Pending" and not self.node_name

    @property
    def holds_capacity(self) -> bool:
        """Bound and not finished: its requests count against its node."""
        return bool(self.node_name) and self.phase not in ("Succeeded", "Failed")


def container_resources(container: dict) -> dict[str, str]:
    res = container.get("resources") or {}
    out = dict(res.get("limits") or {})
    out.update(res.get("requests") or {})
    return out


def pod_total(containers: list[dict], inits: list[dict], name: str, parse) -> float:
    main = sum(parse(container_resources(c).get(name, 0)) for c in containers)
    init = max((parse(container_resources(c).get(name, 0)) for c in inits), default=0.0)
    return max(main, init)


def _models(spec: dict) -> tuple[str, ...]:
    sel = (spec.get("nodeSelector") or {}).get(PRODUCT_LABEL)
    if sel:
        return (catalog_model(sel),)
    terms = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    values: list[str] = []
    for term in terms:
        for expr in term.get("matchExpressions") or []:
            if expr.get("key") == PRODUCT_LABEL and expr.get("operator") == "In":
                values += [catalog_model(v) for v in expr.get("values") or []]
    return tuple(sorted(set(values)))


K8S_PODGROUP, K8S_WORKLOAD = "Kubernetes PodGroup", "Kubernetes Workload"
UPSTREAM_API = "scheduling.k8s.io/"


def _gang(meta: dict, ns: str, spec: dict | None = None) -> tuple[str, str]:
    labels, ann = meta.get("labels") or {}, meta.get("annotations") or {}
    spec = spec or {}
    group = spec.get("schedulingGroup") or {}
    if isinstance(group, dict) and group.get("podGroupName"):
        return K8S_PODGROUP, f"{ns}/{group['podGroupName']}"
    ref = spec.get("workloadRef") or {}
    if isinstance(ref, dict) and ref.get("name"):
        key = f"{ns}/{ref['name']}/{ref.get('podGroup') or ''}"
        return K8S_WORKLOAD, key + (f"/{ref['podGroupReplicaKey']}" if ref.get("podGroupReplicaKey") else "")
    for label, kind in GANG_LABELS:
        if labels.get(label):
            return kind, f"{ns}/{labels[label]}"
    for a in VOLCANO_ANNOTATIONS:
        if ann.get(a):
            return "Volcano PodGroup", f"{ns}/{ann[a]}"
    if labels.get(LWS_NAME):
        return "LeaderWorkerSet", f"{ns}/{labels[LWS_NAME]}/{labels.get(LWS_GROUP, '0')}"
    return "", ""


def _claim_ref(entry: dict, status: dict) -> tuple[str, str]:
    if entry.get("resourceClaimName"):
        return "claim", str(entry["resourceClaimName"])
    generated = next((s.get("resourceClaimName") for s in status.get("resourceClaimStatuses") or []
                      if s.get("name") == entry.get("name") and s.get("resourceClaimName")), None)
    if generated:
        return "claim", str(generated)
    return "template", str(entry.get("resourceClaimTemplateName") or entry.get("name"))


def read_pod(obj: dict, source: str = "snapshot") -> KubePod:
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    name, ns = meta.get("name"), meta.get("namespace") or "default"
    if not isinstance(name, str) or not name:
        raise InputError(source, "Pod.metadata.name", "every Pod needs a name")
    containers, inits = spec.get("containers") or [], spec.get("initContainers") or []
    try:
        cpus = pod_total(containers, inits, "cpu", cpu_cores)
        mem = pod_total(containers, inits, "memory", memory_gb)
        gpus = int(pod_total(containers, inits, GPU_RESOURCE, device_count))
        names = {n for c in containers + inits for n in container_resources(c)}
        mig = {m.group(1): int(pod_total(containers, inits, n, device_count))
               for n in sorted(names) if (m := MIG_RESOURCE.match(n))}
    except QuantityError as e:
        raise InputError(source, f"Pod {ns}/{name}.spec.containers[].resources", str(e)) from None
    tolerations = tuple(Toleration(str(t.get("key", "") or ""), str(t.get("operator", "Equal") or "Equal"),
                                   str(t.get("value", "") or ""), str(t.get("effect", "") or ""))
                        for t in spec.get("tolerations") or [] if isinstance(t, dict))
    cond = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"
                 and c.get("status") == "False"), {})
    priority = spec.get("priority")
    return KubePod(
        namespace=ns, name=name, phase=str(status.get("phase") or "Pending"),
        node_name=str(spec.get("nodeName") or ""),
        scheduler=str(spec.get("schedulerName") or "default-scheduler"),
        priority=int(priority) if isinstance(priority, int) else 0,
        created=timestamp(meta.get("creationTimestamp")), started=timestamp(status.get("startTime")),
        gpus=gpus, mig=mig, cpus=cpus, memory_gb=mem, gpu_models=_models(spec),
        node_selector={str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()},
        tolerations=tolerations,
        claims=tuple(_claim_ref(c, status) for c in spec.get("resourceClaims") or [] if isinstance(c, dict)),
        gang=_gang(meta, ns, spec), message=str(cond.get("message") or ""),
        owners=tuple((str(o.get("kind", "")), str(o.get("name", "")))
                     for o in meta.get("ownerReferences") or [] if isinstance(o, dict)),
        labels=tuple(sorted((str(k), str(v)) for k, v in (meta.get("labels") or {}).items())),
        affinity=read_terms(spec),
        gates=tuple(str(g.get("name", "")) for g in spec.get("schedulingGates") or [] if isinstance(g, dict)),
    )


@dataclass(frozen=True, slots=True)
class PodGroupInfo:
    kind: str          # "PodGroup" (scheduler-plugins), "Volcano PodGroup", K8S_PODGROUP, K8S_WORKLOAD
    key: str
    min_member: int
    phase: str
    policy: str = "gang"   # upstream kinds: "gang" or "basic" (each pod on its own)


def _policy(policy: dict) -> tuple[str, int]:
    """(policy name, minCount) of an upstream ``basic``/``gang`` scheduling policy."""
    gang = (policy or {}).get("gang") if isinstance(policy, dict) else None
    if isinstance(gang, dict):
        try:
            return "gang", max(1, int(gang.get("minCount") or 1))
        except (TypeError, ValueError):
            return "gang", 1
    return "basic", 1


def read_upstream(obj: dict) -> list[PodGroupInfo]:
    """Pod groups of an upstream ``scheduling.k8s.io`` object: a v1alpha2 PodGroup is one; a
    v1alpha1 Workload has one per ``spec.podGroups`` entry (key namespace/workload/group). A
    v1alpha2 Workload only holds templates (its PodGroups carry the policy): none."""
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    ns = meta.get("namespace") or "default"
    if obj.get("kind") == "PodGroup":
        policy, n = _policy(spec.get("schedulingPolicy") or {})
        cond = next((c for c in status.get("conditions") or [] if isinstance(c, dict)
                     and c.get("type") == "PodGroupScheduled"), {})
        return [PodGroupInfo(K8S_PODGROUP, f"{ns}/{meta.get('name')}", n, str(cond.get("reason") or ""),
                             policy)]
    out = []
    for g in spec.get("podGroups") or []:
        if isinstance(g, dict) and g.get("name"):
            policy, n = _policy(g.get("policy") or {})
            out.append(PodGroupInfo(K8S_WORKLOAD, f"{ns}/{meta.get('name')}/{g['name']}", n, "", policy))
    return out


def read_podgroup(obj: dict) -> PodGroupInfo:
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    api = str(obj.get("apiVersion", ""))
    if api.startswith(UPSTREAM_API):
        return read_upstream(obj)[0]
    kind = "Volcano PodGroup" if api.startswith("scheduling.volcano.sh") else "PodGroup"
    try:
        min_member = int(spec.get("minMember") or 1)
    except (TypeError, ValueError):
        min_member = 1
    return PodGroupInfo(kind, f"{meta.get('namespace') or 'default'}/{meta.get('name')}", max(1, min_member),
                        str(status.get("phase") or ""))
