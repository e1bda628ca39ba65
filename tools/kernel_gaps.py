#!/usr/bin/env python3
"""The GPU's idle time between kernels over a profiled run (issue 41's goal: with the CUDA
graph, the GPU idle between kernels at most 5% of the step).

Reads the CSV that `nsys stats --report cuda_gpu_trace --format csv` writes: one row per
kernel, copy or memset the GPU ran, with its start and duration in nanoseconds (the columns are
found by their names, "Start (ns)" and "Duration (ns)", wherever they are). gpu-check captures
only bench_step's timed steps (`nsys profile --capture-range=nvtx --nvtx-capture` on the range
bench_step opens around them), so the window from the first start to the last end is those
steps. Busy is the union of the rows' intervals (work overlapping on two streams counts once),
idle the rest of the window: time the GPU waited for the host to launch, or for nothing.

  kernel_gaps.py TRACE.csv [--steps N]
  kernel_gaps.py --self-test
"""
import argparse
import csv
import sys


def read_intervals(lines):
    """(start_ns, end_ns) of every row of an nsys cuda_gpu_trace CSV."""
    rows = list(csv.reader(lines))
    for index, row in enumerate(rows):
        start = [i for i, name in enumerate(row) if name.strip().startswith("Start")]
        duration = [i for i, name in enumerate(row) if name.strip().startswith("Duration")]
        if start and duration:
            break
    else:
        raise ValueError("no header row with Start and Duration columns")
    intervals = []
    for row in rows[index + 1:]:
        try:
            begin = float(row[start[0]].replace(",", ""))
            length = float(row[duration[0]].replace(",", ""))
        except (IndexError, ValueError):
            continue  # a blank or summary line
        intervals.append((begin, begin + length))
    return intervals


def gaps(intervals):
    """The window, the busy time (the union of the intervals) and the largest idle gaps."""
    if not intervals:
        return 0.0, 0.0, []
    intervals = sorted(intervals)
    window = max(end for _, end in intervals) - intervals[0][0]
    busy, idle_gaps = 0.0, []
    current_start, current_end = intervals[0]
    for begin, end in intervals[1:]:
        if begin > current_end:
            busy += current_end - current_start
            idle_gaps.append(begin - current_end)
            current_start, current_end = begin, end
        else:
            current_end = max(current_end, end)
    busy += current_end - current_start
    return window, busy, sorted(idle_gaps, reverse=True)


def report(path, steps):
    with open(path, newline="") as f:
        intervals = read_intervals(f)
    window, busy, idle_gaps = gaps(intervals)
    if window <= 0:
        print(f"{path}: no GPU work in the trace")
        return 1
    idle = window - busy
    per_step = f", {window / steps / 1e6:.2f} ms a step over {steps} steps" if steps else ""
    largest = ", ".join(f"{g / 1e3:.1f}" for g in idle_gaps[:5])
    print(f"{len(intervals)} kernels, copies and memsets over {window / 1e6:.2f} ms{per_step}: "
          f"busy {100 * busy / window:.1f}%, idle {100 * idle / window:.1f}% "
          f"({len(idle_gaps)} gaps; the largest {largest} us) (goal with the graph: idle <= 5%)")
    return 0


def self_test():
    trace = [
        "Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Name",
        "1000,10000,1,1,1,1,128,1,1,kernel_a",      # [1, 11) us
        "6000,10000,2,1,1,1,128,1,1,kernel_b",      # [6, 16): overlaps a on another stream
        "21000,10000,3,1,1,1,128,1,1,kernel_c",     # [21, 31): a 5 us gap before it
        "31000,1000,4,,,,,,,[CUDA memset]",         # [31, 32): back to back
        "",
    ]
    intervals = read_intervals(trace)
    window, busy, idle_gaps = gaps(intervals)
    failures = []
    if len(intervals) != 4:
        failures.append(f"{len(intervals)} rows read, expected 4")
    if (window, busy, idle_gaps) != (31000.0, 26000.0, [5000.0]):
        failures.append(f"window {window}, busy {busy}, gaps {idle_gaps}: expected 31000, 26000, "
                        "[5000]")
    try:
        read_intervals(["Name,Time"])
        failures.append("a CSV without Start and Duration columns was accepted")
    except ValueError:
        pass
    if failures:
        print("kernel_gaps self-test FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("kernel_gaps self-test: overlapping work counted once, the gap found, a foreign CSV "
          "refused")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace", nargs="?", help="nsys stats cuda_gpu_trace CSV")
    parser.add_argument("--steps", type=int, default=0, help="the steps the trace covers")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    if not args.trace:
        parser.error("give the trace CSV, or --self-test")
    return report(args.trace, args.steps)


if __name__ == "__main__":
    sys.exit(main())
