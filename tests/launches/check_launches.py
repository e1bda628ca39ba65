#!/usr/bin/env python3
"""Kernel launches per training step against their budget (ctest launches_*, sim device).

    check_launches.py --bench-step build-sim/bench/bench_step --budget tests/launches/budget.tsv
                      [--tighten N]

For each row of the budget (arch, image size, batch, precision, the most launches a step may
take) runs bench_step --launch-census on the sim device (two steps, none timed) with --json and
reads its kernel_launches: our kernels of one forward, backward, loss and SGD step, the same on
a GPU (engine::cuda::launch counts both). The kernels are queued but not run
(ENGINE_SIM_KERNELS=skip), on a device of an H100's 80 GiB: which kernels a step launches
depends on its shapes alone, so a GPU's 224 px batch-128 step is counted in seconds. The
census (launches per kernel family, then per kernel) is printed for each row. More than the budget fails, naming the row: a pass that was fused and split again, a
per-layer loop that grew a launch. Fewer says so, so the budget can follow an improvement down.
--tighten N checks against budgets N lower instead, and --first only the first row (the
self-test, which must fail).
"""
import argparse
import json
import os
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench-step", required=True)
    parser.add_argument("--budget", required=True)
    parser.add_argument("--tighten", type=int, default=0)
    parser.add_argument("--first", action="store_true")
    args = parser.parse_args()
    rows = [line.split() for line in open(args.budget)
            if line.strip() and not line.startswith("#")]
    if args.first:
        rows = rows[:1]
    failures = []
    for arch, size, batch, precision, budget in rows:
        allowed = int(budget) - args.tighten
        command = [args.bench_step, "--device", "cuda", "--arch", arch, "--image-size", size,
                   "--batch-size", batch, "--precision", precision, "--launch-census", "--json",
                   "--threads", "1"]
        env = dict(os.environ, ENGINE_SIM_KERNELS="skip", ENGINE_SIM_DEVICE_MEMORY_MIB="81920")
        result = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
        if result.returncode != 0:
            sys.exit(f"check_launches: {' '.join(command)} exited {result.returncode}:\n"
                     f"{result.stderr}")
        launches = json.loads(result.stdout.strip().splitlines()[-1]).get("kernel_launches")
        if launches is None:
            sys.exit(f"check_launches: bench_step printed no kernel_launches:\n{result.stdout}")
        what = f"{arch} {size}px batch {batch} {precision}: {launches} launches per step"
        print(f"{what}; the census:\n{result.stderr}")
        if launches > allowed:
            failures.append(f"{what}, over the budget of {allowed}")
        elif launches < allowed:
            print(f"{what}, under the budget of {allowed}: lower it in {args.budget}")
        else:
            print(f"{what}, the budget")
    if failures:
        sys.exit("check_launches: " + "; ".join(failures))


if __name__ == "__main__":
    main()
