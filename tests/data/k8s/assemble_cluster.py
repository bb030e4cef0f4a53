"""Rebuild tests/data/k8s/cluster/ from the verbatim real objects and published manifests.

Run from this folder: ``python3 assemble_cluster.py``. What each added field is, and why, is in
PROVENANCE.md; nothing else is changed.
"""

import json
from pathlib import Path

aks = json.loads(Path("nodes-aks.json").read_text())
rke = json.loads(Path("nodes-rke2-gpu.json").read_text())


def write(name, items):
    doc = {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}
    Path(name).write_text(json.dumps(doc, indent=4))


write("cluster/nodes.json", rke["items"] + aks["items"])


def gpu_pod(name, created):
    """NVIDIA/k8s-device-plugin README "gpu-pod" manifest, as the API server returns it."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "creationTimestamp": created},
            "spec": {"restartPolicy": "Never", "schedulerName": "default-scheduler",
                     "containers": [{"name": "cuda-container",
                                     "image": "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0",
                                     "resources": {"limits": {"nvidia.com/gpu": "1"},
                                                   "requests": {"nvidia.com/gpu": "1"}}}],
                     "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                      "effect": "NoSchedule"}]},
            "status": {"phase": "Pending", "qosClass": "BestEffort"}}


running = gpu_pod("gpu-pod", "2025-03-19T22:00:00Z")
running["spec"]["nodeName"] = "nori"
running["status"] = {"phase": "Running", "qosClass": "BestEffort", "startTime": "2025-03-19T22:00:05Z",
                     "conditions": [{"type": "PodScheduled", "status": "True",
                                     "lastTransitionTime": "2025-03-19T22:00:00Z"}]}
pods = [running, gpu_pod("gpu-pod-2", "2025-03-19T23:10:00Z")]
for sfx in ["2xk7d", "5wq9m", "8hj2c", "c4n6t", "k9p3z", "v7r5b"]:
    # scheduler-plugins pkg/coscheduling/README.md: ReplicaSet "nginx" (6 replicas) template.
    pods.append({"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": f"nginx-{sfx}", "namespace": "default",
                              "creationTimestamp": "2025-03-19T23:12:00Z",
                              "labels": {"app": "nginx", "scheduling.x-k8s.io/pod-group": "nginx"},
                              "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                   "name": "nginx", "controller": True,
                                                   "blockOwnerDeletion": True, "uid": ""}]},
                 "spec": {"schedulerName": "default-scheduler",
                          "containers": [{"name": "nginx", "image": "nginx",
                                          "resources": {"limits": {"cpu": "3", "memory": "500Mi"},
                                                        "requests": {"cpu": "3", "memory": "500Mi"}}}]},
                 "status": {"phase": "Pending", "qosClass": "Guaranteed"}})
write("cluster/pods.json", pods)
pg = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
      "metadata": {"name": "nginx", "namespace": "default", "creationTimestamp": "2025-03-19T23:11:00Z"},
      "spec": {"scheduleTimeoutSeconds": 10, "minMember": 3}, "status": {"phase": "Pending"}}
rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
      "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx"}},
      "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "nginx"}}}}
write("cluster/podgroups.json", [pg, rs])
