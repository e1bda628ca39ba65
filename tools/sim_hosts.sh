#!/usr/bin/env bash
# Simulated hosts on one Linux machine, for multi-host tests without a second machine.
#
# Each host is a network namespace (its own interfaces and addresses), a mount namespace
# (its own tmpfs /dev/shm, so shared memory cannot cross hosts, and its own /etc/hosts) and a
# UTS namespace (its own hostname, so MPI_Comm_split_type and `hostname` see separate hosts).
# The hosts' eth0 are veth pairs to one bridge in a hub namespace, like one switch; they get
# 198.18.0.1, .2, ... (the benchmarking range, RFC 2544) and nothing routes outside them.
# `rate` puts a token bucket (tc tbf) on both ends of every host's link, so each host's uplink
# carries at most RATE each way (there is no netem here: no added latency).
#
# Needs root and Debian's iproute2 and util-linux (scripts/install-deps).
#
#   tools/sim_hosts.sh up [--hosts N] [--rate RATE]     # e.g. --hosts 2 --rate 1gbit
#   tools/sim_hosts.sh mpirun -H simhost0:2,simhost1:2 -np 4 prog ...   # from host 0
#   tools/sim_hosts.sh exec HOST command ...            # a command on one host
#   tools/sim_hosts.sh rate RATE|none                   # change the links' rate
#   tools/sim_hosts.sh link HOST up|down                # cut or restore a host's link
#   tools/sim_hosts.sh pids [HOST]                      # processes still on the hosts
#   tools/sim_hosts.sh shm HOST                         # what is in a host's /dev/shm
#   tools/sim_hosts.sh down                             # kill everything on them, remove them
#
# SIM_HOSTS_PREFIX (default simhost) names the hosts (simhost0, simhost1, ...) and keeps
# several sets apart. `mpirun` starts Open MPI inside host 0 with `agent` as its rsh launcher
# (it enters a host's namespaces where ssh would log in, with a login's bare environment, so
# whatever the ranks need must travel with -x as on real hosts) and with the runtime's and
# MPI's TCP limited to the hosts' subnet.
set -euo pipefail

prefix=${SIM_HOSTS_PREFIX:-simhost}
state=/run/sim-hosts/$prefix
hub=$prefix-hub
subnet=198.18.0.0/24
self=$(readlink -f "${BASH_SOURCE[0]}")

usage() {
  echo "usage: tools/sim_hosts.sh up|mpirun|exec|rate|link|pids|shm|down ..."
  sed -n '14,22p' "$self" | sed 's/^# */  /'
}

bad_usage() {
  echo "sim_hosts: $*" >&2
  usage >&2
  exit 2
}

die() {
  echo "sim_hosts: $*" >&2
  exit 1
}

host_names() {
  [[ -f $state/hosts.list ]] || die "no simulated hosts '$prefix' (run: tools/sim_hosts.sh up)"
  cat "$state/hosts.list"
}

require_host() {
  host_names | grep -qx -- "$1" || die "no simulated host '$1' (hosts: $(host_names | xargs))"
}

# Runs a command inside a host's three namespaces, in the caller's directory when it exists.
enter() {
  local host=$1
  shift
  nsenter --target "$(cat "$state/$host.keeper")" --net --mount --uts --wd="$PWD" -- "$@"
}

# tc's token bucket on one interface: bursts of 4 ms at the rate (at least 64 KiB, so a
# segmentation-offloaded packet still fits), queueing at most 100 ms.
limit() {
  local namespace=$1 device=$2 rate=$3
  ip netns exec "$namespace" tc qdisc del dev "$device" root 2>/dev/null || true
  [[ $rate == none ]] && return
  local bits
  bits=$(rate_bits "$rate")
  local burst=$((bits / 8 / 250))
  ((burst < 65536)) && burst=65536
  ip netns exec "$namespace" tc qdisc add dev "$device" root tbf rate "$rate" burst "$burst" \
    latency 100ms
}

rate_bits() {
  local text=${1,,} number unit
  [[ $text =~ ^([0-9]+)([kmg]?)bit$ ]] || die "rate '$1': expected e.g. 1gbit, 500mbit"
  number=${BASH_REMATCH[1]}
  unit=${BASH_REMATCH[2]}
  case $unit in
    k) echo $((number * 1000)) ;;
    m) echo $((number * 1000000)) ;;
    g) echo $((number * 1000000000)) ;;
    *) echo "$number" ;;
  esac
}

set_rate() {
  local rate=$1 index=0 host
  for host in $(host_names); do
    limit "$host" eth0 "$rate"
    limit "$hub" "p$index" "$rate"
    index=$((index + 1))
  done
  echo "$rate" >"$state/rate"
}

