#!/usr/bin/env bash
# Runs scripts/gpu-check's probe comparisons at the GPU's sizes, on the sim device, before any
# GPU minute is spent on them: a resnet18 trained 2 epochs on the CPU (a random ImageFolder of
# 10 classes, 64 px, batch 32, as gpu-check trains on the GPU), then one step of its last
# checkpoint on its last batch, layer by layer, on the sim device in fp32, tf32 and bf16
# against the CPU (fp32 for tf32), judged with gpu-check's GPU tolerances (fp32: outputs 1e-4,
# gradients 1e-3; tf32: outputs 1e-2; bf16: outputs 5e-2; gradients otherwise reported only).
# The sim device rounds as the GPU does (tf32: cvt.rna and exact products; bf16 likewise) but
# sums in its own order, so a pass here says the tolerances fit the arithmetic, not the
# hardware's order. Exits 1 when a comparison is outside its tolerance.
#
#   tools/probe_sim_at_gpu_sizes.sh [BUILD_DIR [SIM_BUILD_DIR]]   # default build, build-sim; ~2 min
set -euo pipefail
cd "$(dirname "$0")/.."
usage() {
  echo "usage: tools/probe_sim_at_gpu_sizes.sh [BUILD_DIR [SIM_BUILD_DIR]]"
  echo "Trains resnet18 briefly on the CPU (BUILD_DIR, default build), then compares one step on"
  echo "the sim device (SIM_BUILD_DIR, default build-sim) with the CPU's at gpu-check's sizes"
  echo "and GPU tolerances, fp32, tf32 and bf16."
}
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  usage
  exit 0
fi
if [[ $# -gt 2 || ${1:-} == -* || ${2:-} == -* ]]; then
  for arg in "$@"; do
    [[ $arg == -* ]] && echo "tools/probe_sim_at_gpu_sizes.sh: unknown flag $arg" >&2
  done
  usage >&2
  exit 2
fi
build=${1:-build} sim_build=${2:-build-sim}
for binary in "$build/resnet_train" "$build/probe_step" "$sim_build/probe_step"; do
  [[ -x $binary ]] || {
    echo "tools/probe_sim_at_gpu_sizes.sh: no $binary (build it first)" >&2
    exit 1
  }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 tools/make_random_imagefolder.py --out "$work/folder" --classes 10 --train-per-class 64 \
  --val-per-class 16 --size 64 >/dev/null
"$build/resnet_train" --data "$work/folder" --device cpu --precision fp32 --image-size 64 \
  --epochs 2 -b 32 --lr 0.05 --checkpoint-dir "$work/checkpoints" --dump-batches "$work/dumps" \
  2>/dev/null | tail -1
batch=$(ls "$work"/dumps/step-*-rank-0.safetensors | tail -1)
echo "batch: $(basename "$batch")"
probe() {  # probe <build> <device> <precision>
  "$1/probe_step" --checkpoint "$work/checkpoints/last.safetensors" --batch-file "$batch" \
    --device "$2" --precision "$3" --out "$work/probe-$2-$3.safetensors" 2>/dev/null
}
gradients_reported=(--gradient-tolerance 1e9 --flipped-gradient-tolerance 1e9)
failed=0
for precision in fp32 tf32 bf16; do
  reference=$precision
  [[ $precision == tf32 ]] && reference=fp32
  [[ -f $work/probe-cpu-$reference.safetensors ]] || probe "$build" cpu "$reference"
  probe "$sim_build" cuda "$precision"
  case $precision in  # scripts/gpu-check's tolerances on a GPU
    fp32) tolerances=(--gradient-tolerance 1e-3) ;;
    tf32) tolerances=(--output-tolerance 1e-2 "${gradients_reported[@]}") ;;
    bf16) tolerances=(--output-tolerance 5e-2 "${gradients_reported[@]}") ;;
  esac
  echo "$precision against cpu $reference, tolerances ${tolerances[*]}:"
  if python3 tools/compare_probes.py "$work/probe-cpu-$reference.safetensors" \
    "$work/probe-cuda-$precision.safetensors" "${tolerances[@]}"; then
    echo "  within gpu-check's tolerances"
  else
    echo "  OUTSIDE gpu-check's tolerances"
    failed=1
  fi
done
exit $failed
