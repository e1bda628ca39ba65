#!/usr/bin/env python3
"""resnet_train --evaluate agrees with torchvision's own evaluation (ctest
train_evaluate_matches_torchvision): the same checkpoint on the same val/ folder, with
torchvision's transforms Resize(round(S / 0.875)) + CenterCrop(S) + ToTensor + Normalize,
gives the same mean loss (1e-3 relative) and top-1 (within one sample). Twice: a checkpoint
resnet_train wrote, and a torchvision state_dict saved as safetensors (a plain state_dict,
no engine metadata).

    /usr/bin/python3 tests/train/check_torchvision_eval.py --exe build/resnet_train --data DIR --work DIR

Exits 77 (a ctest skip) without torch and torchvision.
"""
import argparse
import json
import os
import subprocess
import sys

SKIP = 77
IMAGE_SIZE = 32
MEAN, STD = [0.286] * 3, [0.353] * 3

try:
    import torch
    import torchvision
    from torchvision import transforms
except ImportError as error:
    print(f"SKIP: torch and torchvision are not importable by {sys.executable}: {error}")
    sys.exit(SKIP)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from safetensors_torch import read_safetensors, write_safetensors  # noqa: E402

FLAGS = ["--arch", "resnet18", "--image-size", str(IMAGE_SIZE), "--workers", "1",
         "--normalize", ",".join(map(str, MEAN)) + "/" + ",".join(map(str, STD))]


def engine_evaluate(args, checkpoint, name):
    metrics = os.path.join(args.work, name + ".jsonl")
    if os.path.exists(metrics):
        os.remove(metrics)
    subprocess.run([args.exe, "--data", args.data, "--evaluate", "--resume", checkpoint,
                    "--metrics", metrics] + FLAGS, check=True, capture_output=True)
    with open(metrics) as f:
        return json.loads(f.readline())


def torchvision_evaluate(model, folder):
    model.eval()
    size = round(IMAGE_SIZE / 0.875)
    dataset = torchvision.datasets.ImageFolder(folder, transforms.Compose([
        transforms.Resize(size), transforms.CenterCrop(IMAGE_SIZE), transforms.ToTensor(),
        transforms.Normalize(MEAN, STD)]))
    loader = torch.utils.data.DataLoader(dataset, batch_size=50)
    loss, correct = 0.0, 0
    with torch.no_grad():
        for images, labels in loader:
            logits = model(images.double())
            loss += torch.nn.functional.cross_entropy(logits, labels, reduction="sum").item()
            correct += (logits.argmax(1) == labels).sum().item()
    return loss / len(dataset), correct, len(dataset)


def compare(what, ours, model, folder):
    loss, correct, count = torchvision_evaluate(model, folder)
    our_correct = round(ours["val_top1_pct"] / 100 * count)
    print(f"{what}: resnet_train val loss {ours['val_loss']:.6f} top-1 {our_correct}/{count}; "
          f"torchvision {loss:.6f} {correct}/{count}")
    failures = []
    if abs(ours["val_loss"] - loss) > 1e-3 * abs(loss):
        failures.append(f"{what}: val loss {ours['val_loss']} vs torchvision's {loss}")
    if abs(our_correct - correct) > 1:
        failures.append(f"{what}: top-1 {our_correct} vs torchvision's {correct} (of {count})")
    return failures


def model_from(tensors, classes):
    model = torchvision.models.resnet18(num_classes=classes)
    model.load_state_dict({k: v for k, v in tensors.items() if not k.startswith("optimizer.")},
                          strict=True)
    return model.double()


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--exe", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    val = os.path.join(args.data, "val")
    if not os.path.isdir(val):
        print(f"SKIP: no dataset at {args.data}")
        sys.exit(SKIP)
    os.makedirs(args.work, exist_ok=True)
    classes = len(os.listdir(val))
    # A checkpoint of a short training run.
    checkpoint_dir = os.path.join(args.work, "trained")
    subprocess.run([args.exe, "--data", args.data, "--epochs", "1", "-b", "32", "--lr", "0.05",
                    "--checkpoint-dir", checkpoint_dir] + FLAGS, check=True, capture_output=True)
    trained = os.path.join(checkpoint_dir, "last.safetensors")
    failures = compare("engine checkpoint", engine_evaluate(args, trained, "trained"),
                       model_from(read_safetensors(trained)[1], classes), val)
    # torchvision's own weights (a seeded fresh model, BN statistics moved off their defaults).
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=classes)
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.running_mean.uniform_(-0.1, 0.1)
            module.running_var.uniform_(0.5, 2.0)
    state_dict = os.path.join(args.work, "torchvision_resnet18.safetensors")
    write_safetensors(state_dict, model.state_dict())
    failures += compare("torchvision state_dict", engine_evaluate(args, state_dict, "state_dict"),
                        model.double(), val)
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
