#!/usr/bin/env python3
"""Writes tests/nn/golden/lr_schedules.golden: the learning rate of every optimizer step under
torch.optim.lr_scheduler, for a handful of configurations of each schedule kind of
nn/lr_schedule.h (Debian's python3-torch; run Debian's /usr/bin/python3):

    /usr/bin/python3 tools/make_lr_goldens.py tests/nn/golden

Each case is a schedule in parse_lr_schedule's flag syntax, with the training length it is
parsed for, and the PyTorch objects that flag stands for, built here by hand. The loop is the
one nn/lr_schedule.h describes: a dummy parameter, torch.optim.SGD, and per optimizer step
param_groups[0]["lr"] is recorded, then optimizer.step(); the epoch schedulers step after
every steps_per_epoch optimizer steps, OneCycleLR after every optimizer step (and its rate is
recorded for steps 0..total_steps, the last being the one PyTorch allows after the final step),
and the poly cases' LambdaLR after every optimizer step as well.

The file starts with the magic line "ENGINE-NN-LR-GOLDEN <version>", then comment lines with
the torch version and this command, then one line per case:
    case NAME BASE_LR EPOCHS STEPS_PER_EPOCH FLAG COUNT LR_0 ... LR_{COUNT-1}
with every rate as Python's repr (shortest round trip of the double).
"""
import os
import sys
import warnings

import torch
from torch.optim import lr_scheduler as S

GOLDEN_VERSION = 1
REGENERATE = "/usr/bin/python3 tools/make_lr_goldens.py tests/nn/golden"


def warmup_then(factor, epochs, main):
    """torchvision's references/classification/train.py: LinearLR warmup, then main."""
    def build(opt):
        warmup = S.LinearLR(opt, start_factor=factor, end_factor=1.0, total_iters=epochs)
        return S.SequentialLR(opt, schedulers=[warmup, main(opt)], milestones=[epochs])
    return build


# name, flag, base_lr, epochs, steps_per_epoch, scheduler builder (None: no scheduler),
# per_step (OneCycleLR: scheduler.step() after every optimizer step, total_steps of them).
EPOCH_CASES = [
    ("constant", "constant", 0.1, 3, 2, None),
    ("constant_warmup", "constant:warmup=3,warmup_factor=0.25", 0.1, 6, 2,
     lambda opt: S.LinearLR(opt, start_factor=0.25, end_factor=1.0, total_iters=3)),
    ("step_default", "step", 0.1, 100, 1, lambda opt: S.StepLR(opt, step_size=30, gamma=0.1)),
    ("step_small", "step:3,gamma=0.5", 0.05, 10, 4,
     lambda opt: S.StepLR(opt, step_size=3, gamma=0.5)),
    ("step_warmup", "step:size=3,gamma=0.1,warmup=2", 0.2, 12, 2,
     warmup_then(0.01, 2, lambda opt: S.StepLR(opt, step_size=3, gamma=0.1))),
    ("multistep_imagenet", "multistep:30,60,80", 0.1, 90, 1,
     lambda opt: S.MultiStepLR(opt, milestones=[30, 60, 80], gamma=0.1)),
    ("multistep_small", "multistep:2,5,6,gamma=0.2", 0.3, 10, 3,
     lambda opt: S.MultiStepLR(opt, milestones=[2, 5, 6], gamma=0.2)),
    ("multistep_warmup", "multistep:2,4,warmup=3,warmup_factor=0.1", 0.1, 10, 2,
     warmup_then(0.1, 3, lambda opt: S.MultiStepLR(opt, milestones=[2, 4], gamma=0.1))),
    ("cosine_epochs", "cosine", 0.1, 90, 1, lambda opt: S.CosineAnnealingLR(opt, T_max=90)),
    ("cosine_past_t_max", "cosine:t_max=10,eta_min=1e-4", 0.05, 25, 3,
     lambda opt: S.CosineAnnealingLR(opt, T_max=10, eta_min=1e-4)),
    ("cosine_warmup", "cosine:warmup=5", 0.5, 30, 2,
     warmup_then(0.01, 5, lambda opt: S.CosineAnnealingLR(opt, T_max=25, eta_min=0.0))),
    ("cosine_per_step", "cosine:eta_min=1e-6", 0.1, 1000, 1,
     lambda opt: S.CosineAnnealingLR(opt, T_max=1000, eta_min=1e-6)),
]

