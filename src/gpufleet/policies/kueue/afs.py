"""Kueue's admission fair sharing: a ClusterQueue's workloads ordered by their LocalQueue's usage.

From Kueue's concept doc "Admission Fair Sharing" and KEP-4136 (kubernetes-sigs/kueue). A
ClusterQueue with ``admissionScope.admissionMode: UsageBasedAdmissionFairSharing`` sorts its
pending workloads by (LocalQueue usage ÷ LocalQueue weight, then priority, then age): the
LocalQueue that consumed least goes first, whatever the priorities.

Usage. Kueue samples each LocalQueue's admitted resources every ``usageSamplingInterval`` Δ and
keeps a geometric average, U ← (1 − A)·U + A·u with A = 1 − 0.5^(Δ/H), H the half-life. In the
continuous limit U(t) = λ ∫ u(s)·e^{−λ(t−s)} ds with λ = ln 2 / H — the decayed GPU-seconds
D(t) = ∫ u(s)·2^{−(t−s)/H} ds that the simulator's usage tracker keeps, times λ. So a LocalQueue's
usage, in GPUs, is

    U = λ · D_finished + Σ_running g · (1 − 2^{−(now − start)/H})

(the second term is exactly λ times a running job's decayed GPU-seconds so far).

Entry penalty (Kueue v0.13+): every admitted workload immediately adds A·g to its LocalQueue's
usage — what it would have contributed after one sampling interval — so a LocalQueue that
submits many workloads at once does not get them all admitted before its usage catches up.

A job's LocalQueue is its ``kueue.x-k8s.io/queue-name`` label (the ClusterQueue's name when it
has none: one LocalQueue per ClusterQueue). Its finished usage is the simulator's
``lq:<name>`` entry in the cycle's decayed usage (sim/usage.py); the half-life is the tenancy's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from gpufleet.engine.types import RunningJob
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Tenancy

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
USAGE_PREFIX = "lq:"


def local_queue(job: Job) -> str:
    return next((v for k, v in job.labels if k == QUEUE_LABEL), job.tenant)


class AfsUsage:
    """Each LocalQueue's usage in GPUs at ``now`` (module docstring), with entry penalties."""

    def __init__(self, tenancy: Tenancy, usage: Mapping[str, float], running: Sequence[RunningJob],
                 now: float) -> None:
        h = tenancy.half_life_s
        lam = math.log(2) / h if h > 0 else 0.0
        self.value: dict[str, float] = {k[len(USAGE_PREFIX):]: lam * v for k, v in usage.items()
                                        if k.startswith(USAGE_PREFIX)}
        for rj in running:
            lq = local_queue(rj.job)
            held = max(0.0, now - rj.start_time)
            part = 1.0 - 2.0 ** (-held / h) if h > 0 else 1.0
            self.value[lq] = self.value.get(lq, 0.0) + rj.job.total_gpus * part
        self.penalty = 1.0 - 0.5 ** (tenancy.afs_sampling_s / h) if h > 0 else 1.0
        self.weights = dict(tenancy.local_queue_weights)

    def score(self, lq: str) -> float:
        w = self.weights.get(lq, 1.0)
        u = self.value.get(lq, 0.0)
        return (math.inf if u > 0 else 0.0) if w == 0 else u / w

    def key(self, job: Job) -> tuple:
        return (self.score(local_queue(job)), -job.priority, job.submit_time, job.id)

    def admitted(self, job: Job) -> None:
        lq = local_queue(job)
        self.value[lq] = self.value.get(lq, 0.0) + self.penalty * job.total_gpus
