#!/usr/bin/env python3
"""Writes a synthetic ImageFolder of JPEGs of realistic size for loader benchmarks:

    OUT/class_000/img_00000.jpg ... (500x375, quality 90 by default)

The pictures are random smooth fields, finer texture, hard-edged shapes and noise, tuned so
that they compress like photos (about 90 KiB at 500x375, quality 90; ImageNet's JPEGs average
about 110 KiB at a slightly smaller mean size), so decoding them costs what decoding a photo
costs. Deterministic for a given --seed. Needs numpy and PIL
(Debian: python3-numpy, python3-pil).

    /usr/bin/python3 tools/make_synthetic_jpegs.py --out /tmp/synthetic-jpegs --classes 10 --per-class 100
"""
import argparse
import multiprocessing
import os

import numpy as np
from PIL import Image, ImageDraw


def make_picture(width, height, rng):
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    channels = []
    for _ in range(3):
        field = np.zeros((height, width), np.float32)
        for _ in range(6):  # a few random low-frequency waves
            fx, fy = rng.uniform(-0.05, 0.05, size=2)
            field += rng.uniform(10, 40) * np.sin(fx * x + fy * y + rng.uniform(0, 6.3))
        for _ in range(6):  # and finer texture
            fx, fy = rng.uniform(-1.2, 1.2, size=2)
            field += rng.uniform(4, 16) * np.sin(fx * x + fy * y + rng.uniform(0, 6.3))
        channels.append(field + rng.uniform(60, 190))
    image = Image.fromarray(np.clip(np.stack(channels, -1), 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    for _ in range(int(rng.integers(8, 20))):  # objects with hard edges
        x0, y0 = int(rng.integers(0, width)), int(rng.integers(0, height))
        x1, y1 = x0 + int(rng.integers(10, width // 2)), y0 + int(rng.integers(10, height // 2))
        color = tuple(int(c) for c in rng.integers(0, 256, size=3))
        if rng.random() < 0.5:
            draw.ellipse([x0, y0, x1, y1], fill=color)
        else:
            draw.rectangle([x0, y0, x1, y1], fill=color)
    pixels = np.asarray(image, np.float32) + rng.normal(0, 14, (height, width, 3))  # texture
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))


def write_one(job):
    path, seed, width, height, quality = job
    rng = np.random.default_rng(seed)
    make_picture(width, height, rng).save(path, "JPEG", quality=quality)
    return os.path.getsize(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--per-class", type=int, default=100)
    parser.add_argument("--width", type=int, default=500)
    parser.add_argument("--height", type=int, default=375)
    parser.add_argument("--quality", type=int, default=90)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    args = parser.parse_args()
    jobs = []
    for c in range(args.classes):
        folder = os.path.join(args.out, f"class_{c:03d}")
        os.makedirs(folder, exist_ok=True)
        for i in range(args.per_class):
            seed = args.seed * 1_000_003 + c * args.per_class + i
            jobs.append((os.path.join(folder, f"img_{i:05d}.jpg"), seed, args.width, args.height,
                         args.quality))
    with multiprocessing.Pool(args.jobs) as pool:
        sizes = pool.map(write_one, jobs, chunksize=16)
    print(f"wrote {len(sizes)} JPEGs ({args.width}x{args.height}, quality {args.quality}) to "
          f"{args.out}: mean {sum(sizes) / len(sizes) / 1024:.1f} KiB")


if __name__ == "__main__":
    main()
