#!/usr/bin/env python3
"""The copy floor of a ResNet training step outside its convolutions (issue 41's yardstick).

Walks torchvision's resnet18/34/50/101/152 at an image size and batch and adds up, family by
family, the bytes that the step's memory-bound work must move if each of its tensors is read
once and written once: no kernel of ours can do better than that at the device's copy
bandwidth, so time outside the convolutions over this floor says how far the memory-bound half
of the step is from done. The rules (activations in the step's dtype, E bytes an element):
  batchnorm forward   every BatchNorm (with its ReLU, and at a block's end the residual add):
                      x read, y written, the residual read at a block's end;
  batchnorm backward  dy read, x read, y read where a ReLU's mask comes from it, dx written,
                      and at a block's end the shortcut's gradient written;
  max pool            forward: x read, y written, a one-byte argmax per output written;
                      backward: dy and the argmax read, dx written;
  average pool        forward: x read, the pooled features written; backward: dx written
                      (from the pooled gradient);
  head                the fc layer's and the loss's tensors, each once (features, logits,
                      their gradients, the fc weight in f32 read twice);
  optimizer           SGD with momentum over the f32 master weights: weight, gradient and
                      momentum read, weight and momentum written, plus the E-byte copy of the
                      weights the convolutions read when E < 4.
The convolutions' own operands and outputs are not counted (they are the compute-bound half),
nor what fusion saves (issue 46 moves BatchNorm's statistics and apply into the convolutions):
this is the unfused step's floor.

With --copy-gbps (the device's measured copy bandwidth; by default bench_kernels' d2d copy row
of --bench-kernels) it prints each
family's floor time and share; with --bench-step and --bench-kernels (gpu-check's JSON lines)
also the measured time outside the convolutions (the step's time less the sum of the
convolution rows, bench_kernels' "all conv layers" total of the same dtype) over the floor.

  step_memory_floor.py --arch resnet50 --image-size 224 --batch 128 --dtype bf16 \\
      --copy-gbps 4050 [--bench-step bench_step.jsonl --bench-kernels bench_kernels.jsonl]
  step_memory_floor.py --self-test
"""
import argparse
import json
import sys

BLOCKS = {"resnet18": ("basic", [2, 2, 2, 2]), "resnet34": ("basic", [3, 4, 6, 3]),
          "resnet50": ("bottleneck", [3, 4, 6, 3]), "resnet101": ("bottleneck", [3, 4, 23, 3]),
          "resnet152": ("bottleneck", [3, 8, 36, 3])}
DTYPE_BYTES = {"f32": 4, "fp32": 4, "tf32": 4, "bf16": 2}
FAMILIES = ["batchnorm forward", "batchnorm backward", "max pool", "average pool", "head",
            "optimizer"]


def conv_out(size, kernel, stride):
    padding = kernel // 2
    return (size + 2 * padding - kernel) // stride + 1


def walk(arch, image_size, batch, classes=1000):
    """The model's BatchNorms, pools and parameters: a list of (family, tensor bytes...) terms
    in elements, and the parameter count. Each BatchNorm is (elements, relu, block_end)."""
    kind, counts = BLOCKS[arch]
    expansion = 4 if kind == "bottleneck" else 1
    norms = []  # (elements per image, has relu, ends a block)
    params = 0

    def conv(cin, cout, k):
        nonlocal params
        params += cin * cout * k * k

    def bn(channels, pixels, relu, block_end=False):
        nonlocal params
        params += 2 * channels
        norms.append((channels * pixels, relu, block_end))

    size = conv_out(image_size, 7, 2)
    conv(3, 64, 7)
    bn(64, size * size, True)
    stem = 64 * size * size
    pooled_size = conv_out(size, 3, 2)
    pooled = 64 * pooled_size * pooled_size
    size, channels = pooled_size, 64
    for stage, blocks in enumerate(counts):
        width = 64 << stage
        for block in range(blocks):
            stride = 2 if stage > 0 and block == 0 else 1
            out_size = conv_out(size, 3, stride) if stride > 1 else size
            out_channels = width * expansion
            if kind == "bottleneck":
                conv(channels, width, 1)
                bn(width, size * size, True)
                conv(width, width, 3)
                bn(width, out_size * out_size, True)
                conv(width, out_channels, 1)
                bn(out_channels, out_size * out_size, True, block_end=True)
            else:
                conv(channels, width, 3)
                bn(width, out_size * out_size, True)
                conv(width, width, 3)
                bn(width, out_size * out_size, True, block_end=True)
            if stride > 1 or channels != out_channels:
                conv(channels, out_channels, 1)
                bn(out_channels, out_size * out_size, False)
            size, channels = out_size, out_channels
    features = channels
    params += features * classes + classes
    return {"norms": norms, "stem": stem, "pooled": pooled, "last": channels * size * size,
            "features": features, "classes": classes, "params": params, "batch": batch}


def floor_bytes(model, dtype_bytes):
    """Bytes per step of each family (FAMILIES' order)."""
    e, n = dtype_bytes, model["batch"]
    fwd = bwd = 0
    for elements, relu, block_end in model["norms"]:
        fwd += elements * (2 + (1 if block_end else 0))
        bwd += elements * (3 + (1 if relu else 0) + (1 if block_end else 0))
    max_pool = (model["stem"] + model["pooled"]) * e * 2 + model["pooled"] * 2
    average_pool = (model["last"] + model["features"]) * e + model["last"] * e
    head = (2 * model["features"] + 2 * model["classes"]) * e + \
        2 * 4 * model["features"] * model["classes"] // n
    optimizer = model["params"] * (5 * 4 + (e if e < 4 else 0)) // n
    per_image = [fwd * e, bwd * e, max_pool, average_pool, head, optimizer]
    return [b * n for b in per_image]


