#!/usr/bin/env bash
# A real Slurm cluster (munge + slurmctld + slurmd) on this machine, for tests and demos.
#
#   cluster/local-slurm.sh up [--nodes N]   start it; prints `export SLURM_CONF=...` (also in $STATE/env)
#   cluster/local-slurm.sh status           the daemons' pids and `sinfo`
#   cluster/local-slurm.sh down             cancel every job, stop the daemons this script started,
#                                           remove the namespaces and links it made, remove $STATE
#
# One node (the default): one slurmd on this host, reached on 127.0.0.1.
# N >= 2 nodes: each slurmd runs in a network namespace and a UTS namespace of its own, so node i is
# the host <net>-n<i> (hostname and Slurm node name) at <subnet>.<10+i>, joined by a veth pair to a
# bridge <net>-br that carries <subnet>.1, slurmctld's address. Everything a job step starts on a
# node (srun's ranks, mpirun's daemons) inherits that node's namespaces, so ranks on different nodes
# talk over those addresses only. The nodes share the file system (state, munge's socket, the
# checkout), and this machine's cores are split between them (at least one each).
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
# 6817; slurmd uses the next one), ATTNLAB_SLURM_PARTITION (default attnlab); for N >= 2 nodes also
# ATTNLAB_SLURM_NET (prefix of the namespace, bridge, veth and node names, at most 9 characters,
# default attnlab) and ATTNLAB_SLURM_SUBNET (the first three octets of the /24, default 10.77.0).
# Multi-node needs the ip command (iproute2) and unshare (util-linux).
set -euo pipefail

STATE=${ATTNLAB_SLURM_DIR:-/tmp/attnlab-slurm}
CTLD_PORT=${ATTNLAB_SLURM_PORT:-6817}
SLURMD_PORT=$((CTLD_PORT + 1))
PARTITION=${ATTNLAB_SLURM_PARTITION:-attnlab}
CONF=$STATE/slurm.conf
NET=${ATTNLAB_SLURM_NET:-attnlab}
SUBNET=${ATTNLAB_SLURM_SUBNET:-10.77.0}
BRIDGE=$NET-br
# Every namespace and link `up` made, one "netns NAME" or "link NAME" a line, for `down`.
CREATED=$STATE/created
NODES=1

die() {
  echo "local-slurm: $*" >&2
  exit 1
}