# name, flag, base_lr, epochs, steps_per_epoch, OneCycleLR keyword arguments.
ONE_CYCLE_CASES = [
    ("onecycle_default", "onecycle", 0.1, 10, 10, dict(max_lr=0.1, total_steps=100)),
    ("onecycle_custom",
     "onecycle:max_lr=0.4,total_steps=37,pct_start=0.25,div_factor=10,final_div_factor=100",
     0.1, 4, 10,
     dict(max_lr=0.4, total_steps=37, pct_start=0.25, div_factor=10, final_div_factor=100)),
    ("onecycle_three_phase", "onecycle:three_phase=true", 0.2, 5, 10,
     dict(max_lr=0.2, total_steps=50, three_phase=True)),
    ("onecycle_short_warmup", "onecycle:pct_start=0.05", 0.1, 1, 10,
     dict(max_lr=0.1, total_steps=10, pct_start=0.05)),
]


# name, flag, base_lr, epochs, steps_per_epoch, (power, end_lr, warmup_epochs): MLPerf's
# polynomial decay with per-step linear warmup (nn/lr_schedule.h, PolyLr), which 1.13 has no
# scheduler for: LambdaLR with that formula as the factor, stepped after every optimizer step.
POLY_CASES = [
    ("poly_default", "poly", 0.1, 5, 4, (2.0, 0.0, 0)),
    ("poly_mlperf", "poly:end_lr=1e-4,warmup=2", 8.5, 10, 3, (2.0, 1e-4, 2)),
    ("poly_power_one", "poly:power=1,end_lr=0.001,warmup=1", 0.4, 4, 5, (1.0, 0.001, 1)),
]


def optimizer(base_lr):
    return torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=base_lr, momentum=0.9)


def epoch_rates(base_lr, epochs, steps_per_epoch, build):
    opt = optimizer(base_lr)
    scheduler = build(opt) if build else None
    rates = []
    for _ in range(epochs):
        for _ in range(steps_per_epoch):
            rates.append(opt.param_groups[0]["lr"])
            opt.step()
        if scheduler:
            scheduler.step()
    return rates


def one_cycle_rates(base_lr, options):
    opt = optimizer(base_lr)
    scheduler = S.OneCycleLR(opt, anneal_strategy="cos", cycle_momentum=False, **options)
    rates = []
    for step in range(options["total_steps"] + 1):
        rates.append(opt.param_groups[0]["lr"])
        if step < options["total_steps"]:
            opt.step()
            scheduler.step()
    return rates


def poly_rates(base_lr, epochs, steps_per_epoch, poly):
    power, end_lr, warmup_epochs = poly
    warmup = warmup_epochs * steps_per_epoch
    total = epochs * steps_per_epoch

    def factor(step):
        if step < warmup:
            return (step + 1) / warmup
        done = min(step - warmup, total - warmup)
        return (end_lr + (base_lr - end_lr) * (1 - done / (total - warmup)) ** power) / base_lr

    opt = optimizer(base_lr)
    scheduler = S.LambdaLR(opt, factor)
    rates = []
    for _ in range(total):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        scheduler.step()
    return rates


def main():
    if len(sys.argv) != 2:
        sys.exit(f"usage: {REGENERATE}")
    warnings.simplefilter("ignore")  # SequentialLR's scheduler.step(0) warns about epoch=
    lines = [
        f"ENGINE-NN-LR-GOLDEN {GOLDEN_VERSION}",
        "# optimizer.param_groups[0]['lr'] per optimizer step under torch.optim.lr_scheduler",
        f"# torch {torch.__version__}",
        f"# regenerate: {REGENERATE}",
        "# case NAME BASE_LR EPOCHS STEPS_PER_EPOCH FLAG COUNT LR...",
    ]
    for name, flag, base_lr, epochs, steps_per_epoch, build in EPOCH_CASES:
        rates = epoch_rates(base_lr, epochs, steps_per_epoch, build)
        lines.append(" ".join(["case", name, repr(base_lr), str(epochs), str(steps_per_epoch), flag,
                               str(len(rates))] + [repr(r) for r in rates]))
    for name, flag, base_lr, epochs, steps_per_epoch, options in ONE_CYCLE_CASES:
        rates = one_cycle_rates(base_lr, options)
        lines.append(" ".join(["case", name, repr(base_lr), str(epochs), str(steps_per_epoch), flag,
                               str(len(rates))] + [repr(r) for r in rates]))
    for name, flag, base_lr, epochs, steps_per_epoch, poly in POLY_CASES:
        rates = poly_rates(base_lr, epochs, steps_per_epoch, poly)
        lines.append(" ".join(["case", name, repr(base_lr), str(epochs), str(steps_per_epoch), flag,
                               str(len(rates))] + [repr(r) for r in rates]))
    path = os.path.join(sys.argv[1], "lr_schedules.golden")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {path}: {len(lines) - 5} cases")


if __name__ == "__main__":
    main()
