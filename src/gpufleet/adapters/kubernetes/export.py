"""Our jobs as DRA ResourceClaimTemplates (``resource.k8s.io/v1``), for ``k8s export-claims``.

One template per pod set that asks for GPUs, named ``<job>-<pod set>`` (DNS-1123: lower case,
``[a-z0-9-]``, at most 63 characters). Whole GPUs: one request ``gpus`` of class
``gpu.nvidia.com`` with ``count`` = GPUs per pod; allowed models become a CEL selector on the
driver's ``productName`` attribute (any of them, case-insensitive substring, e.g. ``h100``), and
a multi-GPU request gets ``matchAttribute: gpu.nvidia.com/productName`` so one pod never mixes
models. A MIG pod asks class ``mig.nvidia.com`` with a ``profile`` selector. Soft shares
(milli-GPU, MPS, time-slicing) have no claim form without driver config and are skipped with a
note.
"""

from __future__ import annotations

import re

from gpufleet.model.job import Job, PodSet

MODEL_KEYS = {"H100-80GB": "h100", "H200-141GB": "h200", "A100-80GB": "a100-sxm4-80gb|a100 80gb|a100-80gb",
              "A100-40GB": "a100-sxm4-40gb|a100-pcie-40gb|a100-40gb", "B200": "b200", "GB200": "gb200",
              "L40S": "l40s"}


def dns_name(text: str) -> str:
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return (name[:63].rstrip("-")) or "claim"


def _model_selector(models: tuple[str, ...]) -> str:
    pattern = "|".join(MODEL_KEYS.get(m, re.escape(m.lower())) for m in models)
    return f"device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('{pattern}')"


def template_for(job: Job, ps: PodSet, namespace: str) -> dict | None:
    req = ps.request
    if req.mig_profile is not None:
        request = {"name": "mig", "exactly": {"deviceClassName": "mig.nvidia.com", "selectors": [
            {"cel": {"expression": f"device.attributes['gpu.nvidia.com'].profile == '{req.mig_profile}'"}}]}}
        devices: dict = {"requests": [request]}
    elif req.gpus > 0:
        exactly: dict = {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount",
                         "count": req.gpus}
        if req.gpu_models:
            exactly["selectors"] = [{"cel": {"expression": _model_selector(req.gpu_models)}}]
        devices = {"requests": [{"name": "gpus", "exactly": exactly}]}
        if req.gpus > 1:
            devices["constraints"] = [{"requests": ["gpus"], "matchAttribute": "gpu.nvidia.com/productName"}]
    else:
        return None
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": dns_name(f"{job.id}-{ps.name}"), "namespace": namespace,
                         "labels": {"gpufleet.io/job": dns_name(str(job.id)),
                                    "gpufleet.io/pod-set": dns_name(ps.name)}},
            "spec": {"spec": {"devices": devices}}}


def export_claims(jobs: list[Job], namespace: str = "default") -> tuple[dict, list[str]]:
    """A kubectl-style ``List`` of templates, and notes on pod sets that have no claim form."""
    items, notes, names = [], [], set()
    for job in jobs:
        for ps in job.pod_sets:
            t = template_for(job, ps, namespace)
            if t is None:
                if ps.request.gpu_milli:
                    notes.append(f"{job.id}/{ps.name}: soft GPU share has no claim form (skipped)")
                continue
            name = t["metadata"]["name"]
            if name in names:
                notes.append(f"{job.id}/{ps.name}: template name {name} already used (skipped)")
                continue
            names.add(name)
            items.append(t)
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}, notes
