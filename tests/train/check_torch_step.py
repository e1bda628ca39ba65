#!/usr/bin/env python3
"""resnet_train's steps against PyTorch's on the same state and batches (ctest
train_step_matches_torch), with the two tools for that.

tools/replay_in_torch.py: 2 ranks train 3 steps and stop (a checkpoint with momentum), then resume for 2 more with
--dump-batches; PyTorch replays those 2 from the checkpoint on the dumped batches, in float32
and float64. The engine's loss, as PyTorch's float32 one, must be within 1e-5 (relative) of
the float64 one at the first step, which checks the checkpoint, the images and labels and
the forward pass; and within 1e-3 at the second, which adds the gradients, the data-parallel
average, the loaded momentum, the SGD settings and the learning rate (leaving out the
momentum, or summing the ranks' gradients instead of averaging them, moves it by ~3e-2).

Not more steps: from the second on, a float32 loss, ours or PyTorch's, can leave float64's
by ~1e-3 when one ReLU input within rounding of zero lands on the other side (its gradient
is then dropped or kept), and on these small batches of a fresh model that grows to ~1e-1
within a few steps.

probe_step + tools/compare_step_with_torch.py: rank 0's batch of the first replayed step,
layer by layer from the same checkpoint: our loss within 1e-6 of float64's, and the tool's
verdict that no output or gradient leaves float64 unexplained (by more than 20 times
PyTorch's float32 error and 1e-5; a gradient may, below a ReLU flip). Then the same with
--precision bf16 against PyTorch's bf16 autocast: the loss within 1e-2, the same verdict.

    /usr/bin/python3 tests/train/check_torch_step.py --exe build/resnet_train \
        --probe-exe build/probe_step --data DIR --work DIR

Exits 77 (a ctest skip) without torch and torchvision.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

SKIP = 77
TOLERANCE = {4: 1e-5, 5: 1e-3}  # by step
MPI = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", "2"]
FLAGS = ["--arch", "resnet18", "--image-size", "32", "--crop-scale", "0.64,1", "--workers", "1",
         "--normalize", "0.286,0.286,0.286/0.353,0.353,0.353", "--epochs", "1", "-b", "16",
         "--lr", "0.002", "--lr-schedule", "cosine", "--momentum", "0.9", "--nesterov",
         "--wd", "5e-4", "--label-smoothing", "0.1"]

try:
    import torch  # noqa: F401
    import torchvision  # noqa: F401
except ImportError as error:
    print(f"SKIP: torch and torchvision are not importable by {sys.executable}: {error}")
    sys.exit(SKIP)

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools")


def train(args, extra):
    subprocess.run(MPI + [args.exe, "--data", args.data] + FLAGS + extra, check=True,
                   capture_output=True, timeout=300)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--exe", required=True)
    parser.add_argument("--probe-exe", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    if not os.path.isdir(os.path.join(args.data, "train")):
        print(f"SKIP: no dataset at {args.data}")
        sys.exit(SKIP)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    checkpoints, dumps = os.path.join(args.work, "ck"), os.path.join(args.work, "dumps")
    steps = os.path.join(args.work, "steps.jsonl")
    train(args, ["--checkpoint-dir", checkpoints, "--max-steps", "3"])
    start = os.path.join(args.work, "at_step_3.safetensors")
    shutil.copy(os.path.join(checkpoints, "last.safetensors"), start)
    train(args, ["--checkpoint-dir", checkpoints, "--max-steps", "5", "--resume", start,
                 "--dump-batches", dumps, "--step-metrics", steps])
    rows_file = os.path.join(args.work, "replay.jsonl")
    replay = subprocess.run([sys.executable, os.path.join(TOOLS, "replay_in_torch.py"),
                             "--checkpoint", start, "--batches", dumps, "--steps", steps,
                             "--label-smoothing", "0.1", "--json", rows_file],
                            capture_output=True, text=True, timeout=300)
    print(replay.stdout, end="")
    if replay.returncode != 0:
        print(f"FAIL: replay_in_torch.py exited {replay.returncode}:\n{replay.stderr}")
        return 1
    with open(rows_file) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    failures = []
    if [row["step"] for row in rows] != sorted(TOLERANCE):
        failures.append(f"replayed steps {[row['step'] for row in rows]}, expected 4 and 5")
    for row in rows:
        exact = row["torch_f64"]
        for name in ("engine", "torch_f32"):
            if abs(row[name] - exact) > TOLERANCE.get(row["step"], 0) * abs(exact):
                failures.append(f"step {row['step']}: {name} loss {row[name]}, float64 {exact}")
    failures += check_probe(args, start, os.path.join(dumps, "step-0000004-rank-0.safetensors"))
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


def check_probe(args, checkpoint, batch):
    return (check_probe_at(args, checkpoint, batch, "fp32", 1e-6) +
            check_probe_at(args, checkpoint, batch, "bf16", 1e-2))


def check_probe_at(args, checkpoint, batch, precision, loss_tolerance):
    probe = os.path.join(args.work, f"probe_{precision}.safetensors")
    subprocess.run([args.probe_exe, "--checkpoint", checkpoint, "--batch-file", batch, "--out", probe,
                    "--label-smoothing", "0.1", "--precision", precision], check=True,
                   capture_output=True, timeout=300)
    rows_file = os.path.join(args.work, f"compare_{precision}.jsonl")
    compare = subprocess.run([sys.executable, os.path.join(TOOLS, "compare_step_with_torch.py"),
                              "--probe", probe, "--json", rows_file],
                             capture_output=True, text=True, timeout=300)
    print(compare.stdout, end="")
    if compare.returncode != 0:
        return [f"compare_step_with_torch.py exited {compare.returncode}:\n{compare.stderr}"]
    with open(rows_file) as f:
        summary = json.loads(f.readline())
    failures = []
    if abs(summary["loss"] - summary["loss_f64"]) > loss_tolerance * abs(summary["loss_f64"]):
        failures.append(f"{precision} probe loss {summary['loss']}, float64 {summary['loss_f64']}")
    if summary["departure"] not in (None, "gradient_below_flip"):
        failures.append(f"{precision} probe: " + summary["verdict"])
    return failures


if __name__ == "__main__":
    sys.exit(main())
