#!/usr/bin/python3
"""PyTorch CPU baseline for bench/bench_kernels: times the same convolution passes.

Reads cases from stdin, one per line (tab-separated):
    name  batch  in_h  in_w  in_channels  out_channels  kernel_h  kernel_w  stride  pad  dtype
and prints one line per case and pass (tab-separated):
    name  pass  time_us      with pass in {fwd, bwd_data, bwd_filter}
Timing: three warm-ups, then repeats until --min-seconds have passed (at least --min-reps);
the median is printed. Uses Debian's python3-torch (1.13) with --threads intra-op threads.
dtype f32: PyTorch's default (NCHW contiguous) layout. dtype bf16: bf16 input, weight and
output gradient, as torch.autocast("cpu", dtype=torch.bfloat16) hands them to the convolution
(its filter gradient is bf16, cast to fp32 afterwards for the master weight; ours is written in
fp32 directly), in NCHW and in channels_last, the faster kept per pass.
"""
import torch

from torch_timing import serve_cases


def conv_passes(fields):
    """The case's three passes on random tensors, in each layout timed for its dtype."""
    n, h, w, c, k, r, s, stride, pad = (int(v) for v in fields[1:10])
    dtype = fields[10] if len(fields) > 10 else "f32"
    if dtype == "f32":
        layouts, torch_dtype = [torch.contiguous_format], torch.float32
    elif dtype == "bf16":
        layouts, torch_dtype = [torch.contiguous_format, torch.channels_last], torch.bfloat16
    else:
        raise ValueError(f"case {fields[0]}: unknown dtype {dtype}")
    conv_args = ([stride, stride], [pad, pad], [1, 1], False, [0, 0], 1)
    passes = []
    for layout in layouts:
        x = torch.randn(n, c, h, w).to(torch_dtype).contiguous(memory_format=layout)
        weight = torch.randn(k, c, r, s).to(torch_dtype).contiguous(memory_format=layout)
        y = torch.nn.functional.conv2d(x, weight, stride=stride, padding=pad)
        dy = torch.randn(y.shape).to(torch_dtype).contiguous(memory_format=layout)

        def forward(x=x, weight=weight):
            torch.nn.functional.conv2d(x, weight, stride=stride, padding=pad)

        def backward(mask, x=x, weight=weight, dy=dy):
            return lambda: torch.ops.aten.convolution_backward(dy, x, weight, None, *conv_args,
                                                               mask)

        passes += [("fwd", forward), ("bwd_data", backward([True, False, False])),
                   ("bwd_filter", backward([False, True, False]))]
    return passes


if __name__ == "__main__":
    serve_cases(__doc__, conv_passes)
