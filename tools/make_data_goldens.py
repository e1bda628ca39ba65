#!/usr/bin/env python3
"""Writes the golden files of the data/ tests from the reference implementation: torchvision's
ImageFolder rules, PIL decoding and convert('RGB'), torchvision transforms on PIL images, and
torch.utils.data.DistributedSampler.

    /usr/bin/python3 tools/make_data_goldens.py tests/data/golden

Needs Debian's python3-torch, python3-torchvision and python3-pil (run Debian's /usr/bin/python3,
not another interpreter first on PATH). Each file starts with the magic line
"ENGINE-DATA-GOLDEN <version>", then comment lines naming the library versions and this command;
the C++ tests (tests/data/golden.h) check the magic and the version.

Records are one per line: a keyword, then space-separated fields. Image bytes are base64,
8-bit pixels are hex (row-major, RGB), float32 values are 8 hex digits of their bits.
"""
import base64
import io
import math
import os
import struct
import sys
import tempfile
import zlib

import numpy as np
import PIL
import torch
import torchvision
from PIL import Image
from torch.utils.data import DistributedSampler
from torchvision import transforms as T
from torchvision.datasets import folder as tv_folder
from torchvision.transforms import functional as F

GOLDEN_VERSION = 1
REGENERATE = "/usr/bin/python3 tools/make_data_goldens.py tests/data/golden"


def header(what):
    return [
        f"ENGINE-DATA-GOLDEN {GOLDEN_VERSION}",
        f"# {what}",
        f"# torch {torch.__version__}, torchvision {torchvision.__version__}, Pillow {PIL.__version__}",
        f"# regenerate: {REGENERATE}",
    ]


def b64(data):
    return base64.b64encode(data).decode("ascii")


def pixels_hex(image):
    return np.ascontiguousarray(np.asarray(image.convert("RGB"), dtype=np.uint8)).tobytes().hex()


def floats_hex(tensor):
    # CHW (torchvision) -> HWC (the engine's NHWC), float32 bits as hex.
    values = tensor.permute(1, 2, 0).contiguous().numpy().astype("<f4")
    return values.tobytes().hex()


def test_pattern(width, height, seed):
    """Smooth gradients plus mild noise: compresses like a photo, exercises every channel."""
    rng = np.random.RandomState(seed)
    y, x = np.mgrid[0:height, 0:width]
    r = (255 * x / max(width - 1, 1))
    g = (255 * y / max(height - 1, 1))
    b = 128 + 100 * np.sin(x * 0.7) * np.cos(y * 0.5)
    rgb = np.stack([r, g, b], axis=-1) + rng.normal(0, 12, (height, width, 3))
    return np.clip(rgb, 0, 255).astype(np.uint8)


def encode(image, fmt, **options):
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def png_chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def png_16bit_rgb(array16):
    """PIL cannot write 16-bit RGB PNGs; this writes one by hand."""
    height, width, _ = array16.shape
    raw = b"".join(b"\x00" + array16[y].astype(">u2").tobytes() for y in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, 16, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) +
            png_chunk(b"IDAT", zlib.compress(raw)) + png_chunk(b"IEND", b""))


