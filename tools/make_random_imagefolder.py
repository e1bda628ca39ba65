#!/usr/bin/env python3
"""Writes a small ImageFolder of random RGB PNGs, train/ and val/ with the same classes:

    OUT/train/class_00/img_0000.png ...
    OUT/val/class_00/img_0000.png ...

For smoke runs of resnet_train where only the mechanics matter (scripts/gpu-check: on a GPU
machine and on the sim device), not what the model learns. Each class has its own mean
colour, so a run can still lower its loss. Only the Python standard library is used, so it
runs wherever python3 does (the GPU machine's and Debian's), and a --seed gives the same bytes.

    python3 tools/make_random_imagefolder.py --out /tmp/random-folder --classes 10 \\
        --train-per-class 64 --val-per-class 16 --size 64
"""
import argparse
import os
import random
import struct
import zlib


def png_rgb(size, pixels):
    def chunk(kind, body):
        return (struct.pack(">I", len(body)) + kind + body +
                struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))
    stride = 3 * size
    raw = b"".join(b"\x00" + pixels[y * stride:(y + 1) * stride] for y in range(size))
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) +
            chunk(b"IEND", b""))


def picture(size, mean, rng):
    noise = rng.randbytes(3 * size * size)
    return bytes(min(255, max(0, mean[i % 3] + noise[i] // 4 - 32)) for i in range(len(noise)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--train-per-class", type=int, default=64)
    parser.add_argument("--val-per-class", type=int, default=16)
    parser.add_argument("--size", type=int, default=64, help="width and height in pixels")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.classes < 1 or args.train_per_class < 1 or args.val_per_class < 1 or args.size < 1:
        parser.error("--classes, --train-per-class, --val-per-class and --size must be >= 1")
    rng = random.Random(args.seed)
    means = [[rng.randrange(48, 208) for _ in range(3)] for _ in range(args.classes)]
    for split, per_class in (("train", args.train_per_class), ("val", args.val_per_class)):
        for label in range(args.classes):
            folder = os.path.join(args.out, split, f"class_{label:02d}")
            os.makedirs(folder, exist_ok=True)
            for index in range(per_class):
                with open(os.path.join(folder, f"img_{index:04d}.png"), "wb") as f:
                    f.write(png_rgb(args.size, picture(args.size, means[label], rng)))
    print(f"{args.out}: {args.classes} classes, {args.train_per_class} train and "
          f"{args.val_per_class} val images each, {args.size}x{args.size}")


if __name__ == "__main__":
    main()
