#!/usr/bin/env bash
# A SLURM cluster on the simulated hosts of tools/sim_hosts.sh: slurmctld on the first host,
# one slurmd on every host, munge for their credentials. Everything it writes (munge's key,
# slurm.conf, the daemons' spool folders and logs) lives in the hosts' state folder, so it
# touches no /etc/slurm or /etc/munge of this machine, and every daemon runs inside a host's
# namespaces, so `tools/sim_hosts.sh down` ends them too.
#
# Needs root, the hosts up, and Debian's slurmctld, slurmd, slurm-client, munge and
# libpmix-dev (scripts/install-deps; slurm's mpi_pmix plugin loads libpmix.so, which only the
# -dev package provides).
#
#   tools/sim_slurm.sh up                     # after tools/sim_hosts.sh up; waits until idle
#   tools/sim_slurm.sh srun|sbatch|squeue|scancel|scontrol|sinfo ARGS ...   # from host 0
#   tools/sim_slurm.sh daemons                # the daemons' process ids, one a line
#   tools/sim_slurm.sh state                  # the folder of its files and logs
#   tools/sim_slurm.sh stop HOST              # end the slurmd of one host (the node dies)
#   tools/sim_slurm.sh down                   # end the daemons, remove their files
#
# The cluster: one partition `sim` with every host, 4 CPUs each (the configuration, not the
# hardware: SlurmdParameters=config_overrides), MpiDefault=none as Debian's default, no
# cgroups (proctrack/linuxproc), KillWait 30 s (SLURM's default: SIGTERM, then SIGKILL), and
# credentials that expire after 5 s rather than 120, so a requeued job may start again 5 s
# later, and schedulers that look every second (60 and 30 s by default) so that it does.
# SIM_HOSTS_PREFIX selects the hosts.
set -euo pipefail

prefix=${SIM_HOSTS_PREFIX:-simhost}
hosts_state=/run/sim-hosts/$prefix
state=$hosts_state/slurm
here=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
sim_hosts=$here/sim_hosts.sh
export SLURM_CONF=$state/slurm.conf

usage() {
  echo "usage: tools/sim_slurm.sh up|down|daemons|state|stop ..."
  echo "       tools/sim_slurm.sh srun|sbatch|squeue|scancel|scontrol|sinfo ARGS ..."
  sed -n '12,17p' "$(readlink -f "${BASH_SOURCE[0]}")" | sed 's/^# */  /'
}

die() {
  echo "sim_slurm: $*" >&2
  exit 1
}

host_names() {
  [[ -f $hosts_state/hosts.list ]] ||
    die "no simulated hosts '$prefix' (run: tools/sim_hosts.sh up)"
  cat "$hosts_state/hosts.list"
}

on_host() {
  local host=$1
  shift
  "$sim_hosts" exec "$host" "$@"
}

write_config() {
  # Node names resolve through the hosts' /etc/hosts (198.18.0.N).
  local first=$1 last=$(($2 - 1))
  cat >"$SLURM_CONF" <<CONF
ClusterName=sim
SlurmctldHost=$first(198.18.0.1)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$state/munge/munge.socket,cred_expire=5
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/spool-%n
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd-%n.pid
SlurmctldLogFile=$state/slurmctld.log
SlurmdLogFile=$state/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SchedulerParameters=sched_interval=1,bf_interval=1
ReturnToService=2
SlurmdParameters=config_overrides
SlurmdTimeout=5
MessageTimeout=5
KillWait=30
InactiveLimit=0
MinJobAge=30
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=${prefix}[0-$last] CPUs=4 State=UNKNOWN
PartitionName=sim Nodes=${prefix}[0-$last] Default=YES MaxTime=INFINITE State=UP
CONF
}

