#!/usr/bin/env python3
"""Replays optimizer steps of a resnet_train run in PyTorch and compares each step's loss
with the engine's: the same weights and momentum (a checkpoint of the run), the same images
(the run's --dump-batches files), the same learning rate per step (its --step-metrics).
Answers "is this the engine, or is this the recipe?" for a loss curve that looks wrong.

    /usr/bin/python3 tools/replay_in_torch.py --checkpoint ck/last.safetensors \\
        --batches dumps/ --steps steps.jsonl

SGD's settings come from the checkpoint's metadata (optimizer.momentum, .nesterov, ...); the
loss's label smoothing, which it does not record, from --label-smoothing. Data parallelism is replayed as
DDP does it with local BatchNorm: each rank's batch goes through the model on its own (its
own batch statistics) and the gradients are averaged over the ranks. Each step runs in
float32 (PyTorch's own rounding, beside ours) and in float64 (the exact answer both are
measured against). Prints one row per step; --json FILE writes them as JSON lines.

Needs torch and torchvision (Debian's python3-torch and python3-torchvision).

Reading the rows: the first depends only on the checkpoint and the batch (the forward pass,
which is continuous: both float32 losses stay within ~1e-6 of float64). Each later one also
depends on the gradients before it, which jump where a ReLU input within rounding of zero
lands on the other side of it. So float32 losses, PyTorch's as much as ours, drift away
from float64 at a rate that depends on the run (slowly at large batches, fast on a fresh
model and small ones): an engine bug shows as ours leaving float64 from the first rows, or
consistently faster than PyTorch's float32 over many steps.
"""
import argparse
import glob
import json
import os
import re
import sys

import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_torch import read_safetensors  # noqa: E402

MOMENTUM_PREFIX = "optimizer.momentum_buffer."
DUMP_NAME = re.compile(r"step-(\d+)-rank-(\d+)\.safetensors$")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, help="a checkpoint resnet_train wrote")
    parser.add_argument("--batches", required=True, help="the run's --dump-batches folder")
    parser.add_argument("--steps", required=True, help="the run's --step-metrics file")
    parser.add_argument("--count", type=int, default=0,
                        help="steps to replay after the checkpoint's (0: every dumped one)")
    parser.add_argument("--label-smoothing", type=float, default=0.0)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's)")
    parser.add_argument("--json", help="write the rows as JSON lines here")
    return parser.parse_args()


def fail(message):
    sys.exit(f"replay_in_torch: {message}")


def dumped_batches(folder):
    """{step: [rank 0's batch, rank 1's, ...]} of every complete step in the folder."""
    found = {}
    for path in glob.glob(os.path.join(folder, "step-*-rank-*.safetensors")):
        match = DUMP_NAME.search(path)
        if match:
            found.setdefault(int(match.group(1)), {})[int(match.group(2))] = path
    if not found:
        fail(f"{folder}: no step-*-rank-*.safetensors files (run resnet_train with "
             f"--dump-batches {folder})")
    steps = {}
    for step, by_rank in sorted(found.items()):
        world = int(read_safetensors(by_rank[min(by_rank)])[0]["world_size"])
        if sorted(by_rank) != list(range(world)):
            fail(f"step {step}: files for ranks {sorted(by_rank)}, the run had {world}")
        steps[step] = [by_rank[rank] for rank in range(world)]
    return steps


def engine_steps(path):
    """{step: {"loss", "lr", ...}} from a --step-metrics file."""
    rows = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                rows[row["step"]] = row
    return rows


def load_model(checkpoint, dtype):
    metadata, tensors = read_safetensors(checkpoint)
    if "arch" not in metadata:
        fail(f"{checkpoint}: no 'arch' in its metadata (not a checkpoint resnet_train wrote)")
    model = getattr(torchvision.models, metadata["arch"])(num_classes=int(metadata["num_classes"]))
    state = {k: v for k, v in tensors.items() if not k.startswith(MOMENTUM_PREFIX)}
    model.load_state_dict(state, strict=True)
    model = model.to(dtype).train()
    momentum = {k[len(MOMENTUM_PREFIX):]: v.to(dtype) for k, v in tensors.items()
                if k.startswith(MOMENTUM_PREFIX)}
    return model, momentum, metadata


