#!/usr/bin/env bash
# Capture slurmrestd v0.0.38 answers from the emulated cluster (tools/slurm-emulated-cluster.sh
# with slurmrestd, 4 nodes x 8 H100, slurmdbd). As root, from the repository root, ~30 s.
set -euo pipefail
export SLURMTEST_DIR=/tmp/gpufleet-slurmrestd-capture SLURMTEST_NODES=4 SLURMTEST_NODES_PER_LEAF=4 \
  SLURMTEST_ACCOUNTING=slurmdbd SLURMTEST_CTLD_PORT=25400 SLURMTEST_DBD_PORT=25401 \
  SLURMTEST_MYSQL_PORT=25402 SLURMTEST_RESTD_PORT=25403 SLURMTEST_NODE_PORT_BASE=25410 \
  SLURMTEST_CLUSTER=gfrest
export SLURM_CONF=$SLURMTEST_DIR/etc/slurm.conf
OUT=$(cd "$(dirname "$0")" && pwd)
S=tools/slurm-emulated-cluster.sh
bash $S up >/dev/null
trap 'bash $S purge >/dev/null' EXIT
sacctmgr -i add account research,prod >/dev/null
sacctmgr -i add user root account=research,prod >/dev/null
sleep 3
T=$(bash $S token 600)
H=(-H "X-SLURM-USER-NAME: root" -H "X-SLURM-USER-TOKEN: $T" -H "Content-Type: application/json")
U=http://127.0.0.1:25403
sub() {  # sub NAME NODES GPUS MINUTES ACCOUNT SLEEP
  curl -s -m 20 "${H[@]}" -X POST $U/slurm/v0.0.38/job/submit -d "{\"script\":\"#!/bin/sh\\nsleep $6\\n\",
    \"job\":{\"name\":\"$1\",\"nodes\":$2,\"tasks_per_node\":1,\"gpus_per_node\":\"$3\",\"time_limit\":$4,
    \"account\":\"$5\",\"current_working_directory\":\"/tmp\",\"standard_output\":\"/dev/null\",
    \"environment\":{\"PATH\":\"/bin:/usr/bin\"}}}"
}
sub train 2 8 10 research 300 > "$OUT/submit.json"
sub small 1 4 5 prod 300 >/dev/null
sub gang 3 8 10 prod 60 >/dev/null
scontrol update NodeName=gpu004 State=DRAIN Reason=fabric-check
scontrol create reservation ReservationName=maint StartTime=now+1hour Duration=60 Nodes=gpu003 Users=root >/dev/null
sleep 4
for p in jobs nodes partitions reservations; do curl -s -m 20 "${H[@]}" $U/slurm/v0.0.38/$p > "$OUT/$p.json"; done
curl -s -m 20 "${H[@]}" $U/slurmdb/v0.0.38/associations > "$OUT/associations.json"
sshare -a -P -o Account,User,RawShares,NormShares,RawUsage,EffectvUsage,FairShare > "$OUT/sshare.txt"
curl -s -m 20 -H "X-SLURM-USER-NAME: root" -H "X-SLURM-USER-TOKEN: not-a-token" $U/slurm/v0.0.38/ping \
  -o "$OUT/bad-token.txt" -w '%{http_code}\n' > "$OUT/bad-token.status" || true
date -u +%FT%TZ > "$OUT/captured-at.txt"
