"""Generated workloads: Poisson arrivals at a target offered load, heavy-tailed gang sizes,
lognormal run times, several tenants.

Calibration (the defaults), from the Philly trace as shipped in ../shared/data/philly-vc (89,297
jobs; Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training
Workloads", USENIX ATC 2019) and the published characterisations of Helios (Hu et al., SC 2021)
and Alibaba PAI (Weng et al., "MLaaS in the Wild", NSDI 2022):

* Philly: 89.4% of jobs use 1 GPU but consume 4.5% of GPU time; jobs of ≥ 4 GPUs consume ~90%.
  Helios and PAI report the same shape: most jobs small, most GPU time in multi-GPU gangs.
  Our size mix keeps 1-GPU jobs at 70% (LLM-era fleets run fewer single-GPU jobs than 2017
  Philly) and extends the tail past Philly's 32 GPUs to 512 with geometrically falling weights.
* Philly 1-GPU run times: log-normal with median 1,024 s and σ(ln) = 2.17. We use a median of
  20 min for 1-GPU jobs and 2 h for gangs, σ = 1.8, capped at 3 days so a two-week window drains.
* Poisson arrivals (exponential gaps): rate λ = load × fleet GPUs / E[GPUs × run time], with the
  expectation taken over the size and run-time distributions *as sampled* (cap included), so the
  offered load is what the scenario asks for.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.job import Job, JobKind, PodRequest, PodSet
from gpufleet.model.parallelism import LLAMA_7B, LLAMA_13B, LLAMA_70B, Parallelism, TrainingProfile

SIZES = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512])
SIZE_WEIGHTS = np.array([0.70, 0.06, 0.08, 0.09, 0.035, 0.02, 0.01, 0.004, 0.0008, 0.0002])
#: CPU cores and GB of memory asked per GPU. An HGX H100 node has 224 cores and 2 TB: 28 and
#: 256 per GPU. Small pods sometimes ask for more (data loading, preprocessing), which is how
#: GPUs get stranded by CPU or memory; full-node pods are capped at the node's per-GPU share.
CPUS_PER_GPU = (np.array([16, 24, 28, 40]), np.array([0.3, 0.3, 0.25, 0.15]))
MEM_PER_GPU = (np.array([128, 192, 256, 384]), np.array([0.3, 0.3, 0.25, 0.15]))
FULL_NODE_CPUS_PER_GPU = 28
FULL_NODE_MEM_PER_GPU = 256


@dataclass(frozen=True)
class TenantMix:
    name: str
    weight: float


@dataclass(frozen=True)
class TrainingMix:
    """Which generated gangs are training jobs with a parallel layout, and in what pods.

    A gang of ``g >= min_gpus`` GPUs becomes, with probability ``fraction``, a Megatron-style job:
    ``tp = min(g, gpus_per_node)``, the rest split into pipeline stages (``pp`` of 1, 2 or 4 with
    ``pp_weights``, as far as the size allows) and data-parallel replicas; Llama-2 7B below a node,
    13B up to 32 GPUs, 70B beyond. Its pods hold ``pod_gpus`` GPUs each (drawn with weights, never
    more than the job): full-node pods, or smaller ones as a Kubernetes job of 4-GPU workers or a
    Slurm job of one task per GPU asks. Drawn from a generator of its own (``seed + 2``), so the
    arrivals, sizes and run times are those of the same spec without the mix.
    """

    fraction: float = 0.8
    min_gpus: int = 2
    pod_gpus: tuple[tuple[int, float], ...] = ((8, 0.5), (4, 0.3), (1, 0.2))
    pp_weights: tuple[float, float, float] = (0.4, 0.3, 0.3)


@dataclass(frozen=True)
class WorkloadSpec:
    days: float = 14.0
    offered_load: float = 0.9
    max_gpus: int = 512
    gpus_per_node: int = 8
    median_small_s: float = 1200.0
    median_gang_s: float = 7200.0
    sigma: float = 1.8
    max_run_s: float = 3 * 86400.0
    estimate_factor: tuple[float, float] = (1.0, 3.0)
    tenants: tuple[TenantMix, ...] = (
        TenantMix("research", 0.4), TenantMix("product", 0.3), TenantMix("vision", 0.2),
        TenantMix("interns", 0.1),
    )
    #: None: no job declares a parallel layout (the calibrated default).
    training: TrainingMix | None = None


def _size_probs(max_gpus: int) -> tuple[np.ndarray, np.ndarray]:
    keep = max_gpus >= SIZES
    w = SIZE_WEIGHTS[keep]
    return SIZES[keep], w / w.sum()


def _run_times(rng: np.random.Generator, sizes: np.ndarray, spec: WorkloadSpec) -> np.ndarray:
    median = np.where(sizes > 1, spec.median_gang_s, spec.median_small_s)
    rt = median * np.exp(spec.sigma * rng.standard_normal(sizes.size))
    return np.clip(np.round(rt), 60.0, spec.max_run_s)


def mean_gpu_seconds(spec: WorkloadSpec, rng: np.random.Generator, n: int = 200_000) -> float:
    sizes, p = _size_probs(spec.max_gpus)
    s = rng.choice(sizes, size=n, p=p)
    return float((s * _run_times(rng, s, spec)).mean())


def generate(spec: WorkloadSpec, fleet_gpus: int, seed: int) -> list[Job]:
    """A seeded workload: the same spec, fleet size and seed give the same jobs, byte for byte."""
    rng = np.random.default_rng(seed)
    rate = spec.offered_load * fleet_gpus / mean_gpu_seconds(spec, np.random.default_rng(seed + 1))
    horizon = spec.days * 86400.0
    n_guess = int(rate * horizon * 1.2) + 16
    gaps = rng.exponential(1.0 / rate, size=n_guess)
    times = np.cumsum(gaps)
    while times[-1] < horizon:
        times = np.concatenate([times, times[-1] + np.cumsum(rng.exponential(1.0 / rate, n_guess))])
    times = times[times < horizon]
    n = times.size
    sizes_vals, p = _size_probs(spec.max_gpus)
    sizes = rng.choice(sizes_vals, size=n, p=p)
    run = _run_times(rng, sizes, spec)
    est = np.ceil(run * rng.uniform(*spec.estimate_factor, size=n) / 60.0) * 60.0
    cpg = rng.choice(CPUS_PER_GPU[0], size=n, p=CPUS_PER_GPU[1])
    mpg = rng.choice(MEM_PER_GPU[0], size=n, p=MEM_PER_GPU[1])
    full = np.minimum(sizes, spec.gpus_per_node) >= spec.gpus_per_node
    cpg = np.where(full, np.minimum(cpg, FULL_NODE_CPUS_PER_GPU), cpg)
    mpg = np.where(full, np.minimum(mpg, FULL_NODE_MEM_PER_GPU), mpg)
    tw = np.array([t.weight for t in spec.tenants], float)
    tenant_idx = rng.choice(len(spec.tenants), size=n, p=tw / tw.sum())
    width = len(str(n))
    jobs = []
    for i in range(n):
        g = int(sizes[i])
        per_pod = min(g, spec.gpus_per_node)
        replicas = g // per_pod
        kind = JobKind.TRAINING if g >= spec.gpus_per_node else (
            JobKind.NOTEBOOK if g == 1 and i % 5 == 0 else JobKind.BATCH)
        jobs.append(Job(
            id=JobId(f"j{i:0{width}d}"),
            tenant=TenantId(spec.tenants[int(tenant_idx[i])].name),
            pod_sets=(PodSet("worker", replicas,
                             PodRequest(per_pod, float(cpg[i] * per_pod), float(mpg[i] * per_pod))),),
            submit_time=float(round(times[i], 3)),
            run_time=float(run[i]),
            run_time_estimate=float(est[i]),
            kind=kind,
        ))
    if spec.training is not None:
        jobs = with_training(jobs, spec.training, spec.gpus_per_node, np.random.default_rng(seed + 2))
    return jobs


def _profile_for(gpus: int, gpus_per_node: int) -> TrainingProfile:
    if gpus < gpus_per_node:
        return LLAMA_7B
    return LLAMA_13B if gpus <= 32 else LLAMA_70B


def with_training(jobs: list[Job], mix: TrainingMix, gpus_per_node: int, rng: np.random.Generator
                  ) -> list[Job]:
    """``jobs`` with a share of the gangs turned into training jobs (see ``TrainingMix``)."""
    n = len(jobs)
    pick = rng.random(n)
    pp_draw = rng.random(n)
    sizes, weights = zip(*mix.pod_gpus, strict=True)
    pod_draw = rng.choice(np.asarray(sizes), size=n, p=np.asarray(weights) / sum(weights))
    cum_pp = np.cumsum(mix.pp_weights) / sum(mix.pp_weights)
    out = []
    for i, job in enumerate(jobs):
        g = job.total_gpus
        if g < mix.min_gpus or pick[i] >= mix.fraction or len(job.pod_sets) != 1:
            out.append(job)
            continue
        tp = min(g, gpus_per_node)
        rest = g // tp
        pp = (1, 2, 4)[int(np.searchsorted(cum_pp, pp_draw[i], side="right"))]
        while pp > 1 and rest % pp:
            pp //= 2
        pod = int(min(pod_draw[i], g, gpus_per_node))
        while g % pod:
            pod //= 2
        req = job.pod_sets[0].request
        per_gpu_cpu, per_gpu_mem = req.cpus / req.gpus, req.memory_gb / req.gpus
        out.append(replace(
            job, kind=JobKind.TRAINING,
            pod_sets=(PodSet("worker", g // pod, PodRequest(pod, per_gpu_cpu * pod, per_gpu_mem * pod)),),
            parallelism=Parallelism(tp=tp, pp=pp, dp=rest // pp), training=_profile_for(g, gpus_per_node),
        ))
    return out
