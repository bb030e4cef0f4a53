"""gpufleet Jobs as sbatch submissions: the pure mapping, and the writer with a stand-in runner."""

from dataclasses import replace

import pytest

from gpufleet.adapters.slurm.mapping import MappingError, time_minutes, to_sbatch
from gpufleet.adapters.slurm.reader import SlurmCommandError
from gpufleet.adapters.slurm.writer import SlurmWriter, parse_job_id
from gpufleet.model.job import PodRequest, PodSet
from gpufleet.testing.builders import job


@pytest.mark.parametrize(
    ("built", "gpus_per_node", "options"),
    [
        (job("train").tenant("prod").gpus(8).gang(4).runs(3600).build(), None,
         ["--job-name=train", "--nodes=4", "--ntasks-per-node=1", "--gres=gpu:8", "--time=60",
          "--account=prod"]),
        (job("small").gpus(2).gang(4).runs(100).build(), 8,
         ["--job-name=small", "--nodes=1", "--ntasks-per-node=4", "--gres=gpu:8", "--time=2",
          "--account=t1"]),
        (job("odd").gpus(2).gang(6).runs(60).build(), 8,
         ["--job-name=odd", "--nodes=2", "--ntasks-per-node=3", "--gres=gpu:6", "--time=1", "--account=t1"]),
        (job("h").gpus(1).models("H100-80GB").cpus(7.5).memory(62.5).runs(61, estimate=600).build(), None,
         ["--job-name=h", "--nodes=1", "--ntasks-per-node=1", "--gres=gpu:h100:1", "--cpus-per-task=8",
          "--mem=64000M", "--time=10", "--account=t1"]),
        (job("any").gpus(4).models("H100-80GB", "A100-80GB").runs(60).build(), None,
         ["--job-name=any", "--nodes=1", "--ntasks-per-node=1", "--gres=gpu:4", "--constraint=h100|a100",
          "--time=1", "--account=t1"]),
    ],
    ids=[
        "a gang of full-node pods is one task per node",
        "small pods pack onto one node when the node size is known",
        "packing keeps an equal number of pods on every node",
        "one allowed model is a typed GRES and the estimate sets the time",
        "several allowed models become a feature constraint",
    ],
)
def test_jobs_map_to_sbatch_options(built, gpus_per_node, options) -> None:
    assert to_sbatch(built, gpus_per_node=gpus_per_node).options() == options


def test_topology_labels_become_switches_and_qos_is_passed() -> None:
    base = job("t").gpus(8).gang(2).runs(60).build()
    leaf = replace(base, labels=(("topology", "leaf"), ("slurm.qos", "high")))
    assert "--switches=1" in to_sbatch(leaf).options() and "--qos=high" in to_sbatch(leaf).options()
    explicit = replace(base, labels=(("slurm.switches", "1@10:00"),))
    assert "--switches=1@10:00" in to_sbatch(explicit).options()


def test_an_uneven_split_read_from_sacct_becomes_a_total_gpu_count() -> None:
    built = replace(job("u").runs(60).build(),
                    pod_sets=(PodSet("a", 1, PodRequest(3)), PodSet("b", 1, PodRequest(2))))
    opts = to_sbatch(built).options()
    assert "--nodes=2" in opts and "--gpus=5" in opts and not any(o.startswith("--gres") for o in opts)


def test_pod_sets_with_different_cpus_are_refused() -> None:
    built = replace(job("het").runs(60).build(),
                    pod_sets=(PodSet("a", 1, PodRequest(1, cpus=4)), PodSet("b", 1, PodRequest(1, cpus=8))))
    with pytest.raises(MappingError, match="heterogeneous"):
        to_sbatch(built)


@pytest.mark.parametrize(("seconds", "minutes"), [(1, 1), (60, 1), (61, 2), (3600, 60), (0, 1)],
                         ids=["a second is a minute", "a minute is a minute", "just over a minute is two",
                              "an hour is sixty", "zero is still one minute"])
def test_time_limits_round_up_to_whole_minutes(seconds: float, minutes: int) -> None:
    assert time_minutes(seconds) == minutes


def test_the_writer_submits_with_sbatch_parsable_and_returns_slurms_ids() -> None:
    calls: list[list[str]] = []

    def runner(argv):
        calls.append(list(argv))
        return f"{len(calls) + 100};emu\n"

    ids = SlurmWriter(runner).submit_all([job("a").gpus(8).runs(5).build(), job("b").gpus(1).runs(2).build()])
    assert ids == {"a": "101", "b": "102"}
    assert calls[0][:3] == ["sbatch", "--parsable", "--output=/dev/null"]
    assert calls[0][-1] == "--wrap=sleep 5"


def test_an_sbatch_answer_without_a_job_id_is_an_error() -> None:
    with pytest.raises(SlurmCommandError, match="expected a job id"):
        parse_job_id("sbatch: error: Batch job submission failed")


@pytest.mark.parametrize(
    ("field", "level", "expected"),
    [
        ("topology_required", "leaf", "--switches=1@7-00:00:00"),
        ("topology_preferred", "leaf", "--switches=1"),
        ("topology_required", "node", "--nodes=1"),
    ],
    ids=["a required leaf waits as long as Slurm lets it", "a preferred leaf takes Slurm's default wait",
         "a required node puts every pod on one node"],
)
def test_the_jobs_topology_constraint_maps_to_switches_or_one_node(field: str, level: str,
                                                                    expected: str) -> None:
    built = replace(job("t").gpus(2).gang(4).runs(60).build(), **{field: level})
    assert expected in to_sbatch(built).options()


def test_a_required_nvlink_domain_larger_than_a_node_is_refused() -> None:
    built = replace(job("big").gpus(4).gang(18).runs(60).build(), topology_required="nvlink")
    with pytest.raises(MappingError, match="topology/block"):
        to_sbatch(built, gpus_per_node=4)
