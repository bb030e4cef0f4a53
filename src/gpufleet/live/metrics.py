"""Prometheus metrics of the live scheduler (``prometheus_client``, optional: without it the
counters are kept in a plain dict and nothing is served)."""

from __future__ import annotations

from collections import Counter as Tally

try:
    from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
except ImportError:  # pragma: no cover
    CollectorRegistry = None

COUNTERS = {
    "bindings": "Pods bound to a node by gpufleet",
    "bind_failures": "Bind calls the API refused",
    "gang_rollbacks": "Gangs whose partial binding was rolled back",
    "watch_restarts": "Watches restarted after the resource version expired (410 Gone)",
    "cycles": "Scheduling cycles run as leader",
    "api_errors": "Cycles abandoned on an API or connection error (refused, DNS, timeout, TLS), retried",
}


class Metrics:
    def __init__(self) -> None:
        self.values: Tally[str] = Tally()
        self.pending = 0
        self.registry = CollectorRegistry() if CollectorRegistry is not None else None
        if self.registry is not None:
            self._c = {k: Counter(f"gpufleet_{k}", h, registry=self.registry) for k, h in COUNTERS.items()}
            reg = self.registry
            self._pending = Gauge("gpufleet_pending_pods", "Pending pods of this scheduler", registry=reg)
            self._cycle = Histogram("gpufleet_cycle_seconds", "Wall time of one cycle", registry=reg)

    def inc(self, name: str, n: int = 1) -> None:
        self.values[name] += n
        if self.registry is not None:
            self._c[name].inc(n)

    def set_pending(self, n: int) -> None:
        self.pending = n
        if self.registry is not None:
            self._pending.set(n)

    def observe_cycle(self, seconds: float) -> None:
        if self.registry is not None:
            self._cycle.observe(seconds)

    def exposition(self) -> bytes:
        """The text format Prometheus scrapes."""
        if self.registry is None:
            lines = [f"gpufleet_{k}_total {v}" for k, v in sorted(self.values.items())]
            return "\n".join([*lines, f"gpufleet_pending_pods {self.pending}", ""]).encode()
        return generate_latest(self.registry)
