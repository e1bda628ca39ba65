#!/usr/bin/env bash
# Records, on this machine, every CPU figure of the nn issue that the README cites per machine
# kind: the resnet18 training step at 32 px batch 128 and 64 px batch 32 and the resnet50 step
# at 64 px batch 16 (each beside PyTorch's step in the same run; resnet18's with --profile), and
# bench_kernels' ops at 224 px batch 8 and its conv layers at 64 px batch 32 and 224 px batch 8
# (beside PyTorch's ops). Each goes through tools/record_bench.sh into
# bench/results/<name>-<cpu kind>.txt, so a session on a new machine kind (AMD EPYC, say)
# fills its column with one command:
#
#   tools/record_cpu_figures.sh [BUILD_DIR]      # default build; about 8 minutes on 2 cores
#
# (RECORD_BENCH_CPU_TAG=amd-epyc-zen3-avx2, say, names the kind where the model name does not
# tell it apart: tools/record_bench.sh.)
#
# PyTorch comes from ENGINE_TORCH_PYTHON (default /usr/bin/python3: Debian's python3-torch and
# python3-torchvision); without it the rows say why and carry no ratio. Run it on an idle
# machine: the files record the load average before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() {
  echo "usage: tools/record_cpu_figures.sh [BUILD_DIR]"
  echo "Records the CPU step and kernel figures the README cites into"
  echo "bench/results/<name>-<cpu kind>.txt (tools/record_bench.sh); BUILD_DIR defaults to build."
}
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  usage
  exit 0
fi
if [[ $# -gt 1 || ${1:-} == -* ]]; then
  [[ ${1:-} == -* ]] && echo "tools/record_cpu_figures.sh: unknown flag $1" >&2
  usage >&2
  exit 2
fi
build=${1:-build}
for binary in bench_step bench_kernels; do
  [[ -x $build/bench/$binary ]] || {
    echo "tools/record_cpu_figures.sh: no $build/bench/$binary (build it first)" >&2
    exit 1
  }
done
python=${ENGINE_TORCH_PYTHON:-/usr/bin/python3}
if ! "$python" -c 'import torch, torchvision' 2>/dev/null; then
  echo "tools/record_cpu_figures.sh: $python cannot import torch and torchvision; the files" \
    "will have no baseline (apt-get install python3-torch python3-torchvision)" >&2
fi
step="$build/bench/bench_step"
kernels="$build/bench/bench_kernels"
tools/record_bench.sh step-cpu-resnet18-32px-b128 \
  "$step" --arch resnet18 --image-size 32 --batch-size 128 --rounds 5 --min-seconds 2 --profile
tools/record_bench.sh step-cpu-resnet18-64px-b32 \
  "$step" --arch resnet18 --image-size 64 --batch-size 32 --rounds 5 --min-seconds 2 --profile
tools/record_bench.sh step-cpu-resnet50-64px-b16 \
  "$step" --arch resnet50 --image-size 64 --batch-size 16 --rounds 3 --min-seconds 2
tools/record_bench.sh kernels-cpu-resnet18 "$kernels" --min-seconds 0.5
tools/record_bench.sh kernels-cpu-resnet18-64px-b32 \
  "$kernels" --image-size 64 --batch-size 32 --min-seconds 0.3 --rounds 3 --filter conv
tools/record_bench.sh kernels-cpu-resnet18-conv-224px-b8 \
  "$kernels" --image-size 224 --batch-size 8 --min-seconds 0.3 --rounds 3 --filter conv
