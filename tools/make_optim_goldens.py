#!/usr/bin/env python3
"""Writes tests/nn/golden/optimizers.golden: torch.optim.AdamW steps and
torch.nn.utils.clip_grad_norm_ on a small set of parameters shaped as tests/nn/test_sgd.cpp's
tiny model (conv1.weight, bn1.weight, bn1.bias, conv2.weight, conv2.bias, fc.weight, fc.bias),
with Debian's python3-torch (run Debian's /usr/bin/python3):

    /usr/bin/python3 tools/make_optim_goldens.py tests/nn/golden

Every tensor is flat (the optimizers are element-wise, so the engine's filter layout does not
matter) and written as Python's repr of each f32 value (shortest round trip). AdamW cases run
STEPS steps, foreach=False, with the rate of step k set to LR * (1 - 0.15 k) before it (as a
schedule would), on gradients drawn afresh per step; "two groups" puts norm weights, norm
biases and biases in a second param group with weight_decay=0 (the engine's
decay_norm_and_bias = false). Clip cases call clip_grad_norm_(params, MAX_NORM) once.

Lines, after the magic line "ENGINE-NN-OPTIM-GOLDEN <version>" and '#' comments:
    adamw NAME LR BETA1 BETA2 EPS WEIGHT_DECAY TWO_GROUPS STEPS
    clip NAME MAX_NORM TOTAL_NORM
followed by the case's tensors, one per line: "KIND PARAM V..." with KIND init, grad<k>
(the gradient of step k), final, exp_avg, exp_avg_sq for AdamW; grad, clipped for clip.
"""
import os
import sys

import torch

GOLDEN_VERSION = 1
REGENERATE = "/usr/bin/python3 tools/make_optim_goldens.py tests/nn/golden"

# name, element count, excluded from decay in the two-group recipe (norm or bias)
PARAMETERS = [
    ("conv1.weight", 15, False),
    ("bn1.weight", 3, True),
    ("bn1.bias", 3, True),
    ("conv2.weight", 54, False),
    ("conv2.bias", 2, True),
    ("fc.weight", 28, False),
    ("fc.bias", 4, True),
]

ADAMW_CASES = [
    # name, lr, betas, eps, weight_decay, two_groups, steps
    ("defaults", 1e-3, (0.9, 0.999), 1e-8, 1e-2, False, 5),
    ("strong_decay", 3e-2, (0.9, 0.999), 1e-8, 0.1, False, 5),
    ("two_groups", 3e-2, (0.8, 0.95), 1e-6, 0.1, True, 5),
    ("no_decay_large_eps", 1e-2, (0.9, 0.99), 1e-3, 0.0, False, 4),
]

CLIP_CASES = [("clips", 0.5), ("just_over", 5.0), ("no_clip", 1e3)]


def values_line(kind, name, tensor):
    return " ".join([kind, name] + [repr(v) for v in tensor.detach().flatten().tolist()])


def adamw_case(name, lr, betas, eps, weight_decay, two_groups, steps, generator):
    params = [torch.nn.Parameter(torch.randn(n, generator=generator)) for _, n, _ in PARAMETERS]
    lines = [" ".join(["adamw", name, repr(lr), repr(betas[0]), repr(betas[1]), repr(eps),
                       repr(weight_decay), "1" if two_groups else "0", str(steps)])]
    lines += [values_line("init", p, t) for (p, _, _), t in zip(PARAMETERS, params)]
    if two_groups:
        groups = [{"params": [t for (_, _, x), t in zip(PARAMETERS, params) if not x]},
                  {"params": [t for (_, _, x), t in zip(PARAMETERS, params) if x],
                   "weight_decay": 0.0}]
    else:
        groups = [{"params": params}]
    opt = torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                            amsgrad=False, foreach=False)
    for k in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr * (1 - 0.15 * k)
        for (p, _, _), t in zip(PARAMETERS, params):
            t.grad = torch.randn(t.shape, generator=generator)
            lines.append(values_line(f"grad{k}", p, t.grad))
        opt.step()
    for (p, _, _), t in zip(PARAMETERS, params):
        lines.append(values_line("final", p, t))
        lines.append(values_line("exp_avg", p, opt.state[t]["exp_avg"]))
        lines.append(values_line("exp_avg_sq", p, opt.state[t]["exp_avg_sq"]))
    return lines


def clip_case(name, max_norm, generator):
    params = [torch.nn.Parameter(torch.zeros(n)) for _, n, _ in PARAMETERS]
    grads = []
    for t in params:
        t.grad = torch.randn(t.shape, generator=generator)
        grads.append(t.grad.clone())
    total = torch.nn.utils.clip_grad_norm_(params, max_norm)
    lines = [" ".join(["clip", name, repr(max_norm), repr(total.item())])]
    lines += [values_line("grad", p, g) for (p, _, _), g in zip(PARAMETERS, grads)]
    lines += [values_line("clipped", p, t.grad) for (p, _, _), t in zip(PARAMETERS, params)]
    return lines


def main():
    if len(sys.argv) != 2:
        sys.exit(f"usage: {REGENERATE}")
    generator = torch.Generator().manual_seed(43)
    lines = [
        f"ENGINE-NN-OPTIM-GOLDEN {GOLDEN_VERSION}",
        "# torch.optim.AdamW steps and torch.nn.utils.clip_grad_norm_ on flat f32 tensors",
        f"# torch {torch.__version__}",
        f"# regenerate: {REGENERATE}",
    ]
    for case in ADAMW_CASES:
        lines += adamw_case(*case, generator)
    for name, max_norm in CLIP_CASES:
        lines += clip_case(name, max_norm, generator)
    path = os.path.join(sys.argv[1], "optimizers.golden")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {path}: {len(ADAMW_CASES)} AdamW and {len(CLIP_CASES)} clip cases")


if __name__ == "__main__":
    main()
