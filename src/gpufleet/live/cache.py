"""The assume/confirm cache: a binding counts as done from the moment we send it until the API
shows the pod bound (confirmed) or the assumption expires (forgotten).

Why: the next cycle must not hand the same GPUs out again while the bind is in flight or the
watch has not delivered the pod's update yet (kube-scheduler's "assumed pods"). An assumption
that the API never confirms within ``ttl_s`` is dropped, so a lost bind frees its capacity.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class AssumeCache:
    ttl_s: float = 30.0
    #: pod key -> (node, assumed at)
    assumed: dict[str, tuple[str, float]] = field(default_factory=dict)

    def assume(self, pod: str, node: str, now: float) -> None:
        self.assumed[pod] = (node, now)

    def forget(self, pod: str) -> None:
        self.assumed.pop(pod, None)

    def reconcile(self, bound: dict[str, str], present: set[str], now: float) -> tuple[list[str], list[str]]:
        """Confirm pods the API shows bound (``bound``: pod key → node), drop pods that are gone
        or expired. Returns (confirmed, dropped)."""
        confirmed, dropped = [], []
        for pod, (_node, t) in list(self.assumed.items()):
            if bound.get(pod):
                confirmed.append(pod)
                del self.assumed[pod]
            elif pod not in present or now - t > self.ttl_s:
                dropped.append(pod)
                del self.assumed[pod]
        return confirmed, dropped

    def node_of(self, pod: str) -> str | None:
        got = self.assumed.get(pod)
        return got[0] if got else None
