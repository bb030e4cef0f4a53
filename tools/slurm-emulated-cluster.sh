#!/usr/bin/env bash
# slurm-emulated-cluster.sh -- bring up / tear down a REAL Slurm (Debian 12 "bookworm",
# Slurm 22.05.8) that emulates an N-node x G-GPU cluster on ONE machine, for tests and CI.
#
# How it works (see ../reference/slurm-real-cluster.md for the why and the pitfalls):
#   * one real slurmctld (+ optional slurmdbd on a private MariaDB) and ONE slurmd PER
#     EMULATED NODE, all on this host: every node has NodeAddr=127.0.0.1 and its own Port=;
#   * SlurmdParameters=config_overrides makes each slurmd report the configured CPUs/memory
#     (not this 2-core box), gres.conf gives each node G fake GPUs backed by char devices
#     made with mknod under $SLURMTEST_DIR/dev (no GPU, no driver needed);
#   * topology/tree (topology/block does not exist before Slurm 23.11);
#   * everything (config, state, logs, sockets, munge key, database) lives under
#     $SLURMTEST_DIR; non-default ports; nothing in /etc/slurm or /etc/munge is touched;
#   * the Debian "slurm-wlm-emulator" (front-end mode) package is NOT used: it is broken in
#     bookworm (its binaries link the non-front-end libslurmfull.so; slurmctld dies with
#     "No front end nodes defined" or "Use of FrontendName ... without --enable-front-end").
#
# Usage:  slurm-emulated-cluster.sh install    apt-get the packages (idempotent)
#         slurm-emulated-cluster.sh up         install if needed, then start (idempotent:
#                                              a running cluster with the same settings is kept)
#         slurm-emulated-cluster.sh down       stop everything this script started (by PID)
#         slurm-emulated-cluster.sh purge      down + rm -rf $SLURMTEST_DIR
#         slurm-emulated-cluster.sh restart    down + up
#         slurm-emulated-cluster.sh status     show daemons, sinfo, squeue
#         slurm-emulated-cluster.sh env        print "export SLURM_CONF=..." for eval
#         slurm-emulated-cluster.sh selftest   up, run a small gang/backfill scenario, check it
#         slurm-emulated-cluster.sh node-kill gpu007   crash one emulated node (SIGKILL its slurmd)
#         slurm-emulated-cluster.sh node-start gpu007  bring it back (returns to IDLE by itself)
#         slurm-emulated-cluster.sh restd-stop          stop slurmrestd (by pid file)
#         slurm-emulated-cluster.sh restd-start         start it again
#         slurm-emulated-cluster.sh token [SECONDS]     print a JWT for root (scontrol token)
#
# slurmrestd (Debian's package, REST API v0.0.38) listens on 127.0.0.1:$SLURMTEST_RESTD_PORT
# with JWT auth (AuthAltTypes=auth/jwt, key in $SLURMTEST_DIR/etc/jwt_hs256.key): send the headers
# X-SLURM-USER-NAME: root and X-SLURM-USER-TOKEN: $(slurm-emulated-cluster.sh token).
#
# Settings (environment):
#   SLURMTEST_DIR=/tmp/slurmtest   SLURMTEST_NODES=32        SLURMTEST_GPUS_PER_NODE=8
#   SLURMTEST_CPUS_PER_NODE=64     SLURMTEST_MEM_MB=512000   SLURMTEST_GPU_TYPE=h100
#   SLURMTEST_NODES_PER_LEAF=8     SLURMTEST_LEAVES_PER_POD=4 (3-level tree leaf/pod/spine)
#   SLURMTEST_ACCOUNTING=jobcomp   (jobcomp: jobcomp/filetxt file, read it with "sacct -c";
#                                   slurmdbd: private MariaDB + slurmdbd, sacct works)
#   SLURMTEST_CTLD_PORT=16817 SLURMTEST_DBD_PORT=16819 SLURMTEST_MYSQL_PORT=13306
#   SLURMTEST_RESTD_PORT=16820 (slurmrestd; SLURMTEST_RESTD=0 leaves it out)
#   SLURMTEST_NODE_PORT_BASE=17000 (node i listens on BASE+i)
#   SLURMTEST_CLUSTER=emu  SLURMTEST_DEBUG=info (slurmctld log level)
#   SLURMTEST_ENFORCE=associations,limits,qos (slurmdbd mode; "" = no enforcement)
#   SLURMTEST_KEEP_DB=0 (1 = keep accounts/QOS/job history in MariaDB across 'up')
#   SLURMTEST_SLURMD_TIMEOUT=60 (a killed slurmd => node DOWN after this many seconds)
#   SLURMTEST_EXTRA_CONF="..." lines appended to slurm.conf (e.g. another PartitionName=,
#                              PreemptType=...), newline-separated
#   SLURMTEST_INCLUDE_CONF="..." lines written to etc/site.conf, which slurm.conf reads with
#                              "Include site.conf" just before the SLURMTEST_EXTRA_CONF lines
#
# After "up":  export SLURM_CONF=$SLURMTEST_DIR/etc/slurm.conf  and use sbatch/squeue/... as usual.
set -euo pipefail

