"""Slurm at the edge: its files, history and queue translated into gpufleet's own types.

conf / topology_conf / fleet_conf: slurm.conf, gres.conf, topology.conf <-> Fleet.
reader / queue / reasons: the live queue as a QueueSnapshot, and why a job waits.
mapping / writer: a Job as an sbatch request, submitted with ``sbatch --parsable``.
The sacct history reader lives with the other trace formats in ``gpufleet.traces.slurm_sacct``.
"""
