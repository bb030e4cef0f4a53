"""`gang-fifo`: strict first-come-first-served gangs (Tiresias's `fifo`): nothing passes a blocked job."""

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleInput, PendingJob
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.policies.registry import profile
from gpufleet.sim.runner import simulate
from gpufleet.testing.builders import fleet


def job(jid: str, gpus: int, submit: float, run: float = 100.0) -> Job:
    return Job(jid, "t", (PodSet("w", 1, PodRequest(gpus)),), submit, run)


def one_node_queue():
    """One 8-GPU node; a (4 GPUs) fits, b (8 GPUs) does not fit beside it, c (2 GPUs) would."""
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=1, gpus=8).build())
    return table, [PendingJob(job("a", 4, 0.0)), PendingJob(job("b", 8, 1.0)), PendingJob(job("c", 2, 2.0))]


def test_gang_fifo_starts_nothing_behind_the_first_blocked_job():
    table, queue = one_node_queue()
    r = run_cycle(CycleInput(10.0, table, queue, profile("gang-fifo")))
    assert r.started == ("a",)


def test_gang_bestfit_lets_a_job_that_fits_pass_the_blocked_head():
    table, queue = one_node_queue()
    r = run_cycle(CycleInput(10.0, table, queue, profile("gang-bestfit")))
    assert set(r.started) == {"a", "c"}


def test_in_simulation_the_small_job_starts_only_after_the_big_one_under_gang_fifo():
    """a runs 0-100; b (whole node) can start at 100 and runs to 200; c waits behind b, so it
    starts at 200 under strict FIFO, but at 2 (its submit) beside a under fit-first."""
    f = fleet().leaves(1, nodes=1, gpus=8).build()
    jobs = [job("a", 4, 0.0), job("b", 8, 1.0), job("c", 2, 2.0)]
    fifo = simulate(f, jobs, profile("gang-fifo"))
    fit = simulate(f, jobs, profile("gang-bestfit"))
    assert (fifo.starts["b"], fifo.starts["c"]) == (100.0, 200.0)
    assert fit.starts["c"] == 2.0
