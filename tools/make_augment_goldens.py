#!/usr/bin/env python3
"""Writes tests/data/golden/augment.golden: torchvision's RandAugment, TrivialAugmentWide and
RandomErasing on PIL images (the backend the training recipes run), for the data/ tests.

    /usr/bin/python3 tools/make_augment_goldens.py tests/data/golden

Needs Debian's python3-torch, python3-torchvision and python3-pil (run /usr/bin/python3). Same
format as tools/make_data_goldens.py (magic line, version, library versions); images are PNG
bytes in base64 (lossless, and the C++ PNG decoder equals PIL's), floats 8 hex digits each.

Records:
  source NAME PNG                                   an input image
  table POLICY OP WIDTH HEIGHT N FLOATHEX           a magnitude table (torch.linspace & co)
  op NAME OP MAGNITUDE PNG                          autoaugment._apply_op(img, OP, MAGNITUDE)
  policy NAME POLICY NUM_OPS MAGNITUDE N DRAWS PNG  RandAugment / TrivialAugmentWide, its draws
  erase W H P VALUE N DRAWS ERASED TOP LEFT H W IN OUT   RandomErasing on a normalized tensor
  pipeline SIZE POLICY P N DRAWS FLOATHEX           crop, flip, policy, normalize, erase
Draws: i:INT (torch.randint), f:FLOAT (a float32 uniform), n:FLOAT (a float32 normal).
"""
import io
import math
import os
import sys

import numpy as np
import PIL
import torch
import torchvision
from PIL import Image
from torchvision import transforms as T
from torchvision.transforms import InterpolationMode
from torchvision.transforms import autoaugment as tv_autoaugment

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_data_goldens import b64, floats_hex, record_random_resized_crop, test_pattern  # noqa: E402

GOLDEN_VERSION = 1
REGENERATE = "/usr/bin/python3 tools/make_augment_goldens.py tests/data/golden"
OPS = ["Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Brightness",
       "Color", "Contrast", "Sharpness", "Posterize", "Solarize", "AutoContrast", "Equalize"]
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def header(what):
    return [
        f"ENGINE-DATA-GOLDEN {GOLDEN_VERSION}",
        f"# {what}",
        f"# torch {torch.__version__}, torchvision {torchvision.__version__}, Pillow {PIL.__version__}",
        f"# regenerate: {REGENERATE}",
    ]


def png_b64(image):
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG")
    return b64(buffer.getvalue())


