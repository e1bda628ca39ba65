#!/usr/bin/env python3
"""Plots resnet_train's metrics file (one JSON line per epoch) to a PNG: loss per epoch (train
and val) beside accuracy per epoch (train top-1, val top-1, val top-5). With --steps, the
per-step training loss (--step-metrics) is drawn behind the epoch losses.

    /usr/bin/python3 tools/plot_metrics.py build/demo/metrics.jsonl --out curves.png \
        [--steps build/demo/steps.jsonl] [--title "resnet18 on Fashion-MNIST"]

Needs matplotlib (Debian: apt-get install python3-matplotlib).
"""
import argparse
import json
import sys


def read_jsonl(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as error:
        sys.exit(f"{path}: {error}")


def percent(line, key):
    """An accuracy in percent: KEY_pct, or KEY as a fraction in files written before 2026-12-04."""
    return line[key + "_pct"] if key + "_pct" in line else 100 * line[key]


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("metrics", help="the --metrics file (metrics.jsonl)")
    parser.add_argument("--out", required=True, help="PNG to write")
    parser.add_argument("--steps", help="the --step-metrics file, for the per-step loss")
    parser.add_argument("--title", default=None)
    args = parser.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_metrics.py needs matplotlib (apt-get install python3-matplotlib)")

    epochs = [e for e in read_jsonl(args.metrics) if e.get("train_loss") is not None]
    if not epochs:
        sys.exit(f"{args.metrics}: no training epochs to plot")
    x = [e["epoch"] for e in epochs]
    figure, (loss_axes, accuracy_axes) = plt.subplots(1, 2, figsize=(11, 4.2))
    if args.steps:
        steps = read_jsonl(args.steps)
        per_epoch = max(1, len(steps) // max(1, len(epochs)))
        loss_axes.plot([s["step"] / per_epoch for s in steps], [s["loss"] for s in steps],
                       color="0.8", linewidth=0.6, label="train (per step)")
    loss_axes.plot(x, [e["train_loss"] for e in epochs], "o-", label="train")
    loss_axes.plot(x, [e["val_loss"] for e in epochs], "s-", label="val")
    loss_axes.set_xlabel("epoch")
    loss_axes.set_ylabel("cross-entropy loss")
    loss_axes.grid(alpha=0.3)
    loss_axes.legend()
    for key, style, label in (("train_top1", "o-", "train top-1"), ("val_top1", "s-", "val top-1"),
                              ("val_top5", "^-", "val top-5")):
        accuracy_axes.plot(x, [percent(e, key) for e in epochs], style, label=label)
    best = max(epochs, key=lambda e: percent(e, "val_top1"))
    accuracy_axes.annotate(f"{percent(best, 'val_top1'):.2f}%", (best["epoch"], percent(best, "val_top1")),
                           textcoords="offset points", xytext=(-10, -16))
    accuracy_axes.set_xlabel("epoch")
    accuracy_axes.set_ylabel("accuracy (%)")
    accuracy_axes.grid(alpha=0.3)
    accuracy_axes.legend(loc="lower right")
    last = epochs[-1]
    title = args.title or f"{last.get('arch', 'resnet')}, {last.get('world_size', '?')} ranks"
    figure.suptitle(f"{title}: {sum(e['epoch_s'] for e in epochs):.0f} s")
    figure.tight_layout()
    figure.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
