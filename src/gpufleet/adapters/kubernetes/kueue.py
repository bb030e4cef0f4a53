"""Kueue Workloads (``kueue.x-k8s.io`` v1beta1/v1beta2): the quota step of a pending pod's chain.

A Workload is owned by the object Kueue manages (a Job, JobSet, RayCluster, or the pods of a
plain pod group); a pod belongs to it when one of the pod's owners, the pod itself, or its
JobSet / Kubeflow job label names that owner. The quota line reads the Workload's conditions:
``QuotaReserved`` / ``Admitted`` true → admitted in its ClusterQueue; ``QuotaReserved`` false →
Kueue's reason and message (e.g. insufficient quota in a flavor); no condition → not attempted
yet (a StrictFIFO queue tries only its head).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.adapters.kubernetes.pods import KubePod

OWNER_LABELS = {"jobset.sigs.k8s.io/jobset-name": "JobSet", "training.kubeflow.org/job-name": None}


@dataclass(frozen=True, slots=True)
class KueueWorkload:
    namespace: str
    name: str
    owners: tuple[tuple[str, str], ...]
    queue: str
    conditions: dict[str, tuple[str, str, str]]   # type -> (status, reason, message)
    cluster_queue: str

    def quota_line(self) -> str:
        qr = self.conditions.get("QuotaReserved")
        adm = self.conditions.get("Admitted")
        head = f"Kueue Workload {self.namespace}/{self.name} (LocalQueue {self.queue or '-'})"
        if adm and adm[0] == "True":
            return f"quota: {head} admitted in ClusterQueue {self.cluster_queue or '-'}"
        if qr and qr[0] == "True":
            return f"quota: {head} has quota reserved; admission checks pending"
        if qr:
            return f"quota: {head} has no quota: {qr[1]}: {qr[2]}"
        for t in ("Evicted", "Preempted"):
            if self.conditions.get(t, ("",))[0] == "True":
                c = self.conditions[t]
                return f"quota: {head} {t.lower()}: {c[1]}: {c[2]}"
        return f"quota: {head} not attempted yet (no conditions; a StrictFIFO queue tries only its head)"


def is_kueue(obj: dict) -> bool:
    return str(obj.get("apiVersion", "")).startswith("kueue.x-k8s.io/")


def read_workload(obj: dict) -> KueueWorkload:
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    conds = {str(c.get("type")): (str(c.get("status", "")), str(c.get("reason", "")),
                                  str(c.get("message", "")))
             for c in status.get("conditions") or [] if isinstance(c, dict)}
    return KueueWorkload(
        namespace=str(meta.get("namespace") or "default"), name=str(meta.get("name", "")),
        owners=tuple((str(o.get("kind", "")), str(o.get("name", "")))
                     for o in meta.get("ownerReferences") or [] if isinstance(o, dict)),
        queue=str(spec.get("queueName") or ""), conditions=conds,
        cluster_queue=str((status.get("admission") or {}).get("clusterQueue") or ""))


def workload_of(pod: KubePod, workloads: list[KueueWorkload]) -> KueueWorkload | None:
    labels = dict(pod.labels)
    mine = set(pod.owners) | {("Pod", pod.name)}
    for label, kind in OWNER_LABELS.items():
        if labels.get(label):
            mine.add((kind or "*", labels[label]))
    for w in workloads:
        if w.namespace != pod.namespace:
            continue
        for kind, name in w.owners:
            if (kind, name) in mine or ("*", name) in mine:
                return w
    return None
