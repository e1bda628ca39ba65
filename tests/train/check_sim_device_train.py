#!/usr/bin/env python3
"""resnet_train --device cuda on the sim device (an ENGINE_CUDA=SIM build) against --device cpu.

--ranks 1 (the default): one rank, resnet18 at 32 px, batch 8, two SGD steps with momentum:
the per-step losses of the CUDA path (caching allocator, pinned staging, the loader's H2D
stream, every kernel, the optimizer, the checkpoint written from device memory) must equal the
CPU backend's within fp32 reordering (relative 1e-4; measured: 2e-6). Batch 8, not 2: with 2
images, BatchNorm of the last stage normalizes two values per channel at 1x1, which amplifies
rounding differences to percents by the second step.

--ranks 2: mpirun -np 2, batch 2 per rank with --sync-bn and pair-mode MixUp/CutMix (soft
targets copied to the device for the soft-target loss), so BatchNorm sees the global batch of
4 through the sim device's NCCL shim (--comm auto: our ring over NcclTransport for the gradients
and SyncBN's all-reduces; ring-shm on the CPU). Three steps, a checkpoint, then --resume for a
fourth: the resumed steps must be bit-identical to an uninterrupted 4-step CUDA run (the same
kernels, and reductions in a fixed order, leave nothing to chance), and the CUDA losses must
match the CPU backend's within MULTI_RANK_TOLERANCES, step by step:
  step 1, 1e-5: the same weights and batch, one forward with SyncBN's all-reduce; only fp32
    reordering differs (measured 3e-7);
  step 2, 2e-3: after one update through the averaged gradients (measured 2e-4); a gradient
    off by 2x (sum for avg) moves this loss by 4% (measured on the CPU: lr 0.002 vs 0.004);
  later steps are not compared: BatchNorm of layer4 normalizes 4 values per channel at 1x1,
    which amplifies the backends' rounding differences chaotically (one rank, batch 4, no
    NCCL at all: CPU and CUDA differ by 1.4% at step 3, measured).

--ranks 2 also checks the CUDA graphs with two ranks (the gradients' bucketed all-reduces and
SyncBN's captured inside them): --accum-steps 2 with --lr-schedule onecycle, three steps with the
graphs (the default) and without (--cuda-graph off): losses and final weights bit for bit the
same; the graphed steps report their share of communication hidden as not measured (null), the
first two steps (the last micro-step, which holds the optimizer step, runs kernel by kernel at
both: SGD's first step is not replayable) and every step of --cuda-graph off as measured.
The runs above (4 steps; 3, then resumed) run with the graphs as well.

--ranks 2 also tunes the convolutions (--conv-tuning on, bf16, so the candidates differ in
tile as well as split): rank 0 times candidates for 3 s, writes the cache and gives every rank
its choices; a second run reads them back from the cache timing nothing (--conv-tuning-seconds
0) and must repeat the first run's losses bit for bit (a foreign or corrupt cache:
nn_conv_tuning_test_sim).

--ranks 1 with --probe-exe also runs probe_step on the CPU run's last checkpoint and the batch
of its last step (--dump-batches), on both devices: every layer's output within 1e-4 of the
CPU's (relative norm), and every layer's output gradient and parameter gradient within 1e-4
too, unless a ReLU output lands on the other side of zero in one of them (a "flip": its
gradient is dropped or kept, which moves the gradients below it by ~1e-3), when 2e-2.

--ranks 1 also checks the CUDA graphs (--cuda-graph, train/micro_step_graphs.h): batch 2 with
--accum-steps 2 (two kinds of micro-step, each run kernel by kernel, then captured, then replayed;
the last holds --clip-grad's clipping and the optimizer step) and --lr-schedule onecycle (the
learning rate changes every step, written to the device before each replay), four
steps with the graphs (the default) and without (--cuda-graph off, with --print-freq 100: the
host queues steps ahead of the device, so a loader batch reused before its last reader ran
would show), and four with the graphs stopped at 2 and resumed: losses and final weights bit
for bit the same, the banner saying which ran.

--ranks 1 also runs resnet_train on a device of 24 MiB (ENGINE_SIM_DEVICE_MEMORY_MIB), too
small for the model: exit 1 with CUDA's out-of-memory error naming the device and what it has
free, and no checkpoint.

Exit 77 (skip) when the dataset is missing. Usage:
  check_sim_device_train.py --exe resnet_train --data <ImageFolder> --work <dir> [--ranks 1|2]
                            [--probe-exe probe_step]
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from compare_probes import compare_probes  # noqa: E402

COMMON = ["--arch", "resnet18", "--image-size", "32", "--crop-scale", "0.64,1", "--workers", "1",
          "--normalize", "0.286,0.286,0.286/0.353,0.353,0.353", "--print-freq", "1",
          "--epochs", "1", "--lr", "0.002", "--momentum", "0.9"]
# --ema: the weight average (sgd_step and copies on the device) saved at the stop, compared too.
SINGLE_RANK = ["--comm", "ring-shm", "-b", "8", "--max-steps", "2", "--ema", "0.9"]
MULTI_RANK = ["--sync-bn", "-b", "2", "--mixup", "0.8", "--cutmix", "1.0", "--mixup-mode", "pair"]
RELATIVE_TOLERANCE = 1e-4
GRAPHED = ["--comm", "ring-shm", "-b", "2", "--accum-steps", "2", "--lr-schedule", "onecycle",
           "--clip-grad", "1"]
MULTI_RANK_TOLERANCES = [1e-5, 2e-3]  # per step; see the docstring for why
MPI = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]


def train(args, name, device, flags, ranks, fresh=True, output=None):
    work = os.path.join(args.work, name)
    if fresh:
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
    metrics = os.path.join(work, "steps.jsonl")
    command = [args.exe, "--data", args.data, "--device", device, "--checkpoint-dir", work,
               "--step-metrics", metrics] + COMMON + flags
    if ranks > 1:
        command = MPI + ["-np", str(ranks)] + command
    env = dict(os.environ, ENGINE_SIM_DEVICE_COUNT=str(ranks))  # a device per rank
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} exited {result.returncode}\n--- stdout\n{result.stdout}"
                 f"\n--- stderr\n{result.stderr}")
    if output is not None:
        output.append(result.stdout + result.stderr)
    if not os.path.isfile(os.path.join(work, "last.safetensors")):
        sys.exit(f"{name}: no last.safetensors in {work}")
    with open(metrics) as f:
        return [json.loads(line)["loss"] for line in f if line.strip()]


def compare(what, reference, losses, tolerances):
    """Relative differences step by step (tolerances: one per compared step), returned."""
    differences = []
    for step, (a, b, tolerance) in enumerate(zip(reference, losses, tolerances), start=1):
        relative = abs(a - b) / abs(a)
        differences.append(relative)
        if relative > tolerance:
            sys.exit(f"{what}, step {step}: loss {b} differs from {a} by {relative:.2e} "
                     f"relative, more than {tolerance}")
    return differences


def probe_on_both_devices(args, checkpoint, batch):
    paths = {}
    for device in ("cpu", "cuda"):
        paths[device] = os.path.join(args.work, f"probe_{device}.safetensors")
        env = dict(os.environ, ENGINE_SIM_DEVICE_COUNT="1")
        result = subprocess.run([args.probe_exe, "--checkpoint", checkpoint, "--batch-file", batch,
                                 "--out", paths[device], "--device", device],
                                capture_output=True, text=True, timeout=600, env=env)
        if result.returncode != 0:
            sys.exit(f"probe_step --device {device} exited {result.returncode}\n{result.stderr}")
    summary, failures = compare_probes(paths["cpu"], paths["cuda"])
    if failures:
        sys.exit("probe_step, sim device against cpu:\n" + "\n".join(failures))
    if summary["other"] != "cuda:0":
        sys.exit(f"probe_step --device cuda ran on {summary['other']}")
    print(f"probe_step, sim device against cpu: outputs within {summary['worst_output']:.1e}, "
          f"gradients within {summary['worst_gradient']:.1e} ({summary['tensors']} tensors, "
          f"{summary['flips']} ReLU flips)")


def single_rank(args):
    cpu = train(args, "cpu", "cpu", SINGLE_RANK + ["--dump-batches",
                                                    os.path.join(args.work, "dumps")], 1)
    cuda = train(args, "cuda", "cuda", SINGLE_RANK, 1)
    print(f"losses per step: cpu {cpu}, cuda (sim device) {cuda}")
    if len(cpu) != 2 or len(cuda) != 2:
        sys.exit(f"expected 2 steps each, got {len(cpu)} (cpu) and {len(cuda)} (cuda)")
    worst = max(compare("cuda against cpu", cpu, cuda, [RELATIVE_TOLERANCE] * 2))
    print(f"worst relative difference {worst:.2e} (tolerance {RELATIVE_TOLERANCE})")
    compare_weight_averages(args)
    if args.probe_exe:
        probe_on_both_devices(args, os.path.join(args.work, "cpu", "last.safetensors"),
                              os.path.join(args.work, "dumps", "step-0000002-rank-0.safetensors"))
    graphed_matches_ungraphed(args)
    out_of_memory(args)


def float_tensors(path):
    from safetensors_plain import read_safetensors_plain
    _, tensors = read_safetensors_plain(path)
    return {k: v for k, (dtype, _, v) in tensors.items() if dtype == "F32"}


def graphed_matches_ungraphed(args):
    outputs = []
    graphed = train(args, "graph_on", "cuda", GRAPHED + ["--max-steps", "4"], 1, output=outputs)
    # --print-freq 100: no figure is fetched before the end, so the host queues steps ahead of
    # the device, and a batch reused by the loader before its last reader had run would differ.
    plain = train(args, "graph_off", "cuda", GRAPHED + ["--max-steps", "4", "--cuda-graph", "off",
                                                        "--print-freq", "100"], 1, output=outputs)
    train(args, "graph_parts", "cuda", GRAPHED + ["--max-steps", "2"], 1)
    resume = os.path.join(args.work, "graph_parts", "last.safetensors")
    parts = train(args, "graph_parts", "cuda", GRAPHED + ["--max-steps", "4", "--resume", resume],
                  1, fresh=False)
    for text, expected in zip(outputs, ("micro-steps replayed as CUDA graphs",
                                        "no CUDA graph (--cuda-graph off)")):
        if expected not in text.splitlines()[0]:
            sys.exit(f"expected the banner to say '{expected}':\n{text}")
    with open(os.path.join(args.work, "graph_on", "steps.jsonl")) as f:
        rates = [json.loads(line)["lr"] for line in f if line.strip()]
    if len(set(rates)) != len(rates):
        sys.exit(f"--lr-schedule onecycle should change the rate every step: {rates}")
    if len(graphed) != 4 or graphed != plain or parts != plain:
        sys.exit(f"losses with CUDA graphs {graphed}, resumed {parts}, without {plain}: "
                 "expected the same 4 values")
    weights = [float_tensors(os.path.join(args.work, name, "last.safetensors"))
               for name in ("graph_on", "graph_off", "graph_parts")]
    if not weights[0] or weights[0] != weights[1] or weights[2] != weights[1]:
        sys.exit("the final weights with CUDA graphs differ from those without")
    print(f"CUDA graphs, batch 2 x 2 accumulated, rates {rates}: losses {graphed} and "
          f"{len(weights[0])} weight tensors bit for bit those of --cuda-graph off, also resumed "
          "at step 2")


def compare_weight_averages(args):
    """ema.safetensors of the two devices' runs: every float tensor within 1e-4 of its RMS."""
    averages = {device: float_tensors(os.path.join(args.work, device, "ema.safetensors"))
                for device in ("cpu", "cuda")}
    worst = 0.0
    for name, expected in averages["cpu"].items():
        scale = max(1e-3, math.sqrt(sum(v * v for v in expected) / max(1, len(expected))))
        worst = max([worst] + [abs(a - b) / scale for a, b in zip(averages["cuda"][name], expected)])
    if averages["cpu"].keys() != averages["cuda"].keys() or worst > RELATIVE_TOLERANCE:
        sys.exit(f"--ema: the sim device's weight average parts from the CPU's by {worst:.2e}")
    print(f"--ema 0.9: the weight averages within {worst:.1e} of the CPU's")


