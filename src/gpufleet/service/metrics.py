"""``/metrics``: Prometheus exposition named after Kueue's and the Slurm exporters' metrics, so
their dashboards and alerts carry over (service-anchors.md, "Metric conventions").

Gauges are read from the loop's last snapshot at scrape time (a custom collector: no gauge can
go stale between ticks); counters and histograms are fed by the loop's events. Labels are
queue, cohort, flavor, resource, state and a bounded reason (live/views.py ``REASONS``); never a
job id.

| gpufleet | after |
|---|---|
| gpufleet_pending_jobs{queue,reason} | kueue_pending_workloads{cluster_queue,status} |
| gpufleet_admitted_jobs_total{queue} | kueue_admitted_workloads_total |
| gpufleet_queue_nominal_quota{cohort,queue,flavor,resource} | kueue_cluster_queue_nominal_quota |
| gpufleet_queue_borrowing_limit / _lending_limit / _resource_usage | kueue_cluster_queue_* |
| gpufleet_queue_weighted_share{queue} | kueue_cluster_queue_weighted_share |
| gpufleet_gpus{state} | slurm_gpus_{alloc,idle,...} |
| gpufleet_preempted_jobs_total{queue,reason} | kueue_preempted_workloads_total |
| gpufleet_admission_wait_time_seconds{queue} | kueue_admission_wait_time_seconds |
| gpufleet_cycle_duration_seconds | kueue_admission_attempt_duration_seconds, slurm_scheduler_* |
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from gpufleet.live import views
from gpufleet.live.source import LiveEvent

if TYPE_CHECKING:
    from gpufleet.service.runtime import Service

#: Source seconds: a minute to a week.
WAIT_BUCKETS = (1, 10, 60, 300, 900, 1800, 3600, 7200, 14400, 43200, 86400, 259200, 604800)
CYCLE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
PREEMPT_REASONS = ("preemption", "node_failure")
# The *_created series (a gauge per labelled counter) double the exposition for no dashboard's use.
disable_created_metrics()


class _Live(Collector):
    def __init__(self, svc: Service) -> None:
        self.svc = svc

    def collect(self) -> Iterator[GaugeMetricFamily]:
        snap = self.svc.live()
        if snap is None:  # a follower: the leader exports the live world
            return
        s = views.fleet_summary(snap)
        g = GaugeMetricFamily("gpufleet_gpus", "GPUs by state", labels=["state"])
        for state in ("allocated", "free", "stranded", "drained", "unhealthy"):
            g.add_metric([state], getattr(s.gpus, state))
        yield g
        qs = views.queues(snap)
        p = GaugeMetricFamily("gpufleet_pending_jobs", "Pending jobs by queue and reason",
                              labels=["queue", "reason"])
        for q in qs:
            for r, n in q.pending_by_reason.items():
                p.add_metric([q.name, r], n)
        yield p
        labels = ["cohort", "queue", "flavor", "resource"]
        fams = {k: GaugeMetricFamily(f"gpufleet_queue_{k}", h, labels=labels)
                for k, h in (("nominal_quota", "Nominal quota (GPUs)"),
                             ("borrowing_limit", "Borrowing limit (GPUs; absent: none)"),
                             ("lending_limit", "Lending limit (GPUs; absent: none)"),
                             ("resource_usage", "GPUs in use by the queue's running jobs"))}
        share = GaugeMetricFamily("gpufleet_queue_weighted_share", "Running GPUs / nominal / weight",
                                  labels=["queue"])
        for q in qs:
            for f in q.flavors:
                lab = [q.cohort or "", q.name, f.flavor, "gpu"]
                fams["nominal_quota"].add_metric(lab, f.nominal)
                if f.borrowing_limit is not None:
                    fams["borrowing_limit"].add_metric(lab, f.borrowing_limit)
                if f.lending_limit is not None:
                    fams["lending_limit"].add_metric(lab, f.lending_limit)
                fams["resource_usage"].add_metric(lab, f.usage)
            if q.weighted_share is not None:
                share.add_metric([q.name], q.weighted_share)
        yield from fams.values()
        yield share
        up = GaugeMetricFamily("gpufleet_source_up", "1 when the source of truth answers", labels=["source"])
        up.add_metric([snap.source], 1.0 if snap.health.ok else 0.0)
        yield up


class ServiceMetrics:
    def __init__(self, svc: Service) -> None:
        self.svc = svc
        self.registry = CollectorRegistry()
        reg = self.registry
        self.admitted = Counter("gpufleet_admitted_jobs", "Jobs started", ["queue"], registry=reg)
        self.preempted = Counter("gpufleet_preempted_jobs", "Jobs evicted", ["queue", "reason"], registry=reg)
        self.submitted = Counter("gpufleet_submitted_jobs", "Jobs submitted", ["queue"], registry=reg)
        self.wait = Histogram("gpufleet_admission_wait_time_seconds",
                              "Source seconds from submission to start", ["queue"],
                              buckets=WAIT_BUCKETS, registry=reg)
        self.cycle = Histogram("gpufleet_cycle_duration_seconds", "Wall time of one engine cycle",
                               buckets=CYCLE_BUCKETS, registry=reg)
        reg.register(_Live(svc))
        self._submits: dict[str, tuple[str, float]] = {}

    def observe_events(self, events: list[LiveEvent]) -> None:
        running = self.svc.source.running()
        pending = self.svc.source.pending()
        for ev in events:
            if ev.job is None:
                continue
            if ev.kind == "start" and ev.job in running:
                job = running[ev.job].job
                self.admitted.labels(job.tenant).inc()
                self.wait.labels(job.tenant).observe(max(0.0, ev.t - job.submit_time))
            elif ev.kind in ("preempt", "requeue"):
                job = pending.get(ev.job)
                if job is not None:
                    reason = "preemption" if ev.kind == "preempt" else "node_failure"
                    self.preempted.labels(job.tenant, reason).inc()

    def observe_cycle(self, seconds: float) -> None:
        self.cycle.observe(seconds)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
