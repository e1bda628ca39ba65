#!/usr/bin/env python3
"""Turns the Fashion-MNIST files of Debian's dataset-fashion-mnist package into an ImageFolder:

    OUT/train/<label>_<name>/<index>.png   60,000 images
    OUT/val/<label>_<name>/<index>.png     10,000 images (the t10k set)

28x28 grayscale PNGs; the class folders carry the label as a prefix ("0_T-shirt_top",
"1_Trouser", ...) so that ImageFolder's sorted class order equals Fashion-MNIST's label order.
Only the Python standard library is used.

    python3 tools/export_fashion_mnist.py --out /tmp/fashion-mnist
    python3 tools/export_fashion_mnist.py --out /tmp/fmnist-small --train-per-class 100 --val-per-class 20
"""
import argparse
import gzip
import os
import struct
import sys
import zlib

DEBIAN_DIR = "/usr/share/datasets/fashion-mnist"
CLASS_NAMES = ["T-shirt_top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
               "Bag", "Ankle_boot"]
SPLITS = {"train": "train", "val": "t10k"}


def read_idx(path, expected_magic):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, count = struct.unpack(">II", data[:8])
    if magic != expected_magic:
        sys.exit(f"{path}: magic {magic:#x}, expected {expected_magic:#x} (not an IDX file?)")
    if expected_magic == 2051:
        rows, cols = struct.unpack(">II", data[8:16])
        return count, rows, cols, data[16:]
    return count, data[8:]


def png_gray(width, height, pixels):
    def chunk(kind, body):
        return (struct.pack(">I", len(body)) + kind + body +
                struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))
    raw = b"".join(b"\x00" + pixels[y * width:(y + 1) * width] for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) +
            chunk(b"IEND", b""))


def export_split(source, out, split, prefix, per_class_limit):
    count, rows, cols, images = read_idx(os.path.join(source, f"{prefix}-images-idx3-ubyte.gz"), 2051)
    label_count, labels = read_idx(os.path.join(source, f"{prefix}-labels-idx1-ubyte.gz"), 2049)
    if label_count != count:
        sys.exit(f"{prefix}: {count} images but {label_count} labels")
    folders = [os.path.join(out, split, f"{label}_{name}") for label, name in enumerate(CLASS_NAMES)]
    for folder in folders:
        os.makedirs(folder, exist_ok=True)
    written = [0] * len(CLASS_NAMES)
    size = rows * cols
    for index in range(count):
        label = labels[index]
        if per_class_limit is not None and written[label] >= per_class_limit:
            continue
        pixels = images[index * size:(index + 1) * size]
        with open(os.path.join(folders[label], f"{index:05d}.png"), "wb") as f:
            f.write(png_gray(cols, rows, pixels))
        written[label] += 1
    print(f"{split}: {sum(written)} images in {len(CLASS_NAMES)} classes -> {os.path.join(out, split)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="dataset root to create (gets train/ and val/)")
    parser.add_argument("--source", default=DEBIAN_DIR, help=f"IDX .gz files (default {DEBIAN_DIR})")
    parser.add_argument("--train-per-class", type=int, help="keep at most this many train images per class")
    parser.add_argument("--val-per-class", type=int, help="keep at most this many val images per class")
    args = parser.parse_args()
    if not os.path.isdir(args.source):
        sys.exit(f"{args.source} not found: install Debian's dataset-fashion-mnist "
                 f"(apt-get install dataset-fashion-mnist) or pass --source")
    export_split(args.source, args.out, "train", SPLITS["train"], args.train_per_class)
    export_split(args.source, args.out, "val", SPLITS["val"], args.val_per_class)


if __name__ == "__main__":
    main()
