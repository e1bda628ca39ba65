#!/usr/bin/python3
"""PyTorch CPU baseline for bench/bench_kernels: times the same convolution passes.

Reads cases from stdin, one per line (tab-separated):
    name  batch  in_h  in_w  in_channels  out_channels  kernel_h  kernel_w  stride  pad
and prints one line per case and pass (tab-separated):
    name  pass  time_us      with pass in {fwd, bwd_data, bwd_filter}
Timing: three warm-ups, then repeats until --min-seconds have passed (at least --min-reps);
the median is printed. Uses Debian's python3-torch (1.13) with --threads intra-op threads,
in PyTorch's default (NCHW contiguous) layout, fp32.
"""
import torch

from torch_timing import serve_cases


def conv_passes(fields):
    """The case's three passes, on random NCHW tensors."""
    n, h, w, c, k, r, s, stride, pad = (int(v) for v in fields[1:])
    x = torch.randn(n, c, h, w)
    weight = torch.randn(k, c, r, s)
    y = torch.nn.functional.conv2d(x, weight, stride=stride, padding=pad)
    dy = torch.randn_like(y)
    conv_args = ([stride, stride], [pad, pad], [1, 1], False, [0, 0], 1)

    def forward():
        torch.nn.functional.conv2d(x, weight, stride=stride, padding=pad)

    def backward(mask):
        return lambda: torch.ops.aten.convolution_backward(dy, x, weight, None, *conv_args, mask)

    return (("fwd", forward), ("bwd_data", backward([True, False, False])),
            ("bwd_filter", backward([False, True, False])))


if __name__ == "__main__":
    serve_cases(__doc__, conv_passes)