# pid_alive FILE: the pid recorded in FILE runs.
pid_alive() {
  [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null
}

# node_lines: the NodeName lines of slurm.conf.
node_lines() {
  local node
  node=$(slurmd -C | grep '^NodeName=') || die "slurmd -C printed no node line"
  if ((NODES == 1)); then
    echo "$node NodeAddr=127.0.0.1 State=UNKNOWN"
    return
  fi
  local cpus memory i
  cpus=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$node")
  memory=$(sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' <<<"$node")
  cpus=$((cpus / NODES > 0 ? cpus / NODES : 1))
  for ((i = 1; i <= NODES; i++)); do
    echo "NodeName=$NET-n$i NodeHostname=$NET-n$i NodeAddr=$SUBNET.$((10 + i)) CPUs=$cpus" \
      "Boards=1 SocketsPerBoard=1 CoresPerSocket=$cpus ThreadsPerCore=1" \
      "RealMemory=$((memory / NODES)) State=UNKNOWN"
  done
}

write_conf() {
  local nodes ctld_addr="" slurmd_files=slurmd spool=$STATE/spool tmp_fs=/tmp i
  nodes=$(node_lines)
  if ((NODES > 1)); then
    ctld_addr="SlurmctldAddr=$SUBNET.1"
    slurmd_files=slurmd-%n
    spool=$STATE/spool/%n
    # The nodes share /tmp: Slurm's PMIx plugin needs a client directory of its own per node.
    tmp_fs=$STATE/tmp/%n
    for ((i = 1; i <= NODES; i++)); do mkdir -p "$STATE/tmp/$NET-n$i"; done
  fi
  cat >"$CONF" <<EOF
# Written by cluster/local-slurm.sh for $(hostname); removed by 'local-slurm.sh down'.
ClusterName=attnlab
SlurmctldHost=localhost
${ctld_addr}
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
SlurmdSpoolDir=$spool
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/$slurmd_files.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/$slurmd_files.log
TmpFS=$tmp_fs
$nodes
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

# nodes_idle: every node of the cluster is idle.
nodes_idle() {
  local states
  states=$(sinfo -h -N -o %t 2>/dev/null) || return 1
  [[ $(grep -c '^idle$' <<<"$states") -eq $NODES && $(wc -l <<<"$states") -eq $NODES ]]
}

# created KIND NAME: records a namespace or link that `up` made, for `down`.
created() {
  echo "$1 $2" >>"$CREATED"
}

# net_up: the bridge on the host side and, per node, a network namespace joined to it by a veth pair.
net_up() {
  command -v ip >/dev/null || die "ip is not installed (apt-get install iproute2)"
  command -v unshare >/dev/null || die "unshare is not installed (apt-get install util-linux)"
  ((${#NET} <= 9)) || die "ATTNLAB_SLURM_NET=$NET: at most 9 characters (interface names)"
  [[ $SUBNET =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "ATTNLAB_SLURM_SUBNET=$SUBNET: expected A.B.C"
  ! ip link show "$BRIDGE" >/dev/null 2>&1 ||
    die "a link named $BRIDGE exists already (another cluster? set ATTNLAB_SLURM_NET)"
  ip link add "$BRIDGE" type bridge || die "cannot create the bridge $BRIDGE (no bridge support?)"
  created link "$BRIDGE"
  ip addr add "$SUBNET.1/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  local i ns
  for ((i = 1; i <= NODES; i++)); do
    ns=$NET-n$i
    ! ip netns pids "$ns" >/dev/null 2>&1 || die "a network namespace $ns exists already"
    ip netns add "$ns" || die "cannot create the network namespace $ns"
    created netns "$ns"
    ip link add "$ns-h" type veth peer name "$ns-c" || die "cannot create the veth pair $ns-h"
    created link "$ns-h"
    ip link set "$ns-c" netns "$ns"
    ip link set "$ns-h" master "$BRIDGE" up
    ip -n "$ns" link set "$ns-c" name eth0
    ip -n "$ns" addr add "$SUBNET.$((10 + i))/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
  done
}

# net_down: stops what still runs in the namespaces `up` made, then removes them and its links.
net_down() {
  [[ -f $CREATED ]] || return 0
  local kind name pids
  while read -r kind name; do
    [[ $kind == netns ]] || continue
    pids=$(ip netns pids "$name" 2>/dev/null || true)
    if [[ -n $pids ]]; then
      # shellcheck disable=SC2086 # one pid a word
      kill -KILL $pids 2>/dev/null || true
    fi
    ip netns del "$name" 2>/dev/null || true
  done <"$CREATED"
  while read -r kind name; do
    [[ $kind == link ]] || continue
    ip link del "$name" 2>/dev/null || true
  done <"$CREATED"
  rm -f "$CREATED"
}

# start_slurmd I: slurmd of node I in its namespaces (hostname <net>-n<I>); it daemonizes.
start_slurmd() {
  local node=$NET-n$1
  # nsenter, not `ip netns exec`, which mounts a /sys of its own without /sys/fs/cgroup.
  # shellcheck disable=SC2016 # $1 and $2 are the inner shell's arguments
  nsenter --net="/run/netns/$node" unshare --uts -- /bin/sh -c 'hostname "$1" && exec /usr/sbin/slurmd -f "$2" -N "$1"' \
    sh "$node" "$CONF" || die "slurmd of $node did not start: $(tail -n 5 "$STATE/slurmd-$node.log" 2>/dev/null)"
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
  net_down # what a crashed earlier `up` with this state directory left
  rm -rf "$STATE"
  mkdir -p "$STATE/ctld" "$STATE/spool"
  echo "$NODES" >"$STATE/nodes"
  ((NODES == 1)) || net_up
  write_conf
  export SLURM_CONF=$CONF
  start_munge
  /usr/sbin/slurmctld -f "$CONF" || die "slurmctld did not start: $(tail -n 5 "$STATE/slurmctld.log")"
  if ((NODES == 1)); then
    /usr/sbin/slurmd -f "$CONF" || die "slurmd did not start: $(tail -n 5 "$STATE/slurmd.log")"
  else
    local i
    for ((i = 1; i <= NODES; i++)); do start_slurmd "$i"; done
  fi
  wait_for 30 nodes_idle || die "the nodes did not become idle: $(sinfo 2>&1; tail -n 5 "$STATE/slurmctld.log")"
  echo "export SLURM_CONF=$CONF" >"$STATE/env"
  echo "export SLURM_CONF=$CONF"
}

# stop_pid PID: TERM the pid (read beforehand from its file), wait up to 10 s, then KILL.
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

# slurmd_pid_files: the pid file of every slurmd of the cluster.
slurmd_pid_files() {
  local i
  if ((NODES == 1)); then
    echo "$STATE/slurmd.pid"
  else
    for ((i = 1; i <= NODES; i++)); do echo "$STATE/slurmd-$NET-n$i.pid"; done
  fi
}

down() {
  [[ -d $STATE ]] || return 0
  export SLURM_CONF=$CONF
  # Read every pid first: the daemons delete their pid files on the way out.
  local ctld_pid munge_pid file
  local -a slurmd_pids=()
  ctld_pid=$(cat "$STATE/slurmctld.pid" 2>/dev/null || true)
  while read -r file; do
    slurmd_pids+=("$(cat "$file" 2>/dev/null || true)")
  done < <(slurmd_pid_files)
  munge_pid=$(cat "$STATE/munge/munged.pid" 2>/dev/null || true)
  if [[ -n $ctld_pid ]] && kill -0 "$ctld_pid" 2>/dev/null; then
    # Killing slurmd does not end running job steps: cancel the jobs and let them go first.
    scancel --full --quiet --partition="$PARTITION" 2>/dev/null || true
    wait_for 15 no_running_jobs || true
  fi
  for pid in "${slurmd_pids[@]}"; do stop_pid "$pid"; done
  stop_pid "$ctld_pid"
  stop_pid "$munge_pid"
  net_down
  rm -rf "$STATE"
}

status() {
  [[ -f $CONF ]] || {
    echo "local-slurm: down (no $CONF)"
    return 1
  }
  export SLURM_CONF=$CONF
  local file label
  {
    echo "$STATE/slurmctld.pid"
    slurmd_pid_files
    echo "$STATE/munge/munged.pid"
  } | while read -r file; do
    label=$(basename "$file" .pid)
    [[ $label == slurmd-* ]] && label="slurmd ${label#slurmd-}"
    if pid_alive "$file"; then
      echo "$label running (pid $(cat "$file"))"
    else
      echo "$label stopped"
    fi
  done
  if ((NODES > 1)); then
    local i
    for ((i = 1; i <= NODES; i++)); do
      echo "node $NET-n$i: network namespace $NET-n$i, address $SUBNET.$((10 + i)), bridge $BRIDGE ($SUBNET.1)"
    done
  fi
  echo "export SLURM_CONF=$CONF"
  sinfo -N -o '%N %t %c %o'
}

usage() {
  echo "usage: $0 up [--nodes N] | down | status" >&2
  exit 2
}

command=${1:-}
[[ $# -gt 0 ]] && shift
if [[ $command == up ]]; then
  while [[ $# -gt 0 ]]; do
    case $1 in
      --nodes)
        [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--nodes needs a number >= 1"
        NODES=$2
        shift 2
        ;;
      --nodes=*)
        NODES=${1#--nodes=}
        [[ $NODES =~ ^[1-9][0-9]*$ ]] || die "--nodes needs a number >= 1"
        shift
        ;;
      *) usage ;;
    esac
  done
  ((NODES <= 200)) || die "--nodes: at most 200"
elif [[ $# -gt 0 ]]; then
  usage
else
  # down and status work on the cluster `up` made, however many nodes it has.
  NODES=$(cat "$STATE/nodes" 2>/dev/null || echo 1)
fi

case $command in
  up) up ;;
  down) down ;;
  status) status ;;
  *) usage ;;
esac
