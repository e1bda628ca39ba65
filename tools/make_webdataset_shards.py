#!/usr/bin/env python3
"""Writes an ImageFolder as WebDataset tar shards that resnet_train reads (--data PATTERN):

    python3 tools/make_webdataset_shards.py --folder DATA/train --out SHARDS --prefix train \\
        --samples-per-shard 1000
    -> SHARDS/train-000000.tar ... and SHARDS/classes.txt; prints the pattern to pass,
       e.g. SHARDS/train-{000000..000127}.tar

Samples are taken in torchvision's ImageFolder order (classes sorted by name and numbered from
0, then sorted(os.walk(class, followlinks=True)), names sorted in each folder) and written in
that order, so sample i of the shards is sample i of the folder: the same seed augments it
alike either way. Each sample is two members: KEY.<ext> (the file's bytes, its extension
lower-cased; .jpeg stays .jpeg) and KEY.cls (its class index as decimal text), where KEY is
the sample's index, 9 digits. classes.txt lists the class names, one a line, in index order.
Archives are GNU tar (long names allowed) with zero times and owners, so the same folder gives
the same bytes. Only the Python standard library is used.
"""
import argparse
import io
import os
import tarfile

# torchvision's IMG_EXTENSIONS.
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def image_folder_samples(root):
    """[(path, class index)] and the class names, as torchvision's ImageFolder lists them."""
    classes = sorted(entry.name for entry in os.scandir(root) if entry.is_dir())
    if not classes:
        raise SystemExit(f"--folder {root}: no class folders (expected {root}/<class>/<image>)")
    samples = []
    for index, name in enumerate(classes):
        for folder, _, files in sorted(os.walk(os.path.join(root, name), followlinks=True)):
            samples += [(os.path.join(folder, f), index) for f in sorted(files)
                        if f.lower().endswith(IMAGE_EXTENSIONS)]
    return samples, classes


def add_member(archive, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    info.mtime = 0
    archive.addfile(info, io.BytesIO(data))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # Checked after parsing, so that an unknown flag is the error named first.
    parser.add_argument("--folder", help="ImageFolder root: FOLDER/<class>/<image> (required)")
    parser.add_argument("--out", help="folder for the shards and classes.txt (required)")
    parser.add_argument("--prefix", default="train", help="shard names: PREFIX-000000.tar, ...")
    parser.add_argument("--samples-per-shard", type=int, default=1000)
    args = parser.parse_args()
    if not args.folder or not args.out:
        parser.error("--folder and --out are required")
    if args.samples_per_shard < 1:
        parser.error("--samples-per-shard must be at least 1")
    samples, classes = image_folder_samples(args.folder)
    if not samples:
        raise SystemExit(f"--folder {args.folder}: no image files in its class folders")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "classes.txt"), "w") as f:
        f.writelines(name + "\n" for name in classes)
    shards = (len(samples) + args.samples_per_shard - 1) // args.samples_per_shard
    for shard in range(shards):
        path = os.path.join(args.out, f"{args.prefix}-{shard:06d}.tar")
        first = shard * args.samples_per_shard
        with tarfile.open(path + ".partial", "w", format=tarfile.GNU_FORMAT) as archive:
            for index in range(first, min(first + args.samples_per_shard, len(samples))):
                source, label = samples[index]
                with open(source, "rb") as f:
                    image = f.read()
                extension = os.path.splitext(source)[1].lower()
                add_member(archive, f"{index:09d}{extension}", image)
                add_member(archive, f"{index:09d}.cls", str(label).encode())
        os.replace(path + ".partial", path)
    last = f"{shards - 1:06d}"
    print(f"wrote {len(samples)} samples of {len(classes)} classes in {shards} shard{'s' if shards != 1 else ''}: "
          f"{os.path.join(args.out, args.prefix)}-{{000000..{last}}}.tar")


if __name__ == "__main__":
    main()