up() {
  local hosts=2 rate=none
  while (($#)); do
    case $1 in
      --hosts) hosts=$2; shift 2 ;;
      --rate) rate=$2; shift 2 ;;
      *) bad_usage "up: unknown flag $1" ;;
    esac
  done
  [[ $hosts =~ ^[1-9][0-9]?$ ]] || die "--hosts $hosts: expected 1 to 99"
  [[ $(id -u) == 0 ]] || die "needs root (network and mount namespaces)"
  for tool in ip tc nsenter unshare; do
    command -v "$tool" >/dev/null || die "needs $tool (scripts/install-deps installs iproute2)"
  done
  [[ -e $state ]] && down
  mkdir -p "$state"
  ip netns add "$hub"
  ip -n "$hub" link add br0 type bridge
  ip -n "$hub" link set br0 up
  local index
  : >"$state/hosts"
  printf '127.0.0.1\tlocalhost\n' >>"$state/hosts"
  for ((index = 0; index < hosts; index++)); do
    printf '198.18.0.%d\t%s%d\n' $((index + 1)) "$prefix" "$index" >>"$state/hosts"
  done
  for ((index = 0; index < hosts; index++)); do
    local host=$prefix$index
    echo "$host" >>"$state/hosts.list"
    ip netns add "$host"
    ip -n "$hub" link add "p$index" type veth peer name eth0 netns "$host"
    ip -n "$hub" link set "p$index" master br0 up
    ip -n "$host" addr add "198.18.0.$((index + 1))/24" dev eth0
    ip -n "$host" link set eth0 up
    ip -n "$host" link set lo up
  done
  # Each host's mount and UTS namespaces are held by a keeper process (its "init"); other
  # processes enter them through /proc/KEEPER/ns, which works from inside another host too
  # (a mount namespace cannot be pinned to a file that other mount namespaces see).
  for host in $(host_names); do
    setsid ip netns exec "$host" unshare --mount --uts --propagation private \
      sh -c "hostname '$host' && mount -t tmpfs -o size=2g,mode=1777 tmpfs /dev/shm &&
             mount --bind '$state/hosts' /etc/hosts && exec sleep infinity" \
      </dev/null >/dev/null 2>&1 &
    echo $! >"$state/$host.keeper"
  done
  for host in $(host_names); do
    local waited=0
    until [[ $(enter "$host" hostname 2>/dev/null) == "$host" ]]; do
      ((waited++ < 100)) || die "host $host did not come up"
      sleep 0.05
    done
  done
  set_rate "$rate"
  echo "sim_hosts: up: $(host_names | xargs) on $subnet, rate $rate"
}

# The processes on the hosts (all of them, or those named), but for their keepers.
pids() {
  local host hosts=("$@")
  ((${#hosts[@]})) || mapfile -t hosts < <(host_names)
  for host in "${hosts[@]}"; do
    ip netns pids "$host" 2>/dev/null | grep -vx "$(cat "$state/$host.keeper")" || true
  done
}

down() {
  [[ -d $state ]] || return 0
  local host attempt
  if [[ -f $state/hosts.list ]]; then
    for attempt in 1 2 3; do
      local alive
      alive=$(for host in $(host_names); do ip netns pids "$host" 2>/dev/null; done)
      [[ -z $alive ]] && break
      # shellcheck disable=SC2086
      kill -CONT $alive 2>/dev/null || true
      kill -KILL $alive 2>/dev/null || true
      sleep 0.2
    done
    for host in $(host_names); do
      ip netns del "$host" 2>/dev/null || true
    done
  fi
  ip netns del "$hub" 2>/dev/null || true
  rm -rf "$state"
}

# Open MPI's rsh launcher calls this as `agent [flags] HOST COMMAND`, the command one string
# as for ssh; it runs in the host with the bare environment of a login.
agent() {
  while [[ ${1:-} == -* ]]; do shift; done
  local host=${1:?agent: no host}
  shift
  require_host "$host"
  enter "$host" env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="${HOME:-/root}" \
    sh -c "$*"
}

mpirun_on_hosts() {
  local first
  first=$(host_names | head -1)
  enter "$first" mpirun --allow-run-as-root --oversubscribe --bind-to none \
    --mca plm_rsh_agent "$self agent" --mca plm_rsh_no_tree_spawn 1 \
    --mca oob_tcp_if_include "$subnet" --mca btl tcp,self --mca btl_tcp_if_include "$subnet" \
    "$@"
}

command=${1:-}
(($#)) && shift
case $command in
  up) up "$@" ;;
  down) down ;;
  exec)
    require_host "${1:?exec: HOST command ...}"
    host=$1
    shift
    enter "$host" "$@"
    ;;
  agent) agent "$@" ;;
  mpirun) mpirun_on_hosts "$@" ;;
  rate) set_rate "${1:?rate: RATE or none}" ;;
  link)
    require_host "${1:?link: HOST up|down}"
    [[ ${2:-} == up || ${2:-} == down ]] || bad_usage "link: expected up or down, not '${2:-}'"
    ip -n "$1" link set eth0 "$2"
    ;;
  pids) pids "$@" ;;
  shm)
    require_host "${1:?shm: HOST}"
    enter "$1" ls -A /dev/shm
    ;;
  -h | --help) usage ;;
  *) bad_usage "unknown command or flag '$command'" ;;
esac
