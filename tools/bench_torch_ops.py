#!/usr/bin/python3
"""PyTorch CPU baseline for bench/bench_kernels' rows (bench/op_rows.cpp).

Reads cases from stdin, one per line (tab-separated):  name  op  dtype  dims...  source
and prints  name  op  time_us  per case: the median over repeats after three warm-ups, with
--threads intra-op threads.

source is the op's PyTorch code from its description in the op registry
(bench/ops/descriptions/), backslash-escaped onto one line: it defines make(dims), which
returns the callable to time, or a list of callables doing the same in different ways
(memory layouts), of which the fastest is kept; it runs with torch, F (torch.nn.functional)
and dtype (the case's dtype, f32 or bf16, as torch.float32 or torch.bfloat16) defined. This
script knows no op: each is described once, in C++, beside our implementation.
"""
import torch
import torch.nn.functional as F

from torch_timing import serve_cases

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}
_makers = {}  # (op, dtype) -> its make(dims), compiled once


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


def maker(op, dtype, source):
    if (op, dtype) not in _makers:
        if dtype not in DTYPES:
            raise ValueError(f"{op}: unknown dtype {dtype}")
        namespace = {"torch": torch, "F": F, "dtype": DTYPES[dtype]}
        exec(compile(unescape(source), f"<description of {op}>", "exec"), namespace)
        _makers[op, dtype] = namespace["make"]
    return _makers[op, dtype]


def op_passes(fields):
    """The case's one timed op, once per way make offers: fields are name, op, dtype, dims...,
    source."""
    _, op, dtype, *dims, source = fields
    made = maker(op, dtype, source)([int(d) for d in dims])
    return [(op, fn) for fn in (made if isinstance(made, (list, tuple)) else [made])]


if __name__ == "__main__":
    serve_cases(__doc__, op_passes)
