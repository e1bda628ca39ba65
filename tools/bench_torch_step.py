#!/usr/bin/python3
"""PyTorch CPU baseline for bench/bench_step: one training step of a torchvision ResNet.

Reads cases from stdin, one per line (tab-separated):
    name  arch  image_size  batch  classes
and prints one line per memory format (tab-separated):
    name  step_nchw|step_channels_last  time_us
A step is what bench_step times on our side: forward in train mode, cross-entropy, backward,
and torch.optim.SGD(lr=0.1, momentum=0.9, weight_decay=1e-4).step(), with zero_grad first.
fp32, --threads intra-op threads, random images and labels; three warm-ups, then the median
of repeats over --min-seconds. Debian's python3-torch (1.13) and python3-torchvision.
"""
import torch
import torchvision

from torch_timing import serve_cases


def step_passes(fields):
    arch, size, batch, classes = fields[1], int(fields[2]), int(fields[3]), int(fields[4])
    passes = []
    for fmt_name, fmt in (("step_nchw", torch.contiguous_format),
                          ("step_channels_last", torch.channels_last)):
        model = torchvision.models.__dict__[arch](num_classes=classes).to(memory_format=fmt)
        model.train()
        images = torch.randn(batch, 3, size, size).to(memory_format=fmt)
        labels = torch.randint(0, classes, (batch,))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
        loss_fn = torch.nn.CrossEntropyLoss()

        def step(model=model, images=images, labels=labels, optimizer=optimizer):
            with torch.enable_grad():
                optimizer.zero_grad()
                loss_fn(model(images), labels).backward()
                optimizer.step()

        passes.append((fmt_name, step))
    return passes


if __name__ == "__main__":
    serve_cases(__doc__, step_passes)
