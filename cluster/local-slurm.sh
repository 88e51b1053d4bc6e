#!/usr/bin/env bash
# A real single-node Slurm cluster (munge + slurmctld + slurmd) on this machine, for tests and demos.
#
#   cluster/local-slurm.sh up       start it; prints `export SLURM_CONF=...` (also in $STATE/env)
#   cluster/local-slurm.sh status   the daemons' pids and `sinfo`
#   cluster/local-slurm.sh down     cancel every job, stop the daemons this script started, remove $STATE
#
# Everything lives under a throw-away state directory (ATTNLAB_SLURM_DIR, default
# /tmp/attnlab-slurm): slurm.conf written for this machine (the node line from `slurmd -C`), a munged
# of its own on its own socket (so an existing munge or Slurm installation is never touched), the
# daemons' pid, log, spool and state files. `down` stops only the pids recorded there.
# The settings keep CI from hanging: impossible jobs are rejected at submit (EnforcePartLimits=ALL),
# children of failed jobs are cancelled (kill_invalid_depend), requeued jobs restart within seconds
# (cred_expire=10, sched_interval=2). Needs root (Slurm runs jobs as root here) and the Debian
# packages slurmctld slurmd slurm-client munge.
#
# Environment: ATTNLAB_SLURM_DIR (state directory), ATTNLAB_SLURM_PORT (slurmctld port, default
# 6817; slurmd uses the next one), ATTNLAB_SLURM_PARTITION (default attnlab).
set -euo pipefail

STATE=${ATTNLAB_SLURM_DIR:-/tmp/attnlab-slurm}
CTLD_PORT=${ATTNLAB_SLURM_PORT:-6817}
SLURMD_PORT=$((CTLD_PORT + 1))
PARTITION=${ATTNLAB_SLURM_PARTITION:-attnlab}
CONF=$STATE/slurm.conf

die() {
  echo "local-slurm: $*" >&2
  exit 1
}

# pid_alive FILE: the pid recorded in FILE runs.
pid_alive() {
  [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null
}

write_conf() {
  local node
  node=$(slurmd -C | grep '^NodeName=') || die "slurmd -C printed no node line"
  cat >"$CONF" <<EOF
# Written by cluster/local-slurm.sh for $(hostname); removed by 'local-slurm.sh down'.
ClusterName=attnlab
SlurmctldHost=localhost
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$STATE/munge/munge.socket,cred_expire=10
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$STATE/jobcomp.txt
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
ReturnToService=2
MailProg=/bin/true
EnforcePartLimits=ALL
DependencyParameters=kill_invalid_depend
SchedulerParameters=sched_interval=2,batch_sched_delay=0
KillWait=10
MinJobAge=300
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
}

start_munge() {
  install -d -o munge -g munge -m 0755 "$STATE/munge"
  runuser -u munge -- /usr/sbin/munged --socket="$STATE/munge/munge.socket" \
    --pid-file="$STATE/munge/munged.pid" --log-file="$STATE/munge/munged.log" \
    --seed-file="$STATE/munge/munged.seed" || die "munged did not start: $(tail -n 3 "$STATE/munge/munged.log" 2>/dev/null)"
  munge -n -S "$STATE/munge/munge.socket" | unmunge -S "$STATE/munge/munge.socket" >/dev/null ||
    die "munge does not answer on $STATE/munge/munge.socket"
}

# wait_for SECONDS COMMAND...: polls COMMAND every 0.2 s until it succeeds.
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}

no_running_jobs() {
  [[ -z $(squeue -h -t running,completing 2>/dev/null) ]]
}

node_idle() {
  [[ $(sinfo -h -o %t 2>/dev/null) == idle ]]
}

up() {
  [[ $EUID -eq 0 ]] || die "needs root (slurmd runs jobs as their user, here root)"
  for tool in slurmctld slurmd munged sinfo; do
    command -v "$tool" >/dev/null || [[ -x /usr/sbin/$tool ]] ||
      die "$tool is not installed (apt-get install slurmctld slurmd slurm-client munge)"
  done
  if pid_alive "$STATE/slurmctld.pid"; then
    echo "export SLURM_CONF=$CONF"
    return 0
  fi
  rm -rf "$STATE"
  mkdir -p "$STATE/ctld" "$STATE/spool"
  write_conf
  export SLURM_CONF=$CONF
  start_munge
  /usr/sbin/slurmctld -f "$CONF" || die "slurmctld did not start: $(tail -n 5 "$STATE/slurmctld.log")"
  /usr/sbin/slurmd -f "$CONF" || die "slurmd did not start: $(tail -n 5 "$STATE/slurmd.log")"
  wait_for 30 node_idle || die "the node did not become idle: $(sinfo 2>&1; tail -n 5 "$STATE/slurmctld.log")"
  echo "export SLURM_CONF=$CONF" >"$STATE/env"
  echo "export SLURM_CONF=$CONF"
}

# stop_pid FILE: TERM the pid recorded in FILE (read beforehand), wait up to 10 s, then KILL.
stop_pid() {
  local pid=$1
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.2
  done
  kill -KILL "$pid" 2>/dev/null || true
}

down() {
  [[ -d $STATE ]] || return 0
  export SLURM_CONF=$CONF
  # Read every pid first: the daemons delete their pid files on the way out.
  local ctld_pid slurmd_pid munge_pid
  ctld_pid=$(cat "$STATE/slurmctld.pid" 2>/dev/null || true)
  slurmd_pid=$(cat "$STATE/slurmd.pid" 2>/dev/null || true)
  munge_pid=$(cat "$STATE/munge/munged.pid" 2>/dev/null || true)
  if [[ -n $ctld_pid ]] && kill -0 "$ctld_pid" 2>/dev/null; then
    # Killing slurmd does not end running job steps: cancel the jobs and let them go first.
    scancel --full --quiet --partition="$PARTITION" 2>/dev/null || true
    wait_for 15 no_running_jobs || true
  fi
  stop_pid "$slurmd_pid"
  stop_pid "$ctld_pid"
  stop_pid "$munge_pid"
  rm -rf "$STATE"
}

status() {
  [[ -f $CONF ]] || {
    echo "local-slurm: down (no $CONF)"
    return 1
  }
  export SLURM_CONF=$CONF
  local name file
  for name in slurmctld slurmd munge/munged; do
    file=$STATE/$name.pid
    if pid_alive "$file"; then
      echo "${name#munge/} running (pid $(cat "$file"))"
    else
      echo "${name#munge/} stopped"
    fi
  done
  echo "export SLURM_CONF=$CONF"
  sinfo
}

case ${1:-} in
  up) up ;;
  down) down ;;
  status) status ;;
  *)
    echo "usage: $0 up|down|status" >&2
    exit 2
    ;;
esac
