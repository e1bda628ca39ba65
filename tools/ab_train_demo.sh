#!/usr/bin/env bash
# Interleaved A/B of two resnet_train binaries on the demo's recipe (scripts/demo.flags), 2 ranks
# on the CPU, over the first STEPS optimizer steps: prints each run's cumulative img/s at the
# last step, in the order A B, B A, A B, ... (so drift on a shared VM falls on both), then the
# means and their ratio. Needs the Fashion-MNIST export (scripts/demo makes it).
#
#   tools/ab_train_demo.sh /tmp/before/resnet_train build/resnet_train 4
#
# DEMO_DATA (default build/fashion-mnist) and PRECISION (default bf16) can be set.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $# -lt 3 ]]; then
  echo "usage: tools/ab_train_demo.sh BEFORE_BINARY AFTER_BINARY PAIRS [STEPS (300)]" >&2
  exit 2
fi
before=$1 after=$2 pairs=$3 steps=${4:-300}
read -ra recipe <<<"$(sed 's/#.*//' scripts/demo.flags | tr '\n' ' ')"
mpi=(mpirun -np 2 --bind-to none)
[[ $(id -u) -eq 0 ]] && mpi+=(--allow-run-as-root)
[[ $(nproc) -lt 2 ]] && mpi+=(--oversubscribe)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

run_one() {
  "${mpi[@]}" "$1" --data "${DEMO_DATA:-build/fashion-mnist}" "${recipe[@]}" --device cpu \
    --precision "${PRECISION:-bf16}" --checkpoint-dir "$scratch" --max-steps "$steps" \
    --print-freq "$steps" 2>&1 | sed -n "s/.*\[ *$steps\/.* \([0-9]*\) img\/s.*/\1/p"
}

for ((i = 0; i < pairs; i++)); do
  order=(before after)
  ((i % 2 == 1)) && order=(after before)
  for side in "${order[@]}"; do
    binary=$before
    [[ $side == after ]] && binary=$after
    echo "$side $(run_one "$binary")"
  done
done | tee "$scratch/runs.txt"
awk '{sum[$1] += $2; n[$1]++}
  END {b = sum["before"] / n["before"]; a = sum["after"] / n["after"];
       printf "mean img/s: before %.0f, after %.0f, after/before %.3f\n", b, a, a / b}' \
  "$scratch/runs.txt"
