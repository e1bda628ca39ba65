#!/usr/bin/env bash
# All-reduce across simulated hosts (tools/sim_hosts.sh) with their links limited by tc tbf:
# our hierarchical all-reduce (ring-hier), our flat ring over MPI (ring-mpi) and Open MPI's
# MPI_Allreduce, in one run per layout, each table followed by a summary beside what the
# link allows. Saves bench/results/allreduce-cpu-2hosts-<cpu>.txt (tools/record_bench.sh).
#
#   tools/bench_allreduce_hosts.sh          # needs root; BUILD_DIR (default build)
#
# What the link allows: an all-reduce across H hosts must send 2(H-1)/H of the buffer out of
# each host (reduce-scatter, then all-gather, of the hosts' partial sums), so algbw can reach
# rate / (2(H-1)/H): the link's rate for 2 hosts. TCP/IPv4 over a 1500-byte MTU carries 1448
# payload bytes per 1514 bytes that tbf counts, so about 95.6% of that is the ceiling.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
bench=$build_dir/bench/bench_allreduce
export SIM_HOSTS_PREFIX=${SIM_HOSTS_PREFIX:-benchhost}

usage() {
  echo "usage: [BUILD_DIR=build] tools/bench_allreduce_hosts.sh"
  sed -n '2,12p' "$0" | sed 's/^# */  /'
}
case ${1:-} in
  -h | --help) usage; exit 0 ;;
  "" | --run) ;;
  *) echo "tools/bench_allreduce_hosts.sh: unknown flag $1" >&2; usage >&2; exit 2 ;;
esac
if [[ ${1:-} != --run ]]; then
  [[ -x $bench ]] || { echo "tools/bench_allreduce_hosts.sh: $bench is not built" >&2; exit 1; }
  exec tools/record_bench.sh allreduce-cpu-2hosts "$0" --run
fi

trap 'tools/sim_hosts.sh down' EXIT
tools/sim_hosts.sh up --hosts 2 >/dev/null
hosts=(${SIM_HOSTS_PREFIX}0 ${SIM_HOSTS_PREFIX}1)

# Prints, per size: ring-hier's algbw as a share of what the link allows, and against the
# flat ring and MPI_Allreduce.
summarize() {
  local rate_bits=$1
  awk -v allowed="$rate_bits" 'BEGIN {
    allowed /= 8e9
    printf "# summary: the link allows algbw %.4f GB/s (%.4f after TCP/IP headers)\n",
           allowed, allowed * 1448 / 1514 }'
  awk -v allowed="$rate_bits" '
    $1 ~ /^[0-9]+$/ { algbw[$1, $4] = $6; sizes[$1] = 1 }
    END {
      allowed /= 8e9
      for (size in sizes) {
        h = algbw[size, "ring-hier"]; f = algbw[size, "ring-mpi"]; m = algbw[size, "mpi"]
        printf "#   %9d bytes: ring-hier %.4f GB/s = %.1f%% of the link, %.2fx ring-mpi, %.2fx mpi\n",
               size, h, 100 * h / allowed, h / f, h / m
      }
    }' | sort -k3 -n
}

run_layout() {
  local rate=$1 per_host=$2 map=$3 bits
  tools/sim_hosts.sh rate "$rate" >/dev/null
  case $rate in
    *gbit) bits=$((${rate%gbit} * 1000000000)) ;;
    *mbit) bits=$((${rate%mbit} * 1000000)) ;;
  esac
  echo
  echo "## 2 hosts x $per_host ranks, --map-by $map, link $rate each way per host (tc tbf)"
  local table
  table=$(tools/sim_hosts.sh mpirun -H "${hosts[0]}:$per_host,${hosts[1]}:$per_host" \
            --map-by "$map" -np $((2 * per_host)) "$bench" --impls ring-hier,ring-mpi,mpi \
            --min-bytes 4M --max-bytes 64M --factor 4 --trials 3)
  echo "$table"
  echo "$table" | summarize "$bits"
  local left
  left=$(tools/sim_hosts.sh pids)
  [[ -z $left ]] || { echo "processes left on the hosts: $left" >&2; exit 1; }
}

run_layout 1gbit 2 slot
run_layout 10gbit 2 slot
run_layout 1gbit 2 node
run_layout 1gbit 4 slot
