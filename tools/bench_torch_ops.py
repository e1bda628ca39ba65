#!/usr/bin/python3
"""PyTorch CPU baseline for bench/bench_kernels' non-convolution ops (bench/op_cases.cpp).

Reads cases from stdin, one per line (tab-separated):  name  op  dims...
and prints  name  op  time_us  per case: the median over repeats after three warm-ups, fp32,
with --threads intra-op threads, in PyTorch's default (NCHW contiguous) layout. dims by op:

  bn_forward bn_backward relu relu_backward add_relu
  maxpool maxpool_backward avgpool avgpool_backward      n h w c   (an activation)
  linear_fwd linear_bwd_data linear_bwd_weight            rows in out
  cross_entropy topk                                      n classes
  sgd                                                     numel

bn_forward is training mode (batch statistics and the running-stat update); bn_backward is
aten::native_batch_norm_backward for input, weight and bias gradients. The backward ops call
the aten kernels autograd runs (threshold_backward, max_pool2d_with_indices_backward,
_adaptive_avg_pool2d_backward). Where aten has an out= form the output is preallocated, as
our ops' outputs are. linear_* are the fc layer's products: F.linear with bias, dy @ w, and
dy.t() @ x with dy.sum(0). cross_entropy is F.cross_entropy(label_smoothing=0.1) forward and
backward (autograd); topk is the top-1 and top-5 correct counts as the ImageNet reference
script computes them. sgd is one torch.optim.SGD step over a flat tensor.
"""
import torch
import torch.nn.functional as F

from torch_timing import serve_cases


def activation_op(op, n, h, w, c):
    x = torch.randn(n, c, h, w)
    out = torch.empty_like(x)
    if op == "relu":
        return lambda: torch.relu(x)
    if op == "relu_backward":
        y, dy = torch.relu(x), torch.randn_like(x)
        return lambda: torch.ops.aten.threshold_backward.grad_input(dy, y, 0.0, grad_input=out)
    if op == "add_relu":
        # aten's fused add+ReLU (what torch.jit fuses add then relu into): faster here than
        # torchvision's in-place add_ then relu_, which passes over the data twice.
        other = torch.randn_like(x)
        return lambda: torch.ops.aten._add_relu.out(x, other, out=out)
    if op == "maxpool":
        return lambda: F.max_pool2d(x, 3, 2, 1)
    if op == "maxpool_backward":
        y, indices = F.max_pool2d(x, 3, 2, 1, return_indices=True)
        dy = torch.randn_like(y)
        return lambda: torch.ops.aten.max_pool2d_with_indices_backward.grad_input(
            dy, x, [3, 3], [2, 2], [1, 1], [1, 1], False, indices, grad_input=out)
    if op == "avgpool":
        return lambda: F.adaptive_avg_pool2d(x, 1)
    if op == "avgpool_backward":
        dy = torch.randn(n, c, 1, 1)
        return lambda: torch.ops.aten._adaptive_avg_pool2d_backward(dy, x)
    weight, bias = torch.ones(c), torch.zeros(c)
    running_mean, running_var = torch.zeros(c), torch.ones(c)
    if op == "bn_forward":
        return lambda: F.batch_norm(x, running_mean, running_var, weight, bias, training=True,
                                    momentum=0.1, eps=1e-5)
    if op == "bn_backward":
        _, save_mean, save_invstd = torch.ops.aten.native_batch_norm(
            x, weight, bias, running_mean, running_var, True, 0.1, 1e-5)
        dy = torch.randn_like(x)
        return lambda: torch.ops.aten.native_batch_norm_backward(
            dy, x, weight, running_mean, running_var, save_mean, save_invstd, True, 1e-5,
            [True, True, True])
    raise ValueError(f"unknown op {op}")


def linear_op(op, rows, features, classes):
    x, w, b = torch.randn(rows, features), torch.randn(classes, features), torch.randn(classes)
    dy = torch.randn(rows, classes)
    if op == "linear_fwd":
        return lambda: F.linear(x, w, b)
    if op == "linear_bwd_data":
        return lambda: dy @ w
    if op == "linear_bwd_weight":
        return lambda: (dy.t() @ x, dy.sum(0))
    raise ValueError(f"unknown op {op}")


def loss_op(op, n, classes):
    logits = torch.randn(n, classes)
    labels = torch.randint(classes, (n,))
    if op == "topk":
        def topk():
            correct = logits.topk(5, 1).indices.eq(labels[:, None])
            return correct[:, :1].sum(), correct.sum()
        return topk
    if op == "cross_entropy":
        logits.requires_grad_(True)

        def forward_backward():
            with torch.enable_grad():
                loss = F.cross_entropy(logits, labels, label_smoothing=0.1)
                return torch.autograd.grad(loss, logits)
        return forward_backward
    raise ValueError(f"unknown op {op}")


def sgd_op(numel):
    # foreach=False, the single-tensor loop; over one flat tensor the foreach path measured
    # the same (17.2 vs 17.3 ms for 11.7M floats on 2 threads) and 1.13 has no fused SGD.
    param = torch.nn.Parameter(torch.full((numel,), 0.5))
    param.grad = torch.full((numel,), 1e-3)  # set once, as bench_kernels' grads
    optimizer = torch.optim.SGD([param], lr=0.1, momentum=0.9, weight_decay=1e-4, nesterov=False,
                                foreach=False)
    optimizer.step()  # creates the momentum buffer, as our first step fills it
    return optimizer.step


def make_op(op, dims):
    if op.startswith("linear_"):
        return linear_op(op, *dims)
    if op in ("cross_entropy", "topk"):
        return loss_op(op, *dims)
    if op == "sgd":
        return sgd_op(*dims)
    return activation_op(op, *dims)


def op_passes(fields):
    """The case's one timed op: fields are name, op, dims..."""
    _, op, *dims = fields
    return ((op, make_op(op, [int(d) for d in dims])),)


if __name__ == "__main__":
    serve_cases(__doc__, op_passes)