def out_of_memory(args):
    """A device too small for the model (24 MiB: resnet18's weights alone are 45 MiB) ends the
    run with exit 1 and one message naming the device, the size and what it has free, before
    any checkpoint; never a crash."""
    work = os.path.join(args.work, "out_of_memory")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    command = [args.exe, "--data", args.data, "--device", "cuda", "--checkpoint-dir", work] + \
        COMMON + SINGLE_RANK
    env = dict(os.environ, ENGINE_SIM_DEVICE_COUNT="1", ENGINE_SIM_DEVICE_MEMORY_MIB="24")
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    expected = ["CUDA out of memory on cuda:0 allocating", "MiB free of 24 MiB"]
    if result.returncode != 1 or not all(text in result.stderr for text in expected):
        sys.exit(f"out of device memory: expected exit 1 and {expected} on stderr, got exit "
                 f"{result.returncode}\n--- stderr\n{result.stderr}")
    if os.listdir(work):
        sys.exit(f"out of device memory: the failed run left {os.listdir(work)} in {work}")
    message = [line for line in result.stderr.splitlines() if "out of memory" in line]
    print(f"out of device memory (24 MiB): exit 1, {message[0].strip()}")


def two_ranks(args):
    cpu = train(args, "np2_cpu", "cpu", MULTI_RANK + ["--max-steps", "2"], 2)
    whole = train(args, "np2_cuda_whole", "cuda", MULTI_RANK + ["--max-steps", "4"], 2)
    parts = train(args, "np2_cuda_parts", "cuda", MULTI_RANK + ["--max-steps", "3"], 2)
    resume = os.path.join(args.work, "np2_cuda_parts", "last.safetensors")
    parts = train(args, "np2_cuda_parts", "cuda",
                  MULTI_RANK + ["--max-steps", "4", "--resume", resume], 2, fresh=False)
    print(f"losses per step: cpu {cpu}\n  cuda (sim device, NCCL shim) {whole}\n"
          f"  cuda stopped at 3 and resumed {parts}")
    for what, losses, steps in (("cpu", cpu, 2), ("cuda", whole, 4), ("cuda resumed", parts, 4)):
        if len(losses) != steps or not all(math.isfinite(x) for x in losses):
            sys.exit(f"{what}: expected {steps} finite losses, got {losses}")
    if parts != whole:
        sys.exit(f"the resumed cuda run differs from the uninterrupted one: {parts} vs {whole}")
    differences = compare("2-rank cuda against cpu", cpu, whole, MULTI_RANK_TOLERANCES)
    print("relative differences to cpu per step: " + ", ".join(f"{d:.1e}" for d in differences) +
          f" (tolerances {MULTI_RANK_TOLERANCES}); resumed == uninterrupted, bit for bit")