def measured_outside_convs(step_path, kernels_path, dtype):
    step = [json.loads(line) for line in open(step_path) if line.strip()]
    kernels = [json.loads(line) for line in open(kernels_path) if line.strip()]
    # The default step's rows only: a variant's name goes on (" fusion=block", " graph=off",
    # " per-layer-gradients", " gated-sums=reread").
    step = [r for r in step if r.get("case", "").endswith(f" {dtype} train step")]
    total = [r for r in kernels if r.get("case", "").endswith(f"fwd+bwd {dtype} (x count)")]
    if not step or not total:
        return None
    return step[-1]["time_us"] / 1e3, total[-1]["time_us"] / 1e3


def copy_bandwidth(kernels_path):
    """bench_kernels' device copy row (GB/s), or None."""
    rows = [json.loads(line) for line in open(kernels_path) if line.strip()]
    copies = [r["gbps"] for r in rows if r.get("case", "").startswith("d2d copy") and "gbps" in r]
    return copies[-1] if copies else None


def report(args):
    if args.copy_gbps is None and args.bench_kernels:
        args.copy_gbps = copy_bandwidth(args.bench_kernels)
    model = walk(args.arch, args.image_size, args.batch)
    families = floor_bytes(model, DTYPE_BYTES[args.dtype])
    total = sum(families)
    print(f"{args.arch} {args.image_size} px, batch {args.batch}, {args.dtype}: "
          f"{model['params']:,} parameters, {len(model['norms'])} BatchNorms")
    print(f"{'family':<22}{'MB':>10}{'share':>8}" + (f"{'floor_ms':>10}" if args.copy_gbps else ""))
    for name, b in zip(FAMILIES, families):
        line = f"{name:<22}{b / 1e6:>10.1f}{100 * b / total:>7.1f}%"
        if args.copy_gbps:
            line += f"{b / (args.copy_gbps * 1e9) * 1e3:>10.3f}"
        print(line)
    line = f"{'total':<22}{total / 1e6:>10.1f}{100:>7.1f}%"
    floor_ms = total / (args.copy_gbps * 1e9) * 1e3 if args.copy_gbps else None
    if floor_ms is not None:
        line += f"{floor_ms:>10.3f}"
    print(line)
    if args.bench_step and args.bench_kernels and floor_ms:
        measured = measured_outside_convs(args.bench_step, args.bench_kernels, args.dtype)
        if measured is None:
            print(f"no {args.dtype} step row or convolution total in the JSON given")
            return 1
        step_ms, conv_ms = measured
        outside = step_ms - conv_ms
        print(f"measured: step {step_ms:.2f} ms, convolutions {conv_ms:.2f} ms (bench_kernels' "
              f"total), outside them {outside:.2f} ms = {outside / floor_ms:.2f}x the floor "
              f"(goal <= 1.3x)")
    return 0


def self_test():
    failures = []

    def expect(what, got, want):
        if got != want:
            failures.append(f"{what}: {got}, expected {want}")

    # torchvision's parameter counts (sum(p.numel() for p in model.parameters())).
    expect("resnet18 parameters", walk("resnet18", 224, 1)["params"], 11_689_512)
    expect("resnet50 parameters", walk("resnet50", 224, 1)["params"], 25_557_032)
    expect("resnet50 BatchNorms", len(walk("resnet50", 224, 1)["norms"]), 53)
    # The max pool at 224 px, one image, bf16: 112x112x64 in, 56x56x64 out, each read or
    # written twice (forward and backward), and the argmax written and read once each.
    expect("max pool bytes", floor_bytes(walk("resnet18", 224, 1), 2)[2],
           (112 * 112 * 64 + 56 * 56 * 64) * 2 * 2 + 56 * 56 * 64 * 2)
    # A batch of 128 scales the activations' bytes by 128, the optimizer's not at all.
    one, many = floor_bytes(walk("resnet50", 224, 1), 2), floor_bytes(walk("resnet50", 224, 128), 2)
    expect("batchnorm forward x128", many[0], 128 * one[0])
    expect("optimizer per step", abs(many[5] - one[5]) <= 128, True)
    expect("optimizer bytes", one[5], 25_557_032 * 22)
    if failures:
        print("step_memory_floor self-test FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("step_memory_floor self-test: parameter counts, BatchNorm count and byte rules as "
          "expected")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arch", choices=sorted(BLOCKS), default="resnet50")
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--dtype", choices=sorted(DTYPE_BYTES), default="bf16")
    parser.add_argument("--copy-gbps", type=float, help="the device's copy bandwidth, GB/s")
    parser.add_argument("--bench-step", help="bench_step --json lines (gpu-check's)")
    parser.add_argument("--bench-kernels", help="bench_kernels --json lines of the same dtype")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    if args.image_size < 32 or args.batch < 1:
        parser.error("--image-size must be >= 32 and --batch >= 1")
    return report(args)


if __name__ == "__main__":
    sys.exit(main())
