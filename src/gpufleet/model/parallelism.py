"""How a training job splits its world of GPUs, and what the model it trains looks like.

``Parallelism`` is the Megatron-style 3D(+) layout: tensor (TP), pipeline (PP), data (DP) and
context (CP) parallel degrees, with expert parallelism (EP) as a subdivision of data parallelism.
The world is ``tp * cp * dp * pp`` GPUs; ``ep`` does not multiply it (experts are sharded across
data-parallel replicas, as in Megatron-Core).

Rank order follows Megatron-LM's default ``tp-cp-ep-dp-pp``: TP varies fastest, PP slowest::

    rank = tp_rank + tp * (cp_rank + cp * (dp_replica + dp * pp_stage))

so the ranks of one TP group are consecutive (and land on one node when placed in order), the
ranks of one pipeline are ``tp * cp * dp`` apart, and a DP group strides by ``tp * cp``.

``TrainingProfile`` carries what the step-time model needs about the network being trained:
parameter count, depth, width, sequence length, batch sizes and element sizes. Presets follow the
Llama-2 family (Touvron et al., 2023, Table 1 and §2.2: 4096-token context, 4M-token global batch).
"""

from __future__ import annotations

from dataclasses import dataclass


class ParallelismMismatch(ValueError):
    """The parallel layout does not fit the job it is attached to."""


@dataclass(frozen=True, slots=True)
class RankCoords:
    """Where one rank sits in the parallel layout."""

    tp_rank: int
    cp_rank: int
    dp_replica: int
    pp_stage: int


@dataclass(frozen=True, slots=True)
class Parallelism:
    tp: int
    pp: int = 1
    dp: int = 1
    ep: int = 1
    cp: int = 1

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "dp", "ep", "cp"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ParallelismMismatch(f"{name} must be a positive integer (got {value!r})")
        if self.dp % self.ep:
            raise ParallelismMismatch(
                f"ep={self.ep} must divide dp={self.dp}: expert groups are made of data-parallel replicas"
            )

    @property
    def world_size(self) -> int:
        return self.tp * self.cp * self.dp * self.pp

    def check_world(self, gpus: int, what: str = "job") -> None:
        """Raise ``ParallelismMismatch`` unless the layout uses exactly ``gpus`` GPUs."""
        if gpus != self.world_size:
            raise ParallelismMismatch(
                f"{what} has {gpus} GPUs but tp*cp*dp*pp = {self.tp}*{self.cp}*{self.dp}*{self.pp} "
                f"= {self.world_size}"
            )

    def coords(self, rank: int) -> RankCoords:
        """Decompose ``rank`` in Megatron order (TP fastest, then CP, DP, PP)."""
        if not 0 <= rank < self.world_size:
            raise IndexError(f"rank {rank} outside world of {self.world_size}")
        tp_rank = rank % self.tp
        rest = rank // self.tp
        cp_rank = rest % self.cp
        rest //= self.cp
        return RankCoords(tp_rank, cp_rank, rest % self.dp, rest // self.dp)

    def rank(self, c: RankCoords) -> int:
        """Inverse of ``coords``."""
        return c.tp_rank + self.tp * (c.cp_rank + self.cp * (c.dp_replica + self.dp * c.pp_stage))

    def tp_groups(self) -> list[list[int]]:
        """Ranks that all-reduce activations every layer: ``tp`` consecutive ranks."""
        return [list(range(start, start + self.tp)) for start in range(0, self.world_size, self.tp)]

    def cp_groups(self) -> list[list[int]]:
        """Ranks that share one sequence (ring attention): stride ``tp``."""
        block = self.tp * self.cp
        return [
            [base + t + self.tp * c for c in range(self.cp)]
            for base in range(0, self.world_size, block)
            for t in range(self.tp)
        ]

    def pp_pipelines(self) -> list[list[int]]:
        """Each pipeline's ranks, stage 0 first: stride ``tp * cp * dp``."""
        stride = self.tp * self.cp * self.dp
        return [[r + stride * s for s in range(self.pp)] for r in range(stride)]

    def dp_groups(self) -> list[list[int]]:
        """Ranks holding the same weight shard (same tp rank, cp rank and stage): stride ``tp * cp``."""
        stride = self.tp * self.cp
        stage = stride * self.dp
        return [
            [base + off + stride * d for d in range(self.dp)]
            for base in range(0, self.world_size, stage)
            for off in range(stride)
        ]

    def grad_groups(self) -> list[list[int]]:
        """Ranks that all-reduce gradients: data parallel and context parallel together.

        CP ranks hold the same weights on different parts of the sequence, so Megatron reduces
        gradients over the combined DP x CP group.
        """
        stride = self.tp
        size = self.cp * self.dp
        stage = self.tp * size
        return [
            [base + t + stride * k for k in range(size)]
            for base in range(0, self.world_size, stage)
            for t in range(self.tp)
        ]

    def ep_groups(self) -> list[list[int]]:
        """Ranks that exchange tokens for expert layers: ``ep`` consecutive DP replicas."""
        if self.ep == 1:
            return [[r] for r in range(self.world_size)]
        return [g[i : i + self.ep] for g in self.dp_groups() for i in range(0, self.dp, self.ep)]

    def __str__(self) -> str:
        parts = [f"tp={self.tp}", f"pp={self.pp}", f"dp={self.dp}"]
        parts += [f"{k}={v}" for k, v in (("cp", self.cp), ("ep", self.ep)) if v != 1]
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class TrainingProfile:
    """A dense decoder-only transformer being trained.

    ``global_batch`` and ``micro_batch`` count sequences of ``seq_len`` tokens. ``act_bytes`` is the
    element size of activations on the wire (2 for BF16); ``grad_bytes`` that of the gradients the
    data-parallel all-reduce carries (2 for BF16 reduction, 4 for FP32).
    """

    name: str
    params_b: float
    layers: int
    hidden: int
    seq_len: int = 4096
    global_batch: int = 1024
    micro_batch: int = 1
    act_bytes: int = 2
    grad_bytes: int = 2

    def __post_init__(self) -> None:
        if self.params_b <= 0 or min(self.layers, self.hidden, self.seq_len) < 1:
            raise ValueError(f"{self.name}: params_b, layers, hidden and seq_len must be positive")
        if self.micro_batch < 1 or self.global_batch < self.micro_batch:
            raise ValueError(f"{self.name}: need 1 <= micro_batch <= global_batch")
        if self.act_bytes < 1 or self.grad_bytes < 1:
            raise ValueError(f"{self.name}: element sizes must be at least one byte")

    @property
    def params(self) -> float:
        return self.params_b * 1e9

    @property
    def tokens_per_step(self) -> int:
        return self.global_batch * self.seq_len

    def micro_batches(self, par: Parallelism) -> int:
        """Micro-batches each pipeline runs per step: ``ceil(global / (micro * dp))``."""
        per_replica = self.micro_batch * par.dp
        return max(1, -(-self.global_batch // per_replica))


# Llama-2 shapes (Touvron et al. 2023): 4096-token context, global batch 4M tokens = 1024 sequences.
LLAMA_7B = TrainingProfile("llama-7b", params_b=6.74, layers=32, hidden=4096)
LLAMA_13B = TrainingProfile("llama-13b", params_b=13.0, layers=40, hidden=5120)
LLAMA_70B = TrainingProfile("llama-70b", params_b=69.0, layers=80, hidden=8192)

PROFILES: dict[str, TrainingProfile] = {p.name: p for p in (LLAMA_7B, LLAMA_13B, LLAMA_70B)}
