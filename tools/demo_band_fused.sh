#!/usr/bin/env bash
# The demo's recipe (scripts/demo.flags) trained with the BatchNorm fusions on a CUDA device
# against its accuracy band on the CPU, which never fuses: a Fashion-MNIST subset
# (TRAIN_PER_CLASS, default 500: 5,000 images; VAL_PER_CLASS, default 100), 2 ranks, EPOCHS
# (default 4) epochs, bf16 (the fused kernels are bf16's and tf32's; fp32 falls back).
#   band  CPU_SEEDS (default "1 2 3") on --device cpu: mean +- max(3 sd, 1.5) points of val top-1
#   runs  CUDA_SEEDS (default 1) on --device cuda, --fusion full (the default): each must land
#         in the band
# Built for the sim device (SIM_BUILD_DIR, default build-sim: ENGINE_CUDA=SIM, one emulated GPU
# per rank), where a step of the fused kernels takes seconds; a build for a real GPU works the
# same (CUDA_BUILD_DIR). Exits 1 when a CUDA run leaves the band.
#
#   tools/record_bench.sh demo-band-fused-sim tools/demo_band_fused.sh
#
# Extra flags go to every run. BUILD_DIR (default build) holds the CPU resnet_train; WORK
# (default $BUILD_DIR/demo-band-fused) the subset and the runs.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
cuda_build=${CUDA_BUILD_DIR:-${SIM_BUILD_DIR:-build-sim}}
work=${WORK:-$build/demo-band-fused}
epochs=${EPOCHS:-4}
data=$work/fashion-mnist-${TRAIN_PER_CLASS:-500}-${VAL_PER_CLASS:-100}
for exe in "$build/resnet_train" "$cuda_build/resnet_train"; do
  [[ -x $exe ]] || { echo "tools/demo_band_fused.sh: $exe: not built" >&2; exit 2; }
done
if [[ ! -f $data/.complete ]]; then
  rm -rf "$data"
  /usr/bin/python3 tools/export_fashion_mnist.py --out "$data" \
    --train-per-class "${TRAIN_PER_CLASS:-500}" --val-per-class "${VAL_PER_CLASS:-100}" >/dev/null
  touch "$data/.complete"
fi
read -ra recipe <<<"$(sed 's/#.*//' scripts/demo.flags | tr '\n' ' ')"
mpi=(mpirun -np 2 --bind-to none -x ENGINE_SIM_DEVICE_COUNT=2)
[[ $(id -u) -eq 0 ]] && mpi+=(--allow-run-as-root)
[[ $(nproc) -lt 2 ]] && mpi+=(--oversubscribe)

train() {  # train NAME EXE DEVICE SEED
  rm -rf "${work:?}/$1"
  echo "== $1: resnet_train ${recipe[*]} --epochs $epochs --precision bf16 --device $3 --seed $4 ${*:5}"
  "${mpi[@]}" "$2" --data "$data" "${recipe[@]}" --epochs "$epochs" \
    --precision bf16 --device "$3" --seed "$4" --checkpoint-dir "$work/$1" --print-freq 1000 \
    "${@:5}" | grep -E '^(epoch [0-9]+(:| ?/[0-9]+ done)|.*(fusion|device).*)' || true
  [[ -f $work/$1/metrics.jsonl ]] || { echo "tools/demo_band_fused.sh: $1 wrote no metrics" >&2; exit 1; }
}
runs=()
for seed in ${CPU_SEEDS:-1 2 3}; do
  train "cpu-seed$seed" "$build/resnet_train" cpu "$seed" "$@"
  runs+=("cpu-seed$seed")
done
for seed in ${CUDA_SEEDS:-1}; do
  train "cuda-seed$seed" "$cuda_build/resnet_train" cuda "$seed" "$@"
  runs+=("cuda-seed$seed")
done
/usr/bin/python3 - "$work" "${runs[@]}" <<'PY'
import json, statistics, sys
work, runs = sys.argv[1], sys.argv[2:]
final = {}
for run in runs:
    epochs = [json.loads(line) for line in open(f"{work}/{run}/metrics.jsonl") if line.strip()]
    curve = " ".join(f"{e['val_top1_pct']:.2f}" for e in epochs)
    seconds = sum(e["epoch_s"] for e in epochs)
    final[run] = epochs[-1]["val_top1_pct"]
    print(f"{run}: val top-1 by epoch {curve} ({seconds:.0f} s of training)")
cpu = [final[r] for r in runs if r.startswith("cpu-")]
mean = statistics.fmean(cpu)
sd = statistics.stdev(cpu) if len(cpu) > 1 else 0.0
half = max(3 * sd, 1.5)
print(f"band (CPU, unfused, {len(cpu)} seeds): mean {mean:.2f}, sd {sd:.2f}: "
      f"[{mean - half:.2f}, {mean + half:.2f}]")
outside = [r for r in runs if r.startswith("cuda-") and abs(final[r] - mean) > half]
for r in runs:
    if r.startswith("cuda-"):
        print(f"{r} (fused): {final[r]:.2f}, {final[r] - mean:+.2f} from the CPU's mean: "
              f"{'outside' if r in outside else 'inside'} the band")
sys.exit(1 if outside else 0)
PY
