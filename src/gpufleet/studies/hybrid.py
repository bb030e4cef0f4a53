"""The hybrid: a Slurm partition for training gangs and a Kubernetes pool for services on one
fleet, compared on the same workload as a static split, a dynamic split (nodes lent between the
two on demand, each move paying a drain), and all-Kubernetes.

A small virtual-time driver around the one engine: each side has its own queue and profile
(Slurm side ``gang-easy``: reservation + EASY backfill; Kubernetes side ``gang-bestfit``, a gang
scheduler such as gpufleet or Kueue — plain kube-scheduler's per-pod placement is the
``deadlock`` scenario), and each cycle calls ``run_cycle`` on a ``NodeTable`` in which only the
side's own nodes are schedulable and every running pod holds its GPUs.

Dynamic split: every ``rebalance_s`` the target number of Slurm nodes is
``round(N × D_slurm / (D_slurm + D_k8s))`` (D = GPUs running + GPUs pending on that side),
kept within ``[min_nodes, N − min_nodes]``; nodes move only when the target differs from the
split (counting nodes already on their way) by ``min_move`` or more. A node moving over first
drains: it takes no new work, its running jobs finish (nothing is killed), then the hand-over
takes ``drain_s`` (reboot into the other stack, kubelet or slurmd join) before the other side
may use it. The GPU-hours a
move costs are its idle GPU-seconds from the drain's start to the hand-over's end (∫ (gpus −
busy) dt): the capacity lost to the move.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field, replace

import numpy as np

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleInput, PendingJob, RunningJob
from gpufleet.model.fleet import Fleet, NodeGroup, NodeHealth, build_fleet
from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.job import Job, JobKind, PodRequest, PodSet
from gpufleet.policies.registry import profile as named_profile

SLURM, K8S = "slurm", "k8s"
TRAINING, SERVICES = "training", "services"
ARMS = ("static", "dynamic", "all-k8s")
PROFILE = {SLURM: "gang-easy", K8S: "gang-bestfit"}


@dataclass(frozen=True)
class HybridSpec:
    nodes: int = 32
    gpus_per_node: int = 8
    gpu: str = "H100-80GB"
    days: float = 3.0
    training_load: float = 0.45      # offered GPU-load of training gangs, fraction of the fleet
    service_load: float = 0.30       # mean offered GPU-load of services
    diurnal: float = 0.8             # service rate = mean × (1 + diurnal × sin(2πt / day))
    slurm_share: float = 0.6         # static split: fraction of nodes in the Slurm partition
    drain_s: float = 900.0
    rebalance_s: float = 1800.0
    min_nodes: int = 1
    #: Dead band: nodes move only when the target differs from the split by at least this many
    #: (a smaller band moves nodes back and forth on every wobble of demand, paying a drain each).
    min_move: int = 2
    seed: int = 0


def workload(spec: HybridSpec) -> list[Job]:
    """Training gangs (8–64 GPUs, whole nodes, median 4 h) arriving steadily, and 1-GPU services
    (median 1 h) whose arrival rate follows the day. Seeded: same spec, same jobs."""
    rng = np.random.default_rng(spec.seed)
    horizon = spec.days * 86400.0
    fleet_gpus = spec.nodes * spec.gpus_per_node
    sizes, w = np.array([8, 16, 32, 64]), np.array([0.4, 0.3, 0.2, 0.1])
    keep = sizes <= fleet_gpus
    sizes, w = sizes[keep], w[keep] / w[keep].sum()
    t_med, s_med = 4 * 3600.0, 3600.0
    mean_t = float((sizes * w).sum()) * t_med * math.exp(1.0 ** 2 / 2)
    mean_s = s_med * math.exp(0.8 ** 2 / 2)
    jobs: list[Job] = []
    rate_t = spec.training_load * fleet_gpus / mean_t
    t = 0.0
    while True:
        t += rng.exponential(1.0 / rate_t)
        if t >= horizon:
            break
        g = int(rng.choice(sizes, p=w))
        run = float(np.clip(t_med * math.exp(rng.standard_normal()), 600, 2 * 86400))
        jobs.append(Job(JobId(f"t{len(jobs):05d}"), TenantId("training"),
                        (PodSet("worker", g // spec.gpus_per_node, PodRequest(spec.gpus_per_node)),),
                        round(t, 3), run, kind=JobKind.TRAINING))
    peak = spec.service_load * fleet_gpus / mean_s * (1 + spec.diurnal)
    t, n = 0.0, 0
    while True:   # thinning: a Poisson process at the peak rate, kept with probability λ(t)/peak
        t += rng.exponential(1.0 / peak)
        if t >= horizon:
            break
        lam = spec.service_load * fleet_gpus / mean_s * (1 + spec.diurnal * math.sin(2 * math.pi * t / 86400))
        if rng.uniform() * peak > lam:
            continue
        run = float(np.clip(s_med * math.exp(0.8 * rng.standard_normal()), 60, 86400))
        jobs.append(Job(JobId(f"s{n:05d}"), TenantId("services"), (PodSet("pod", 1, PodRequest(1)),),
                        round(t, 3), run, kind=JobKind.INFERENCE))
        n += 1
    return sorted(jobs, key=lambda j: (j.submit_time, j.id))


@dataclass
class ArmResult:
    arm: str
    waits: dict[str, list[float]] = field(default_factory=lambda: {TRAINING: [], SERVICES: []})
    busy_gpu_s: float = 0.0
    end_time: float = 0.0
    moves: int = 0
    drain_gpu_h: float = 0.0
    never_started: int = 0
    fleet_gpus: int = 0
    k8s_peak_pods: int = 0
    k8s_peak_pods_per_node: int = 0

    def summary(self) -> dict[str, float]:
        def stat(xs: list[float], q: float | None = None) -> float:
            if not xs:
                return 0.0
            return float(np.percentile(xs, q) if q is not None else np.mean(xs)) / 3600
        util = self.busy_gpu_s / (self.fleet_gpus * self.end_time) if self.end_time else 0.0
        return {"training_wait_mean_h": stat(self.waits[TRAINING]),
                "training_wait_p95_h": stat(self.waits[TRAINING], 95),
                "service_wait_mean_h": stat(self.waits[SERVICES]),
                "service_wait_p95_h": stat(self.waits[SERVICES], 95),
                "utilization": util, "node_moves": self.moves, "drain_gpu_h": self.drain_gpu_h,
                "never_started": self.never_started, "k8s_peak_pods": self.k8s_peak_pods,
                "k8s_peak_pods_per_node": self.k8s_peak_pods_per_node}


def side_of(job: Job, arm: str) -> str:
    return K8S if arm == "all-k8s" or job.kind is not JobKind.TRAINING else SLURM


ARRIVE, FINISH, REBALANCE, HANDOVER = 0, 1, 2, 3


class _Driver:
    def __init__(self, spec: HybridSpec, jobs: list[Job], arm: str) -> None:
        self.spec, self.arm = spec, arm
        group = NodeGroup(nodes=spec.nodes, gpu=spec.gpu, gpus_per_node=spec.gpus_per_node, cpus=1024,
                          memory_gb=1 << 16)
        self.fleet: Fleet = build_fleet([group])
        n_slurm = 0 if arm == "all-k8s" else max(0, min(spec.nodes, round(spec.nodes * spec.slurm_share)))
        self.owner = [SLURM if i < n_slurm else K8S for i in range(spec.nodes)]
        self.draining: dict[int, tuple[str, float]] = {}    # node -> (to side, drain start)
        self.busy = [0] * spec.nodes
        self.pending: dict[str, list[Job]] = {SLURM: [], K8S: []}
        self.running: dict[JobId, tuple[RunningJob, str]] = {}
        self.result = ArmResult(arm, fleet_gpus=spec.nodes * spec.gpus_per_node)
        self.q: list[tuple[float, int, int, object]] = []
        self.seq = 0
        self.handover_due: set[int] = set()
        #: draining node -> (time of the last busy change, idle GPU-seconds so far)
        self.idle_mark: dict[int, tuple[float, float]] = {}
        for j in jobs:
            self.push(j.submit_time, ARRIVE, j)
        if arm == "dynamic":
            self.push(spec.rebalance_s, REBALANCE, None)
        self.last_arrival = max((j.submit_time for j in jobs), default=0.0)
        self.cycles = 0

    def push(self, t: float, kind: int, payload: object) -> None:
        self.seq += 1
        heapq.heappush(self.q, (t, kind, self.seq, payload))

    def table(self, side: str) -> NodeTable:
        nodes = tuple(n if self.owner[i] == side and i not in self.draining
                      else replace(n, health=NodeHealth.DRAINING) for i, n in enumerate(self.fleet.nodes))
        table = NodeTable.from_fleet(Fleet(nodes))
        for rj, _ in self.running.values():
            for b in rj.bindings:
                table.take(b.node, b.request)
        return table

    def cycle(self, t: float) -> None:
        for side in (SLURM, K8S):
            if not self.pending[side]:
                continue
            self.cycles += 1
            running = tuple(rj for rj, s in self.running.values() if s == side)
            pending = [PendingJob(j) for j in self.pending[side]]
            res = run_cycle(CycleInput(now=t, nodes=self.table(side), pending=pending, running=running,
                                       profile=named_profile(PROFILE[side]), seed=self.cycles))
            started = set(res.started)
            for j in [j for j in self.pending[side] if j.id in started]:
                binds = tuple(b for b in res.bindings if b.job == j.id)
                for b in binds:
                    self.busy[b.node] += b.request.gpus
                    assert self.busy[b.node] <= self.spec.gpus_per_node, "a node is over-committed"
                    assert self.owner[b.node] == side and b.node not in self.draining
                self.running[j.id] = (RunningJob(j, t, binds), side)
                bucket = TRAINING if j.kind is JobKind.TRAINING else SERVICES
                self.result.waits[bucket].append(t - j.submit_time)
                self.result.busy_gpu_s += j.total_gpus * j.run_time
                self.push(t + j.run_time, FINISH, j.id)
            self.pending[side] = [j for j in self.pending[side] if j.id not in started]
            if side == K8S and started:
                self._count_k8s_pods()

    def _count_k8s_pods(self) -> None:
        """Peak pods on the Kubernetes side, total and on one node: the quantities the documented
        single-cluster limits are stated in (``K8S_LIMITS``)."""
        per_node: dict[int, int] = {}
        for rj, s in self.running.values():
            if s == K8S:
                for b in rj.bindings:
                    per_node[b.node] = per_node.get(b.node, 0) + 1
        r = self.result
        r.k8s_peak_pods = max(r.k8s_peak_pods, sum(per_node.values()))
        r.k8s_peak_pods_per_node = max(r.k8s_peak_pods_per_node, max(per_node.values(), default=0))

    def rebalance(self, t: float) -> None:
        demand = {s: sum(j.total_gpus for j in self.pending[s]) for s in (SLURM, K8S)}
        for rj, s in self.running.values():
            demand[s] += rj.job.total_gpus
        total = demand[SLURM] + demand[K8S]
        if total > 0:
            lo, hi = self.spec.min_nodes, self.spec.nodes - self.spec.min_nodes
            target = min(hi, max(lo, round(self.spec.nodes * demand[SLURM] / total)))
            future = sum(1 for i, o in enumerate(self.owner)
                         if (self.draining[i][0] if i in self.draining else o) == SLURM)
            give, to = (K8S, SLURM) if target > future else (SLURM, K8S)
            gap = abs(target - future)
            for _ in range(gap if gap >= self.spec.min_move else 0):
                cands = [i for i, o in enumerate(self.owner) if o == give and i not in self.draining]
                if not cands:
                    break
                node = min(cands, key=lambda i: (self.busy[i], i))
                self.draining[node] = (to, t)
                self.idle_mark[node] = (t, 0.0)
                self.result.moves += 1
                self.maybe_handover(node, t)
        # Look again while anything can still change: arrivals to come, jobs running, nodes in
        # transit. Otherwise what still waits can never start (it is counted as never started).
        if t < self.last_arrival or self.running or self.draining:
            self.push(t + self.spec.rebalance_s, REBALANCE, None)

    def _idle_until(self, node: int, t: float) -> None:
        """Add the node's idle GPU-seconds since its last busy change (draining nodes only)."""
        if node in self.idle_mark:
            since, idle = self.idle_mark[node]
            self.idle_mark[node] = (t, idle + (self.spec.gpus_per_node - self.busy[node]) * (t - since))

    def maybe_handover(self, node: int, t: float) -> None:
        if node in self.draining and self.busy[node] == 0 and node not in self.handover_due:
            self.handover_due.add(node)
            self.push(t + self.spec.drain_s, HANDOVER, node)

    def run(self) -> ArmResult:
        t = 0.0
        while self.q:
            t, kind, _, payload = heapq.heappop(self.q)
            if kind == ARRIVE:
                job = payload
                self.pending[side_of(job, self.arm)].append(job)
            elif kind == FINISH:
                rj, _ = self.running.pop(payload)
                for b in rj.bindings:
                    self._idle_until(b.node, t)
                    self.busy[b.node] -= b.request.gpus
                    self.maybe_handover(b.node, t)
            elif kind == REBALANCE:
                self.rebalance(t)
            elif kind == HANDOVER:
                self._idle_until(payload, t)
                to, _since = self.draining.pop(payload)
                self.handover_due.discard(payload)
                self.owner[payload] = to
                self.result.drain_gpu_h += self.idle_mark.pop(payload)[1] / 3600
            # Same-time events are all applied before one cycle runs.
            if not self.q or self.q[0][0] > t:
                self.cycle(t)
            if not self.running and not any(self.pending.values()) and not any(
                    k == ARRIVE for _, k, _, _ in self.q):
                break
        self.result.end_time = t
        self.result.never_started = sum(len(v) for v in self.pending.values())
        return self.result


