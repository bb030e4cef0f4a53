"""Studies: questions answered by running the simulator or the engine many times (reliability and
spares, hybrid Slurm/Kubernetes, FGD fragmentation, driver-upgrade replay) and the closed forms they
are checked against."""
