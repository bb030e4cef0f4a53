"""Submitting gpufleet Jobs to a real Slurm with ``sbatch --parsable``.

The batch script stands in for the workload: by default ``sleep <run_time>``, so a replayed
trace occupies the cluster as long as the original jobs did (a later ``compare`` submits a
workload this way and reads the actual starts back with ``SlurmReader.sacct``). Output goes to
``/dev/null`` unless told otherwise, so no ``slurm-%j.out`` files land in the working directory.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from gpufleet.adapters.slurm.mapping import SbatchRequest, to_sbatch
from gpufleet.adapters.slurm.reader import Runner, SlurmCommandError
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job


def sleep_command(job: Job) -> str:
    return f"sleep {max(0, math.ceil(job.run_time))}"


def sbatch_argv(request: SbatchRequest, command: str, output: str = "/dev/null",
                extra: Iterable[str] = ()) -> list[str]:
    return ["sbatch", "--parsable", f"--output={output}", *request.options(), *extra, f"--wrap={command}"]


def parse_job_id(stdout: str) -> str:
    """``sbatch --parsable`` prints ``jobid`` or ``jobid;cluster``."""
    text = stdout.strip().splitlines()[-1] if stdout.strip() else ""
    job_id = text.split(";", 1)[0].strip()
    if not job_id.isdigit():
        raise SlurmCommandError(f"sbatch: expected a job id, got {text!r}")
    return job_id


@dataclass
class SlurmWriter:
    run: Runner
    output: str = "/dev/null"
    gpus_per_node: int | None = None
    account: bool = True
    slurm_types: dict[str, str] = field(default_factory=dict)
    extra: tuple[str, ...] = ()

    def submit(self, job: Job, command: str | None = None) -> str:
        request = to_sbatch(job, gpus_per_node=self.gpus_per_node, account=self.account,
                            slurm_types=self.slurm_types)
        argv = sbatch_argv(request, command or sleep_command(job), self.output, self.extra)
        return parse_job_id(self.run(argv))

    def submit_all(self, jobs: Iterable[Job]) -> dict[JobId, str]:
        """Submit in the order given; the map from our job ids to Slurm's."""
        return {job.id: self.submit(job) for job in jobs}

    def cancel(self, slurm_ids: Iterable[str]) -> None:
        ids = list(slurm_ids)
        if ids:
            self.run(["scancel", *ids])