# What slurmd needs in a host's own mount namespace. A /tmp of its own, as a real host has:
# slurmstepd's PMIx server makes folders there whose names are the same on every node of a
# step. And cgroups where slurmd's cgroup plugin looks: `ip netns exec` gave the host a sysfs
# of its own without them; the plugin only checks for a v1 hierarchy named systemd (which
# this mount joins, or makes), as proctrack/linuxproc and task/none put nothing in it.
# A checkout under /tmp (CI may clone there) stays visible in it: the top folder of the
# checkout is bound back over the new /tmp, so the jobs find their binary and data.
mount_for_slurmd() {
  on_host "$1" sh -c '
    checkout=$1
    if ! mountpoint -q /tmp; then
      case $checkout in
        /tmp/?*)
          top=${checkout#/tmp/}
          top=${top%%/*}
          mkdir -p /run/sim-slurm-outer-tmp
          mount --bind /tmp /run/sim-slurm-outer-tmp ;;
        *) top= ;;
      esac
      mount -t tmpfs -o size=1g,mode=1777 tmpfs /tmp
      if [ -n "$top" ]; then
        mkdir -p "/tmp/$top"
        mount --bind "/run/sim-slurm-outer-tmp/$top" "/tmp/$top"
      fi
    fi
    mountpoint -q /sys/fs/cgroup || mount -t tmpfs -o mode=755 cgroup-none /sys/fs/cgroup
    mkdir -p /sys/fs/cgroup/systemd
    mountpoint -q /sys/fs/cgroup/systemd ||
      mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd' sh "$(dirname "$here")"
}

up() {
  [[ $(id -u) == 0 ]] || die "needs root (the daemons run inside the simulated hosts)"
  local tool
  for tool in munged slurmctld slurmd srun; do
    command -v "$tool" >/dev/null ||
      die "needs $tool (scripts/install-deps installs slurmctld, slurmd, slurm-client, munge)"
  done
  local -a hosts
  mapfile -t hosts < <(host_names)
  [[ -e $state ]] && down
  mkdir -p "$state/munge" "$state/ctld"
  chmod 700 "$state/munge"
  # A key of this cluster's own: the hosts share it, as real ones would through a copy.
  head -c 1024 /dev/urandom >"$state/munge/munge.key"
  chmod 400 "$state/munge/munge.key"
  write_config "${hosts[0]}" "${#hosts[@]}"
  on_host "${hosts[0]}" munged --force --key-file="$state/munge/munge.key" \
    --socket="$state/munge/munge.socket" --pid-file="$state/munge/munged.pid" \
    --log-file="$state/munge/munged.log" --seed-file="$state/munge/munged.seed"
  on_host "${hosts[0]}" slurmctld -f "$SLURM_CONF" -i
  local host
  for host in "${hosts[@]}"; do
    mkdir -p "$state/spool-$host"
    # `ip netns exec` gave each host a sysfs of its own, without the cgroup mounts slurmd's
    # cgroup plugin looks for: the machine's, bound in the host's own mount namespace.
    mount_for_slurmd "$host"
    on_host "$host" slurmd -f "$SLURM_CONF"
  done
  wait_idle "${#hosts[@]}"
  echo "sim_slurm: up: slurmctld on ${hosts[0]}, slurmd on ${hosts[*]}, partition sim"
}

# Until every node is idle (the slurmds registered), at most 30 s.
wait_idle() {
  local count=$1 waited=0 idle
  while true; do
    idle=$(on_host "$(host_names | head -1)" sinfo -h -N -t idle -o '%N' 2>/dev/null |
      sort -u | wc -l)
    ((idle == count)) && return 0
    ((waited++ < 300)) || die "the nodes did not become idle within 30 s (logs in $state)"
    sleep 0.1
  done
}

daemons() {
  local file
  for file in "$state"/slurmctld.pid "$state"/slurmd-*.pid "$state"/munge/munged.pid; do
    [[ -f $file ]] && cat "$file"
  done
  return 0
}

stop_slurmd() {
  local host=${1:?stop: HOST}
  [[ -f $state/slurmd-$host.pid ]] || die "no slurmd on '$host'"
  local pid
  pid=$(cat "$state/slurmd-$host.pid")
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$state/slurmd-$host.pid"
}

down() {
  [[ -d $state ]] || return 0
  local pid
  # The jobs first (their steps' processes belong to slurmstepd, not to slurmd).
  on_host "$(host_names | head -1)" scancel --full --quiet --signal=KILL --partition=sim \
    2>/dev/null || true
  for pid in $(daemons); do
    kill -KILL "$pid" 2>/dev/null || true
  done
  rm -rf "$state"
}

command=${1:-}
(($#)) && shift
case $command in
  up) up ;;
  down) down ;;
  daemons) daemons ;;
  state) echo "$state" ;;
  stop) stop_slurmd "$@" ;;
  srun | sbatch | squeue | scancel | scontrol | sinfo | sacct)
    on_host "$(host_names | head -1)" "$command" "$@"
    ;;
  -h | --help) usage ;;
  *)
    echo "sim_slurm: unknown command or flag '$command'" >&2
    usage >&2
    exit 2
    ;;
esac
