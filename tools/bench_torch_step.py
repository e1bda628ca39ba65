#!/usr/bin/python3
"""PyTorch baseline for bench/bench_step: one training step of a torchvision ResNet.

Reads cases from stdin, one per line (tab-separated):
    name  arch  image_size  batch  classes  [device  precision]
device is cpu (default) or cuda, precision fp32 (default), tf32 (cuda only) or bf16. Prints one line per memory
format timed (tab-separated):
    name  step_nchw|step_channels_last  time_us
A step is what bench_step times on our side: forward in train mode, cross-entropy, backward,
and torch.optim.SGD(lr=0.1, momentum=0.9, weight_decay=1e-4).step(), with zero_grad first.
Random images and labels; three warm-ups, then the median of repeats over --min-seconds.
- cpu: both memory formats (NCHW is PyTorch's default; bench_step keeps the faster),
  --threads intra-op threads; bf16 runs the forward and the loss under
  torch.autocast("cpu", bfloat16) with fp32 weights (oneDNN's bf16 kernels: AMX or
  AVX512_BF16 where the CPU has them). Debian's python3-torch (1.13) and python3-torchvision.
- cuda: channels_last only, with cudnn.benchmark on; bf16 runs the forward and the loss under
  torch.autocast(bfloat16) with fp32 weights, as our bf16 activations with fp32 master
  weights. Each timed step ends with torch.cuda.synchronize(), as ours ends with a stream
  synchronize. TF32 stays off for fp32, matching our exact fp32 arithmetic; tf32 turns it on
  for cuDNN's convolutions and cuBLAS's matmuls (torch.backends.*.allow_tf32), as our tf32
  runs both on TF32 tensor cores (PyTorch's own default has it for convolutions only).
"""
import torch
import torchvision

from torch_timing import serve_cases


def step_passes(fields):
    arch, size, batch, classes = fields[1], int(fields[2]), int(fields[3]), int(fields[4])
    device = fields[5] if len(fields) > 5 else "cpu"
    precision = fields[6] if len(fields) > 6 else "fp32"
    if precision not in ("fp32", "tf32", "bf16"):
        raise SystemExit(f"bench_torch_step.py: unknown precision '{precision}'")
    cuda = device == "cuda"
    if precision == "tf32" and not cuda:
        raise SystemExit("bench_torch_step.py: tf32 needs cuda")
    if cuda:
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        torch.backends.cudnn.allow_tf32 = precision == "tf32"
    formats = [("step_channels_last", torch.channels_last)]
    if not cuda:
        formats.insert(0, ("step_nchw", torch.contiguous_format))
    passes = []
    for fmt_name, fmt in formats:
        model = torchvision.models.__dict__[arch](num_classes=classes)
        model = model.to(device=device, memory_format=fmt)
        model.train()
        images = torch.randn(batch, 3, size, size, device=device).to(memory_format=fmt)
        labels = torch.randint(0, classes, (batch,), device=device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
        loss_fn = torch.nn.CrossEntropyLoss()

        def step(model=model, images=images, labels=labels, optimizer=optimizer):
            with torch.enable_grad():
                optimizer.zero_grad()
                with torch.autocast(device_type=device, dtype=torch.bfloat16,
                                    enabled=precision == "bf16"):
                    loss = loss_fn(model(images), labels)
                loss.backward()
                optimizer.step()
            if cuda:
                torch.cuda.synchronize()

        passes.append((fmt_name, step))
    return passes


if __name__ == "__main__":
    serve_cases(__doc__, step_passes)
