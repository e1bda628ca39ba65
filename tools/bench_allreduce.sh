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
bench="$build_dir/bench/bench_allreduce"
out=bench/results/allreduce-cpu-${ranks}ranks.txt

usage() {
  echo "usage: [RANKS=2] [BUILD_DIR=build] tools/bench_allreduce.sh [bench_allreduce flags]"
  echo "Runs bench_allreduce under mpirun and saves its table to $out."
  echo "Its flags:"
  if [[ -x $bench ]]; then "$bench" --help; else echo "  ($bench is not built)"; fi
}
for arg in "$@"; do
  if [[ $arg == --help || $arg == -h ]]; then
    usage
    exit 0
  fi
done
if [[ ! -x $bench ]]; then
  echo "tools/bench_allreduce.sh: $bench is not built (BUILD_DIR=$build_dir)" >&2
  exit 1
fi

# The saved table is replaced only by a complete run: a bad flag or a failed rank leaves it.
mkdir -p bench/results
table=$(mktemp)
trap 'rm -f "$table"' EXIT
{
  echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores," \
       "L2 $(lscpu | sed -n 's/^L2 cache: *//p'), L3 $(lscpu | sed -n 's/^L3 cache: *//p')," \
       "$(free -g | awk '/^Mem:/{print $2}') GiB, $(uname -sr)"
  echo "# $(mpirun --version 2>&1 | head -1), $ranks ranks on one host"
  echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# command: mpirun --allow-run-as-root --oversubscribe -np $ranks $build_dir/bench/bench_allreduce $*"
  mpirun --allow-run-as-root --oversubscribe -np "$ranks" "$bench" "$@"
  echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$table"
mv "$table" "$out"
echo "saved $out" >&2
