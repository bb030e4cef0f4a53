"""Step time of a data/tensor/pipeline-parallel training job on a given placement.

Pure arithmetic over the catalog and the fleet: no I/O, no clock. The simulator uses ``slowdown``
to stretch a job's run time; the placement phase uses ``CommCostModel`` as a cheap score.

**Links.** Every pair of ranks talks over the slowest link between their nodes (figures are bus
bandwidth per GPU, per direction, as nccl-tests reports it; see ops-reference §7.3):

- same NVLink domain (one HGX node, or a whole NVL72 rack): ``nvlink_gbps / 2`` per direction
  times ``nvlink_efficiency`` = 370/450 (H100: 450 GB/s line rate, NCCL ring reaches ~370 GB/s,
  sjeaugey in nccl-tests#212). NVLink SHARP (~480 GB/s for an 8-GPU all-reduce) is not credited,
  which keeps the ideal conservative. GPUs without NVLink use ``pcie_gbs``.
- different domains, same leaf: one NIC per GPU rail, ``fabric.nic_gbps / 8`` GB/s line rate times
  ``nic_efficiency`` = 0.93 (NDR 400 Gb/s = 50 GB/s, 46-48 GB/s achievable: nccl-tests#290, #267).
- across leaves: divided by ``fabric.leaf_oversubscription``; across spines (or zones): further
  divided by ``fabric.spine_oversubscription``. This assumes the uplinks are as loaded as the
  downlinks (a busy fleet), the case oversubscription is meant to describe.

A ring that leaves its domain runs at the NIC rate: its bottleneck is the hop between domains,
carried by one rail (``rails_per_crossing = 1``). This is the pessimistic end: NCCL can stripe
channels over the k rails of the k group members on a node, which for large messages gives up to
k times more (8 x 46-48 ~ 370-385 GB/s across 8-rail nodes, ops-reference §7.3), but per-layer TP
messages (tens of MB, one per layer, on the critical path) sit well below the sizes where busbw
peaks. The one-rail choice makes cross-node TP cost what practice says it costs: Megatron's
takeaway #1 (Narayanan et al., SC'21) is to keep TP within a server. Raise ``rails_per_crossing``
to credit striping.

**Collectives.** Ring all-reduce of ``S`` bytes over ``n`` ranks on bus bandwidth ``B``:
``t = 2(n-1) * alpha + 2(n-1)/n * S / B`` (reduce-scatter then all-gather, ``2(n-1)`` steps; the
NCCL docs' busbw = algbw * 2(n-1)/n). ``n = 1`` costs nothing. A point-to-point send costs
``alpha + S / B``.

**Step** (Megatron-LM, Narayanan et al. SC'21). With ``m`` micro-batches per pipeline of ``b``
sequences of ``s`` tokens, hidden size ``h``, ``L`` layers, ``P`` parameters, peak ``F`` and
utilisation ``mfu`` (0.4-0.5 is what well-tuned runs reach: Narayanan et al. report 52% of A100
peak for a 1T-parameter model on 3072 GPUs; here it stands for the compute kernels alone, the
exposed communication is added on top):

- compute per micro-batch per stage ``t_c = 6 P b s / (tp cp pp F mfu)`` (the 6PT rule: 2 flops
  per parameter per token forward, 4 backward). Summed over the step this is
  ``6 P tokens / (GPUs F mfu)``.
- TP: per layer 2 all-reduces forward + 2 backward (the f/g operators of Megatron's tensor
  parallelism, Shoeybi et al. 2019; Narayanan et al. §2.3) of the activations
  ``b (s/cp) h act_bytes`` over the TP group: ``t_tp = (L/pp) * 4 * allreduce``. Exposed (on the
  critical path between the matmuls).
- PP: per micro-batch each stage sends its activations forward and receives their gradient back;
  with Megatron's scatter/gather optimisation each TP rank sends ``1/tp`` of them:
  ``t_p2p = 2 * p2p(b (s/cp) h act_bytes / tp)``. 1F1B runs ``m + pp - 1`` stage slots of
  ``t_c + t_tp + t_p2p``: the bubble is ``(pp-1)/m`` of the useful time, i.e. ``(pp-1)/(m+pp-1)``
  of the pipeline. ``pp_s`` is the bubble plus the p2p time.
- DP: gradients of one shard, ``P / (tp pp) * grad_bytes`` bytes, all-reduced over the DP x CP
  group. Up to ``dp_overlap`` of it hides behind the backward pass of the last micro-batch
  (``2/3 t_c``), the rest is exposed: ``dp_s = t_dp - min(dp_overlap * t_dp, 2/3 t_c)``.
- ``step_s = (m + pp - 1) (t_c + t_tp + t_p2p) + dp_s``.

Not modelled: CP (ring-attention) and EP (all-to-all) traffic, attention flops beyond 6PT,
memory fit, stragglers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

import numpy as np
from numpy.typing import ArrayLike

from gpufleet.model.catalog import GpuModel, gpu_model
from gpufleet.model.fleet import Fabric, Fleet, Node
from gpufleet.model.ids import NodeId
from gpufleet.model.parallelism import Parallelism, TrainingProfile


class Tier(IntEnum):
    """How far apart a set of GPUs is; each step up is a slower link."""

    DOMAIN = 0  # one NVLink domain
    LEAF = 1  # several domains under one leaf switch
    SPINE = 2  # several leaves under one spine
    CORE = 3  # several spines or zones


@dataclass(frozen=True, slots=True)
class StepKnobs:
    """The efficiency and latency constants of the model (defaults sourced in the module doc).

    The ``alpha`` latencies are assumptions of the right order (microseconds per ring step, more
    through more switches), not measured figures; they matter only for small messages.
    """

    mfu: float = 0.5
    nvlink_efficiency: float = 370.0 / 450.0
    nic_efficiency: float = 0.93
    pcie_gbs: float = 25.0  # PCIe Gen4 x16 (32 GB/s line), for GPUs without NVLink
    alpha_domain_s: float = 2e-6  # per ring step inside an NVLink domain
    alpha_network_s: float = 5e-6  # per ring step through a leaf switch
    alpha_per_tier_s: float = 1e-6  # each further switch level (leaf -> spine -> core)
    rails_per_crossing: int = 1
    dp_overlap: float = 0.8


DEFAULT_KNOBS = StepKnobs()


@dataclass(frozen=True, slots=True)
class Link:
    tier: Tier
    gbs: float  # achievable bus bandwidth, GB/s per direction per GPU
    alpha_s: float


@dataclass(frozen=True, slots=True)
class StepBreakdown:
    """Seconds per optimizer step, and the bus bandwidth each kind of traffic got (GB/s)."""

    compute_s: float
    tp_s: float
    pp_s: float
    dp_s: float
    step_s: float
    micro_batches: int = 1
    tp_gbs: float = 0.0
    pp_gbs: float = 0.0
    dp_gbs: float = 0.0


# ---- links ---------------------------------------------------------------------------------------


def domain_gbs(gpu: GpuModel, knobs: StepKnobs = DEFAULT_KNOBS) -> float:
    """Bus bandwidth inside one NVLink domain, GB/s per direction."""
    if gpu.nvlink_gbps <= 0:
        return knobs.pcie_gbs
    return gpu.nvlink_gbps_per_direction * knobs.nvlink_efficiency


def network_gbs(fabric: Fabric, tier: Tier, knobs: StepKnobs = DEFAULT_KNOBS, rails: int = 1) -> float:
    """Bus bandwidth of a ring whose slowest hop crosses ``tier``, GB/s per direction."""
    gbs = fabric.nic_gbps / 8.0 * knobs.nic_efficiency * rails
    if tier >= Tier.SPINE:
        gbs /= fabric.leaf_oversubscription
    if tier >= Tier.CORE:
        gbs /= fabric.spine_oversubscription
    return gbs


def link_for(tier: Tier, gpu: GpuModel, fabric: Fabric, knobs: StepKnobs = DEFAULT_KNOBS,
             rails: int = 1) -> Link:
    inside = domain_gbs(gpu, knobs)
    if tier == Tier.DOMAIN:
        return Link(tier, inside, knobs.alpha_domain_s)
    alpha = knobs.alpha_network_s + (int(tier) - 1) * knobs.alpha_per_tier_s
    return Link(tier, min(inside, network_gbs(fabric, tier, knobs, rails)), alpha)


def tier_of(nodes: Sequence[Node]) -> Tier:
    """The widest boundary the set of nodes crosses."""
    if len({n.nvlink_domain for n in nodes}) <= 1:
        return Tier.DOMAIN
    if len({n.leaf for n in nodes}) <= 1:
        return Tier.LEAF
    if len({(n.zone, n.spine) for n in nodes}) <= 1:
        return Tier.SPINE
    return Tier.CORE


def group_link(nodes: Sequence[Node], fabric: Fabric, knobs: StepKnobs = DEFAULT_KNOBS) -> Link:
    """The bottleneck link of a ring over ranks on ``nodes`` (one entry per rank)."""
    tier = tier_of(nodes)
    gpu = min((n.model for n in nodes), key=lambda g: domain_gbs(g, knobs))
    rails = 1
    if tier != Tier.DOMAIN and knobs.rails_per_crossing > 1:
        per_domain: dict[str, int] = {}
        for n in nodes:
            per_domain[n.nvlink_domain] = per_domain.get(n.nvlink_domain, 0) + 1
        rails = max(1, min(knobs.rails_per_crossing, *per_domain.values()))
    return link_for(tier, gpu, fabric, knobs, rails)


# ---- collectives ---------------------------------------------------------------------------------


def ring_allreduce_s(nbytes: float, n: int, link: Link) -> float:
    """``2(n-1) alpha + 2(n-1)/n * bytes / B``; zero for a single rank or an empty message."""
    if n <= 1 or nbytes <= 0:
        return 0.0
    return 2 * (n - 1) * link.alpha_s + 2 * (n - 1) / n * nbytes / (link.gbs * 1e9)


def p2p_s(nbytes: float, link: Link) -> float:
    """One point-to-point send: ``alpha + bytes / B``."""
    if nbytes <= 0:
        return 0.0
    return link.alpha_s + nbytes / (link.gbs * 1e9)


# ---- the step ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Volumes:
    """Per-rank message sizes and per-micro-batch compute for one (profile, layout, GPU)."""

    m: int
    t_c: float
    tp_bytes: float
    p2p_bytes: float
    dp_bytes: float
    tp_calls: float  # all-reduces per micro-batch per stage


def _volumes(profile: TrainingProfile, par: Parallelism, tflops: float, knobs: StepKnobs) -> _Volumes:
    b, s, h = profile.micro_batch, profile.seq_len, profile.hidden
    flops = 6.0 * profile.params * b * s
    t_c = flops / (par.tp * par.cp * par.pp * tflops * 1e12 * knobs.mfu)
    act = b * (s / par.cp) * h * profile.act_bytes
    return _Volumes(
        m=profile.micro_batches(par),
        t_c=t_c,
        tp_bytes=act,
        p2p_bytes=act / par.tp,
        dp_bytes=profile.params / (par.tp * par.pp) * profile.grad_bytes,
        tp_calls=profile.layers / par.pp * 4,
    )


def _assemble(v: _Volumes, par: Parallelism, tp_ar: float, p2p: float, dp_ar: float,
              knobs: StepKnobs) -> tuple[float, float, float, float, float]:
    t_tp = v.tp_calls * tp_ar
    t_p2p = 2 * p2p if par.pp > 1 else 0.0
    stage = v.t_c + t_tp + t_p2p
    pipeline = (v.m + par.pp - 1) * stage
    bubble_and_p2p = v.m * t_p2p + (par.pp - 1) * stage
    dp = dp_ar - min(knobs.dp_overlap * dp_ar, 2.0 / 3.0 * v.t_c)
    return v.m * v.t_c, v.m * t_tp, bubble_and_p2p, dp, pipeline + dp


def _check(placement: Sequence[Node], par: Parallelism) -> None:
    par.check_world(len(placement), "placement")
    used: dict[NodeId, int] = {}
    for n in placement:
        used[n.id] = used.get(n.id, 0) + 1
        if used[n.id] > n.gpus:
            raise ValueError(f"placement puts more than {n.gpus} ranks on node {n.id}")


def step_time(placement: Sequence[Node], profile: TrainingProfile, par: Parallelism, fabric: Fabric,
              knobs: StepKnobs = DEFAULT_KNOBS) -> StepBreakdown:
    """The step-time breakdown of ``par`` with rank ``r`` on ``placement[r]`` (Megatron rank order).

    Each kind of traffic is paced by its slowest group: the largest TP all-reduce time over all TP
    groups, the slowest stage-to-stage hop over all pipelines, the slowest gradient group.
    """
    _check(placement, par)
    slowest = min((n.model for n in placement), key=lambda g: g.bf16_tflops)
    v = _volumes(profile, par, slowest.bf16_tflops, knobs)

    tp_ar, tp_gbs = 0.0, 0.0
    for g in par.tp_groups():
        link = group_link([placement[r] for r in g], fabric, knobs)
        t = ring_allreduce_s(v.tp_bytes, len(g), link)
        if t >= tp_ar:
            tp_ar, tp_gbs = t, link.gbs
    p2p, pp_gbs = 0.0, 0.0
    for pipe in par.pp_pipelines():
        for a, b in zip(pipe, pipe[1:], strict=False):
            link = group_link([placement[a], placement[b]], fabric, knobs)
            t = p2p_s(v.p2p_bytes, link)
            if t >= p2p:
                p2p, pp_gbs = t, link.gbs
    dp_ar, dp_gbs = 0.0, 0.0
    for g in par.grad_groups():
        link = group_link([placement[r] for r in g], fabric, knobs)
        t = ring_allreduce_s(v.dp_bytes, len(g), link)
        if t >= dp_ar:
            dp_ar, dp_gbs = t, link.gbs

    compute, tp, pp, dp, step = _assemble(v, par, tp_ar, p2p, dp_ar, knobs)
    return StepBreakdown(compute, tp, pp, dp, step, v.m,
                         tp_gbs if par.tp > 1 else 0.0,
                         pp_gbs if par.pp > 1 else 0.0,
                         dp_gbs if par.dp * par.cp > 1 else 0.0)


# ---- the ideal -----------------------------------------------------------------------------------


def domain_sizes(fleet: Fleet) -> dict[str, int]:
    """GPUs per NVLink domain in ``fleet`` (8 for an HGX node, 72 for an NVL72 rack)."""
    sizes: dict[str, int] = {}
    for n in fleet.nodes:
        sizes[n.nvlink_domain] = sizes.get(n.nvlink_domain, 0) + n.gpus
    return sizes


def _seen_domain_gpus(placement: Sequence[Node]) -> int:
    """A lower bound on the domain size: GPUs of the distinct placement nodes per domain."""
    per: dict[str, int] = {}
    for n in {n.id: n for n in placement}.values():
        per[n.nvlink_domain] = per.get(n.nvlink_domain, 0) + n.gpus
    return max(per.values())


def reference_placement(par: Parallelism, gpu: str, gpus_per_node: int, domain_gpus: int) -> list[Node]:
    """The best packing we know: whole TP groups inside NVLink domains, ranks in order, one leaf.

    If ``tp <= domain_gpus``, ``domain_gpus // tp`` TP groups go in each domain (a group is never
    cut); otherwise ranks fill domains consecutively, so a TP group spans the fewest domains.
    """
    domain_gpus = max(domain_gpus, gpus_per_node)
    nodes_per_domain = max(1, domain_gpus // gpus_per_node)
    groups_per_domain = domain_gpus // par.tp
    name = gpu_model(gpu).name
    nodes: dict[int, Node] = {}
    out: list[Node] = []
    for rank in range(par.world_size):
        if groups_per_domain >= 1:
            g = rank // par.tp
            slot = (g // groups_per_domain) * nodes_per_domain * gpus_per_node
            slot += (g % groups_per_domain) * par.tp + rank % par.tp
        else:
            slot = rank
        i = slot // gpus_per_node
        if i not in nodes:
            nodes[i] = Node(NodeId(f"ideal-n{i:04d}"), name, gpus_per_node, 0, 0, "ideal", "spine-ideal",
                            "leaf-ideal", f"ideal-nvl{i // nodes_per_domain}")
        out.append(nodes[i])
    return out


def ideal_step_time(placement: Sequence[Node], profile: TrainingProfile, par: Parallelism,
                    fabric: Fabric, knobs: StepKnobs = DEFAULT_KNOBS,
                    domain_gpus: int | None = None) -> StepBreakdown:
    """Step time on the reference packing of the same GPU model and node shape.

    ``domain_gpus`` is the NVLink domain size (``domain_sizes(fleet)``); without it we use what
    the placement shows (the GPUs of the nodes it touches in its fullest domain), a lower bound.
    """
    slowest = min(placement, key=lambda n: n.model.bf16_tflops)
    per_node = max(n.gpus for n in placement)
    size = domain_gpus if domain_gpus is not None else _seen_domain_gpus(placement)
    ref = reference_placement(par, slowest.gpu, per_node, size)
    return step_time(ref, profile, par, fabric, knobs)


def slowdown(placement: Sequence[Node], profile: TrainingProfile, par: Parallelism, fabric: Fabric,
             knobs: StepKnobs = DEFAULT_KNOBS, domain_gpus: int | None = None) -> float:
    """``step(placement) / step(ideal)``, at least 1.

    The ideal is the better of the reference packing and the placement itself: for awkward sizes
    (a TP group of 3 on 8-GPU nodes) a hand placement can beat the reference, and then it is the
    ideal.
    """
    actual = step_time(placement, profile, par, fabric, knobs).step_s
    ideal = ideal_step_time(placement, profile, par, fabric, knobs, domain_gpus).step_s
    return actual / min(ideal, actual)


# ---- the cheap score -----------------------------------------------------------------------------


def span_tier(domains: ArrayLike, leaves: ArrayLike, spines: ArrayLike) -> np.ndarray:
    """Tier from span counts (distinct domains / leaves / spines); works on arrays."""
    d, lv, sp = np.asarray(domains), np.asarray(leaves), np.asarray(spines)
    return np.where(d <= 1, 0, 1 + (lv > 1) + (sp > 1)).astype(np.intp)


@dataclass(frozen=True, slots=True)
class CommCostModel:
    """A 4x4 table of step times by (tier of the worst TP group, tier of the whole job).

    Built once per job shape; ``slowdown`` is then a table lookup (arrays welcome), so the
    placement phase can score every candidate. Approximation: PP and DP traffic is charged at the
    tier of the whole job (its widest hop), and one rail per crossing.
    """

    table: np.ndarray  # step seconds, [tp_tier, job_tier]
    ideal_s: float
    rows: tuple[tuple[float, ...], ...]  # the same table as Python floats, for ``score``

    @classmethod
    def build(cls, profile: TrainingProfile, par: Parallelism, gpu: str, fabric: Fabric,
              domain_gpus: int, knobs: StepKnobs = DEFAULT_KNOBS) -> CommCostModel:
        model = gpu_model(gpu)
        v = _volumes(profile, par, model.bf16_tflops, knobs)
        links = [link_for(t, model, fabric, knobs) for t in Tier]
        table = np.empty((len(Tier), len(Tier)))
        for i, tp_link in enumerate(links):
            for j, job_link in enumerate(links):
                tp_ar = ring_allreduce_s(v.tp_bytes, par.tp, tp_link)
                dp_ar = ring_allreduce_s(v.dp_bytes, par.dp * par.cp, job_link)
                table[i, j] = _assemble(v, par, tp_ar, p2p_s(v.p2p_bytes, job_link), dp_ar, knobs)[4]
        ideal_tp = 0 if par.tp <= domain_gpus else 1
        ideal_job = 0 if par.world_size <= domain_gpus else 1
        rows = tuple(tuple(float(x) for x in row) for row in table)
        return cls(table, float(table[ideal_tp, ideal_job]), rows)

    def step_s(self, tp_domains: ArrayLike, tp_leaves: ArrayLike, tp_spines: ArrayLike,
               job_domains: ArrayLike, job_leaves: ArrayLike, job_spines: ArrayLike) -> np.ndarray:
        """Estimated step seconds from the span counts of the worst TP group and of the job."""
        tp_t = span_tier(tp_domains, tp_leaves, tp_spines)
        job_t = np.maximum(span_tier(job_domains, job_leaves, job_spines), tp_t)
        return self.table[tp_t, job_t]

    def slowdown(self, tp_domains: ArrayLike, tp_leaves: ArrayLike, tp_spines: ArrayLike,
                 job_domains: ArrayLike, job_leaves: ArrayLike, job_spines: ArrayLike) -> float | np.ndarray:
        """Estimated slowdown against the ideal (>= 1); scalars in, float out; arrays in, array out."""
        args = (tp_domains, tp_leaves, tp_spines, job_domains, job_leaves, job_spines)
        if all(isinstance(a, int) for a in args):
            return self.score(*args)  # type: ignore[arg-type]
        s = self.step_s(*args)
        out = np.maximum(s / self.ideal_s, 1.0)
        return float(out) if np.ndim(out) == 0 else out

    def score(self, tp_domains: int, tp_leaves: int, tp_spines: int,
              job_domains: int, job_leaves: int, job_spines: int) -> float:
        """Scalar ``slowdown`` in plain Python (about a microsecond): the per-candidate hot path."""
        tp_t = 0 if tp_domains <= 1 else 1 + (tp_leaves > 1) + (tp_spines > 1)
        job_t = 0 if job_domains <= 1 else 1 + (job_leaves > 1) + (job_spines > 1)
        return max(self.rows[tp_t][max(job_t, tp_t)] / self.ideal_s, 1.0)
