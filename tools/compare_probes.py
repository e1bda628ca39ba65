#!/usr/bin/env python3
"""Compares two probe_step files of the same checkpoint and batch, e.g. --device cuda against
--device cpu: every tensor's relative difference (norm of the difference over the norm of
the reference's), the worst output and the worst gradient, and the ReLU flips between them
(elements of a ReLU's output that are 0 in one and positive in the other: each drops or keeps
an element's gradient, so below one the gradients part by far more than rounding). Also the
max-pool's moved maxima: windows whose largest input sits elsewhere in the other file, where
the reference's values at both places are within 1e-5 of each other (the trainer's images are
upsampled, so neighbouring pixels tie, and each device's rounding breaks the tie its own
way). Each moves a whole element of the gradient into the max-pool's input to its neighbour,
so the gradients into the layers below it (the stem's conv and BN) are not compared when
some moved; every parameter gradient still is.

    /usr/bin/python3 tools/compare_probes.py REFERENCE OTHER [--output-tolerance T]
        [--gradient-tolerance T] [--flipped-gradient-tolerance T] [--strict-until LAYER]
        [--json FILE]

Exits 1 when an output differs by more than --output-tolerance (1e-4), or a gradient by more
than --gradient-tolerance (1e-4; --flipped-gradient-tolerance, 2e-2, when a ReLU flipped or a
max-pool maximum moved). With --strict-until LAYER (a layer, or a stage: layer3 is through its
last block) the outputs after it (and the logits and the loss) are reported, not held to the tolerance: for batches that leave the last layers'
BatchNorms two values a channel, whose output is then a sign (+-1 times the weight, plus the
bias) that any rounding can flip where the two values nearly tie.
Standard library only (tools/safetensors_plain.py).
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_plain import read_safetensors_plain  # noqa: E402


def relative(values, reference):
    norm = math.sqrt(sum(r * r for r in reference))
    return math.sqrt(sum((v - r) ** 2 for v, r in zip(values, reference))) / max(norm, 1e-30)


def max_pool_argmax(shape, values, kernel=3, stride=2, padding=1):
    """Per window of a max-pool over NCHW `values`, the flat index (in its plane) of its
    maximum, chosen as PyTorch does: the first largest in row-major order, NaN winning."""
    n, c, h, w = shape
    out_h = (h + 2 * padding - kernel) // stride + 1
    out_w = (w + 2 * padding - kernel) // stride + 1
    picks = []
    for plane in range(n * c):
        base = plane * h * w
        for oh in range(out_h):
            rows = range(max(oh * stride - padding, 0), min(oh * stride - padding + kernel, h))
            for ow in range(out_w):
                cols = range(max(ow * stride - padding, 0), min(ow * stride - padding + kernel, w))
                best, at = -math.inf, rows[0] * w + cols[0]
                for ih in rows:
                    for iw in cols:
                        v = values[base + ih * w + iw]
                        if v > best or v != v:
                            best, at = v, ih * w + iw
                picks.append((base, at))
    return picks


def moved_maxima(shape, reference_input, other_input, tie=1e-5):
    """Windows whose maximum `other_input` puts elsewhere than `reference_input`, where the
    reference's values at the two places are within `tie` (relative): near ties only."""
    moved = 0
    for (base, a), (_, b) in zip(max_pool_argmax(shape, reference_input),
                                 max_pool_argmax(shape, other_input)):
        if a != b:
            x, y = reference_input[base + a], reference_input[base + b]
            moved += abs(x - y) <= tie * abs(x)
    return moved