def run_arm(spec: HybridSpec, jobs: list[Job], arm: str) -> ArmResult:
    if arm not in ARMS:
        raise ValueError(f"arm {arm!r}: expected one of {', '.join(ARMS)}")
    return _Driver(spec, jobs, arm).run()


#: Kubernetes' documented single-cluster envelope ("Considerations for large clusters",
#: https://kubernetes.io/docs/setup/best-practices/cluster-large/, v1.35: a cluster is designed
#: for configurations within all of these). Beyond it "all Kubernetes" means several clusters,
#: which this model (one shared pool) does not represent.
K8S_LIMITS = {"nodes": 5000, "pods": 150_000, "pods_per_node": 110}
K8S_LIMITS_SOURCE = "https://kubernetes.io/docs/setup/best-practices/cluster-large/"


def k8s_limits(nodes: int, peak_pods: int, peak_pods_per_node: int) -> dict:
    """Which documented limits one Kubernetes cluster of ``nodes`` running these pod counts
    breaks, and how many clusters the node limit alone calls for (⌈nodes / 5000⌉)."""
    used = {"nodes": nodes, "pods": peak_pods, "pods_per_node": peak_pods_per_node}
    breached = [k for k, limit in K8S_LIMITS.items() if used[k] > limit]
    return {"limits": dict(K8S_LIMITS), "used": used, "breached": breached,
            "clusters_for_nodes": max(1, math.ceil(nodes / K8S_LIMITS["nodes"])),
            "source": K8S_LIMITS_SOURCE}
