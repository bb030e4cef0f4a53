#!/usr/bin/env bash
# Re-capture the Slurm fixtures in this folder from the emulated cluster (needs root; ~2 minutes).
# Usage: bash tests/data/slurm/capture.sh        (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=tests/data/slurm
SCRIPT=tools/slurm-emulated-cluster.sh
export SLURMTEST_NODES=16 SLURMTEST_ACCOUNTING=slurmdbd
bash "$SCRIPT" restart   # fresh state: job ids from 1, empty accounting DB
export SLURM_CONF=/tmp/slurmtest/etc/slurm.conf
trap 'scancel -u root >/dev/null 2>&1 || true' EXIT
S="sbatch --parsable -o /dev/null"

sacctmgr -i add account research,prod >/dev/null || true   # rc 1 when nothing changed
sacctmgr -i add user root account=research,prod >/dev/null || true   # rc 1 when nothing changed
sacctmgr -i add qos high priority=100 >/dev/null || true   # rc 1 when nothing changed
sacctmgr -i add qos small maxtresperuser=gres/gpu=2 >/dev/null || true   # rc 1 when nothing changed
sacctmgr -i modify user root set qos+=high,small >/dev/null || true   # rc 1 when nothing changed
scontrol reconfigure

# history: completed, failed, cancelled while running, cancelled before start, timed out
$S -J done-1gpu -A research --gres=gpu:1 -t 2 --wrap 'sleep 2'
$S -J done-node -A prod --gres=gpu:8 -t 5 --wrap 'sleep 3'
$S -J done-gang -A prod -q high -N 2 --ntasks-per-node=1 --gres=gpu:8 -t 3 --wrap 'sleep 2'
$S -J fails -A research --gres=gpu:2 -t 2 --wrap 'sleep 1; exit 3'
run_cancel=$($S -J cancel-running -A research --gres=gpu:4 -t 10 --wrap 'sleep 300')
pend_cancel=$($S -J cancel-pending -A research -H --gres=gpu:1 -t 2 --wrap 'sleep 1')
timeout_job=$($S -J timeout -A prod --gres=gpu:1 -t 1 --wrap 'sleep 300')
$S -J array -A research --array=1-3 --gres=gpu:1 -t 2 --wrap 'sleep 1'
$S -J steps -A prod -N 2 --ntasks-per-node=1 --gres=gpu:8 -t 2 --wrap 'srun sleep 1; srun sleep 1'
sleep 4
scancel "$run_cancel" "$pend_cancel"

# the live queue: 12 of 16 nodes busy, a drained node, and one pending job per reason
scontrol update nodename=gpu016 state=drain reason="fabric check"
for i in 1 2 3; do
  $S -J train-$i -A prod -N 4 --ntasks-per-node=1 --gres=gpu:8 -t 30 --wrap 'sleep 1200'
done
$S -J dev-small -A research --gres=gpu:2 -t 20 --wrap 'sleep 1200'
sleep 3
big=$($S -J big-8node -A prod -N 8 --ntasks-per-node=1 --gres=gpu:8 -t 60 --wrap 'sleep 60')
$S -J behind -A research -N 2 --ntasks-per-node=1 --gres=gpu:8 -t 60 --wrap 'sleep 60'
$S -J wide-1switch -A prod -N 9 --switches=1@10:00 --ntasks-per-node=1 --gres=gpu:8 -t 60 --wrap 'sleep 60'
$S -J after-big -A research -d afterok:"$big" --gres=gpu:1 -t 5 --wrap 'sleep 1'
$S -J later -A research --begin=now+1hour --gres=gpu:1 -t 5 --wrap 'sleep 1'
$S -J held -A research -H --gres=gpu:1 -t 5 --wrap 'sleep 1'
$S -J on-drained -A research -w gpu016 --gres=gpu:1 -t 5 --wrap 'sleep 1'
$S -J qos-cap -A research -q small --gres=gpu:4 -t 5 --wrap 'sleep 1'
sleep 4

cp /tmp/slurmtest/etc/slurm.conf /tmp/slurmtest/etc/gres.conf /tmp/slurmtest/etc/topology.conf "$OUT/"
squeue --json > "$OUT/squeue.json"
squeue -a -h -o '%i|%j|%a|%q|%T|%r|%D|%b|%l|%V|%S|%Q|%N' > "$OUT/squeue.txt"
squeue --start -h -o '%i|%S|%r|%N|%Y' > "$OUT/squeue-start.txt"
sinfo -N -h -o '%N|%T|%G|%E' > "$OUT/sinfo.txt"
scontrol show node -o > "$OUT/scontrol-nodes.txt"
scontrol show job -o > "$OUT/scontrol-jobs.txt"
date -Iseconds > "$OUT/captured-at.txt"

# history: cancel the queue (running jobs end CANCELLED, pending ones never start), wait for
# the time-limit kill, then read every job id: -S/-E would leave out never-eligible jobs
last=$($S -J last -A research --gres=gpu:1 -t 1 --wrap 'true')
squeue -h -o %i | grep -vx -e "$timeout_job" -e "$last" | xargs -r scancel
echo "waiting for the time-limit kill of job $timeout_job (up to ~2 minutes)"
for _ in $(seq 150); do
  [ -z "$(squeue -h -t PD,R,CG -j "$timeout_job" -o %i 2>/dev/null)" ] && break; sleep 1
done
sleep 2
SACCT_FIELDS=JobID,JobName,Account,QOS,AllocTRES,ReqTRES,Submit,Start,End,Elapsed,TimelimitRaw,State,NNodes,Priority,NodeList
sacct -a -P -o "$SACCT_FIELDS" -j "$(seq -s, 1 "$last")" > "$OUT/sacct.txt"
sed -i "s/^SlurmctldHost=.*/SlurmctldHost=ctl(127.0.0.1)/" "$OUT/slurm.conf"
echo "captured into $OUT"