def compare_probes(reference_path, other_path, output_tolerance=1e-4, gradient_tolerance=1e-4,
                   flipped_gradient_tolerance=2e-2, strict_until=None):
    """(summary dict, failure messages) of other against reference."""
    reference_meta, reference = read_safetensors_plain(reference_path)
    other_meta, other = read_safetensors_plain(other_path)
    failures = []
    for key in ("arch", "checkpoint", "batch", "layers"):
        if reference_meta.get(key) != other_meta.get(key):
            failures.append(f"{key} differs: {reference_meta.get(key)} vs {other_meta.get(key)}")
    if set(reference) != set(other):
        failures.append(f"the files hold different tensors: {sorted(set(reference) ^ set(other))[:5]}")
    if failures:
        return {}, failures
    flips = moved = 0
    layers = reference_meta["layers"].split(",")
    for layer in layers:
        a, b = reference[layer + ".output"][2], other[layer + ".output"][2]
        if min(a) >= 0:  # a ReLU's output
            flips += sum((x > 0) != (y > 0) for x, y in zip(a, b))
    below_pool = set()
    pool = layers.index("maxpool") if "maxpool" in layers else 0
    if pool > 0:  # its input is the previous layer's output
        pool_input = layers[pool - 1] + ".output"
        _, shape, values = reference[pool_input]
        moved = moved_maxima(shape, values, other[pool_input][2])
        if moved:
            below_pool = {layer + ".output_grad" for layer in layers[:pool]}
    reported_only = set()
    if strict_until is not None:
        # A layer or a stage of blocks ("layer3": through its last block).
        matches = [i for i, layer in enumerate(layers)
                   if layer == strict_until or layer.startswith(strict_until + ".")]
        if not matches:
            return {}, [f"--strict-until {strict_until}: no such layer (layers: {','.join(layers)})"]
        after = layers[matches[-1] + 1:]
        reported_only = {layer + ".output" for layer in after} | {"logits", "loss"}
    limit = {"output": output_tolerance,
             "gradient": flipped_gradient_tolerance if flips or moved else gradient_tolerance}
    worst = {"output": (0.0, ""), "gradient": (0.0, "")}
    for name, (_, _, values) in reference.items():
        kind = "output" if name.endswith(".output") or name in ("logits", "loss") else "gradient"
        difference = relative(other[name][2], values)
        if not math.isfinite(difference):
            difference = math.inf
        if name in below_pool and math.isfinite(difference):
            continue  # a moved maximum's: see the module docstring
        if difference > worst[kind][0] or not worst[kind][1]:
            worst[kind] = (difference, name)
        if difference > limit[kind] and name not in reported_only:
            failures.append(f"{name}: {difference:.2e} relative, more than {limit[kind]} "
                            f"({flips} ReLU flips, {moved} moved max-pool maxima)")
    summary = {"reference": reference_meta.get("device"), "other": other_meta.get("device"),
               "precision": other_meta.get("precision"), "tensors": len(reference),
               "flips": flips, "moved_maxima": moved, "worst_output": worst["output"][0],
               "worst_output_tensor": worst["output"][1], "worst_gradient": worst["gradient"][0],
               "worst_gradient_tensor": worst["gradient"][1]}
    return summary, failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reference")
    parser.add_argument("other")
    parser.add_argument("--output-tolerance", type=float, default=1e-4)
    parser.add_argument("--gradient-tolerance", type=float, default=1e-4)
    parser.add_argument("--flipped-gradient-tolerance", type=float, default=2e-2)
    parser.add_argument("--strict-until", metavar="LAYER",
                        help="hold the outputs to the tolerance up to LAYER (or a stage's last "
                        "block), report the rest")
    parser.add_argument("--json", help="write the summary as one JSON line here")
    args = parser.parse_args()
    summary, failures = compare_probes(args.reference, args.other, args.output_tolerance,
                                       args.gradient_tolerance, args.flipped_gradient_tolerance,
                                       args.strict_until)
    if summary:
        print(f"{summary['other']} against {summary['reference']} ({summary['precision']}): "
              f"outputs within {summary['worst_output']:.1e} ({summary['worst_output_tensor']}), "
              f"gradients within {summary['worst_gradient']:.1e} "
              f"({summary['worst_gradient_tensor']}); {summary['tensors']} tensors, "
              f"{summary['flips']} ReLU flips, {summary['moved_maxima']} moved max-pool maxima"
              + (f"; outputs after {args.strict_until} reported only" if args.strict_until else ""))
    if args.json and summary:
        with open(args.json, "w") as f:
            f.write(json.dumps(summary) + "\n")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
