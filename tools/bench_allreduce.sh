#!/usr/bin/env bash
# Runs bench_allreduce under mpirun and saves its table, headed by a description of the
# machine and of its load, to bench/results/allreduce-cpu-<ranks>ranks.txt.
#
#   tools/bench_allreduce.sh                    # 2 ranks, 4 B .. 64 MiB, every CPU impl
#   RANKS=4 tools/bench_allreduce.sh --factor 4 # extra arguments go to bench_allreduce
#
# BUILD_DIR (default build) selects the build. The 2-core reference machine is shared: the
# load average printed at start and end says whether the figures can be trusted.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
ranks=${RANKS:-2}
out=bench/results/allreduce-cpu-${ranks}ranks.txt
mkdir -p bench/results
{
  echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores," \
       "L2 $(lscpu | sed -n 's/^L2 cache: *//p'), L3 $(lscpu | sed -n 's/^L3 cache: *//p')," \
       "$(free -g | awk '/^Mem:/{print $2}') GiB, $(uname -sr)"
  echo "# $(mpirun --version 2>&1 | head -1), $ranks ranks on one host"
  echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# command: mpirun --allow-run-as-root --oversubscribe -np $ranks $build_dir/bench/bench_allreduce $*"
  mpirun --allow-run-as-root --oversubscribe -np "$ranks" "$build_dir/bench/bench_allreduce" "$@"
  echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out"
echo "saved $out" >&2
