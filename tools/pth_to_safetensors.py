#!/usr/bin/env python3
"""Turns a PyTorch checkpoint of a torchvision ResNet (.pth / .pt) into the safetensors file
resnet_train's --pretrained (and --resume, --evaluate) read:

    /usr/bin/python3 tools/pth_to_safetensors.py resnet50-0676ba61.pth resnet50.safetensors
    resnet_train --arch resnet50 --pretrained resnet50.safetensors --data DIR ...

Takes a plain state_dict (torchvision's download, torch.save(model.state_dict())) or a
training checkpoint dict holding one under "state_dict", "model" or "model_state_dict"
(pytorch/examples' and timm's); strips DistributedDataParallel's "module." prefix; writes
every floating tensor as float32 and num_batches_tracked as int64, with no metadata, so the
file is read as a plain state_dict. Needs PyTorch (Debian's python3-torch).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

NESTED_KEYS = ("state_dict", "model", "model_state_dict")


def state_dict_of(loaded, path):
    """The tensors of a loaded .pth: the dict itself, or the state_dict nested in it."""
    import torch
    if isinstance(loaded, dict) and loaded and all(torch.is_tensor(v) for v in loaded.values()):
        return loaded
    if isinstance(loaded, dict):
        for key in NESTED_KEYS:
            if isinstance(loaded.get(key), dict):
                return state_dict_of(loaded[key], path)
    sys.exit(f"pth_to_safetensors: {path} holds no state_dict (a dict of tensors, or one under "
             f"{', '.join(NESTED_KEYS)})")


def converted(state_dict):
    import torch
    out = {}
    for name, tensor in state_dict.items():
        if name.startswith("module."):
            name = name[len("module."):]
        if name.endswith("num_batches_tracked"):
            out[name] = tensor.to(torch.int64).reshape([])
        elif tensor.is_floating_point():
            out[name] = tensor.to(torch.float32)
        else:
            sys.exit(f"pth_to_safetensors: {name} is {tensor.dtype}, not a float tensor")
    return out


def main():
    parser = argparse.ArgumentParser(
        description="A torchvision ResNet's .pth as the safetensors file resnet_train reads.")
    parser.add_argument("pth", help="the PyTorch checkpoint (.pth, .pt)")
    parser.add_argument("out", help="the .safetensors file to write")
    args = parser.parse_args()
    try:
        import torch
    except ImportError as error:
        sys.exit(f"pth_to_safetensors: needs PyTorch ({error}): apt-get install python3-torch")
    from safetensors_torch import write_safetensors
    if not os.path.isfile(args.pth):
        sys.exit(f"pth_to_safetensors: {args.pth}: no such file")
    try:
        loaded = torch.load(args.pth, map_location="cpu")
    except Exception as error:  # noqa: BLE001 - torch raises many kinds for a bad file
        sys.exit(f"pth_to_safetensors: {args.pth}: not a PyTorch checkpoint ({error})")
    tensors = converted(state_dict_of(loaded, args.pth))
    write_safetensors(args.out, tensors)
    fc = tensors.get("fc.weight")
    classes = f", {fc.shape[0]} classes" if fc is not None else ""
    print(f"wrote {args.out}: {len(tensors)} tensors{classes}")


if __name__ == "__main__":
    main()