def decode_cases():
    rgb = Image.fromarray(test_pattern(13, 9, 1))
    rgba = rgb.copy()
    rgba.putalpha(Image.fromarray((np.arange(13 * 9).reshape(9, 13) * 2).astype(np.uint8)))
    gray = rgb.convert("L")
    palette = rgb.convert("P", palette=Image.ADAPTIVE, colors=16)
    palette_transparent = palette.copy()
    palette_transparent.info["transparency"] = 3
    gray16 = Image.fromarray((np.arange(13 * 9).reshape(9, 13) * 7).astype(np.uint16))
    rgb16 = (test_pattern(13, 9, 2).astype(np.uint16) * 257 + np.arange(3)).astype(np.uint16)
    cases = [
        ("jpeg_rgb_420", encode(rgb, "JPEG", quality=90)),
        ("jpeg_rgb_444", encode(rgb, "JPEG", quality=95, subsampling=0)),
        ("jpeg_progressive", encode(rgb, "JPEG", quality=85, progressive=True)),
        ("jpeg_gray", encode(gray, "JPEG", quality=90)),
        ("jpeg_cmyk", encode(rgb.convert("CMYK"), "JPEG", quality=90)),
        ("png_rgb", encode(rgb, "PNG")),
        ("png_rgba", encode(rgba, "PNG")),
        ("png_gray", encode(gray, "PNG")),
        ("png_gray_alpha", encode(rgba.convert("LA"), "PNG")),
        ("png_palette", encode(palette, "PNG")),
        ("png_palette_transparent", encode(palette_transparent, "PNG")),
        ("png_1bit", encode(gray.convert("1"), "PNG")),
        ("png_gray16", encode(gray16, "PNG")),
        ("png_rgb16", png_16bit_rgb(rgb16)),
        ("bmp_rgb", encode(rgb, "BMP")),
        ("bmp_palette", encode(palette, "BMP")),
        ("bmp_gray", encode(gray, "BMP")),
        ("ppm_rgb", encode(rgb, "PPM")),
        ("pgm_gray", encode(gray, "PPM")),
        ("tiff_rgb", encode(rgb, "TIFF")),
        ("tiff_rgb_lzw", encode(rgb, "TIFF", compression="tiff_lzw")),
        ("tiff_rgb_deflate", encode(rgb, "TIFF", compression="tiff_adobe_deflate")),
        ("tiff_gray", encode(gray, "TIFF")),
        ("tiff_rgba", encode(rgba, "TIFF")),
        ("tiff_palette", encode(palette, "TIFF")),
        ("tiff_cmyk", encode(rgb.convert("CMYK"), "TIFF")),
        ("webp_lossless", encode(rgb, "WEBP", lossless=True)),
        ("webp_lossy", encode(rgb, "WEBP", quality=80)),
        ("webp_lossless_alpha", encode(rgba, "WEBP", lossless=True, exact=True)),
        ("gif_palette", encode(palette, "GIF")),
    ]
    lines = header("decoding: each file's bytes and PIL's Image.open(f).convert('RGB')")
    for name, data in cases:
        image = Image.open(io.BytesIO(data))
        width, height = image.size
        lines.append(f"decode {name} {image.format} {image.mode} {width} {height} "
                     f"{b64(data)} {pixels_hex(image)}")
    return lines