def make_optimizer(model, momentum, metadata, checkpoint):
    if metadata.get("optimizer") not in (None, "sgd"):
        fail(f"{checkpoint}: saved by --opt {metadata['optimizer']}; this replays SGD runs only")
    if metadata.get("optimizer") != "sgd":
        fail(f"{checkpoint}: no SGD settings in its metadata (saved without the optimizer)")
    setting = lambda key: metadata["optimizer." + key]  # noqa: E731
    named = list(model.named_parameters())
    weight_decay = float(setting("weight_decay"))
    if setting("decay_norm_and_bias") == "true":
        groups = [{"params": [p for _, p in named]}]
    else:  # BatchNorm weights and biases, and every bias: the parameters of one dimension
        groups = [{"params": [p for _, p in named if p.ndim > 1]},
                  {"params": [p for _, p in named if p.ndim <= 1], "weight_decay": 0.0}]
    optimizer = torch.optim.SGD(groups, lr=0.0, momentum=float(setting("momentum")),
                                dampening=float(setting("dampening")),
                                nesterov=setting("nesterov") == "true", weight_decay=weight_decay)
    if momentum and setting("started") == "true":  # else the first step starts it, as ours
        for name, p in named:
            if name not in momentum:
                fail(f"the checkpoint has momentum buffers but none for {name}")
            optimizer.state[p]["momentum_buffer"] = momentum[name].clone()
    return optimizer


def replay(args, steps, lrs, dtype):
    """The loss of every step in `steps`, trained in `dtype` from the checkpoint."""
    model, momentum, metadata = load_model(args.checkpoint, dtype)
    optimizer = make_optimizer(model, momentum, metadata, args.checkpoint)
    criterion = torch.nn.CrossEntropyLoss(label_smoothing=args.label_smoothing)
    losses = []
    for step, paths in steps:
        optimizer.zero_grad(set_to_none=True)
        total, samples = 0.0, 0
        for path in paths:
            _, batch = read_safetensors(path)
            images, labels = batch["images"].to(dtype), batch["labels"]
            loss = criterion(model(images), labels)
            # DDP: every rank's gradient, averaged (equal batches, as resnet_train's drop_last).
            (loss / len(paths)).backward()
            total += loss.item() * len(labels)
            samples += len(labels)
        for group in optimizer.param_groups:
            group["lr"] = lrs[step]
        optimizer.step()
        losses.append(total / samples)
    return losses


def main():
    args = parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    ours = engine_steps(args.steps)
    start = int(load_model(args.checkpoint, torch.float32)[2].get("step", 0))
    dumped = dumped_batches(args.batches)
    steps = [(s, dumped[s]) for s in sorted(dumped) if s > start]
    if args.count > 0:
        steps = steps[:args.count]
    if not steps or steps[0][0] != start + 1:
        fail(f"the checkpoint is at step {start}; the dumps start at step "
             f"{steps[0][0] if steps else 'none after it'}, need {start + 1} onward")
    for (step, _), (next_step, _) in zip(steps, steps[1:]):
        if next_step != step + 1:
            fail(f"no dump of step {step + 1} (have {step} and {next_step})")
    missing = [s for s, _ in steps if s not in ours]
    if missing:
        fail(f"{args.steps}: no line for step(s) {missing[:5]}")
    lrs = {s: ours[s]["lr"] for s, _ in steps}
    f32 = replay(args, steps, lrs, torch.float32)
    f64 = replay(args, steps, lrs, torch.float64)
    rows = []
    print(f"replaying {len(steps)} step(s) after step {start} of {args.checkpoint}, "
          f"{len(steps[0][1])} rank(s)")
    print(f"{'step':>6} {'lr':>9} {'engine':>12} {'torch f32':>12} {'torch f64':>12} "
          f"{'engine-f64':>11} {'f32-f64':>11}")
    for (step, _), a, b in zip(steps, f32, f64):
        engine = ours[step]["loss"]
        rows.append({"step": step, "lr": lrs[step], "engine": engine, "torch_f32": a,
                     "torch_f64": b})
        print(f"{step:>6} {lrs[step]:>9.5f} {engine:>12.6f} {a:>12.6f} {b:>12.6f} "
              f"{engine - b:>11.3e} {a - b:>11.3e}")
    if args.json:
        with open(args.json, "w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
