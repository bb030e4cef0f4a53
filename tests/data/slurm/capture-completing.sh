#!/usr/bin/env bash
# Capture the fixtures in completing/ and partition/ from the emulated cluster (needs root).
# Usage (from the repository root), with the cluster's settings in the environment, e.g.
# (slurmdbd accounting: without it scontrol's AllocTRES carries no gres/gpu)
#   SLURMTEST_DIR=/tmp/slurmcg SLURMTEST_NODES=8 SLURMTEST_NODES_PER_LEAF=4 \
#   SLURMTEST_ACCOUNTING=slurmdbd SLURMTEST_SLURMD_TIMEOUT=20 bash tests/data/slurm/capture-completing.sh
# completing/: a 2-node gang on gpu[007-008] whose gpu008 slurmd is killed (SIGKILL): once the
#   node is DOWN, Slurm ends the gang (--no-requeue) and lists it COMPLETING (Reason=NodeDown)
#   for a few seconds; the four outputs the reader takes are captured as soon as squeue shows it.
# partition/: partition `half` = gpu[001-004] made with scontrol; a 4-node blocker fills it and
#   a 1-node 8-GPU job submitted to `half` waits (Resources) while gpu[005-008] are idle.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=tests/data/slurm
SCRIPT=tools/slurm-emulated-cluster.sh
bash "$SCRIPT" restart >/dev/null
export SLURM_CONF=$SLURMTEST_DIR/etc/slurm.conf
trap 'scancel -u root >/dev/null 2>&1 || true' EXIT
snap() {  # the four commands SlurmReader.snapshot runs, and the time
  date +%s > "$1/captured-at.txt"
  squeue --json > "$1/squeue.json"
  scontrol show node -o > "$1/scontrol-nodes.txt"
  squeue --start -h -o '%i|%S|%r|%N|%Y' > "$1/squeue-start.txt"
  scontrol show job -o > "$1/scontrol-jobs.txt"
}

gang=$(sbatch --parsable -o /dev/null -J dies --no-requeue -N 2 -w gpu007,gpu008 --gres=gpu:4 -t 5 --wrap 'sleep 300')
bystander=$(sbatch --parsable -o /dev/null -J bystander -N 1 -w gpu001 --gres=gpu:8 -t 10 --wrap 'sleep 300')
until [ "$(squeue -h -j "$gang,$bystander" -t R -o %i | wc -l)" = 2 ]; do sleep 0.5; done
bash "$SCRIPT" node-kill gpu008 >/dev/null
until [ "$(squeue -h -j "$gang" -o %T)" = COMPLETING ]; do sleep 0.2; done
snap "$OUT/completing"
echo "completing: job $gang captured COMPLETING"
scancel -u root; until [ -z "$(squeue -h -o %i)" ]; do sleep 0.5; done
bash "$SCRIPT" node-start gpu008 >/dev/null
scontrol update NodeName=gpu008 State=RESUME || true

scontrol create PartitionName=half Nodes=gpu[001-004] MaxTime=INFINITE State=UP
blocker=$(sbatch --parsable -o /dev/null -p half -J blocker -N 4 --gres=gpu:8 -t 5 --wrap 'sleep 300')
until [ -n "$(squeue -h -j "$blocker" -t R -o %i)" ]; do sleep 0.5; done
waiting=$(sbatch --parsable -o /dev/null -p half -J in-half -N 1 --gres=gpu:8 -t 10 --wrap 'sleep 1')
until [ "$(squeue -h -j "$waiting" -o %r)" = Resources ]; do sleep 0.5; done
sleep 3   # let the backfill pass plan it (squeue --start)
snap "$OUT/partition"
echo "partition: job $waiting captured waiting in half behind $blocker"