def graphed_two_ranks(args):
    flags = MULTI_RANK + ["--accum-steps", "2", "--lr-schedule", "onecycle", "--max-steps", "3"]
    outputs = []
    graphed = train(args, "np2_graph_on", "cuda", flags, 2, output=outputs)
    plain = train(args, "np2_graph_off", "cuda", flags + ["--cuda-graph", "off"], 2,
                  output=outputs)
    for text, expected in zip(outputs, ("micro-steps replayed as CUDA graphs",
                                        "no CUDA graph (--cuda-graph off)")):
        if expected not in text.splitlines()[0]:
            sys.exit(f"expected the banner to say '{expected}':\n{text}")
    hidden = {}
    for name in ("np2_graph_on", "np2_graph_off"):
        with open(os.path.join(args.work, name, "steps.jsonl")) as f:
            hidden[name] = [json.loads(line)["comm_hidden_pct"] for line in f if line.strip()]
    on, off = hidden["np2_graph_on"], hidden["np2_graph_off"]
    # The gradients' all-reduces run in each step's last micro-step, which holds the optimizer
    # step: kernel by kernel at step 1 (SGD's first step starts the momentum: not replayable)
    # and at step 2 (that kind's first run), inside a launch from step 3.
    if (any(h is None for h in on[:2]) or any(h is not None for h in on[2:])
            or any(h is None for h in off)):
        sys.exit(f"communication hidden per step: with graphs {on} (expected two figures, then "
                 f"null for the launches), without {off} (expected figures)")
    if len(graphed) != 3 or graphed != plain:
        sys.exit(f"2 ranks: losses with CUDA graphs {graphed}, without {plain}: expected the "
                 "same 3 values")
    weights = [float_tensors(os.path.join(args.work, name, "last.safetensors"))
               for name in ("np2_graph_on", "np2_graph_off")]
    if not weights[0] or weights[0] != weights[1]:
        sys.exit("2 ranks: the final weights with CUDA graphs differ from those without")
    print(f"CUDA graphs, 2 ranks, SyncBN, batch 2 x 2 accumulated: losses {graphed} and "
          f"{len(weights[0])} weight tensors bit for bit those of --cuda-graph off; "
          f"communication hidden per step {on} (null: inside a launch)")


