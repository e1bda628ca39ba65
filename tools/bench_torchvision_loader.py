#!/usr/bin/env python3
"""The baseline of bench/bench_data: torchvision's ImageFolder + DataLoader with the same
training transforms (RandomResizedCrop(size), RandomHorizontalFlip(), ToTensor(),
Normalize(ImageNet mean/std)), the same batch size and the same number of workers (processes
here, threads there). bench_data runs it beside itself; it can also run alone:

    /usr/bin/python3 tools/bench_torchvision_loader.py --data /tmp/synthetic-jpegs --workers 2

Times `--batches` batches after `--warmup` untimed ones (worker start-up excluded) and prints
one JSON line: {"impl": "torch", "workers": W, "images": N, "seconds": S, "images_per_s": X}.
Needs Debian's python3-torch and python3-torchvision (run /usr/bin/python3).
"""
import argparse
import json
import time

import torch
import torchvision
from torch.utils.data import DataLoader
from torchvision import transforms as T


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="ImageFolder root (<class>/<image>)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--batches", type=int, default=12, help="timed batches")
    parser.add_argument("--warmup", type=int, default=2, help="untimed batches first")
    parser.add_argument("--size", type=int, default=224)
    args = parser.parse_args()

    torch.set_num_threads(1)  # the engine's workers are single-threaded too
    transform = T.Compose([
        T.RandomResizedCrop(args.size),
        T.RandomHorizontalFlip(),
        T.ToTensor(),
        T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])
    dataset = torchvision.datasets.ImageFolder(args.data, transform=transform)
    needed = (args.batches + args.warmup) * args.batch_size
    if len(dataset) < needed:
        raise SystemExit(f"{args.data} has {len(dataset)} images; --batches + --warmup need {needed}")
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                        drop_last=True)
    images = 0
    start = None
    for batch_index, (batch, _) in enumerate(loader):
        if batch_index == args.warmup:
            start = time.perf_counter()
        if batch_index >= args.warmup:
            images += batch.shape[0]
        if batch_index + 1 == args.warmup + args.batches:
            break
    seconds = time.perf_counter() - start
    print(json.dumps({"impl": "torch", "workers": args.workers, "images": images,
                      "seconds": round(seconds, 4), "images_per_s": round(images / seconds, 2),
                      "torch": torch.__version__, "torchvision": torchvision.__version__}))


if __name__ == "__main__":
    main()
