#!/usr/bin/env bash
# Interleaved A/B of the CPU training step: bench_step of two builds (say, the commit before a
# change and the change), alternating pair by pair in the same minutes so that the shared
# machine's slow spells hit both sides alike. No PyTorch; each run is its fastest of 2 rounds.
#
#   tools/ab_bench_step.sh BEFORE_BUILD_DIR AFTER_BUILD_DIR [PAIRS]
#   AB_PRECISION=bf16 AB_SHAPES="32 64 1" tools/ab_bench_step.sh ...   # the demo's step
#
# AB_SHAPES lists "image-size batch threads" triples, comma-separated (default "32 128 2,64 32
# 2"); AB_PRECISION is bench_step's --precision (default fp32). Prints one line per run and,
# per shape, the median of the pairs' before/after ratios.
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: tools/ab_bench_step.sh BEFORE_BUILD_DIR AFTER_BUILD_DIR [PAIRS]" >&2
  exit 2
fi
before=$1 after=$2 pairs=${3:-3}
for dir in "$before" "$after"; do
  [[ -x $dir/bench/bench_step ]] || { echo "no $dir/bench/bench_step" >&2; exit 2; }
done
precision=${AB_PRECISION:-fp32}
IFS=, read -r -a shapes <<<"${AB_SHAPES:-32 128 2,64 32 2}"
step_us() {
  "$1/bench/bench_step" --arch resnet18 --image-size "$2" --batch-size "$3" --threads "$4" \
    --precision "$precision" --rounds 2 --min-seconds 2 --no-baseline 2>&1 |
    awk '/train step/ {t = $7} END {print t}'
}
for shape in "${shapes[@]}"; do
  read -r size batch threads <<<"$shape"
  threads=${threads:-2}
  ratios=()
  for ((i = 1; i <= pairs; ++i)); do
    b=$(step_us "$before" "$size" "$batch" "$threads")
    a=$(step_us "$after" "$size" "$batch" "$threads")
    echo "resnet18 ${size}px b$batch $precision ${threads}t pair $i: before $b us, after $a us"
    ratios+=("$(awk -v b="$b" -v a="$a" 'BEGIN {printf "%.3f", b / a}')")
  done
  median=$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
  echo "resnet18 ${size}px b$batch $precision ${threads}t: before/after per pair ${ratios[*]}; median ${median}x"
done
