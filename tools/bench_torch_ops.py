#!/usr/bin/python3
"""PyTorch CPU baseline for bench/bench_kernels' memory-bound ops (BatchNorm, ReLU, max-pool).

Reads cases from stdin, one per line (tab-separated):  name  op  n  h  w  c
with op in {bn_forward, bn_backward, relu, maxpool}, and prints  name  op  time_us  per case:
the median over repeats after three warm-ups, in PyTorch's default (NCHW contiguous) layout,
fp32, with --threads intra-op threads. bn_forward is training mode (batch statistics and the
running-stat update); bn_backward is aten::native_batch_norm_backward for input, weight and
bias gradients.
"""
import argparse
import sys

import torch

from torch_timing import median_time_us


def make_op(op, n, h, w, c):
    x = torch.randn(n, c, h, w)
    if op == "relu":
        return lambda: torch.relu(x)
    if op == "maxpool":
        return lambda: torch.nn.functional.max_pool2d(x, 3, 2, 1)
    weight, bias = torch.ones(c), torch.zeros(c)
    running_mean, running_var = torch.zeros(c), torch.ones(c)
    if op == "bn_forward":
        return lambda: torch.nn.functional.batch_norm(x, running_mean, running_var, weight, bias,
                                                      training=True, momentum=0.1, eps=1e-5)
    if op == "bn_backward":
        _, save_mean, save_invstd = torch.ops.aten.native_batch_norm(
            x, weight, bias, running_mean, running_var, True, 0.1, 1e-5)
        dy = torch.randn_like(x)
        return lambda: torch.ops.aten.native_batch_norm_backward(
            dy, x, weight, running_mean, running_var, save_mean, save_invstd, True, 1e-5,
            [True, True, True])
    raise ValueError(f"unknown op {op}")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--min-seconds", type=float, default=0.3)
    parser.add_argument("--min-reps", type=int, default=3)
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    with torch.no_grad():
        for line in sys.stdin:
            if not line.strip():
                continue
            name, op, *dims = line.rstrip("\n").split("\t")
            fn = make_op(op, *(int(d) for d in dims))
            print(f"{name}\t{op}\t{median_time_us(fn, args.min_seconds, args.min_reps):.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
