#!/usr/bin/env python3
"""Writes the golden files of the nn/ tests from torchvision's ResNets (Debian's python3-torch
and python3-torchvision; run Debian's /usr/bin/python3):

    /usr/bin/python3 tools/make_nn_goldens.py tests/nn/golden

For each case (resnet18 and resnet50 at 64x64; 10 classes; a batch of 4; train mode) the
weights and the input come from a counter-based generator that the C++ test reproduces bit for
bit (tests/nn/golden_weights.h), so no weights are stored. One training step is recorded
(logits, loss, every parameter gradient, every BN running statistic and batch counter), then
two more with torch.optim.SGD(lr, momentum, nesterov, weight_decay), the losses, and the
parameters and running statistics after all three steps.

The reference is computed in float64 (the same weights and images, widened): it is the exact
answer an fp32 engine is measured against. The same steps are also run in float32, three
ways that differ only in how they round (NCHW on 2 threads, NCHW on 1, channels_last on 2),
and for every recorded tensor the largest difference of any of them from the float64 result
is stored (":torch_f32_error"), so the test can state how close to the truth PyTorch's fp32
gets beside how close ours does. One run is one sample of that error: where a ReLU or
max-pool decision sits within rounding of its kink, it flips in some runs and not in others
(resnet50's layer4.1.bn2.weight gradient: 1.8e-5 on 2 threads, 4.1e-5 on 1, 3.1e-4 in
channels_last), and an engine that rounds differently again may fall on either side.

Files are safetensors (8-byte little-endian header length, JSON header, raw data), with
__metadata__ holding the magic "ENGINE-NN-GOLDEN", the version, the library versions and this
command. Small tensors are stored whole; parameters and gradients as digests, to keep the
files small: f64 [sum, sum of squares] and 32 sampled elements (f32) at stored flat indices
(i64, in PyTorch's NCHW/OIHW order).
"""
import copy
import json
import math
import os
import struct
import sys

import torch
import torchvision

GOLDEN_VERSION = 1
REGENERATE = "/usr/bin/python3 tools/make_nn_goldens.py tests/nn/golden"
MASK64 = (1 << 64) - 1
SAMPLES = 32
CASES = [
    # name, arch, image size
    ("resnet18_64px", "resnet18", 64),
    ("resnet50_64px", "resnet50", 64),
]
BATCH = 4
CLASSES = 10
LABELS = [3, 7, 0, 9]
LABEL_SMOOTHING = 0.1
SGD = dict(lr=0.01, momentum=0.9, nesterov=True, weight_decay=1e-3)


def fnv1a64(text):
    h = 0xCBF29CE484222325
    for b in text.encode():
        h = ((h ^ b) * 0x100000001B3) & MASK64
    return h


class Generator:
    """splitmix64 over a state seeded from a name; uniform(-1, 1) from the top 53 bits."""

    def __init__(self, name):
        self.state = fnv1a64(name)

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def symmetric(self, count):
        return [(self.next() >> 11) * 2.0**-53 * 2.0 - 1.0 for _ in range(count)]


def golden_values(name, count, scale, shift=0.0):
    """float32 values shift + scale * u, u uniform in [-1, 1), in flat PyTorch order."""
    return torch.tensor([shift + scale * u for u in Generator(name).symmetric(count)],
                        dtype=torch.float64).to(torch.float32)


