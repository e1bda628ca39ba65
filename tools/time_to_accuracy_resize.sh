#!/usr/bin/env bash
# Time to accuracy of progressive resizing against the fixed-size recipe: resnet18 on a
# Fashion-MNIST subset (TRAIN_PER_CLASS, default 1500: 15,000 images; VAL_PER_CLASS, default
# 500), 2 ranks, 6 epochs of the demo's recipe at a final crop of 64 px, validated at 64 px:
#   fixed        --image-size 64 every epoch
#   progressive  --progressive-resize RAMP (default 32,1,5: 32, 40, 48, 56, 64, 64 px)
# Prints each run's epochs (crop, val top-1, cumulative seconds of training and validation) and the
# first epoch and training time at which val top-1 reached each of 80, 85 and 88%.
#
#   tools/record_bench.sh time-to-accuracy-resize tools/time_to_accuracy_resize.sh [FLAGS...]
#
# Extra flags go to both runs (e.g. --precision bf16). BUILD_DIR (default build) holds
# resnet_train; WORK (default $BUILD_DIR/time-to-accuracy) the subset and the runs.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
work=${WORK:-$build/time-to-accuracy}
data=$work/fashion-mnist-${TRAIN_PER_CLASS:-1500}-${VAL_PER_CLASS:-500}
if [[ ! -f $data/.complete ]]; then
  rm -rf "$data"
  /usr/bin/python3 tools/export_fashion_mnist.py --out "$data" \
    --train-per-class "${TRAIN_PER_CLASS:-1500}" --val-per-class "${VAL_PER_CLASS:-500}" >/dev/null
  touch "$data/.complete"
fi
mpi=(mpirun -np 2 --bind-to none)
[[ $(id -u) -eq 0 ]] && mpi+=(--allow-run-as-root)
[[ $(nproc) -lt 2 ]] && mpi+=(--oversubscribe)
recipe=(--arch resnet18 --device cpu --image-size 64 --val-image-size 64 --crop-scale 0.64,1
  --normalize 0.286,0.286,0.286/0.353,0.353,0.353 --epochs 6 -b 64 --lr 0.05
  --lr-schedule onecycle --momentum 0.9 --nesterov --wd 5e-4 --zero-init-residual
  --print-freq 1000)
for run in fixed progressive; do
  extra=()
  [[ $run == progressive ]] && extra=(--progressive-resize "${RAMP:-32,1,5}")
  rm -rf "${work:?}/$run"
  echo "== $run: resnet_train ${recipe[*]} ${extra[*]} $*"
  "${mpi[@]}" "$build/resnet_train" --data "$data" "${recipe[@]}" "${extra[@]}" \
    --checkpoint-dir "$work/$run" "$@" | grep -E '^epoch [0-9]+(:| ?/[0-9]+ done)'
done
/usr/bin/python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
for run in ("fixed", "progressive"):
    epochs = [json.loads(line) for line in open(f"{work}/{run}/metrics.jsonl") if line.strip()]
    elapsed, reached = 0.0, {}
    print(f"{run}:")
    for e in epochs:
        elapsed += e["epoch_s"]
        print(f"  epoch {e['epoch']}: val top-1 {e['val_top1_pct']:.2f}% at {elapsed:.0f} s "
              f"({e['images_per_s']:.0f} img/s)")
        for target in (80, 85, 88):
            if target not in reached and e["val_top1_pct"] >= target:
                reached[target] = (e["epoch"], elapsed)
    print("  reached: " + ", ".join(f"{t}% at epoch {reached[t][0]} ({reached[t][1]:.0f} s)"
                                     if t in reached else f"{t}% never" for t in (80, 85, 88)))
PY
