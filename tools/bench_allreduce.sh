#!/usr/bin/env bash
# Runs bench_allreduce under mpirun and saves its table, headed by a description of the
# machine and of its load, to bench/results/allreduce-cpu-<ranks>ranks-<cpu>.txt.
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
out="bench/results/allreduce-cpu-${ranks}ranks-<cpu>.txt"

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

# tools/record_bench.sh heads the table with the date, machine, commit and load, and replaces
# the saved file only after a complete run: a bad flag or a failed rank leaves it.
exec tools/record_bench.sh "allreduce-cpu-${ranks}ranks" \
  mpirun --allow-run-as-root --oversubscribe -np "$ranks" "$bench" "$@"
