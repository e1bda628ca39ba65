#!/usr/bin/env python3
"""Writes tests/data/golden/mixing.golden from timm's Mixup (MixUp and CutMix), the reference
of data/batch_mixing.h. torchvision 0.14 has no MixUp/CutMix, so this runs timm from PyPI in a
virtual environment over Debian's torch:

    /usr/bin/python3 -m venv --system-site-packages /tmp/timm-venv
    /tmp/timm-venv/bin/pip install timm==0.9.16
    /tmp/timm-venv/bin/python tools/make_mixing_goldens.py tests/data/golden

Each record is one call of Mixup on a random batch: the configuration, the labels, every numpy
draw timm made (np.random.rand, beta and randint are wrapped to record them, in call order,
vectors flattened: the C++ test replays them), the batch before and after (NHWC float32 bits as
hex, as tools/make_data_goldens.py writes them) and the soft targets.
"""
import os
import struct
import sys

import numpy as np
import torch

try:
    import timm
    from timm.data import Mixup
except ImportError as error:
    sys.exit(f"needs timm ({error}); see this script's docstring for the virtual environment")

GOLDEN_VERSION = 1
REGENERATE = "/tmp/timm-venv/bin/python tools/make_mixing_goldens.py tests/data/golden"
CLASSES = 5
BATCH, HEIGHT, WIDTH = 6, 5, 8  # not square: rows and columns must not be swapped

# name, Mixup keyword arguments (num_classes added)
CONFIGS = [
    ("batch_mixup", dict(mixup_alpha=0.8, label_smoothing=0.1)),
    ("batch_cutmix", dict(mixup_alpha=0.0, cutmix_alpha=1.0, label_smoothing=0.0)),
    ("batch_both", dict(mixup_alpha=0.8, cutmix_alpha=1.0, switch_prob=0.5, label_smoothing=0.1)),
    ("batch_minmax", dict(mixup_alpha=0.0, cutmix_minmax=(0.2, 0.8), label_smoothing=0.0)),
    ("batch_half_prob", dict(mixup_alpha=0.2, prob=0.5, label_smoothing=0.1)),
    ("batch_cutmix_uncorrected", dict(mixup_alpha=0.0, cutmix_alpha=1.0, correct_lam=False)),
    ("elem_both", dict(mixup_alpha=0.8, cutmix_alpha=1.0, prob=0.7, mode="elem",
                       label_smoothing=0.1)),
    ("elem_cutmix_uncorrected", dict(mixup_alpha=0.0, cutmix_alpha=1.0, mode="elem",
                                     correct_lam=False)),
    ("pair_both", dict(mixup_alpha=0.4, cutmix_alpha=1.0, mode="pair", label_smoothing=0.2)),
    ("pair_minmax", dict(mixup_alpha=0.0, cutmix_minmax=(0.3, 0.9), mode="pair")),
]
CALLS_PER_CONFIG = 3

draws = []


def recording(kind, draw):
    def wrapped(*args, **kwargs):
        value = draw(*args, **kwargs)
        for v in np.atleast_1d(value).ravel():
            draws.append(f"{kind}:{float(v).hex()}" if kind != "i" else f"i:{int(v)}")
        return value
    return wrapped


np.random.rand = recording("u", np.random.rand)
np.random.beta = recording("b", np.random.beta)
np.random.randint = recording("i", np.random.randint)


def floats_hex(values):
    return np.ascontiguousarray(values, dtype="<f4").tobytes().hex()


def nhwc(batch):
    return batch.permute(0, 2, 3, 1).contiguous().numpy()


def record(name, kwargs, call):
    np.random.seed(1000 * call + len(name))
    generator = torch.Generator().manual_seed(call)
    x = torch.randn(BATCH, 3, HEIGHT, WIDTH, generator=generator)
    labels = torch.randint(0, CLASSES, (BATCH,), generator=generator)
    before = nhwc(x)
    mixup = Mixup(num_classes=CLASSES, **kwargs)
    draws.clear()
    mixed, targets = mixup(x, labels)
    minmax = kwargs.get("cutmix_minmax")
    fields = [
        name, mixup.mode, repr(float(mixup.mixup_alpha)), repr(float(mixup.cutmix_alpha)),
        "-" if minmax is None else f"{minmax[0]!r},{minmax[1]!r}",
        repr(float(mixup.mix_prob)), repr(float(mixup.switch_prob)), str(int(mixup.correct_lam)),
        repr(float(mixup.label_smoothing)), str(CLASSES), str(BATCH), str(HEIGHT), str(WIDTH),
        ",".join(str(int(v)) for v in labels), ",".join(draws) or "-",
        floats_hex(before), floats_hex(nhwc(mixed)), floats_hex(targets.numpy()),
    ]
    return "mix " + " ".join(fields)


def main():
    if len(sys.argv) != 2:
        sys.exit(f"usage: {REGENERATE}")
    lines = [
        f"ENGINE-DATA-GOLDEN {GOLDEN_VERSION}",
        "# timm's Mixup on random batches: config, labels, recorded numpy draws, NHWC batch",
        "# before/after (float32 hex), soft targets. Fields: name mode mixup_alpha cutmix_alpha",
        "# minmax prob switch_prob correct_lam smoothing classes n h w labels draws in out targets",
        f"# timm {timm.__version__}, torch {torch.__version__}, numpy {np.__version__}",
        f"# regenerate: {REGENERATE}",
    ]
    for name, kwargs in CONFIGS:
        for call in range(CALLS_PER_CONFIG):
            lines.append(record(name, kwargs, call))
    path = os.path.join(sys.argv[1], "mixing.golden")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(lines)} lines)")


if __name__ == "__main__":
    main()