def tuned_two_ranks(args):
    plans = os.path.join(args.work, "conv-plans.tsv")
    if os.path.exists(plans):
        os.remove(plans)
    flags = MULTI_RANK + ["--max-steps", "2", "--precision", "bf16", "--conv-tuning", "on",
                          "--conv-tuning-file", plans]
    tuned_out, cached_out = [], []
    tuned = train(args, "np2_tuned", "cuda", flags + ["--conv-tuning-seconds", "3"], 2,
                  output=tuned_out)
    summary = [line for line in tuned_out[0].splitlines() if "convolution algorithms:" in line]
    if len(summary) != 1 or " timed (" not in summary[0] or ", 0 timed" in summary[0]:
        sys.exit(f"expected one banner line with convolutions timed, got {summary}")
    if not os.path.isfile(plans):
        sys.exit(f"no cache written at {plans}: {summary[0]}")
    with open(plans) as f:
        rows = [line for line in f if line.split("\t")[0] in
                ("forward", "backward_data", "backward_filter")]
    cached = train(args, "np2_cached", "cuda", flags + ["--conv-tuning-seconds", "0"], 2,
                   output=cached_out)
    if f"{len(rows)} from {plans}, 0 timed" not in cached_out[0]:
        sys.exit(f"the second run should read {len(rows)} rows and time none:\n{cached_out[0]}")
    if cached != tuned:
        sys.exit(f"the same choices from the cache gave other losses: {cached} vs {tuned}")
    print(f"conv tuning, 2 ranks, bf16: {summary[0].strip()}\n  {len(rows)} rows cached; read "
          f"back with nothing timed: losses {cached} == {tuned}, bit for bit")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--exe", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--ranks", type=int, choices=(1, 2), default=1)
    parser.add_argument("--probe-exe", help="probe_step, to compare one step layer by layer")
    args = parser.parse_args()
    if not os.path.isdir(os.path.join(args.data, "train")):
        print(f"no dataset at {args.data}: skipped")
        sys.exit(77)
    if args.ranks == 1:
        single_rank(args)
    else:
        two_ranks(args)
        graphed_two_ranks(args)
        tuned_two_ranks(args)


if __name__ == "__main__":
    main()