B=${SLURMTEST_DIR:-/tmp/slurmtest}
case "$B" in /*/*) ;; *) echo "SLURMTEST_DIR must be an absolute path at least 2 levels deep" >&2; exit 2 ;; esac
NODES=${SLURMTEST_NODES:-32}
GPUS=${SLURMTEST_GPUS_PER_NODE:-8}
CPUS=${SLURMTEST_CPUS_PER_NODE:-64}
MEM=${SLURMTEST_MEM_MB:-512000}
GPU_TYPE=${SLURMTEST_GPU_TYPE:-h100}
LEAF=${SLURMTEST_NODES_PER_LEAF:-8}
PODSZ=${SLURMTEST_LEAVES_PER_POD:-4}
ACCT=${SLURMTEST_ACCOUNTING:-jobcomp}
CTLD_PORT=${SLURMTEST_CTLD_PORT:-16817}
DBD_PORT=${SLURMTEST_DBD_PORT:-16819}
MYSQL_PORT=${SLURMTEST_MYSQL_PORT:-13306}
NODE_PORT_BASE=${SLURMTEST_NODE_PORT_BASE:-17000}
RESTD_PORT=${SLURMTEST_RESTD_PORT:-16820}
RESTD=${SLURMTEST_RESTD:-1}
CLUSTER=${SLURMTEST_CLUSTER:-emu}
DEBUG=${SLURMTEST_DEBUG:-info}
ENFORCE=${SLURMTEST_ENFORCE-associations,limits,qos}   # slurmdbd mode only
KEEP_DB=${SLURMTEST_KEEP_DB:-0}        # 1: keep accounts/QOS/job history across 'up'
SLURMD_TIMEOUT=${SLURMTEST_SLURMD_TIMEOUT:-60}
EXTRA_CONF=${SLURMTEST_EXTRA_CONF:-}     # appended to slurm.conf verbatim
INCLUDE_CONF=${SLURMTEST_INCLUDE_CONF:-} # etc/site.conf, included before EXTRA_CONF
DBPASS=slurmtest-db-pass
MARK="SLURMTEST_OWNER=$B"            # env marker put on every daemon we start

export SLURM_CONF=$B/etc/slurm.conf
SELF=$(readlink -f "$0")
SBIN=/usr/sbin
PKGS=(slurmctld slurmd slurm-client munge)
[ "$RESTD" = 1 ] && PKGS+=(slurmrestd slurm-wlm-jwt-plugin)
[ "$ACCT" = slurmdbd ] && PKGS+=(slurmdbd mariadb-server)

log() { printf '[slurmtest %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }
nodename() { printf 'gpu%03d' "$1"; }
wait_for() {  # wait_for SECONDS DESCRIPTION CMD...   (WATCH_PID=file: fail fast if it dies)
  local t=$1 what=$2; shift 2
  local end=$((SECONDS + t)) grace=$((SECONDS + 10))
  until "$@" >/dev/null 2>&1; do
    # a daemonizing slurmctld writes its pid file late (~1 s on a busy box): a missing pid file
    # only counts as a death after a grace period, a dead pid after a second look
    if [ -n "${WATCH_PID:-}" ] && ! { [ -f "$WATCH_PID" ] && kill -0 "$(cat "$WATCH_PID")" 2>/dev/null; } \
       && { [ -f "$WATCH_PID" ] || [ $SECONDS -ge $grace ]; }; then
      sleep 1; "$@" >/dev/null 2>&1 && return 0
      [ -f "$WATCH_PID" ] && kill -0 "$(cat "$WATCH_PID")" 2>/dev/null && continue
      [ -n "${WATCH_LOG:-}" ] && tail -5 "$WATCH_LOG" >&2
      die "$what died during start-up (see ${WATCH_LOG:-its log})"
    fi
    [ $SECONDS -ge $end ] && { [ -n "${WATCH_LOG:-}" ] && tail -5 "$WATCH_LOG" >&2; die "timed out after ${t}s waiting for: $what"; }
    sleep 0.2
  done
}

# ---------------------------------------------------------------------------- install
do_install() {
  local missing=()
  for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && { log "packages present: ${PKGS[*]}"; return 0; }
  [ "$(id -u)" = 0 ] || die "need root to apt-get install ${missing[*]}"
  local t0; t0=$(now)
  log "apt-get update"
  apt-get update -qq
  log "apt-get install ${missing[*]}"
  # policy-rc.d (if any) keeps the packaged services from starting; we never use them anyway
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  log "install done in $(since "$t0")s"
}

check_bins() {
  for b in slurmctld slurmd slurmstepd; do
    [ -x "$SBIN/$b-wlm" ] || die "$SBIN/$b-wlm missing (install slurmctld/slurmd)"
  done
  [ "$ACCT" != slurmdbd ] || [ -x "$SBIN/slurmdbd" ] || die "slurmdbd missing"
  command -v munged >/dev/null || die "munged missing"
}

# ---------------------------------------------------------------------------- config
settings_sig() {   # any change of settings or of this script => full restart on 'up'
  echo "$(sha1sum < "$SELF" | cut -c1-12) $RESTD $RESTD_PORT $NODES $GPUS $CPUS $MEM $GPU_TYPE $LEAF $PODSZ $ACCT $ENFORCE $KEEP_DB $SLURMD_TIMEOUT $(printf %s "$EXTRA_CONF" | sha1sum | cut -c1-8) $(printf %s "$INCLUDE_CONF" | sha1sum | cut -c1-8) $CTLD_PORT $DBD_PORT $MYSQL_PORT $NODE_PORT_BASE $CLUSTER $DEBUG $(hostname -s)"
}

write_config() {
  local host; host=$(hostname -s)
  local last; last=$(nodename "$NODES")
  local all="gpu[001-${last#gpu}]"
  mkdir -p "$B"/{etc,run,log,state,spool,munge,dev,out,bin}
  chmod 755 "$B" "$B/run"; chmod 700 "$B/munge"

  # The daemons MUST be exec'ed under their plain names: libslurmfull decides "am I
  # slurmctld/slurmd?" from argv[0] (run_in_daemon()), and e.g. Gres= in slurm.conf is
  # silently dropped when the binary runs as "slurmctld-wlm". /usr/sbin/slurmctld itself is
  # an alternatives link that slurm-wlm-emulator hijacks, so use our own links.
  for d in slurmctld slurmd slurmstepd; do ln -sfn "$SBIN/$d-wlm" "$B/bin/$d"; done
  [ "$ACCT" = slurmdbd ] && ln -sfn "$SBIN/slurmdbd" "$B/bin/slurmdbd"

  # fake GPU device files: gres/gpu drops file-less GPUs and rejects non-device files
  local g
  for ((g = 0; g < GPUS; g++)); do
    [ -c "$B/dev/nvidia$g" ] || { rm -f "$B/dev/nvidia$g"; mknod "$B/dev/nvidia$g" c 195 "$g"; }
  done

  # JWT (slurmrestd's auth and `scontrol token`): an HS256 key only SlurmUser (root) may read
  local jwt_lines="# no slurmrestd (SLURMTEST_RESTD=0): munge only"
  if [ "$RESTD" = 1 ]; then
    [ -s "$B/etc/jwt_hs256.key" ] || dd if=/dev/urandom of="$B/etc/jwt_hs256.key" bs=32 count=1 status=none
    chmod 600 "$B/etc/jwt_hs256.key"
    jwt_lines="AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$B/etc/jwt_hs256.key"
  fi

  local acct_lines prio_lines
  if [ "$ACCT" = slurmdbd ]; then
    # AccountingStoragePass = the munge socket used for slurmdbd traffic (sacct, sacctmgr,
    # slurmctld->slurmdbd); without it they use /run/munge/munge.socket.2, not AuthInfo's
    acct_lines="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
AccountingStoragePass=$B/run/munge.socket
AccountingStorageTRES=gres/gpu
AccountingStoreFlags=job_comment
JobAcctGatherType=jobacct_gather/none"
    # Age and fairshare factors need slurmdbd (slurmctld ignores them otherwise)
    # an empty SLURMTEST_ENFORCE omits the line: 22.05 rejects "AccountingStorageEnforce=none"
    prio_lines="${ENFORCE:+AccountingStorageEnforce=$ENFORCE
}PriorityCalcPeriod=1
PriorityWeightAge=1000
PriorityWeightFairshare=10000
PriorityWeightQOS=1000
PriorityMaxAge=00:10:00
PriorityDecayHalfLife=00:30:00"
  else
    # (AccountingStorageTRES=gres/gpu here is fatal: "slurmdbd is required to run with TRES")
    acct_lines="AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none"
    prio_lines=""
  fi

  cat > "$B/etc/slurm.conf" <<EOF
# generated by slurm-emulated-cluster.sh -- $NODES nodes x $GPUS GPUs ($GPU_TYPE)
ClusterName=$CLUSTER
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$CTLD_PORT
SlurmdPort=$((NODE_PORT_BASE))
AuthType=auth/munge
AuthInfo=socket=$B/run/munge.socket
$jwt_lines
CredType=cred/munge
StateSaveLocation=$B/state
SlurmdSpoolDir=$B/spool/%n
SlurmctldPidFile=$B/run/slurmctld.pid
SlurmdPidFile=$B/run/slurmd-%n.pid
SlurmctldLogFile=$B/log/slurmctld.log
SlurmdLogFile=$B/log/slurmd-%n.log
SlurmctldDebug=$DEBUG
SlurmdDebug=error
MailProg=/bin/true
ProctrackType=proctrack/pgid
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=2
SlurmdTimeout=$SLURMD_TIMEOUT
MinJobAge=120
MaxJobCount=100000
MaxArraySize=100000
MessageTimeout=20
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefCpuPerGPU=$((CPUS / GPUS))
DefMemPerGPU=$((MEM / GPUS))
GresTypes=gpu
TopologyPlugin=topology/tree
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,bf_continue,bf_resolution=60,bf_window=1440,bf_max_job_test=1000,default_queue_depth=1000,sched_min_interval=100000
PriorityType=priority/multifactor
PriorityWeightJobSize=1000
PriorityWeightPartition=1000
$prio_lines
$acct_lines
JobCompType=jobcomp/filetxt
JobCompLoc=$B/log/jobcomp.txt
NodeName=DEFAULT CPUs=$CPUS Boards=1 SocketsPerBoard=2 CoresPerSocket=$((CPUS / 2)) ThreadsPerCore=1 RealMemory=$MEM Gres=gpu:$GPU_TYPE:$GPUS Feature=$GPU_TYPE State=UNKNOWN
EOF
  local i
  for ((i = 1; i <= NODES; i++)); do
    # distinct NodeHostname (non-multiple-slurmd build rejects duplicates), shared NodeAddr,
    # distinct Port. (Gres= is repeated per node only for explicitness: NodeName=DEFAULT's Gres
    # is inherited fine once the daemons run under their plain names)
    echo "NodeName=$(nodename $i) NodeHostname=$(nodename $i) NodeAddr=127.0.0.1 Port=$((NODE_PORT_BASE + i)) Gres=gpu:$GPU_TYPE:$GPUS"
  done >> "$B/etc/slurm.conf"
  cat >> "$B/etc/slurm.conf" <<EOF
PartitionName=gpu Nodes=$all Default=YES DefaultTime=00:10:00 MaxTime=INFINITE State=UP PriorityJobFactor=1
EOF
  # a site file read with Include (relative: Slurm looks in slurm.conf's directory)
  if [ -n "$INCLUDE_CONF" ]; then
    printf "%s\n" "$INCLUDE_CONF" > "$B/etc/site.conf"
    echo "Include site.conf" >> "$B/etc/slurm.conf"
  fi
  # extra lines (more partitions, preemption, QOS-related settings...) appended verbatim
  if [ -n "$EXTRA_CONF" ]; then printf "%s\n" "$EXTRA_CONF" >> "$B/etc/slurm.conf"; fi

  cat > "$B/etc/gres.conf" <<EOF
AutoDetect=off
NodeName=$all Name=gpu Type=$GPU_TYPE File=$B/dev/nvidia[0-$((GPUS - 1))]
EOF

  # topology.conf: leaf switches of $LEAF nodes, pods of $PODSZ leaves, one spine
  local nleaf=$(( (NODES + LEAF - 1) / LEAF )) l p first lastn
  {
    for ((l = 1; l <= nleaf; l++)); do
      first=$(( (l - 1) * LEAF + 1 )); lastn=$(( l * LEAF )); [ $lastn -gt $NODES ] && lastn=$NODES
      printf 'SwitchName=leaf%02d Nodes=gpu[%03d-%03d]\n' "$l" "$first" "$lastn"
    done
    local npod=$(( (nleaf + PODSZ - 1) / PODSZ ))
    if [ $npod -gt 1 ]; then
      for ((p = 1; p <= npod; p++)); do
        first=$(( (p - 1) * PODSZ + 1 )); lastn=$(( p * PODSZ )); [ $lastn -gt $nleaf ] && lastn=$nleaf
        printf 'SwitchName=pod%02d Switches=leaf[%02d-%02d]\n' "$p" "$first" "$lastn"
      done
      printf 'SwitchName=spine Switches=pod[01-%02d]\n' "$npod"
    else
      printf 'SwitchName=spine Switches=leaf[01-%02d]\n' "$nleaf"
    fi
  } > "$B/etc/topology.conf"

  if [ "$ACCT" = slurmdbd ]; then
    cat > "$B/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$B/run/munge.socket
$jwt_lines
DbdHost=$host
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
DebugLevel=info
LogFile=$B/log/slurmdbd.log
PidFile=$B/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$MYSQL_PORT
StorageUser=slurm
StoragePass=$DBPASS
StorageLoc=slurm_acct_db
EOF
    chmod 600 "$B/etc/slurmdbd.conf"   # slurmdbd refuses a group/world-readable file
  fi
  settings_sig > "$B/etc/settings"
}

# ---------------------------------------------------------------------------- daemons
pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

start_munge() {
  if pid_alive "$B/run/munged.pid"; then return 0; fi
  [ -s "$B/munge/munge.key" ] || { dd if=/dev/urandom of="$B/munge/munge.key" bs=1024 count=1 status=none; }
  chmod 400 "$B/munge/munge.key"
  rm -f "$B/run/munge.socket" "$B/run/munge.socket.lock"
  env "$MARK" munged --force --socket="$B/run/munge.socket" --key-file="$B/munge/munge.key" \
    --pid-file="$B/run/munged.pid" --log-file="$B/log/munged.log" --seed-file="$B/munge/munged.seed" \
    --num-threads=4
  wait_for 10 munged sh -c "munge -S '$B/run/munge.socket' -n | unmunge -S '$B/run/munge.socket'"
}

mysql_cli() { mariadb --no-defaults --socket="$B/run/mysqld.sock" -uroot "$@"; }

start_mariadb() {
  if pid_alive "$B/run/mariadb.pid"; then return 0; fi
  local fresh=0
  if [ ! -d "$B/mysql/mysql" ]; then
    fresh=1
    rm -rf "$B/mysql"; mkdir -p "$B/mysql"
    mariadb-install-db --no-defaults --datadir="$B/mysql" --user=root --skip-test-db \
      --auth-root-authentication-method=socket > "$B/log/mariadb-install.log" 2>&1 \
      || die "mariadb-install-db failed, see $B/log/mariadb-install.log"
  fi
  # slurmdbd talks TCP to 127.0.0.1:$MYSQL_PORT; we talk to the private unix socket
  env "$MARK" setsid mariadbd --no-defaults --datadir="$B/mysql" --user=root \
    --socket="$B/run/mysqld.sock" --port="$MYSQL_PORT" --bind-address=127.0.0.1 \
    --skip-name-resolve --pid-file="$B/run/mariadb.pid" --log-error="$B/log/mariadb.log" \
    --innodb-buffer-pool-size=256M --innodb-log-file-size=64M --innodb-lock-wait-timeout=900 \
    --innodb-flush-log-at-trx-commit=0 --skip-log-bin </dev/null >/dev/null 2>&1 &
  WATCH_LOG=$B/log/mariadb.log wait_for 60 mariadb mysql_cli -e 'select 1'
  if [ "$KEEP_DB" != 1 ]; then
    # job ids restart at 1 with a fresh StateSaveLocation: old history would collide in sacct
    mysql_cli -e "DROP DATABASE IF EXISTS slurm_acct_db"
  fi
  if [ $fresh = 1 ]; then
    mysql_cli -e "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DBPASS';
      GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;"
  fi
}

start_slurmdbd() {
  if pid_alive "$B/run/slurmdbd.pid"; then return 0; fi
  (cd "$B/log" && env "$MARK" "$B/bin/slurmdbd") || die "slurmdbd failed: $(tail -3 "$B/log/slurmdbd.log")"
  WATCH_PID=$B/run/slurmdbd.pid WATCH_LOG=$B/log/slurmdbd.log wait_for 60 slurmdbd sacctmgr -n show cluster
  # the cluster must exist in the database before slurmctld registers with it
  sacctmgr -n show cluster format=cluster | grep -qw "$CLUSTER" \
    || sacctmgr -i add cluster "$CLUSTER" >/dev/null
}

start_slurmctld() {
  if pid_alive "$B/run/slurmctld.pid"; then return 0; fi
  # -i: ignore unreadable state; state is wiped on a fresh 'up' anyway
  (cd "$B/log" && env "$MARK" "$B/bin/slurmctld" -i) || die "slurmctld failed: $(tail -3 "$B/log/slurmctld.log")"
  WATCH_PID=$B/run/slurmctld.pid WATCH_LOG=$B/log/slurmctld.log wait_for 30 slurmctld scontrol ping
}

start_slurmds() {
  local i n
  for ((i = 1; i <= NODES; i++)); do
    n=$(nodename $i)
    pid_alive "$B/run/slurmd-$n.pid" && continue
    mkdir -p "$B/spool/$n"
    (cd "$B/log" && env "$MARK" "$B/bin/slurmd" -N "$n" -d "$B/bin/slurmstepd")
  done
  wait_for 60 "all $NODES nodes idle" sh -c "[ \"\$(sinfo -h -N -t idle -o %N | sort -u | wc -l)\" -eq $NODES ]"
}

# slurmrestd does not daemonize: run it in the background, its pid in run/slurmrestd.pid. It refuses
# to run as root or SlurmUser; it runs as nobody (setuid after binding), the JWT says who asks.
start_slurmrestd() {
  [ "$RESTD" = 1 ] || return 0
  if pid_alive "$B/run/slurmrestd.pid"; then return 0; fi
  [ -x "$SBIN/slurmrestd" ] || die "$SBIN/slurmrestd missing (install slurmrestd)"
  port_free "$RESTD_PORT" || die "port $RESTD_PORT on 127.0.0.1 is in use (set SLURMTEST_RESTD_PORT)"
  env "$MARK" SLURM_CONF="$B/etc/slurm.conf" SLURM_JWT=daemon setsid "$SBIN/slurmrestd" -a rest_auth/jwt \
    -s openapi/v0.0.38,openapi/dbv0.0.38 -u nobody "127.0.0.1:$RESTD_PORT" \
    </dev/null >"$B/log/slurmrestd.log" 2>&1 &
  echo $! > "$B/run/slurmrestd.pid"
  WATCH_PID=$B/run/slurmrestd.pid WATCH_LOG=$B/log/slurmrestd.log wait_for 30 slurmrestd \
    bash -c "exec 3<>/dev/tcp/127.0.0.1/$RESTD_PORT"
}
do_restd_stop() {
  local f=$B/run/slurmrestd.pid p
  pid_alive "$f" || { log "slurmrestd not running"; rm -f "$f"; return 0; }
  p=$(cat "$f"); kill -TERM "$p"; wait_gone 10 "$p"; rm -f "$f"; log "stopped slurmrestd"
}
do_token() { scontrol token username=root lifespan="${1:-3600}" | sed -n 's/^SLURM_JWT=//p'; }

cluster_up_ok() {
  [ -f "$B/etc/settings" ] && [ "$(cat "$B/etc/settings")" = "$(settings_sig)" ] || return 1
  pid_alive "$B/run/munged.pid" && pid_alive "$B/run/slurmctld.pid" || return 1
  if [ "$ACCT" = slurmdbd ]; then pid_alive "$B/run/slurmdbd.pid" && pid_alive "$B/run/mariadb.pid" || return 1; fi
  local i; for ((i = 1; i <= NODES; i++)); do pid_alive "$B/run/slurmd-$(nodename $i).pid" || return 1; done
  [ "$RESTD" != 1 ] || pid_alive "$B/run/slurmrestd.pid" || return 1
  scontrol ping >/dev/null 2>&1
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

do_up() {
  do_install
  check_bins
  if cluster_up_ok; then log "cluster already up ($NODES nodes); nothing to do"; do_env; return 0; fi
  do_down quiet
  # a failed start-up must not leave half a cluster running
  trap 'log "start-up failed: stopping what was started (logs kept in $B/log)"; do_down quiet' EXIT
  local t0; t0=$(now)
  for p in "$CTLD_PORT" $( [ "$ACCT" = slurmdbd ] && echo "$DBD_PORT $MYSQL_PORT" ) \
           "$((NODE_PORT_BASE + 1))" "$((NODE_PORT_BASE + NODES))" $( [ "$RESTD" = 1 ] && echo "$RESTD_PORT" ); do
    port_free "$p" || die "port $p on 127.0.0.1 is in use (set SLURMTEST_*PORT*)"
  done
  # fresh Slurm state and logs every time; the MariaDB datadir and munge key are kept
  rm -rf "${B:?}/state" "${B:?}/spool" "${B:?}/log" "${B:?}/etc"
  write_config
  start_munge
  if [ "$ACCT" = slurmdbd ]; then start_mariadb; start_slurmdbd; fi
  start_slurmctld
  start_slurmds
  start_slurmrestd
  trap - EXIT
  log "cluster '$CLUSTER' up: $NODES nodes x $GPUS $GPU_TYPE GPUs, accounting=$ACCT, in $(since "$t0")s"
  do_env
}

# ---------------------------------------------------------------------------- teardown
# PIDs of processes carrying our marker in their initial environment (daemons, slurmstepd)
marked_pids() {
  local d p
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [ "$p" = $$ ] && continue
    grep -qzxF "$MARK" "$d/environ" 2>/dev/null && echo "$p"
  done
  return 0
}
descendants() {  # descendants PID -> all its descendants (reads /proc: procps may be absent)
  local d st ppid pid k
  declare -A kids=()
  for d in /proc/[0-9]*; do
    { read -r st < "$d/stat"; } 2>/dev/null || continue
    st=${st##*) }                 # "pid (comm) S ppid ..." -> "S ppid ..."
    read -r _ ppid _ <<< "$st"
    kids[$ppid]+=" ${d#/proc/}"
  done
  local queue=("$1")
  while [ ${#queue[@]} -gt 0 ]; do
    pid=${queue[0]}; queue=("${queue[@]:1}")
    for k in ${kids[$pid]:-}; do echo "$k"; queue+=("$k"); done
  done
}
kill_pidfile() {  # kill_pidfile FILE [SIGNAL]
  local f=$1
  [ -f "$f" ] || return 0
  local p; p=$(cat "$f")
  kill -0 "$p" 2>/dev/null && kill -TERM "$p" 2>/dev/null || true
}
wait_gone() {  # wait_gone SECONDS PID...
  local t=$1; shift
  local end=$((SECONDS + t)) p alive
  while :; do
    alive=""
    for p in "$@"; do kill -0 "$p" 2>/dev/null && alive+=" $p"; done
    [ -z "$alive" ] && return 0
    if [ $SECONDS -ge $end ]; then kill -KILL $alive 2>/dev/null || true; sleep 0.5; return 0; fi
    sleep 0.2
  done
}

do_down() {
  local quiet=${1:-}
  [ -d "$B" ] || return 0
  # 1. cancel jobs so slurmstepd kills the job processes itself
  if [ -f "$B/run/slurmctld.pid" ] && pid_alive "$B/run/slurmctld.pid"; then
    squeue -h -o %i 2>/dev/null | xargs -r scancel --full --quiet 2>/dev/null || true
    local end=$((SECONDS + 5))
    while [ -n "$(squeue -h -t R,CG -o %i 2>/dev/null)" ] && [ $SECONDS -lt $end ]; do sleep 0.3; done
  fi
  # 2. daemons via their pid files, slurmds first, munged last
  local pids=() f
  for f in "$B/run/slurmrestd.pid" "$B"/run/slurmd-*.pid "$B/run/slurmctld.pid" "$B/run/slurmdbd.pid" "$B/run/mariadb.pid"; do
    [ -f "$f" ] && pid_alive "$f" && { pids+=("$(cat "$f")"); kill_pidfile "$f"; }
  done
  [ ${#pids[@]} -gt 0 ] && wait_gone 10 "${pids[@]}"
  # 3. leftovers (slurmstepd of jobs that did not die, a daemon whose pid file was lost) and
  #    their children (job processes); all identified by the marker in their environment
  local left=() p
  for p in $(marked_pids); do
    [ -f "$B/run/munged.pid" ] && [ "$p" = "$(cat "$B/run/munged.pid" 2>/dev/null)" ] && continue
    left+=("$p") ; for k in $(descendants "$p"); do left+=("$k"); done
  done
  if [ ${#left[@]} -gt 0 ]; then
    kill -TERM "${left[@]}" 2>/dev/null || true
    wait_gone 5 "${left[@]}"
  fi
  if pid_alive "$B/run/munged.pid"; then p=$(cat "$B/run/munged.pid"); kill -TERM "$p"; wait_gone 5 "$p"; fi
  rm -f "$B"/run/*.pid "$B/run/munge.socket" "$B/run/munge.socket.lock"
  [ -z "$quiet" ] && log "stopped"
  return 0
}

do_purge() { do_down quiet; rm -rf "${B:?}"; log "purged $B"; }

# emulate a node crash: kill that node's slurmd only (its running job steps keep running, the
# node goes DOWN* "Not responding" after ~SlurmdTimeout+30s, its jobs end NODE_FAIL/requeued)
do_node_kill() {
  local n=${1:?node name}; local f=$B/run/slurmd-$n.pid
  pid_alive "$f" || die "slurmd for $n not running"
  kill -KILL "$(cat "$f")"; rm -f "$f"; log "killed slurmd of $n"
}
# restart a node's slurmd; with ReturnToService=2 a DOWN node comes back IDLE by itself
do_node_start() {
  local n=${1:?node name}
  pid_alive "$B/run/slurmd-$n.pid" && { log "$n already running"; return 0; }
  mkdir -p "$B/spool/$n"
  (cd "$B/log" && env "$MARK" "$B/bin/slurmd" -N "$n" -d "$B/bin/slurmstepd")
  log "started slurmd of $n"
}

do_env() {
  echo "export SLURM_CONF=$B/etc/slurm.conf"
  [ "$RESTD" = 1 ] && echo "export SLURMRESTD_URL=http://127.0.0.1:$RESTD_PORT"   # gpufleet serve --source slurm --slurmrestd $SLURMRESTD_URL
  return 0
}

do_status() {
  local f
  for f in "$B"/run/*.pid; do
    [ -f "$f" ] || continue
    printf '%-16s %s\n' "$(basename "$f" .pid)" "$(pid_alive "$f" && echo "up pid $(cat "$f")" || echo DEAD)"
  done | paste - - - -
  scontrol ping 2>&1 || true
  sinfo 2>&1 || true
  squeue -o '%.8i %.10j %.9T %.6D %.14b %.30R' 2>&1 | head -40 || true
}

# ---------------------------------------------------------------------------- selftest
do_selftest() {
  do_up >/dev/null
  [ "$NODES" -ge 16 ] || die "selftest wants SLURMTEST_NODES>=16"
  local out=$B/out; mkdir -p "$out"; cd "$out"
  squeue -h -o %i | xargs -r scancel --quiet 2>/dev/null || true
  local n_other=$((NODES - 12))
  log "selftest: fill the cluster, then queue gang + small jobs"
  local a b c s
  a=$(sbatch --parsable -J fillA --nodes=12 --gres=gpu:$GPUS -t 1 -o /dev/null --wrap 'sleep 20')
  b=$(sbatch --parsable -J fillB --nodes=$n_other --gres=gpu:$GPUS -t 2 -o /dev/null --wrap 'sleep 40')
  c=$(sbatch --parsable -J gang8 --nodes=8 --gres=gpu:$GPUS -t 2 -o /dev/null --wrap 'sleep 5')
  sbatch --parsable -J gang8b --nodes=8 --gres=gpu:$GPUS -t 2 -o /dev/null --wrap 'sleep 5' >/dev/null
  s=$(sbatch --parsable -J small --gres=gpu:1 -t 1 -o /dev/null --wrap 'sleep 5')
  sleep 3
  squeue -o '%i %j %T %r %D %b %R'
  [ "$(squeue -h -j "$a" -o %T)" = RUNNING ] || die "fillA not running"
  [ "$(squeue -h -j "$c" -o %r)" = Resources ] || die "gang8 reason is not Resources"
  log "waiting for fillA to end; gang8 must start on its nodes"
  wait_for 90 "gang8 running" sh -c "[ \"\$(squeue -h -j $c -o %T)\" != PENDING ]"
  log "gang8 started: $(squeue -h -j "$c" -o '%T %N' || true)"
  wait_for 120 "queue drained" sh -c '[ -z "$(squeue -h -o %i)" ]'
  grep -q "JobId=$s .*JobState=COMPLETED" "$B/log/jobcomp.txt" || die "small job not COMPLETED in jobcomp"
  grep -c JobState=COMPLETED "$B/log/jobcomp.txt" | xargs -I{} echo "jobcomp records: {}"
  if [ "$ACCT" = slurmdbd ]; then sacct -X -a -o JobID,JobName,State,AllocTRES%50,Elapsed | tail -8; fi
  log "selftest passed"
}

case "${1:-}" in
  install)  do_install ;;
  up|start) do_up ;;
  down|stop) do_down ;;
  purge)    do_purge ;;
  restart)  do_down quiet; do_up ;;
  status)   do_status ;;
  env)      do_env ;;
  selftest) do_selftest ;;
  node-kill)  do_node_kill "${2:-}" ;;
  node-start) do_node_start "${2:-}" ;;
  restd-stop)  do_restd_stop ;;
  restd-start) start_slurmrestd; log "slurmrestd on 127.0.0.1:$RESTD_PORT" ;;
  token)      do_token "${2:-}" ;;
  *) sed -n '2,50p' "$0"; exit 2 ;;
esac
