#!/usr/bin/env python3
"""The CUDA budget check's self-test: a planted change that makes a GEMM kernel spill must fail
it, and the same kernel unplanted must pass.

    plant_spill.py --nvcc NVCC --source REPO --budget BUDGET.tsv [--arch 90]

Copies the repository's kernels/ into a scratch folder, plants one change in
kernels/cuda/gemm_tiles.cuh (the tensor-core kernel's launch bounds ask for 4 blocks of 256
threads per SM, which caps it at 64 registers where it needs about 96, so ptxas spills), compiles
planted_spill.cu (one instantiation of that kernel) against the copy and against the real tree,
and runs tools/check_cuda_budget.py on both: the planted object must breach with a spill, the
real one must not. Exit 77 (skip) when cuobjdump or nvdisasm is missing, as the check itself.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
ORIGINAL = "__launch_bounds__(Block::kThreads)"
PLANTED = "__launch_bounds__(Block::kThreads, 4)"


def compile_object(nvcc, include_root, arch, output):
    command = [nvcc, "-O3", "-DNDEBUG", "-std=c++20", "--expt-relaxed-constexpr",
               "-DENGINE_HAVE_CUDA=1", f"--generate-code=arch=compute_{arch},code=sm_{arch}",
               "-x", "cu", "-c", "-I", include_root, os.path.join(HERE, "planted_spill.cu"),
               "-o", output]
    subprocess.run(command, check=True)


def run_check(source, budget, arch, obj, expect_breach=None):
    command = [sys.executable, os.path.join(source, "tools", "check_cuda_budget.py"), "--budget",
               budget, "--arch", f"sm_{arch}", obj]
    if expect_breach:
        command += ["--expect-breach", expect_breach]
    result = subprocess.run(command, capture_output=True, text=True)
    print(result.stdout, end="")
    print(result.stderr, end="", file=sys.stderr)
    return result.returncode


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nvcc", required=True)
    parser.add_argument("--source", required=True, help="the repository's root")
    parser.add_argument("--budget", required=True)
    parser.add_argument("--arch", default="90")
    args = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="plant_spill.")
    try:
        shutil.copytree(os.path.join(args.source, "kernels"), os.path.join(scratch, "kernels"))
        tiles = os.path.join(scratch, "kernels", "cuda", "gemm_tiles.cuh")
        text = open(tiles).read()
        if text.count(ORIGINAL) != 1:
            print(f"plant_spill: '{ORIGINAL}' occurs {text.count(ORIGINAL)} times in "
                  "kernels/cuda/gemm_tiles.cuh, not once: update the planted change")
            return 1
        open(tiles, "w").write(text.replace(ORIGINAL, PLANTED))
        real, planted = os.path.join(scratch, "real.o"), os.path.join(scratch, "planted.o")
        compile_object(args.nvcc, args.source, args.arch, real)
        compile_object(args.nvcc, scratch, args.arch, planted)
        print("--- the kernel as it is: must pass")
        status = run_check(args.source, args.budget, args.arch, real)
        if status == SKIP:
            return SKIP
        if status != 0:
            print("plant_spill: the unplanted kernel fails the budget")
            return 1
        print(f"--- planted '{PLANTED}': must breach with a spill")
        if run_check(args.source, args.budget, args.arch, planted, "spill") != 0:
            print("plant_spill: the planted spill was not reported")
            return 1
        return 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
