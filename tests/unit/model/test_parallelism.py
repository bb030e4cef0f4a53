"""Parallel layouts: Megatron rank order, the groups it implies, and world-size validation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.model.parallelism import (
    LLAMA_13B,
    PROFILES,
    Parallelism,
    ParallelismMismatch,
    RankCoords,
    TrainingProfile,
)


def _job(pods: int, gpus: int) -> Job:
    return Job(JobId("j"), TenantId("t"), (PodSet("workers", pods, PodRequest(gpus=gpus)),), 0.0, 3600.0)


def test_tp2_pp2_dp2_groups_follow_megatron_order_with_tp_fastest() -> None:
    par = Parallelism(tp=2, pp=2, dp=2)
    assert par.world_size == 8
    assert par.tp_groups() == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert par.pp_pipelines() == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert par.dp_groups() == [[0, 2], [1, 3], [4, 6], [5, 7]]
    assert par.coords(5) == RankCoords(tp_rank=1, cp_rank=0, dp_replica=0, pp_stage=1)
    assert par.coords(6) == RankCoords(tp_rank=0, cp_rank=0, dp_replica=1, pp_stage=1)


def test_context_parallel_ranks_sit_between_tp_and_dp_and_join_the_gradient_group() -> None:
    par = Parallelism(tp=2, cp=2, dp=2)
    assert par.cp_groups() == [[0, 2], [1, 3], [4, 6], [5, 7]]
    assert par.dp_groups() == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert par.grad_groups() == [[0, 2, 4, 6], [1, 3, 5, 7]]


def test_expert_groups_are_consecutive_data_parallel_replicas() -> None:
    par = Parallelism(tp=1, dp=4, ep=2)
    assert par.world_size == 4
    assert par.ep_groups() == [[0, 1], [2, 3]]


layouts = st.builds(
    Parallelism,
    tp=st.integers(1, 8),
    pp=st.integers(1, 4),
    dp=st.sampled_from([1, 2, 3, 4, 6]),
    cp=st.integers(1, 3),
)


@given(layouts)
def test_every_group_family_partitions_the_world(par: Parallelism) -> None:
    world = list(range(par.world_size))
    for family, size in (
        (par.tp_groups(), par.tp),
        (par.pp_pipelines(), par.pp),
        (par.dp_groups(), par.dp),
        (par.cp_groups(), par.cp),
        (par.grad_groups(), par.dp * par.cp),
    ):
        assert sorted(r for g in family for r in g) == world
        assert all(len(g) == size for g in family)


@given(layouts)
def test_coords_and_rank_are_inverse_and_groups_agree_with_coords(par: Parallelism) -> None:
    for rank in range(par.world_size):
        assert par.rank(par.coords(rank)) == rank
    for g in par.tp_groups():
        c = [par.coords(r) for r in g]
        assert [x.tp_rank for x in c] == list(range(par.tp))
        assert len({(x.cp_rank, x.dp_replica, x.pp_stage) for x in c}) == 1
    for pipe in par.pp_pipelines():
        assert [par.coords(r).pp_stage for r in pipe] == list(range(par.pp))


def test_world_size_equal_to_the_jobs_gpu_count_is_accepted() -> None:
    Parallelism(tp=8, dp=2).check_world(_job(pods=2, gpus=8).total_gpus)


def test_world_size_different_from_the_jobs_gpu_count_is_rejected_with_the_arithmetic() -> None:
    with pytest.raises(ParallelismMismatch, match=r"job has 12 GPUs but .* = 16"):
        Parallelism(tp=8, dp=2).check_world(_job(pods=3, gpus=4).total_gpus)


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"tp": 0}, id="a zero TP degree is rejected"),
        pytest.param({"tp": 2, "pp": -1}, id="a negative PP degree is rejected"),
        pytest.param({"tp": 2, "dp": 3, "ep": 2}, id="an EP degree that does not divide DP is rejected"),
    ],
)
def test_invalid_layouts_are_rejected(kwargs: dict[str, int]) -> None:
    with pytest.raises(ParallelismMismatch):
        Parallelism(**kwargs)


def test_micro_batches_per_pipeline_divide_the_global_batch_among_replicas() -> None:
    assert LLAMA_13B.micro_batches(Parallelism(tp=8)) == 1024
    assert LLAMA_13B.micro_batches(Parallelism(tp=8, dp=16)) == 64
    odd = TrainingProfile("odd", params_b=1.0, layers=2, hidden=64, global_batch=10, micro_batch=2)
    assert odd.micro_batches(Parallelism(tp=1, dp=3)) == 2  # ceil(10 / 6): the last one is padded


def test_presets_have_llama_shapes_and_a_4m_token_batch() -> None:
    assert set(PROFILES) == {"llama-7b", "llama-13b", "llama-70b"}
    assert all(p.tokens_per_step == 1024 * 4096 for p in PROFILES.values())


def test_a_profile_with_a_micro_batch_larger_than_the_global_batch_is_rejected() -> None:
    with pytest.raises(ValueError, match="micro_batch"):
        TrainingProfile("bad", params_b=1.0, layers=2, hidden=64, global_batch=1, micro_batch=2)
