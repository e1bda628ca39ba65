#!/usr/bin/env python3
"""torchvision loads a checkpoint the engine wrote (ctest nn_checkpoint_loads_in_torchvision):

    /usr/bin/python3 tests/nn/check_torchvision_loads.py FOLDER

FOLDER holds what nn_write_checkpoint_for_torch writes: resnet18.safetensors (a checkpoint of
a trained resnet18 with its SGD momentum) and resnet18.check.safetensors (an input and the
engine's eval-mode logits on it). The checkpoint's model tensors must load into
torchvision.models.resnet18 with strict=True, its momentum buffers must match the parameters
by name and shape, and torchvision's logits must equal the engine's within 1e-4 (of the
logits' largest magnitude, when that exceeds 1).

The files are read by hand (8-byte header length, JSON header, raw little-endian data): the
safetensors package is not installed here. Exits 77 (a ctest skip) without torch.
"""
import os
import sys

SKIP = 77
TOLERANCE = 1e-4
MOMENTUM_PREFIX = "optimizer.momentum_buffer."

try:
    import torch
    import torchvision
except ImportError as error:
    print(f"SKIP: torch and torchvision are not importable by {sys.executable}: {error}")
    sys.exit(SKIP)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from safetensors_torch import read_safetensors  # noqa: E402


def main():
    folder = sys.argv[1]
    metadata, tensors = read_safetensors(f"{folder}/resnet18.safetensors")
    _, check = read_safetensors(f"{folder}/resnet18.check.safetensors")
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}; checkpoint "
          f"format {metadata.get('format')} v{metadata.get('format_version')}, "
          f"engine {metadata.get('engine_version')}")
    arch, classes = metadata["arch"], int(metadata["num_classes"])
    model = torchvision.models.__dict__[arch](num_classes=classes)
    state = {k: v for k, v in tensors.items() if not k.startswith("optimizer.")}
    model.load_state_dict(state, strict=True)  # raises naming every missing/unexpected/shape
    print(f"{arch} ({classes} classes): {len(state)} tensors loaded with strict=True")

    failures = []
    parameters = dict(model.named_parameters())
    momentum = {k[len(MOMENTUM_PREFIX):]: v for k, v in tensors.items()
                if k.startswith(MOMENTUM_PREFIX)}
    if momentum.keys() != parameters.keys():
        failures.append(f"momentum buffers for {sorted(momentum.keys() ^ parameters.keys())} "
                        "do not match the parameters")
    for name, buffer in momentum.items():
        if name in parameters and buffer.shape != parameters[name].shape:
            failures.append(f"momentum of {name} is {list(buffer.shape)}, "
                            f"the parameter {list(parameters[name].shape)}")
    print(f"{len(momentum)} momentum buffers match the parameters "
          f"(optimizer.started={metadata.get('optimizer.started')})")
    if int(model.bn1.num_batches_tracked) != 1:
        failures.append(f"bn1.num_batches_tracked is {int(model.bn1.num_batches_tracked)}, "
                        "expected 1 (one training step)")

    model.eval()
    with torch.no_grad():
        logits = model(check["input"])
    expected = check["logits"]
    worst = (logits - expected).abs().max().item()
    tolerance = TOLERANCE * expected.pow(2).mean().sqrt().item()
    print(f"logits {list(logits.shape)}: largest difference from the engine's {worst:.3g} "
          f"(tolerance {tolerance:.3g})")
    if not worst <= tolerance:
        failures.append(f"torchvision's logits differ from the engine's by {worst:.3g} "
                        f"(tolerance {tolerance:.3g})")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