def set_golden_weights(model):
    """conv: U(+-sqrt(6 / fan_out)) (kaiming fan_out's variance); BN weight 1 +- 0.25, bias
    +- 0.25; fc: U(+-1 / sqrt(in_features))."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            n = p.numel()
            if p.dim() == 4:
                fan_out = p.shape[0] * p.shape[2] * p.shape[3]
                v = golden_values(name, n, math.sqrt(6.0 / fan_out))
            elif name.startswith("fc."):
                v = golden_values(name, n, 1.0 / math.sqrt(model.fc.in_features))
            elif name.endswith(".weight"):
                v = golden_values(name, n, 0.25, 1.0)
            else:
                v = golden_values(name, n, 0.25)
            p.copy_(v.reshape(p.shape))


def sample_indices(name, numel):
    g = Generator("sample:" + name)
    if numel <= SAMPLES:
        return list(range(numel))
    return [g.next() % numel for _ in range(SAMPLES)]


class Writer:
    def __init__(self):
        self.tensors = []  # (name, dtype, shape, bytes)

    def add(self, name, tensor):
        t = tensor.detach().contiguous().cpu()
        if t.dtype == torch.float64 and not name.endswith((":sums", ":torch_f32_error")) \
                and name != "sgd.losses":
            t = t.to(torch.float32)  # values beyond fp32's precision would only bloat the file
        dtype = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}[t.dtype]
        self.tensors.append((name, dtype, list(t.shape), t.numpy().tobytes()))

    def digest(self, name, tensor):
        flat = tensor.detach().reshape(-1).cpu()
        idx = sample_indices(name, flat.numel())
        d = flat.double()
        self.add(name + ":sums", torch.tensor([d.sum().item(), (d * d).sum().item()],
                                              dtype=torch.float64))
        self.add(name + ":index", torch.tensor(idx, dtype=torch.int64))
        self.add(name + ":sample", flat[idx].to(torch.float64))

    def save(self, path, metadata):
        header, offset = {"__metadata__": metadata}, 0
        for name, dtype, shape, data in self.tensors:
            header[name] = {"dtype": dtype, "shape": shape,
                            "data_offsets": [offset, offset + len(data)]}
            offset += len(data)
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 8)
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            for _, _, _, data in self.tensors:
                f.write(data)


def run_steps(model, images, labels, dtype):
    """One recorded step, then two more with SGD; returns what the golden records."""
    model = model.to(dtype)
    model.train()
    loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=LABEL_SMOOTHING)
    images = images.to(dtype)
    out = {}
    logits = model(images)
    loss = loss_fn(logits, labels)
    loss.backward()
    out["step0.logits"] = logits.detach().clone()
    grads = {"step0.grad." + n: p.grad.detach().clone() for n, p in model.named_parameters()}
    buffers0 = {"step0." + n: b.detach().clone() for n, b in model.named_buffers()}
    optimizer = torch.optim.SGD(model.parameters(), **SGD)
    losses = [loss.item()]
    optimizer.step()
    for _ in range(2):
        optimizer.zero_grad()
        loss = loss_fn(model(images), labels)
        loss.backward()
        losses.append(loss.item())
        optimizer.step()
    out["sgd.losses"] = torch.tensor(losses, dtype=torch.float64)
    params = {"sgd.param." + n: p.detach().clone() for n, p in model.named_parameters()}
    buffers = {"sgd." + n: b.detach().clone() for n, b in model.named_buffers()}
    return out, grads, params, buffers0, buffers


def torch_error(f32_runs, f64):
    """The largest difference of any fp32 run's tensor from float64's."""
    worst = max((f32.double() - f64.double()).abs().max().item() for f32 in f32_runs)
    return torch.tensor([worst], dtype=torch.float64)


def fp32_runs(model, images, labels):
    """run_steps in float32 the three ways the module docstring names, each a list of groups."""
    runs = []
    for threads, memory_format in ((2, torch.contiguous_format), (1, torch.contiguous_format),
                                   (2, torch.channels_last)):
        torch.set_num_threads(threads)
        runs.append(run_steps(copy.deepcopy(model).to(memory_format=memory_format),
                              images.to(memory_format=memory_format), labels, torch.float32))
    torch.set_num_threads(2)
    return runs


def record_case(case, arch, size, out_dir):
    torch.manual_seed(0)
    model = torchvision.models.__dict__[arch](num_classes=CLASSES)
    set_golden_weights(model)
    images = golden_values("input", BATCH * 3 * size * size, 1.0).reshape(BATCH, 3, size, size)
    labels = torch.tensor(LABELS, dtype=torch.int64)
    ref = run_steps(copy.deepcopy(model), images, labels, torch.float64)
    f32 = fp32_runs(model, images, labels)
    w = Writer()
    w.add("input", images)
    w.add("labels", labels)
    for index, group in enumerate(ref):
        for name, value in group.items():
            if value.is_floating_point() and value.numel() > 64:
                w.digest(name, value)
            else:
                w.add(name, value)
            if value.is_floating_point():
                w.add(name + ":torch_f32_error",
                      torch_error([run[index][name] for run in f32], value))
    losses = ref[0]["sgd.losses"].tolist()
    metadata = {
        "magic": "ENGINE-NN-GOLDEN", "version": str(GOLDEN_VERSION), "regenerate": REGENERATE,
        "torch": torch.__version__, "torchvision": torchvision.__version__,
        "arch": arch, "image_size": str(size), "batch": str(BATCH), "classes": str(CLASSES),
        "label_smoothing": repr(LABEL_SMOOTHING), "reference": "float64",
        "torch_f32_error": "the largest over fp32 runs NCHW 2 threads, NCHW 1, channels_last 2",
        "sgd": json.dumps(SGD, sort_keys=True), "sgd_steps": "3",
    }
    path = os.path.join(out_dir, case + ".safetensors")
    w.save(path, metadata)
    print(f"{path}: {os.path.getsize(path)} bytes, float64 losses {losses}")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: " + REGENERATE.replace("tests/nn/golden", "OUT_DIR"))
    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)
    for case, arch, size in CASES:
        record_case(case, arch, size, sys.argv[1])


if __name__ == "__main__":
    main()
