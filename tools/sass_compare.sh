#!/usr/bin/env bash
# The main-K-loop figures of tools/sass_loop_stats.py for kernels/cuda/conv.cu at two commits,
# each compiled for sm_90 from a clean worktree with the same nvcc flags: judging a CUDA
# kernel change by its machine code on a machine without a GPU.
#
#   tools/sass_compare.sh BEFORE AFTER [KERNELS_REGEX_BEFORE [KERNELS_REGEX_AFTER]]
#   tools/sass_compare.sh 2a87426 HEAD gemm_wmma gemm_mma
#
# Needs nvcc and NVIDIA's cuobjdump/nvdisasm (see tools/sass_loop_stats.py).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $# -lt 2 || $1 == -* ]]; then
  echo "usage: tools/sass_compare.sh BEFORE AFTER [KERNELS_REGEX_BEFORE [KERNELS_REGEX_AFTER]]" >&2
  exit 2
fi
before=$(git rev-parse --short "$1")
after=$(git rev-parse --short "$2")
kernels_before=${3:-gemm_}
kernels_after=${4:-$kernels_before}
work=$(mktemp -d /tmp/sass_compare.XXXXXX)
trap 'git worktree remove --force "$work/before" >/dev/null 2>&1 || true;
      git worktree remove --force "$work/after" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
flags=(-O3 -DNDEBUG -std=c++20 --expt-relaxed-constexpr -DENGINE_HAVE_CUDA=1
       "--generate-code=arch=compute_90,code=[compute_90,sm_90]" -x cu -c)
for side in before after; do
  rev=${!side}
  git worktree add -f --detach "$work/$side" "$rev" >/dev/null 2>&1
  nvcc "${flags[@]}" -I"$work/$side" "$work/$side/kernels/cuda/conv.cu" -o "$work/$side.o"
done
echo "before: $before, kernels matching '$kernels_before', main K loop per trip:"
tools/sass_loop_stats.py "$work/before.o" --kernels "$kernels_before"
echo
echo "after: $after, kernels matching '$kernels_after', main K loop per trip:"
tools/sass_loop_stats.py "$work/after.o" --kernels "$kernels_after"