def record_random_resized_crop(width, height, scale, ratio):
    """RandomResizedCrop.get_params with its draws recorded, in torchvision's order."""
    draws = []
    area = height * width
    log_ratio = torch.log(torch.tensor(ratio))
    for _ in range(10):
        scale_draw = torch.empty(1).uniform_(scale[0], scale[1]).item()
        log_draw = torch.empty(1).uniform_(log_ratio[0], log_ratio[1]).item()
        draws += [f"f:{scale_draw!r}", f"f:{log_draw!r}"]
        target_area = area * scale_draw
        aspect_ratio = torch.exp(torch.tensor(log_draw, dtype=torch.float32)).item()
        w = int(round(math.sqrt(target_area * aspect_ratio)))
        h = int(round(math.sqrt(target_area / aspect_ratio)))
        if 0 < w <= width and 0 < h <= height:
            i = torch.randint(0, height - h + 1, size=(1,)).item()
            j = torch.randint(0, width - w + 1, size=(1,)).item()
            draws += [f"i:{i}", f"i:{j}"]
            return draws, (i, j, h, w)
    in_ratio = float(width) / float(height)
    if in_ratio < min(ratio):
        w = width
        h = int(round(w / min(ratio)))
    elif in_ratio > max(ratio):
        h = height
        w = int(round(h * max(ratio)))
    else:
        w, h = width, height
    return draws, ((height - h) // 2, (width - w) // 2, h, w)


def coordinate_image(width, height):
    """Pixel (x, y) holds (x + 1, y + 1, 7): a crop's first pixel tells its offset, 0 is padding."""
    y, x = np.mgrid[0:height, 0:width]
    return Image.fromarray(np.stack([x + 1, y + 1, np.full_like(x, 7)], -1).astype(np.uint8))


def transform_cases():
    lines = header("torchvision transforms on PIL images: crop boxes, resize sizes, pixels")
    sizes = [(500, 375), (375, 500), (224, 224), (1000, 50), (50, 1000), (7, 5), (3, 300), (1, 1)]
    settings = [((0.08, 1.0), (3 / 4, 4 / 3)), ((0.5, 1.0), (0.5, 2.0)), ((1.2, 1.5), (3 / 4, 4 / 3))]
    seeds = {0: range(3), 1: range(2), 2: range(1)}
    for width, height in sizes:
        for setting, (scale, ratio) in enumerate(settings):
            for seed in seeds[setting]:
                torch.manual_seed(seed)
                draws, box = record_random_resized_crop(width, height, scale, ratio)
                torch.manual_seed(seed)
                expected = T.RandomResizedCrop.get_params(Image.new("RGB", (width, height)),
                                                          list(scale), list(ratio))
                assert tuple(expected) == box, (width, height, scale, ratio, seed)
                lines.append(f"rrc {width} {height} {scale[0]!r} {scale[1]!r} {ratio[0]!r} "
                             f"{ratio[1]!r} {' '.join(map(str, box))} {len(draws)} {' '.join(draws)}")

    for width, height, size in [(500, 375, 256), (375, 500, 256), (333, 500, 256), (640, 427, 256),
                                (256, 300, 256), (100, 100, 256), (1000, 3, 224), (5, 7, 3)]:
        resized = F.resize(Image.new("RGB", (width, height)), size)
        lines.append(f"resize_short {width} {height} {size} {resized.width} {resized.height}")

    for width, height, crop_w, crop_h in [(256, 341, 224, 224), (257, 300, 224, 224),
                                          (259, 259, 224, 224), (100, 60, 224, 224),
                                          (230, 200, 224, 224), (50, 40, 49, 37), (10, 10, 11, 12)]:
        out = np.asarray(F.center_crop(coordinate_image(width, height), [crop_h, crop_w]))
        ys, xs = np.nonzero(out[:, :, 2])
        top, left = int(out[ys[0], xs[0], 1]) - 1 - ys[0], int(out[ys[0], xs[0], 0]) - 1 - xs[0]
        lines.append(f"center_crop {width} {height} {crop_w} {crop_h} {top} {left}")

    source = Image.fromarray(test_pattern(41, 31, 3))
    lines.append(f"source_png 41 31 {b64(encode(source, 'PNG'))}")
    for top, left, h, w, out_w, out_h in [(5, 7, 20, 28, 17, 13), (10, 20, 8, 10, 23, 19),
                                          (0, 0, 31, 41, 24, 24), (3, 4, 20, 20, 20, 20),
                                          (20, 0, 3, 41, 8, 8), (11, 13, 1, 1, 5, 5),
                                          (1, 2, 29, 38, 29, 15)]:
        out = F.resized_crop(source, top, left, h, w, [out_h, out_w])
        lines.append(f"resized_crop {top} {left} {h} {w} {out_w} {out_h} {pixels_hex(out)}")
    for resize, crop in [(24, 16), (33, 31), (14, 20), (31, 25), (28, 9)]:
        out = T.Compose([T.Resize(resize), T.CenterCrop(crop)])(source)
        lines.append(f"resize_center_crop {resize} {crop} {pixels_hex(out)}")

    normalize = T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    tensor = T.Compose([T.Resize(20), T.CenterCrop(12), T.ToTensor(), normalize])(source)
    lines.append(f"eval_pipeline 20 12 {floats_hex(tensor)}")
    flipped = F.hflip(F.resized_crop(source, 3, 5, 22, 30, [10, 14]))
    tensor = normalize(F.to_tensor(flipped))
    lines.append(f"crop_flip_pipeline 3 5 22 30 14 10 {floats_hex(tensor)}")
    return lines


def sampler_cases():
    lines = header("torch.randperm with a seeded Generator; DistributedSampler.__iter__")
    for n, seed in [(1, 0), (2, 0), (10, 0), (10, 1), (100, 42), (1000, 123456789), (37, 2**32 + 5),
                    (64, 2**31 - 1)]:
        generator = torch.Generator()
        generator.manual_seed(seed)
        perm = torch.randperm(n, generator=generator).tolist()
        lines.append(f"randperm {n} {seed} {' '.join(map(str, perm))}")
    for n, world in [(10, 1), (10, 3), (11, 4), (3, 8), (16, 4), (101, 7)]:
        for shuffle in (True, False):
            for drop_last in (False, True):
                for seed, epoch in [(0, 0), (17, 3)]:
                    for rank in range(world):
                        sampler = DistributedSampler(list(range(n)), num_replicas=world, rank=rank,
                                                     shuffle=shuffle, seed=seed, drop_last=drop_last)
                        sampler.set_epoch(epoch)
                        indices = list(sampler)
                        lines.append(f"distributed {n} {world} {rank} {int(shuffle)} {seed} {epoch} "
                                     f"{int(drop_last)} {len(indices)} {' '.join(map(str, indices))}")
    return lines


# The tree the ImageFolder test builds: hidden files and classes, mixed-case and wrong
# extensions, nested directories ordered by full path ("sub" < "sub-x" < "sub/deeper" as
# strings), links to class folders, to directories inside a class, to files, and broken ones.
FOLDER_TREE = [
    ("dir", "cat"), ("dir", "cat/sub"), ("dir", "cat/sub/deeper"), ("dir", "cat/sub-x"),
    ("dir", "dog"), ("dir", ".hidden_class"), ("dir", "Bird"), ("dir", "mixed"),
    ("file", "cat/b.jpg"), ("file", "cat/a.PNG"), ("file", "cat/.hidden.jpg"), ("file", "cat/c.txt"),
    ("file", "cat/d.jpeg"), ("file", "cat/Z.Jpg"), ("file", "cat/sub/x.webp"),
    ("file", "cat/sub/y.tif"), ("file", "cat/sub-x/z.bmp"), ("file", "cat/sub/deeper/w.ppm"),
    ("file", "cat/archive.jpg.bak"), ("file", "cat/jpg"),
    ("file", "dog/1.pgm"), ("file", "dog/10.tiff"), ("file", "dog/2.jpg"), ("file", "dog/noext"),
    ("file", ".hidden_class/h.jpg"), ("file", "Bird/b.WEBP"), ("file", "mixed/t.txt"),
    ("file", "mixed/t.jpg"), ("file", "readme.txt"),
    ("link", "link_class", "dog"), ("link", "cat/linked_sub", "../dog"),
    ("link", "cat/file_link.jpg", "../dog/2.jpg"), ("link", "cat/broken.jpg", "does_not_exist"),
    ("link", "link_to_file", "readme.txt"),
]


def image_folder_cases():
    lines = header("torchvision ImageFolder's classes and samples for a tree of edge cases")
    with tempfile.TemporaryDirectory() as root:
        for entry in FOLDER_TREE:
            path = os.path.join(root, entry[1])
            if entry[0] == "dir":
                os.makedirs(path)
            elif entry[0] == "file":
                with open(path, "wb") as f:
                    f.write(b"x")
            else:
                os.symlink(entry[2], path)
            lines.append(f"entry {' '.join(entry)}")
        classes, class_to_idx = tv_folder.find_classes(root)
        samples = tv_folder.make_dataset(root, class_to_idx, tv_folder.IMG_EXTENSIONS)
        lines.append(f"classes {len(classes)} {' '.join(classes)}")
        for path, label in samples:
            lines.append(f"sample {os.path.relpath(path, root)} {label}")
    return lines


def main():
    if len(sys.argv) != 2:
        sys.exit(f"usage: {REGENERATE}")
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for name, lines in [("decode", decode_cases()), ("transforms", transform_cases()),
                        ("sampler", sampler_cases()), ("image_folder", image_folder_cases())]:
        path = os.path.join(out_dir, f"{name}.golden")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(lines)} lines)")


if __name__ == "__main__":
    main()
