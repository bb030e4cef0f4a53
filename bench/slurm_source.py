"""What one read and one submission of ``--source slurm`` cost, slurmrestd beside the client commands.

Against a running emulated cluster (tools/slurm-emulated-cluster.sh, with slurmrestd):

    SLURM_CONF=/tmp/slurmtest/etc/slurm.conf python bench/slurm_source.py --url http://127.0.0.1:16820

It submits ``--jobs`` jobs (each 1 node × 8 GPUs, ``sleep 600``) alternately through slurmrestd's
``job/submit`` and ``sbatch``, so the queue holds them all, times every submission, then times
``--reads`` reads of the whole world (jobs, nodes, reservations, accounts, fair share) each way,
and cancels what it submitted. Wall time per call (the calls wait on slurmctld, not on our CPU);
medians and the ratio, from the same run.
"""

from __future__ import annotations

import argparse
import statistics
import time

from gpufleet.adapters.slurm.mapping import SbatchRequest
from gpufleet.adapters.slurm.reader import SlurmCli
from gpufleet.adapters.slurm.rest import JwtToken, SlurmCommands, SlurmRest


def timed(fn, n: int) -> list[float]:  # noqa: ANN001
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--jobs", type=int, default=40)
    ap.add_argument("--reads", type=int, default=20)
    ap.add_argument("--account", default=None)
    a = ap.parse_args()
    cli = SlurmCli()
    rest, cmds = SlurmRest(a.url, JwtToken(run=cli), cli=cli), SlurmCommands(cli)
    req = SbatchRequest("bench", nodes=1, time_minutes=10, gpus_per_node=8, account=a.account)
    ids: list[str] = []
    sub = {"slurmrestd": [], "sbatch": []}
    try:
        for i in range(a.jobs):
            api, key = (rest, "slurmrestd") if i % 2 == 0 else (cmds, "sbatch")
            t0 = time.perf_counter()
            ids.append(api.submit(req, "sleep 600"))
            sub[key].append(time.perf_counter() - t0)
        reads = {"slurmrestd": timed(rest.view, a.reads), "commands": timed(cmds.view, a.reads)}
        queued = len(rest.view().queue.jobs)
    finally:
        for jid in ids:
            cli(["scancel", jid])
    ms = {k: 1000 * statistics.median(v) for k, v in {**{f"submit {k}": v for k, v in sub.items()},
                                                        **{f"read {k}": v for k, v in reads.items()}}.items()}
    print(f"queue during the reads: {queued} jobs; {a.jobs} submissions, {a.reads} reads each way")
    for k, v in ms.items():
        print(f"{k:>18}: median {v:7.1f} ms")
    print(f"read: commands / slurmrestd = {ms['read commands'] / ms['read slurmrestd']:.2f}; "
          f"submit: sbatch / slurmrestd = {ms['submit sbatch'] / ms['submit slurmrestd']:.2f}")


if __name__ == "__main__":
    main()
