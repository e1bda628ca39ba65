#!/usr/bin/env python3
"""Compares one training step of the engine with PyTorch's, layer by layer: the output of
every top-level layer, the gradient each receives, and every parameter gradient, against
torchvision's model in float64 (the exact answer) beside PyTorch's own run at our precision,
the "peer": float32 for an fp32 probe, float32 weights under torch.autocast(bfloat16) for a
bf16 one (PyTorch's mixed precision, as close to our bf16 activations as PyTorch comes).

    build/probe_step --checkpoint C --batch-file dumps/step-0000675-rank-0.safetensors --out P
    /usr/bin/python3 tools/compare_step_with_torch.py --probe P

The checkpoint, the batch and the label smoothing are the ones probe_step recorded in P.
Each row gives the relative error (norm of the difference over the norm of float64's) of
ours and of the peer. For every layer whose output has passed through a ReLU it
also counts "flips": elements that are 0 in one result and positive in float64 or the other
way round; for the max-pool, also the windows whose maximum sits elsewhere than float64's
(two inputs within rounding of each other: an upsampled image repeats its pixels, and
float64 can tie them where float32 parts them by an ulp). One flip drops, keeps or moves a
whole element's gradient, so below it the gradients of both float32 results can differ from
float64 by far more than rounding (1e-3 is common; in bf16, tens of percent at the stem,
PyTorch's as ours) without any kernel being wrong: the verdict line says whether the first
gradient that leaves float64 is explained by one. --json FILE writes the rows.

Needs torch and torchvision (Debian's python3-torch and python3-torchvision).
"""
import argparse
import json
import os
import sys

import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_probes import moved_maxima  # noqa: E402
from safetensors_torch import read_safetensors  # noqa: E402

MOMENTUM_PREFIX = "optimizer.momentum_buffer."
# Ours against float64 more than this many times the peer's error (and above 1e-5) counts as
# leaving float64.
FACTOR, FLOOR = 20.0, 1e-5


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--probe", required=True, help="probe_step's output file")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's)")
    parser.add_argument("--json", help="write the rows as JSON lines here")
    return parser.parse_args()


def module_for(model, name):
    """The torchvision module whose output is our layer `name`'s (bn1 is ours with its ReLU)."""
    if name == "bn1":
        return model.relu
    module = model
    for part in name.split("."):
        module = module[int(part)] if part.isdigit() else getattr(module, part)
    return module


def torch_step(checkpoint, batch, smoothing, layers, dtype, autocast=False):
    """(outputs, output gradients, parameter gradients, loss) of one step in `dtype`, under
    torch.autocast(cpu, bfloat16) with autocast."""
    metadata, tensors = read_safetensors(checkpoint)
    arch = metadata.get("arch")
    state = {k: v for k, v in tensors.items() if not k.startswith(MOMENTUM_PREFIX)}
    num_classes = state["fc.weight"].shape[0]
    model = getattr(torchvision.models, arch or "resnet18")(num_classes=num_classes)
    model.load_state_dict(state, strict=True)
    model = model.to(dtype).train()
    outputs = {}

    def keep(name):
        def hook(module, inputs, output):
            if name == "avgpool":
                output = torch.flatten(output, 1)  # as ours: [n, features]
            output.retain_grad()
            outputs[name] = output
            return output
        return hook

    for name in layers:  # (the model's own ReLU module serves the stem only)
        module_for(model, name).register_forward_hook(keep(name))
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        logits = model(batch["images"].to(dtype))
    loss = torch.nn.functional.cross_entropy(logits.to(dtype), batch["labels"],
                                             label_smoothing=smoothing)
    loss.backward()
    grads = {n: p.grad.double() for n, p in model.named_parameters()}
    return ({n: outputs[n].detach().double() for n in layers},
            {n: outputs[n].grad.double() for n in layers}, grads, loss.item())


def relative(a, exact):
    norm = exact.norm().item()
    return (a.double() - exact).norm().item() / norm if norm > 0 else (a.double()).norm().item()


def flips(a, exact):
    """Elements on the other side of a ReLU's zero; 0 for an output that is not a ReLU's."""
    if (exact < 0).any():
        return 0
    return int(((a > 0) != (exact > 0)).sum().item())


