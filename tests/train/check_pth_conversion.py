#!/usr/bin/env python3
"""tools/pth_to_safetensors.py and --pretrained (ctest train_pretrained_from_pth).

    check_pth_conversion.py --exe build/resnet_train --work DIR

A torchvision resnet18 with 5 classes is saved as pytorch/examples saves a DDP run's checkpoint
({"state_dict": {"module.<name>": tensor}, "epoch": ...}); the tool must write the same tensors
under torchvision's names; resnet_train --pretrained then starts a 3-class run from it on
--dummy images, saying it replaced the 5-class fc, and its checkpoint holds the converted
weights of every layer but fc after a step at lr 0 (weight decay 0: nothing moves). Exit 77
(a skip) without torch and torchvision.
"""
import argparse
import os
import shutil
import subprocess
import sys

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools")
sys.path.insert(0, TOOLS)
SKIP = 77

try:
    import torch
    import torchvision
    from safetensors_torch import read_safetensors
except ImportError as error:
    print(f"SKIP: torch and torchvision are not importable by {sys.executable}: {error}")
    sys.exit(SKIP)


def check(condition, message):
    if not condition:
        sys.exit("check_pth_conversion: " + message)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exe", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=5)
    pth, converted = os.path.join(args.work, "run.pth"), os.path.join(args.work, "r18.safetensors")
    torch.save({"epoch": 3, "state_dict": {"module." + k: v for k, v in model.state_dict().items()}},
               pth)
    tool = subprocess.run([sys.executable, os.path.join(TOOLS, "pth_to_safetensors.py"), pth,
                           converted], capture_output=True, text=True)
    check(tool.returncode == 0, f"the tool exited {tool.returncode}:\n{tool.stderr}")
    _, tensors = read_safetensors(converted)
    expected = model.state_dict()
    check(sorted(tensors) == sorted(expected), "the converted names differ from torchvision's")
    for name, tensor in expected.items():
        check(torch.equal(tensors[name], tensor), f"{name} changed in the conversion")

    out = os.path.join(args.work, "run")
    run = subprocess.run([args.exe, "--dummy", "--dummy-classes", "3", "--dummy-images", "16,8",
                          "--arch", "resnet18", "--image-size", "32", "-b", "8", "--epochs", "1",
                          "--max-steps", "1", "--lr", "0", "--wd", "0", "--workers", "1",
                          "--pretrained", converted, "--checkpoint-dir", out],
                         capture_output=True, text=True, timeout=300)
    check(run.returncode == 0, f"resnet_train exited {run.returncode}:\n{run.stderr}")
    banner = (f"started from the weights of {converted}; its 5-class fc replaced by a new one "
              "for these 3 classes")
    check(banner in run.stdout, "no banner naming the replaced head:\n" + run.stdout)
    _, trained = read_safetensors(os.path.join(out, "last.safetensors"))
    check(list(trained["fc.weight"].shape) == [3, 512], "the new fc is not 3 x 512")
    for name, tensor in expected.items():
        if name.startswith("fc.") or "running_" in name or "num_batches" in name:
            continue  # a training step moves BatchNorm's running statistics
        check(torch.equal(trained[name], tensor), f"{name} is not the pretrained value")
    print(f"pth_to_safetensors: {len(tensors)} tensors converted exactly; --pretrained started a "
          "3-class run from them with a new fc")


if __name__ == "__main__":
    main()
