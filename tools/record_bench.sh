#!/usr/bin/env bash
# Runs a benchmark command and saves what it prints to bench/results/<name>-<cpu>.txt, headed
# by what makes a figure traceable: the date, the machine (CPU model, cores, caches, memory,
# kernel), the commit, the command, and the load average before and after (the development
# machines are shared VMs; a load above ~0.5 at start means other work ran beside it).
#
#   tools/record_bench.sh kernels-cpu-resnet18 build/bench/bench_kernels --rounds 2
#   tools/record_bench.sh step-cpu-resnet18-64px build/bench/bench_step --image-size 64
#
# <cpu> names the machine kind (intel-xeon, amd-epyc, or the model name made file-safe), with
# -avx2 (or -no-avx2) appended where the CPU offers no AVX-512F: the same EPYC model has come
# both with and without AVX-512 exposed by its VM, and the CPU kernels take different paths
# (AVX-512 loops, or OpenBLAS and the portable loops), so each kind keeps its own file.
# RECORD_BENCH_CPU_TAG=TAG names it instead, where two kinds share a model name (VMs of Zen 2,
# Zen 3 and Zen 4 EPYCs all say "AMD EPYC"; amd-epyc-avx2 is the Zen 4 one's). The file is
# replaced only after the command succeeds.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  echo "usage: tools/record_bench.sh NAME COMMAND [ARGS...]"
  echo "Runs COMMAND and saves its output, with the date, machine, commit, command and load,"
  echo "to bench/results/NAME-<cpu>.txt (<cpu>: $(cpu_tag))."
}

cpu_model() { lscpu | sed -n 's/^Model name: *//p' | head -1; }
cpu_has_flag() {
  local flags
  flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
  [[ " $flags " == *" $1 "* ]]
}
# The widest vector ISA the CPU kernels can use here (kernels/cpu/isa.h chooses at run time).
cpu_vector_isa() {
  if cpu_has_flag avx512f; then
    echo avx512
  elif cpu_has_flag avx2; then
    echo avx2
  else
    echo no-avx2
  fi
}
cpu_tag() {
  if [[ -n ${RECORD_BENCH_CPU_TAG:-} ]]; then
    echo "$RECORD_BENCH_CPU_TAG"
    return
  fi
  local model kind isa
  model=$(cpu_model)
  case $model in
    *EPYC*) kind=amd-epyc ;;
    *Xeon*) kind=intel-xeon ;;
    *) kind=$(echo "$model" | tr 'A-Z' 'a-z' | tr -cs 'a-z0-9' '-' | sed 's/-$//') ;;
  esac
  isa=$(cpu_vector_isa)
  [[ $isa == avx512 ]] && echo "$kind" || echo "$kind-$isa"
}

if [[ $# -ge 1 && ($1 == --help || $1 == -h) ]]; then
  usage
  exit 0
fi
if [[ $# -lt 2 || $1 == -* ]]; then
  [[ $# -ge 1 && $1 == -* ]] && echo "tools/record_bench.sh: unknown flag $1" >&2
  usage >&2
  exit 2
fi
name=$1
shift
out=bench/results/$name-$(cpu_tag).txt
mkdir -p bench/results
table=$(mktemp)
trap 'rm -f "$table"' EXIT
{
  echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "# machine: $(cpu_model) (family $(sed -n 's/^cpu family\t*: //p' /proc/cpuinfo | head -1)" \
       "model $(sed -n 's/^model\t*: //p' /proc/cpuinfo | head -1), vector ISA $(cpu_vector_isa))," \
       "$(nproc) cores, L2 $(lscpu | sed -n 's/^L2 cache: *//p')," \
       "L3 $(lscpu | sed -n 's/^L3 cache: *//p'), $(free -g | awk '/^Mem:/{print $2}') GiB," \
       "$(uname -sr)"
  # The results files being rewritten do not make the code dirty.
  dirty=$(git diff --quiet HEAD -- . ':!bench/results' 2>/dev/null || echo "-dirty")
  echo "# commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$dirty"
  echo "# command: $*"
  echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$table"
set +e
"$@" | tee -a "$table"
status=${PIPESTATUS[0]}
set -e
if [[ $status -ne 0 ]]; then
  echo "tools/record_bench.sh: the command failed (exit $status); $out is unchanged" >&2
  exit "$status"
fi
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$table"
mv "$table" "$out"
echo "saved $out" >&2
