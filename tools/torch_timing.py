"""The timing loop and the case loop shared by the PyTorch baselines that the benchmarks run
(tools/bench_torch_ops.py, tools/bench_torch_step.py)."""
import argparse
import statistics
import sys
import time

import torch


def median_time_us(fn, min_seconds, min_reps):
    """Median wall time of fn() in microseconds, over repeats until min_seconds have passed
    (and at least min_reps ran). Three warm-up calls first: oneDNN creates and caches its
    primitive for a new shape on the first call, and the first timed case otherwise varied
    from 4.5 to 19 ms between runs."""
    for _ in range(3):
        fn()
    times = []
    start = time.perf_counter()
    while len(times) < min_reps or time.perf_counter() - start < min_seconds:
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def serve_cases(description, timed_passes):
    """Parses --threads, --min-seconds and --min-reps, then reads tab-separated case lines from
    stdin one at a time, as they arrive (bench_kernels sends each just before it times its own),
    and for every pass that timed_passes(fields) returns as (pass, fn) pairs prints
    "name<TAB>pass<TAB>time_us", name being the line's first field; a pass returned more than
    once (one fn per memory layout) is printed once, with its fastest time."""
    parser = argparse.ArgumentParser(description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--min-seconds", type=float, default=0.3)
    parser.add_argument("--min-reps", type=int, default=3)
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    with torch.no_grad():
        for line in iter(sys.stdin.readline, ""):
            if not line.strip():
                continue
            fields = line.rstrip("\n").split("\t")
            fastest = {}  # pass -> time: a pass offered in several ways keeps its fastest
            for pass_name, fn in timed_passes(fields):
                time_us = median_time_us(fn, args.min_seconds, args.min_reps)
                fastest[pass_name] = min(time_us, fastest.get(pass_name, time_us))
            for pass_name, time_us in fastest.items():
                print(f"{fields[0]}\t{pass_name}\t{time_us:.1f}", flush=True)
