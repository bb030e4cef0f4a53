"""Decayed historical usage per tenant, kept by the driver for fair-share ordering.

Usage decays exponentially with half-life H: a GPU-second used Δt ago counts 2^(−Δt/H). The
tracker stores, per tenant, the decayed total as of the last update and rolls it forward on demand:
U(t) = U(t0) × 2^(−(t − t0)/H) + new usage. Work is credited when a job finishes or is evicted
(at its end time), which is what a driver can observe.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpufleet.model.job import Job


@dataclass
class UsageTracker:
    half_life_s: float = 7 * 86400.0
    _value: dict[str, float] = field(default_factory=dict)
    _at: dict[str, float] = field(default_factory=dict)
    total: dict[str, float] = field(default_factory=dict)

    def _decay(self, tenant: str, now: float) -> float:
        v = self._value.get(tenant, 0.0)
        dt = now - self._at.get(tenant, now)
        return v * 2.0 ** (-dt / self.half_life_s) if self.half_life_s > 0 and dt > 0 else v

    def add(self, tenant: str, gpu_seconds: float, now: float) -> None:
        self._value[tenant] = self._decay(tenant, now) + gpu_seconds
        self._at[tenant] = now
        self.total[tenant] = self.total.get(tenant, 0.0) + gpu_seconds

    def add_job(self, job: Job, gpu_seconds: float, now: float) -> None:
        """Credit a run to its tenant and, when it names one, to its Kueue LocalQueue (key
        ``lq:<name>``, read by the kueue profile's admission fair sharing)."""
        self.add(job.tenant, gpu_seconds, now)
        lq = next((v for k, v in job.labels if k == "kueue.x-k8s.io/queue-name"), None)
        if lq is not None:
            key = "lq:" + lq
            self._value[key] = self._decay(key, now) + gpu_seconds
            self._at[key] = now

    def snapshot(self, now: float) -> dict[str, float]:
        return {t: self._decay(t, now) for t in sorted(self._value)}