def main():
    args = parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    meta, ours = read_safetensors(args.probe)
    layers = meta["layers"].split(",")
    _, batch = read_safetensors(meta["batch"])
    smoothing = float(meta.get("label_smoothing", 0))
    out64, grad64, params64, loss64 = torch_step(meta["checkpoint"], batch, smoothing, layers,
                                                 torch.float64)
    bf16 = meta.get("precision") == "bf16"
    peer = "bf16 autocast" if bf16 else "f32"
    out32, grad32, params32, loss32 = torch_step(meta["checkpoint"], batch, smoothing, layers,
                                                 torch.float32, autocast=bf16)
    our_loss = ours["loss"].item()
    print(f"{meta['arch']}, batch of {len(batch['labels'])} from {meta['batch']} "
          f"({meta.get('device', 'cpu')}, {meta.get('precision', 'fp32')})")
    print(f"loss: ours {our_loss:.9g}, torch {peer} {loss32:.9g}, f64 {loss64:.9g} (ours "
          f"{abs(our_loss - loss64) / abs(loss64):.2e}, {peer} {abs(loss32 - loss64) / abs(loss64):.2e})")
    print(f"relative errors against float64, ours and the peer's (torch {peer}); flips: ours/peer's")
    rows = []
    print(f"{'layer':<12} {'output ours':>12} {'peer':>9} {'flips':>7}   "
          f"{'output grad ours':>16} {'peer':>9}")
    for name in layers:
        row = {"layer": name,
               "output": relative(ours[name + ".output"], out64[name]),
               "output_peer": relative(out32[name], out64[name]),
               "flips": flips(ours[name + ".output"], out64[name]),
               "flips_peer": flips(out32[name], out64[name]),
               "output_grad": relative(ours[name + ".output_grad"], grad64[name]),
               "output_grad_peer": relative(grad32[name], grad64[name])}
        if name == "maxpool" and rows:  # its input is the previous layer's output
            exact = out64[rows[-1]["layer"]]
            row["moved_maxima"] = moved_maxima(
                list(exact.shape), exact.flatten().tolist(),
                ours[rows[-1]["layer"] + ".output"].double().flatten().tolist())
        rows.append(row)
        print(f"{name:<12} {row['output']:>12.2e} {row['output_peer']:>9.2e} "
              f"{row['flips']:>3}/{row['flips_peer']:<3}   {row['output_grad']:>16.2e} "
              f"{row['output_grad_peer']:>9.2e}")
    param_rows = []
    for name, exact in params64.items():
        param_rows.append({"parameter": name, "grad": relative(ours["grad." + name], exact),
                           "grad_peer": relative(params32[name], exact)})
    worst = sorted(param_rows, key=lambda r: r["grad"], reverse=True)
    print("parameter gradients, worst 8 of ours:")
    for r in worst[:8]:
        print(f"  {r['parameter']:<32} ours {r['grad']:.2e}  peer {r['grad_peer']:.2e}")
    # The verdict: from the loss down, the first layer whose gradient leaves float64.
    def leaves(value, peer_value):
        return value > FLOOR and value > FACTOR * peer_value
    verdict = f"every output and gradient stays with float64 as closely as torch {peer}'s"
    # For scripts: None, "output", "gradient", "gradient_below_flip" (explained) or "parameter".
    departure = None
    forward = [row for row in rows if leaves(row["output"], row["output_peer"])]
    backward = [index for index in range(len(rows) - 1, -1, -1)
                if leaves(rows[index]["output_grad"], rows[index]["output_grad_peer"])]
    params = [r for r in param_rows if leaves(r["grad"], r["grad_peer"])]
    if forward:  # the first in the forward order
        departure = "output"
        verdict = f"{forward[0]['layer']}'s output leaves float64 ({forward[0]['output']:.1e})"
    elif backward:  # the first in the backward order
        row = rows[backward[0]]
        above = rows[backward[0] + 1] if backward[0] + 1 < len(rows) else None
        moved = above.get("moved_maxima", 0) if above else 0
        flipped = bool(above and (above["flips"] or moved))
        departure = "gradient_below_flip" if flipped else "gradient"
        if not flipped:
            cause = ": no ReLU flip or moved max-pool maximum above explains it"
        elif above["flips"]:
            cause = f": {above['flips']} ReLU flip(s) in {above['layer']}'s output explain it"
        else:
            cause = (f": {moved} {above['layer']} window(s) whose maximum moved between inputs "
                     "tied within rounding explain it")
        verdict = (f"the gradient into {row['layer']}'s output leaves float64 "
                   f"({row['output_grad']:.1e}, {peer} {row['output_grad_peer']:.1e}){cause}")
    elif params:
        departure = "parameter"
        verdict = (f"{params[0]['parameter']}'s gradient leaves float64 ({params[0]['grad']:.1e}, "
                   f"{peer} {params[0]['grad_peer']:.1e}) while every layer's output gradient stays")
    print("verdict:", verdict)
    if args.json:
        with open(args.json, "w") as f:
            f.write(json.dumps({"loss": our_loss, "loss_peer": loss32, "loss_f64": loss64,
                                "peer": peer, "verdict": verdict,
                                "departure": departure}) + "\n")
            for row in rows + param_rows:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