def shapes_image(width, height, seed):
    """Hard edges (a disc, a bar, a dark corner) over noise: what shears and Sharpness see."""
    rng = np.random.RandomState(seed)
    y, x = np.mgrid[0:height, 0:width]
    rgb = rng.randint(60, 200, (height, width, 3)).astype(np.float64)
    disc = (x - width * 0.6) ** 2 + (y - height * 0.45) ** 2 < (min(width, height) * 0.3) ** 2
    rgb[disc] = [230, 40, 20]
    rgb[(x > width // 5) & (x < width // 5 + 3)] = [10, 200, 240]
    rgb[(x < 4) & (y < 4)] = [0, 0, 0]
    return np.clip(rgb, 0, 255).astype(np.uint8)


def edge_case_image(width, height):
    """Red ramps over a few levels, green takes two levels, blue is constant: AutoContrast and
    Equalize leave the blue channel alone, and Equalize's lookup runs past 255 for green."""
    y, x = np.mgrid[0:height, 0:width]
    r = 40 + 3 * ((x + y) % 9)
    g = np.where(x < width - 1, 100, 180)
    b = np.full_like(x, 77)
    return np.stack([r, g, b], -1).astype(np.uint8)


def sources():
    return {
        "pattern": Image.fromarray(test_pattern(20, 20, 11)),
        "shapes": Image.fromarray(shapes_image(23, 17, 5)),
        "edges": Image.fromarray(edge_case_image(24, 24)),
        "flat": Image.new("RGB", (9, 7), (90, 150, 210)),
        "pipeline": Image.fromarray(shapes_image(31, 27, 8)),
    }


def spaces(width, height):
    ra = T.RandAugment()._augmentation_space(31, (height, width))
    ta = T.TrivialAugmentWide()._augmentation_space(31)
    return {"ra": ra, "ta": ta}


def apply_op(image, name, magnitude):
    return tv_autoaugment._apply_op(image, name, magnitude, interpolation=InterpolationMode.NEAREST,
                                    fill=None)


def op_magnitudes(width, height):
    """Per op: every magnitude RandAugment's default bin 9 and TrivialAugmentWide's bins 1, 15,
    20 (Rotate's 90 degrees), 30 give, both signs for signed ops; one 0 for the others."""
    space = spaces(width, height)
    result = {}
    for name in OPS:
        values = set()
        for policy, bins in [("ra", [9]), ("ta", [1, 15, 20, 30])]:
            table, signed = space[policy][name]
            if table.ndim == 0:
                values.add(0.0)
                continue
            for b in bins:
                m = float(table[b].item())
                values.add(m)
                if signed:
                    values.add(-m)
        result[name] = sorted(values)
    return result


def policy_draws(image, policy, num_ops, magnitude):
    """Draws the policy's ops as its forward() does (the next draws of torch's stream) and
    applies them: the draws, and the image."""
    space = spaces(*image.size)[policy]
    draws = []
    out = image
    for _ in range(num_ops if policy == "ra" else 1):
        op_index = int(torch.randint(len(space), (1,)).item())
        draws.append(f"i:{op_index}")
        name = list(space.keys())[op_index]
        table, signed = space[name]
        value = 0.0
        if table.ndim > 0:
            if policy == "ra":
                value = float(table[magnitude].item())
            else:
                b = int(torch.randint(len(table), (1,), dtype=torch.long).item())
                draws.append(f"i:{b}")
                value = float(table[b].item())
        if signed:
            s = int(torch.randint(2, (1,)).item())
            draws.append(f"i:{s}")
            if s:
                value *= -1.0
        out = apply_op(out, name, value)
    return draws, out


def record_policy(image, policy, num_ops, magnitude, seed):
    """policy_draws after torch.manual_seed(seed), checked against the transform itself."""
    torch.manual_seed(seed)
    if policy == "ra":
        expected = T.RandAugment(num_ops=num_ops, magnitude=magnitude)(image)
    else:
        expected = T.TrivialAugmentWide()(image)
    torch.manual_seed(seed)
    draws, out = policy_draws(image, policy, num_ops, magnitude)
    assert np.array_equal(np.asarray(out), np.asarray(expected)), (policy, seed)
    return draws, out


def record_erasing(tensor, p, value, scale=(0.02, 0.33), ratio=(0.3, 3.3)):
    """RandomErasing.forward's draws after torch.manual_seed, and its box; None: not erased."""
    draws = []
    gate = torch.rand(1)
    draws.append(f"f:{gate.item()!r}")
    if not gate < p:
        return draws, None
    img_c, img_h, img_w = tensor.shape
    area = img_h * img_w
    log_ratio = torch.log(torch.tensor(ratio))
    for _ in range(10):
        scale_draw = torch.empty(1).uniform_(scale[0], scale[1]).item()
        log_draw = torch.empty(1).uniform_(log_ratio[0], log_ratio[1])
        draws += [f"f:{scale_draw!r}", f"f:{log_draw.item()!r}"]
        erase_area = area * scale_draw
        aspect_ratio = torch.exp(log_draw).item()
        h = int(round(math.sqrt(erase_area * aspect_ratio)))
        w = int(round(math.sqrt(erase_area / aspect_ratio)))
        if not (h < img_h and w < img_w):
            continue
        if value == "random":
            normals = torch.empty([img_c, h, w], dtype=torch.float32).normal_()
            draws += [f"n:{v!r}" for v in normals.flatten().tolist()]
        i = torch.randint(0, img_h - h + 1, size=(1,)).item()
        j = torch.randint(0, img_w - w + 1, size=(1,)).item()
        draws += [f"i:{i}", f"i:{j}"]
        return draws, (i, j, h, w)
    return draws, None


def erase_cases(lines):
    normalize = T.Normalize(mean=MEAN, std=STD)
    image = Image.fromarray(test_pattern(13, 10, 21))
    tensor = normalize(T.ToTensor()(image))
    cases = [(p, value, seed, scale) for seed in range(6) for p, value in [(0.5, 0), (1.0, "random")]
             for scale in [(0.02, 0.33)]]
    cases.append((1.0, 0, 0, (0.9, 1.0)))  # no attempt fits: unchanged
    cases.append((1.0, "random", 3, (0.9, 1.0)))
    for p, value, seed, scale in cases:
        torch.manual_seed(seed)
        expected = T.RandomErasing(p=p, scale=scale, value=value)(tensor.clone())
        torch.manual_seed(seed)
        draws, box = record_erasing(tensor, p, value, scale)
        erased = box is not None
        i, j, h, w = box if erased else (0, 0, 0, 0)
        lines.append(f"erase 13 10 {p!r} {scale[0]!r} {scale[1]!r} {value} {len(draws)} "
                     f"{' '.join(draws)} {int(erased)} {i} {j} {h} {w} {floats_hex(tensor)} "
                     f"{floats_hex(expected)}")


def pipeline_cases(lines, source):
    """The whole training transform on one PNG, draws recorded, in the reference's order."""
    normalize = T.Normalize(mean=MEAN, std=STD)
    for policy, p, value, seed in [("ta", 1.0, "random", 0), ("ta", 0.5, 0, 1), ("ra", 1.0, 0, 2),
                                   ("ra", 0.0, 0, 3), ("ta", 1.0, 0, 4), ("ra", 1.0, "random", 5)]:
        size = 16
        augment = T.RandAugment() if policy == "ra" else T.TrivialAugmentWide()
        steps = [T.RandomResizedCrop(size), T.RandomHorizontalFlip(), augment, T.ToTensor(),
                 normalize]
        if p > 0:
            steps.append(T.RandomErasing(p=p, value=value))
        torch.manual_seed(seed)
        expected = T.Compose(steps)(source)
        torch.manual_seed(seed)
        width, height = source.size
        draws, (i, j, h, w) = record_random_resized_crop(width, height, (0.08, 1.0), (3 / 4, 4 / 3))
        image = source.crop((j, i, j + w, i + h)).resize((size, size), Image.BILINEAR)
        flip = torch.rand(1)
        draws.append(f"f:{flip.item()!r}")
        if flip < 0.5:
            image = image.transpose(Image.FLIP_LEFT_RIGHT)
        augment_draws, image = policy_draws(image, policy, 2, 9)
        draws += augment_draws
        tensor = normalize(T.ToTensor()(image))
        if p > 0:
            erase_draws, box = record_erasing(tensor, p, value)
            draws += erase_draws
        lines.append(f"pipeline {size} {policy} {p!r} {value} {len(draws)} {' '.join(draws)} "
                     f"{floats_hex(expected)}")


def augment_cases():
    lines = header("RandAugment, TrivialAugmentWide and their ops on PIL images; RandomErasing")
    images = sources()
    for name, image in images.items():
        lines.append(f"source {name} {png_b64(image)}")
    for width, height in [(20, 20), (23, 17), (224, 224), (160, 128)]:
        for policy, space in spaces(width, height).items():
            for op in OPS:
                table, _ = space[op]
                if table.ndim == 0:
                    continue
                values = table.to(torch.float32).numpy().astype("<f4")
                lines.append(f"table {policy} {op} {width} {height} {len(values)} "
                             f"{values.tobytes().hex()}")
    for name in ["pattern", "shapes"]:
        image = images[name]
        for op, magnitudes in op_magnitudes(*image.size).items():
            for magnitude in magnitudes:
                lines.append(f"op {name} {op} {magnitude!r} {png_b64(apply_op(image, op, magnitude))}")
    for name in ["edges", "flat"]:
        for op in ["AutoContrast", "Equalize", "Contrast", "Color", "Sharpness"]:
            magnitude = 0.0 if op in ("AutoContrast", "Equalize") else 0.5
            lines.append(f"op {name} {op} {magnitude!r} "
                         f"{png_b64(apply_op(images[name], op, magnitude))}")
    for seed in range(30):
        draws, out = record_policy(images["pattern"], "ta", 1, 0, seed)
        lines.append(f"policy pattern ta 1 0 {len(draws)} {' '.join(draws)} {png_b64(out)}")
    for seed, (num_ops, magnitude) in enumerate([(2, 9)] * 12 + [(3, 30)] * 4 + [(1, 0)] * 2):
        draws, out = record_policy(images["shapes"], "ra", num_ops, magnitude, seed)
        lines.append(f"policy shapes ra {num_ops} {magnitude} {len(draws)} {' '.join(draws)} "
                     f"{png_b64(out)}")
    erase_cases(lines)
    pipeline_cases(lines, images["pipeline"])
    return lines


def main():
    if len(sys.argv) != 2:
        sys.exit(f"usage: {REGENERATE}")
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    lines = augment_cases()
    path = os.path.join(out_dir, "augment.golden")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(lines)} lines)")


if __name__ == "__main__":
    main()
