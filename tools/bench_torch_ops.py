#!/usr/bin/python3
"""PyTorch CPU baseline for bench/bench_kernels' non-convolution ops (bench/op_rows.cpp).

Reads cases from stdin, one per line (tab-separated):  name  op  dims...  source
and prints  name  op  time_us  per case: the median over repeats after three warm-ups, fp32,
with --threads intra-op threads, in PyTorch's default (NCHW contiguous) layout.

source is the op's PyTorch code from its description in the op registry
(bench/ops/descriptions/), backslash-escaped onto one line: it defines make(dims), which
returns the callable to time; it runs with torch and F (torch.nn.functional) imported. This
script knows no op: each is described once, in C++, beside our implementation.
"""
import torch
import torch.nn.functional as F

from torch_timing import serve_cases

_makers = {}  # op -> its make(dims), compiled once


def unescape(source):
    out, i = [], 0
    while i < len(source):
        if source[i] == "\\" and i + 1 < len(source):
            out.append({"n": "\n", "t": "\t", "\\": "\\"}[source[i + 1]])
            i += 2
        else:
            out.append(source[i])
            i += 1
    return "".join(out)


def maker(op, source):
    if op not in _makers:
        namespace = {"torch": torch, "F": F}
        exec(compile(unescape(source), f"<description of {op}>", "exec"), namespace)
        _makers[op] = namespace["make"]
    return _makers[op]


def op_passes(fields):
    """The case's one timed op: fields are name, op, dims..., source."""
    _, op, *dims, source = fields
    return ((op, maker(op, source)([int(d) for d in dims])),)


if __name__ == "__main__":
    serve_cases(__doc__, op_passes)
