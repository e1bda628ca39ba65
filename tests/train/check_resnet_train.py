#!/usr/bin/env python3
"""End-to-end checks of resnet_train under mpirun (the ctest cases train_*):

    python3 tests/train/check_resnet_train.py CASE --exe build/resnet_train --data DIR --work DIR

DIR is a small Fashion-MNIST ImageFolder (tools/export_fashion_mnist.py --train-per-class 30
--val-per-class 10). Cases:
  learns        2 ranks, 4 epochs: train loss falls, val top-1 above chance, metrics valid,
                last/best checkpoints written and loadable by --evaluate; printed figures ==
                metrics.jsonl == the checkpoint's best, in percents; an older checkpoint's
                fractional best resumes as a fraction
  learns_bf16   the same training with bf16 activations (fp32 master weights)
  mixing        the same training with --mixup 0.2 --cutmix 1.0 --label-smoothing 0.1
  equivalence   1 rank x batch 16 vs 2 ranks x batch 8 with --sync-bn: the same losses
  resume        with --opt lars and --lr-schedule poly (warmup): the loss falls; stopped
                mid-epoch by --max-steps then --resume: the same per-step losses as an
                uninterrupted run, bit for bit; the resumed part's --dump-batches files hold
                each step's batch of each rank (labels of their files, grey images)
  probe         probe_step on a dumped batch gives the loss training logged for that step,
                and as parameter gradients what a step of SGD at lr 1 (no momentum or weight
                decay) took from the weights, in torchvision's layouts
  bad_flags     each bad flag or path: one line from rank 0 naming it, every rank non-zero
  bad_files     bad files skipped with one warning each, odd-but-good images train, counted
  accum         --accum-steps 2: steps of two batches, resumed mid-epoch exactly, against
                the 2x batch (the same steps and rates, BatchNorm aside)
  dummy         --dummy: random images, no folder; the run, its checkpoint and --evaluate
  finetune      --pretrained: weights trained on 7 classes, fine-tuned onto the other 3 with a
                new fc, beat training from scratch after one epoch (mean of 3 seeds), and the
                banner says the head was replaced
  ema           --ema 0.5 with --opt adamw --clip-grad 1 and per-image MixUp/CutMix: the loss
                falls; the weight average's figures printed and in the metrics, one step of it
                against the formula, resumed at step 13 == uninterrupted bit for bit (AdamW's
                moments and step count, and the mixing draws, included)
  resize        --progressive-resize and --val-image-size: each epoch's batches at its crop,
                validation at its own size (== --evaluate at that size)
  shards        WebDataset tar shards written from DIR by tools/make_webdataset_shards.py, 2
                ranks: an epoch's samples are the folder's (index, label and augmented pixels,
                as multisets); stopped at step 7 and resumed == uninterrupted bit for bit;
                --evaluate on 1 rank gives the folder's figures exactly; a truncated shard and a
                corrupt member are named and skipped
  sigterm       SIGTERM to one rank: every rank stops within seconds, 143, checkpoint intact
  sigkill       SIGKILL of one rank: the others end within the timeout, naming the dead rank
Only the Python standard library is used.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from compare_step_losses import compare, step_losses  # noqa: E402
from safetensors_plain import read_safetensors_plain  # noqa: E402

MPI = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]
# Small and fast: 32 px, resnet18, 1 compute thread per rank on the 2-core CI machine.
COMMON = ["--arch", "resnet18", "--image-size", "32", "--crop-scale", "0.64,1", "--workers", "1",
          "--normalize", "0.286,0.286,0.286/0.353,0.353,0.353", "--print-freq", "5"]
# Accuracies and shares in percents (_pct), as printed and in the checkpoint.
METRIC_KEYS = ["epoch", "train_loss", "train_top1_pct", "val_loss", "val_top1_pct", "val_top5_pct",
               "lr", "images_per_s", "epoch_s", "skipped_files", "comm_hidden_pct"]


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def run(args, ranks, extra, timeout=300, expect=0, data=None):
    command = MPI + ["-np", str(ranks), args.exe, "--data", data or args.data] + COMMON + extra
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    result.seconds = time.monotonic() - started
    if expect is not None and (result.returncode == 0) != (expect == 0):
        raise Failure(f"{' '.join(command)} exited {result.returncode}, expected "
                      f"{'0' if expect == 0 else 'non-zero'}\n--- stdout\n{result.stdout}"
                      f"\n--- stderr\n{result.stderr}")
    return result


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def fresh(args, name):
    path = os.path.join(args.work, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def train_and_check_learning(args, name, extra):
    """4 epochs on 2 ranks; the metrics must be complete, the loss fall, val top-1 pass 30%."""
    work = fresh(args, name)
    result = run(args, 2, ["--epochs", "4", "-b", "16", "--lr", "0.02", "--lr-schedule", "onecycle",
                           "--wd", "5e-4", "--nesterov", "--checkpoint-dir", work] + extra)
    epochs = read_jsonl(os.path.join(work, "metrics.jsonl"))
    check(len(epochs) == 4, f"{len(epochs)} metrics lines, expected 4")
    for line in epochs:
        missing = [key for key in METRIC_KEYS if key not in line]
        check(not missing, f"metrics line lacks {missing}: {line}")
    losses = [line["train_loss"] for line in epochs]
    check(losses[-1] < 0.8 * losses[0], f"train loss did not fall: {losses}")
    check(epochs[-1]["val_top1_pct"] > 30,
          f"val top-1 {epochs[-1]['val_top1_pct']}% not above chance (10%)")
    check(0 <= epochs[-1]["comm_hidden_pct"] <= 100, "comm_hidden_pct outside [0, 100]")
    return work, result, epochs


def case_learns_bf16(args):
    # With RandAugment and RandomErasing (noise values, erased in bf16), timm's rand-m9-n2 and
    # --reprob 0.25 --remode pixel: still learns (loss 2.40 -> 1.67, 48% val top-1; 2.28 ->
    # 1.33, 59% without them).
    _, result, epochs = train_and_check_learning(
        args, "learns_bf16", ["--precision", "bf16", "--auto-augment", "ra",
                              "--random-erase", "0.25", "--random-erase-value", "random"])
    check("bf16" in result.stdout, "the banner does not say bf16")
    print(f"learns_bf16: train loss {[e['train_loss'] for e in epochs]}, val top-1 "
          f"{[e['val_top1_pct'] for e in epochs]}, {result.seconds:.0f} s")


def case_mixing(args):
    """MixUp and CutMix (timm's flags) with label smoothing folded into the soft targets: the
    run learns as the plain one does, on batches that differ from the unmixed run's."""
    mixing = ["--mixup", "0.2", "--cutmix", "1.0", "--label-smoothing", "0.1"]
    _, result, epochs = train_and_check_learning(args, "mixing", mixing)
    print(f"mixing: train loss {[e['train_loss'] for e in epochs]}, val top-1 "
          f"{[e['val_top1_pct'] for e in epochs]}, {result.seconds:.0f} s")


def best_in_checkpoint(path):
    """The checkpoint's best val top-1 (metadata key ...best_val_top1_pct), with its key."""
    metadata, _ = read_safetensors_plain(path)
    keys = [key for key in metadata if key.endswith("best_val_top1_pct")]
    check(len(keys) == 1, f"{path}: no best_val_top1_pct in its metadata {sorted(metadata)}")
    return keys[0], float(metadata[keys[0]])


def check_one_metrics_convention(work, stdout, epochs):
    """Printed epoch summaries, metrics.jsonl and the checkpoint agree, all in percents."""
    printed = re.findall(r"epoch (\d+)/\d+ done .*\| val loss \S+ top1 (\S+)% top5 (\S+)%", stdout)
    check(len(printed) == len(epochs), f"{len(printed)} printed epoch summaries, {len(epochs)} lines")
    for (epoch, top1, top5), line in zip(printed, epochs):
        check(f"{line['val_top1_pct']:.2f}" == top1 and f"{line['val_top5_pct']:.2f}" == top5,
              f"epoch {epoch}: printed top1 {top1}% top5 {top5}%, metrics.jsonl {line}")
    _, best = best_in_checkpoint(os.path.join(work, "last.safetensors"))
    check(abs(best - max(line["val_top1_pct"] for line in epochs)) < 1e-9,
          f"the checkpoint's best_val_top1_pct {best} is not the best epoch's val top-1")


def rewrite_best_as_fraction(path, fraction):
    """An older checkpoint's form: best_val_top1 as a fraction (before 2026-12-04)."""
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    key, _ = best_in_checkpoint(path)
    del header["__metadata__"][key]
    header["__metadata__"][key[:-len("_pct")]] = repr(fraction)
    text = json.dumps(header, separators=(",", ":")).encode()
    check(len(text) <= length, "the rewritten header is longer")
    with open(path, "wb") as f:
        f.write(data[:8] + text + b" " * (length - len(text)) + data[8 + length:])


def case_learns(args):
    work, result, epochs = train_and_check_learning(args, "learns", [])
    losses = [line["train_loss"] for line in epochs]
    for name in ("last", "best"):
        check(os.path.getsize(os.path.join(work, name + ".safetensors")) > 40e6,
              f"{name}.safetensors missing or short")
    check("global" in result.stdout and "epoch 4/4 done" in result.stdout,
          "rank 0 printed no banner or epoch summary:\n" + result.stdout)
    check(not [l for l in result.stdout.splitlines() if l.startswith("[rank 1]")],
          "rank 1 printed to stdout")
    check("[rank 1]" not in result.stderr, "rank 1 printed more than errors:\n" + result.stderr)
    # The checkpoint evaluates to the figures of its epoch.
    metrics = os.path.join(work, "eval.jsonl")
    run(args, 1, ["--evaluate", "--resume", os.path.join(work, "last.safetensors"), "--metrics",
                  metrics])
    evaluated = read_jsonl(metrics)[0]
    check(abs(evaluated["val_loss"] - epochs[-1]["val_loss"]) < 1e-4 * max(1, epochs[-1]["val_loss"]),
          f"--evaluate gives val loss {evaluated['val_loss']}, training logged "
          f"{epochs[-1]['val_loss']}")
    check(evaluated["val_top1_pct"] == epochs[-1]["val_top1_pct"], "--evaluate top-1 differs")
    check_one_metrics_convention(work, result.stdout, epochs)
    # An older checkpoint's best (a fraction, 0.999 = 99.9%) still reads as a fraction: a fifth
    # epoch below 99.9% is not the best (read as a percent, 0.999% would be beaten).
    rewrite_best_as_fraction(os.path.join(work, "last.safetensors"), 0.999)
    more = run(args, 2, ["--epochs", "5", "-b", "16", "--lr", "0.02", "--lr-schedule", "onecycle",
                         "--wd", "5e-4", "--nesterov", "--checkpoint-dir", work, "--resume",
                         os.path.join(work, "last.safetensors")])
    fifth = read_jsonl(os.path.join(work, "metrics.jsonl"))[-1]
    check(fifth["epoch"] == 5 and fifth["val_top1_pct"] < 99.9, f"epoch 5: {fifth}")
    check("epoch 5/5 done" in more.stdout and "(best)" not in more.stdout,
          "an older checkpoint's fractional best was read as a percent:\n" + more.stdout)
    check(abs(best_in_checkpoint(os.path.join(work, "last.safetensors"))[1] - 99.9) < 1e-9,
          "the resumed run did not keep the older best, in percent")
    print(f"learns: train loss {losses}, val top-1 {[l['val_top1_pct'] for l in epochs]}%, "
          f"{result.seconds:.0f} s")


def case_equivalence(args):
    work = fresh(args, "equivalence")
    # Few steps at a small rate: fp32 rounding differences between the two runs (sums taken in
    # another order) flip max-pool and ReLU decisions that later steps amplify; changing the
    # rate by 5e-5 relative moves the third step's loss by 4e-3 and the fourth's by 2e-2. So
    # the first two steps are held to 1e-5 and the third to 1e-2: on the AMD EPYC without
    # AVX-512 (OpenBLAS and the portable loops) they measured 4.5e-7, 7.6e-7 and 5.7e-4, where
    # the AVX-512 paths stay under 1e-4 at the third. A rank that normalized with its own
    # batch's statistics would miss at the first step.
    flags = ["--sync-bn", "--epochs", "1", "--max-steps", "3", "--lr", "0.002", "--momentum", "0.9"]
    one = os.path.join(work, "one.jsonl")
    two = os.path.join(work, "two.jsonl")
    run(args, 1, flags + ["-b", "16", "--checkpoint-dir", work + "/1", "--step-metrics", one])
    run(args, 2, flags + ["-b", "8", "--checkpoint-dir", work + "/2", "--step-metrics", two])
    # tools/compare_step_losses.py: the same comparison gpu-check --part M makes on N GPUs.
    ok, message = compare(step_losses(one), step_losses(two), [1e-5, 1e-5, 1e-2])
    check(ok, message)
    print(message)


def case_resume(args):
    work = fresh(args, "resume")
    # LARS (MLPerf's eta and decay, BatchNorm and biases excluded) on MLPerf's schedule: one
    # epoch of warmup, then the poly decay.
    flags = ["--epochs", "2", "-b", "16", "--opt", "lars", "--lr", "2", "--lr-schedule", "poly",
             "--warmup-epochs", "1", "--wd", "5e-5"]
    whole = os.path.join(work, "whole.jsonl")
    # Saving inside the epochs (steps 4, 8, 12, 16; 9 and 18 end epochs) changes nothing.
    saving = run(args, 2, flags + ["--checkpoint-dir", work + "/whole", "--step-metrics", whole,
                                   "--save-every-steps", "4"])
    saves = [int(l.split()[-1]) for l in saving.stdout.splitlines()
             if l.startswith("saved " + work + "/whole/last.safetensors at step ")]
    check(saves == [4, 8, 12, 16], f"--save-every-steps 4 saved at steps {saves}:\n{saving.stdout}")
    parts = os.path.join(work, "parts.jsonl")
    # --resume auto twice, as a job scheduler's restarts would: no last.safetensors the first
    # time (a fresh start), then the one the stopped run left.
    stopped = run(args, 2, flags + ["--checkpoint-dir", work + "/parts", "--step-metrics", parts,
                                    "--max-steps", "13", "--resume", "auto"])
    check("reached --max-steps at step 13" in stopped.stdout, "no stop message:\n" + stopped.stdout)
    check("--resume auto: no " + work + "/parts/last.safetensors yet, starting from scratch"
          in stopped.stdout, "no fresh-start message:\n" + stopped.stdout)
    dumps = os.path.join(work, "dumps")
    resumed = run(args, 2, flags + ["--checkpoint-dir", work + "/parts", "--step-metrics", parts,
                                    "--resume", "auto", "--dump-batches", dumps])
    check("resumed from " + work + "/parts/last.safetensors (epoch 2, step 13)" in resumed.stdout,
          "--resume auto did not continue from parts/last.safetensors:\n" + resumed.stdout)
    # Everything but the timing: step, epoch, loss and rate, as written (17 significant digits).
    def figures(path):
        return [{k: v for k, v in line.items() if k != "comm_hidden_pct"} for line in read_jsonl(path)]
    a, b = figures(whole), figures(parts)
    check(len(a) == 18, f"the uninterrupted run took {len(a)} steps, expected 18")
    early, late = (sum(line["loss"] for line in part) / 4 for part in (a[:4], a[-4:]))
    check(late < 0.9 * early, f"lars: the loss did not fall: first 4 steps {early:.3f}, last 4 "
                              f"{late:.3f}")
    check(a == b, "resumed losses differ:\n" + "".join(f"{x} | {y}\n"
                                                       for x, y in zip(a, b) if x != y))
    first = read_jsonl(os.path.join(work, "whole", "metrics.jsonl"))
    second = read_jsonl(os.path.join(work, "parts", "metrics.jsonl"))
    check(first[-1]["val_loss"] == second[-1]["val_loss"], "final validation differs")
    check_dumped_batches(args, dumps, steps=range(14, 19), ranks=2, batch=16, steps_per_epoch=9)
    print(f"resume: lars loss {early:.3f} -> {late:.3f} (first/last 4 steps); 18 steps identical "
          "to the uninterrupted run (saving every 4 steps) after stopping at step 13 (--resume "
          "auto: fresh, then continued); steps 14-18 dumped")


def float_tensors(path):
    """{name: values} of a checkpoint's float tensors (weights and BatchNorm statistics)."""
    _, tensors = read_safetensors_plain(path)
    return {name: values for name, (dtype, _, values) in tensors.items() if dtype == "F32"}


def case_ema(args):
    """--ema 0.5: the average of the weights and BatchNorm statistics, evaluated each epoch,
    saved with last, one step of it checked against the formula, resumed exactly."""
    work = fresh(args, "ema")
    flags = ["--epochs", "2", "-b", "16", "--opt", "adamw", "--lr", "2e-3", "--wd", "0.05",
             "--clip-grad", "1", "--lr-schedule", "onecycle", "--ema", "0.5",
             "--mixup", "0.8", "--cutmix", "1.0", "--mixup-mode", "elem"]
    whole = run(args, 2, flags + ["--checkpoint-dir", work + "/whole"])
    epochs = read_jsonl(os.path.join(work, "whole", "metrics.jsonl"))
    check(epochs[-1]["train_loss"] < 0.9 * epochs[0]["train_loss"],
          f"adamw: the loss did not fall: {[l['train_loss'] for l in epochs]}")
    for line in epochs:
        missing = [k for k in ("ema_val_loss", "ema_val_top1_pct", "ema_val_top5_pct") if k not in line]
        check(not missing, f"metrics line lacks {missing}: {line}")
    printed = re.findall(r"\| ema val loss (\S+) top1 (\S+)% top5 (\S+)%", whole.stdout)
    check([f"{l['ema_val_top1_pct']:.2f}" for l in epochs] == [p[1] for p in printed],
          f"printed EMA figures {printed}, metrics.jsonl {epochs}")
    check(epochs[-1]["ema_val_loss"] != epochs[-1]["val_loss"], "the average evaluated as the weights")
    # Stopped at step 13 and resumed: the average resumes from ema.safetensors, exactly.
    parts = work + "/parts"
    run(args, 2, flags + ["--checkpoint-dir", parts, "--max-steps", "13"])
    at13 = work + "/at13"
    shutil.copytree(parts, at13)
    resumed = run(args, 2, flags + ["--checkpoint-dir", parts, "--resume", parts + "/last.safetensors"])
    check("resumed the weight average from " + parts + "/ema.safetensors" in resumed.stdout,
          "no resumed-average line:\n" + resumed.stdout)
    a = float_tensors(os.path.join(work, "whole", "ema.safetensors"))
    b = float_tensors(os.path.join(parts, "ema.safetensors"))
    check(a.keys() == b.keys() and all(a[k] == b[k] for k in a),
          "the resumed average differs from the uninterrupted one")
    # One step from step 13: ema14 = 0.5 * ema13 + 0.5 * w14, the weights and the statistics.
    one = work + "/one"
    run(args, 2, flags + ["--checkpoint-dir", one, "--resume", at13 + "/last.safetensors",
                          "--max-steps", "14"])
    before, weights, after = (float_tensors(os.path.join(d, f)) for d, f in
                              ((at13, "ema.safetensors"), (one, "last.safetensors"),
                               (one, "ema.safetensors")))
    worst = 0.0
    for name, values in after.items():
        scale = max(1e-3, max(abs(v) for v in weights[name]))
        for e, w, x in zip(before[name], weights[name], values):
            worst = max(worst, abs(x - (0.5 * e + 0.5 * w)) / scale)
    check(worst < 1e-6, f"ema after one step parts from 0.5 * ema + 0.5 * w by {worst:.2e}")
    check(any(before[k] != after[k] for k in after), "the average did not move in a step")
    check(any("running_var" in k for k in after), "the average has no BatchNorm statistics")
    # Not resumable from another step: named, and the average starts again.
    shutil.copy(os.path.join(parts, "ema.safetensors"), os.path.join(at13, "ema.safetensors"))
    again = run(args, 2, flags + ["--checkpoint-dir", work + "/again", "--resume",
                                  at13 + "/last.safetensors", "--max-steps", "14"])
    check(at13 + "/ema.safetensors is at step 18, the checkpoint at step 13" in again.stdout,
          "an average of another step was not named:\n" + again.stdout)
    print(f"ema (adamw, clip-grad 1): train loss {[l['train_loss'] for l in epochs]}, "
          f"val top-1 {[l['val_top1_pct'] for l in epochs]}%, average "
          f"{[l['ema_val_top1_pct'] for l in epochs]}%; resumed at step 13 == uninterrupted; one "
          f"step == 0.5 ema + 0.5 w within {worst:.1e}")


def case_resize(args):
    """--progressive-resize 32,1,3 to --image-size 48: each epoch's batches at its crop (32, 40,
    48 px, as printed); --val-image-size 40 validates at 40 px, as --evaluate of the checkpoint
    at 40 does, and not as at 32."""
    work = fresh(args, "resize")
    dumps = os.path.join(work, "dumps")
    flags = ["--epochs", "3", "-b", "16", "--lr", "0.05", "--image-size", "48",
             "--progressive-resize", "32,1,3", "--val-image-size", "40"]
    result = run(args, 2, flags + ["--checkpoint-dir", work, "--dump-batches", dumps])
    sizes = [int(m) for m in re.findall(r"^epoch \d+: training crop (\d+) px$", result.stdout, re.M)]
    check(sizes == [32, 40, 48], f"training crops {sizes}, expected [32, 40, 48]:\n{result.stdout}")
    steps_per_epoch = 9
    for epoch, size in enumerate(sizes):
        step = epoch * steps_per_epoch + 1
        _, tensors = read_safetensors_plain(os.path.join(dumps, f"step-{step:07d}-rank-0.safetensors"))
        check(tensors["images"][1] == [16, 3, size, size],
              f"epoch {epoch + 1}'s batch is {tensors['images'][1]}, expected {size} px")
    last = read_jsonl(os.path.join(work, "metrics.jsonl"))[-1]
    evaluated = {}
    for size in (40, 32):
        metrics = os.path.join(work, f"eval-{size}.jsonl")
        run(args, 1, ["--evaluate", "--resume", os.path.join(work, "last.safetensors"), "--metrics",
                      metrics, "--val-image-size", str(size)])
        evaluated[size] = read_jsonl(metrics)[0]["val_loss"]
    check(abs(evaluated[40] - last["val_loss"]) <= 1e-4 * max(1, last["val_loss"]),
          f"validation at 40 px: training logged {last['val_loss']}, --evaluate {evaluated[40]}")
    check(evaluated[32] != evaluated[40], "--val-image-size 32 and 40 evaluate alike")
    print(f"resize: crops {sizes} px by epoch; val loss at 40 px {evaluated[40]:.4f} (training "
          f"{last['val_loss']:.4f}), at 32 px {evaluated[32]:.4f}")


def case_accum(args):
    """--accum-steps 2: an optimizer step of two batches, all-reduced once; resumable exactly,
    with TrivialAugmentWide and RandomErasing drawing from each sample's stream."""
    work = fresh(args, "accum")
    flags = ["--epochs", "2", "--lr", "0.05", "--lr-schedule", "onecycle", "--nesterov",
             "--auto-augment", "ta_wide", "--random-erase", "0.5"]
    accum = flags + ["-b", "8", "--accum-steps", "2"]
    # 150 images per rank: 18 batches of 8, 9 optimizer steps an epoch.
    whole_steps = os.path.join(work, "whole.jsonl")
    whole = run(args, 2, accum + ["--checkpoint-dir", work + "/whole", "--step-metrics",
                                  whole_steps])
    check("batch 8 per rank x 2 accumulated = 32 global" in whole.stdout,
          "the banner does not give the accumulated global batch:\n" + whole.stdout)
    a = read_jsonl(whole_steps)
    check([line["step"] for line in a] == list(range(1, 19)), f"steps {[l['step'] for l in a]}")
    # Stopped inside epoch 1 and resumed: the same steps, bit for bit.
    parts_steps = os.path.join(work, "parts.jsonl")
    run(args, 2, accum + ["--checkpoint-dir", work + "/parts", "--step-metrics", parts_steps,
                          "--max-steps", "5"])
    run(args, 2, accum + ["--checkpoint-dir", work + "/parts", "--step-metrics", parts_steps,
                          "--resume", "auto"])
    def figures(lines):
        return [{k: v for k, v in line.items() if k != "comm_hidden_pct"} for line in lines]
    b = read_jsonl(parts_steps)
    check(figures(a) == figures(b), "resumed accumulated steps differ:\n" +
          "".join(f"{x} | {y}\n" for x, y in zip(figures(a), figures(b)) if x != y))
    # Against the 2x larger batch: the same steps and schedule; the losses differ only as
    # BatchNorm normalizes 8 images instead of 16 (a few percent at step 1).
    large_steps = os.path.join(work, "large.jsonl")
    run(args, 2, flags + ["-b", "16", "--checkpoint-dir", work + "/large", "--step-metrics",
                          large_steps])
    c = read_jsonl(large_steps)
    check([(l["step"], l["lr"]) for l in c] == [(l["step"], l["lr"]) for l in a],
          "the 2x batch has other steps or rates")
    ratio = a[0]["loss"] / c[0]["loss"]
    check(0.9 < ratio < 1.1, f"step 1: loss {a[0]['loss']} accumulated, {c[0]['loss']} batch 16")
    # After one step SGD's momentum buffer holds that step's gradient, from the same initial
    # weights. fc.bias's is the mean over the 32 images of softmax - one-hot, which BatchNorm
    # moves only through the logits (a fresh network's lower layers' gradients point elsewhere
    # with each batch split: cosine 0.07 at conv1); an accumulation that summed instead of
    # averaging would make it 2x.
    bias = {}
    for name, extra in (("accum1", accum), ("large1", flags + ["-b", "16"])):
        run(args, 2, extra + ["--checkpoint-dir", os.path.join(work, name), "--max-steps", "1"])
        _, tensors = read_safetensors_plain(os.path.join(work, name, "last.safetensors"))
        bias[name] = list(tensors["optimizer.momentum_buffer.fc.bias"][2])
    b_a, b_l = bias["accum1"], bias["large1"]
    difference = sum((x - y) ** 2 for x, y in zip(b_a, b_l)) ** 0.5
    size = sum(y * y for y in b_l) ** 0.5
    check(size > 0 and difference < 0.2 * size,
          f"step 1's fc.bias gradient: accumulated vs batch 16 differ by {difference / size:.2f} "
          f"of its size ({b_a} vs {b_l})")
    print(f"accum: 18 steps of 2 x 8 per rank, resumed at step 5 == uninterrupted; step 1 "
          f"loss {a[0]['loss']:.4f} vs batch 16's {c[0]['loss']:.4f}, its fc.bias gradient "
          f"{difference / size:.3f} of its size apart")


def split_classes(source, destination, classes):
    """An ImageFolder of `source`'s classes with these indices (sorted names), train and val."""
    for split in ("train", "val"):
        names = sorted(os.listdir(os.path.join(source, split)))
        for index in classes:
            shutil.copytree(os.path.join(source, split, names[index]),
                            os.path.join(destination, split, names[index]))


def case_finetune(args):
    """--pretrained: a resnet18 trained on 7 Fashion-MNIST classes is fine-tuned onto the other 3
    (Sneaker, Bag, Ankle boot) with a new fc; after one epoch it must beat the same epoch from
    scratch by >= 5 points of val top-1, mean of 3 seeds."""
    work = fresh(args, "finetune")
    seven, three = os.path.join(work, "seven"), os.path.join(work, "three")
    split_classes(args.data, seven, range(7))
    split_classes(args.data, three, range(7, 10))
    seven_args = argparse.Namespace(**vars(args))
    seven_args.data = seven
    run(seven_args, 2, ["--epochs", "4", "-b", "16", "--lr", "0.02", "--lr-schedule", "onecycle",
                        "--wd", "5e-4", "--nesterov", "--checkpoint-dir", work + "/seven_ck"])
    pretrained = os.path.join(work, "seven_ck", "last.safetensors")
    three_args = argparse.Namespace(**vars(args))
    three_args.data = three
    tops = {"pretrained": [], "scratch": []}
    for seed in (1, 2, 3):
        for kind in tops:
            extra = ["--pretrained", pretrained] if kind == "pretrained" else []
            out = os.path.join(work, f"{kind}{seed}")
            result = run(three_args, 2, ["--epochs", "1", "-b", "4", "--lr", "0.01", "--seed",
                                         str(seed), "--checkpoint-dir", out] + extra)
            if kind == "pretrained":
                check(f"started from the weights of {pretrained}; its 7-class fc replaced by a "
                      "new one for these 3 classes" in result.stdout,
                      "no banner naming the replaced head:\n" + result.stdout)
            tops[kind].append(read_jsonl(os.path.join(out, "metrics.jsonl"))[-1]["val_top1_pct"])
    mean = {kind: sum(values) / len(values) for kind, values in tops.items()}
    check(mean["pretrained"] >= mean["scratch"] + 5,
          f"fine-tuned val top-1 {tops['pretrained']} (mean {mean['pretrained']:.1f}%) does not "
          f"beat from scratch {tops['scratch']} (mean {mean['scratch']:.1f}%) by 5 points")
    print(f"finetune: one epoch on 3 new classes, val top-1 fine-tuned {tops['pretrained']} "
          f"(mean {mean['pretrained']:.1f}%) vs from scratch {tops['scratch']} "
          f"(mean {mean['scratch']:.1f}%)")


def case_dummy(args):
    """--dummy: random images and no folder; the run, its checkpoint and --evaluate work."""
    work = fresh(args, "dummy")
    dummy = ["--dummy", "--dummy-classes", "7", "--dummy-images", "96,40"]
    command = (MPI + ["-np", "2", args.exe] + COMMON + dummy +
               ["--epochs", "2", "-b", "8", "--lr", "0.01", "--checkpoint-dir", work])
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    seconds = time.monotonic() - started
    check(result.returncode == 0, f"--dummy exited {result.returncode}:\n{result.stderr}")
    check("7 classes" in result.stdout, f"the banner does not say 7 classes:\n{result.stdout}")
    epochs = read_jsonl(os.path.join(work, "metrics.jsonl"))
    check(len(epochs) == 2, f"{len(epochs)} metrics lines, expected 2")
    check(all(e["skipped_files"] == 0 for e in epochs), "files skipped from random images")
    evaluate = subprocess.run(MPI + ["-np", "2", args.exe] + COMMON + dummy +
                              ["--evaluate", "--resume", os.path.join(work, "last.safetensors"),
                               "--checkpoint-dir", work], capture_output=True, text=True,
                              timeout=120)
    check(evaluate.returncode == 0, f"--evaluate --dummy exited {evaluate.returncode}:\n"
                                    f"{evaluate.stderr}")
    check("(40 images)" in evaluate.stdout, f"evaluate did not count 40 images:\n{evaluate.stdout}")
    print(f"dummy: 2 epochs of 96 random images in 7 classes ({seconds:.0f} s), then --evaluate "
          "of 40")


def image_folder_labels(root):
    """The class index of every file, in the ImageFolder's order (torchvision's)."""
    classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
    labels = []
    for index, name in enumerate(classes):
        for folder, _, files in sorted(os.walk(os.path.join(root, name), followlinks=True)):
            labels += [index for f in sorted(files) if f.lower().endswith((".png", ".jpg"))]
    return labels


def check_dumped_batches(args, folder, steps, ranks, batch, steps_per_epoch):
    names = sorted(os.listdir(folder))
    expected = [f"step-{s:07d}-rank-{r}.safetensors" for s in steps for r in range(ranks)]
    check(names == expected, f"--dump-batches wrote {names}, expected {expected}")
    labels_of = image_folder_labels(os.path.join(args.data, "train"))
    seen = set()
    for step in steps:
        for rank in range(ranks):
            path = os.path.join(folder, f"step-{step:07d}-rank-{rank}.safetensors")
            metadata, tensors = read_safetensors_plain(path)
            place = {"step": str(step), "rank": str(rank), "world_size": str(ranks),
                     "epoch": str((step - 1) // steps_per_epoch),
                     "batch_index": str((step - 1) % steps_per_epoch)}
            check(metadata == place, f"{path}: metadata {metadata}, expected {place}")
            dtype, shape, pixels = tensors["images"]
            check((dtype, shape) == ("F32", [batch, 3, 32, 32]), f"{path}: images {dtype} {shape}")
            _, _, labels = tensors["labels"]
            _, _, indices = tensors["indices"]
            check(list(labels) == [labels_of[i] for i in indices],
                  f"{path}: labels {labels} are not the classes of files {indices}")
            check(not seen & set(indices), f"{path}: a sample seen before in the epoch")
            seen |= set(indices)
            # Fashion-MNIST is grey: in NCHW each image's three channel planes are equal
            # (normalized alike), which they are not if the NHWC batch was not transposed.
            plane = 32 * 32
            for image in range(batch):
                red, green, blue = (pixels[(image * 3 + c) * plane:(image * 3 + c + 1) * plane]
                                    for c in range(3))
                check(red == green == blue, f"{path}: image {image}'s channel planes differ")
                check(max(red) > min(red), f"{path}: image {image} is flat")


def case_probe(args):
    work = fresh(args, "probe")
    check(args.probe_exe, "probe needs --probe-exe")
    flags = ["--epochs", "1", "-b", "16", "--lr-schedule", "constant"]
    run(args, 1, flags + ["--lr", "0.01", "--checkpoint-dir", work + "/a", "--max-steps", "3"])
    before = os.path.join(work, "at_step_3.safetensors")
    shutil.copy(os.path.join(work, "a", "last.safetensors"), before)
    steps = os.path.join(work, "steps.jsonl")
    # One step of p -= 1 * grad: the weights' change is the gradient.
    run(args, 1, flags + ["--lr", "1", "--momentum", "0", "--wd", "0", "--checkpoint-dir",
                          work + "/b", "--max-steps", "4", "--resume", before, "--dump-batches",
                          work + "/dumps", "--step-metrics", steps])
    probe = os.path.join(work, "probe.safetensors")
    result = subprocess.run([args.probe_exe, "--checkpoint", before, "--batch-file",
                             os.path.join(work, "dumps", "step-0000004-rank-0.safetensors"),
                             "--out", probe], capture_output=True, text=True, timeout=120)
    check(result.returncode == 0, f"probe_step exited {result.returncode}:\n{result.stderr}")
    _, probed = read_safetensors_plain(probe)
    logged = read_jsonl(steps)[-1]
    check(logged["step"] == 4, f"the resumed run logged step {logged['step']}, expected 4")
    loss = probed["loss"][2][0]
    check(abs(loss - logged["loss"]) <= 1e-6 * abs(logged["loss"]),
          f"probe_step's loss {loss}, training logged {logged['loss']} for that step")
    _, old = read_safetensors_plain(before)
    _, new = read_safetensors_plain(os.path.join(work, "b", "last.safetensors"))
    params = [name for name, (dtype, _, _) in old.items() if dtype == "F32"
              and not name.startswith("optimizer.")
              and not name.endswith(("running_mean", "running_var"))]
    check(len(params) == 62, f"{len(params)} parameters in the checkpoint, expected resnet18's 62")
    for name in params:
        _, shape, grad = probed["grad." + name]
        check(shape == old[name][1], f"grad.{name} has shape {shape}, the parameter {old[name][1]}")
        before_values, after_values = old[name][2], new[name][2]
        # p_new = fl(p - g): within half an ulp of the larger of p and p_new, per element.
        worst = max(abs(g - (a - b)) - 2.0 ** -23 * max(abs(a), abs(b))
                    for g, a, b in zip(grad, before_values, after_values))
        check(worst <= 0, f"grad.{name} differs from the step's change of {name} by "
                          f"{worst:.3g} beyond rounding")
        check(any(g != 0 for g in grad), f"grad.{name} is all zeros")
    for layer in ("conv1", "layer1.0", "layer4.1", "fc"):
        check(layer + ".output" in probed and layer + ".output_grad" in probed,
              f"probe_step wrote no {layer}.output / .output_grad")
    check(probed["conv1.output"][1] == [16, 64, 16, 16], "conv1.output is not NCHW [16, 64, 16, 16]")
    print(f"probe: loss {loss:.7g} as logged, {len(params)} parameter gradients equal to the "
          f"lr-1 step's change")


def case_bad_flags(args):
    work = fresh(args, "bad_flags")
    text_file = os.path.join(work, "notes.safetensors")
    with open(text_file, "w") as f:
        f.write("not a checkpoint\n")
    empty = os.path.join(work, "empty")
    os.makedirs(os.path.join(empty, "train", "a"))
    os.makedirs(os.path.join(empty, "val", "a"))
    no_val = os.path.join(work, "no_val")
    os.makedirs(os.path.join(no_val, "train", "a"))
    # A resnet34 checkpoint of this dataset, for the arch mismatch.
    r34 = os.path.join(work, "r34")
    run(args, 1, ["--arch", "resnet34", "--epochs", "1", "--max-steps", "1", "-b", "4",
                  "--checkpoint-dir", r34])
    # A checkpoint of a 2-class dataset, for the class count mismatch.
    two = os.path.join(work, "two_classes")
    for split in ("train", "val"):
        for klass in sorted(os.listdir(os.path.join(args.data, split)))[:2]:
            shutil.copytree(os.path.join(args.data, split, klass), os.path.join(two, split, klass))
    two_args = argparse.Namespace(**vars(args))
    two_args.data = two
    run(two_args, 1, ["--epochs", "1", "--max-steps", "1", "-b", "4", "--checkpoint-dir",
                      os.path.join(work, "ck2")])
    cases = [
        (["--bogus"], 2, "unknown flag --bogus"),
        (["--arch", "resnet19"], 2, "unknown architecture 'resnet19'"),
        (["--batch-size", "0"], 2, "--batch-size must be >= 1"),
        (["--lr-schedule", "linear"], 2, "--lr-schedule takes step, cosine, onecycle"),
        (["--normalize", "1,2/3"], 2, "--normalize takes 3 comma-separated numbers"),
        (["--evaluate"], 2, "--evaluate needs --resume FILE"),
        (["--dummy"], 2, "--dummy trains on random images: drop --data or --dummy"),
        (["--accum-steps", "0"], 2, "--accum-steps must be in 1..64"),
        (["--ema", "1"], 2, "--ema must be in [0, 1)"),
        (["--mixup", "-0.2"], 2, "--mixup ALPHA must be >= 0"),
        (["--cutmix", "1", "--batch-size", "15"], 2, "--batch-size must be even"),
        (["--cutmix-minmax", "0.8,0.2"], 2, "--cutmix-minmax MIN,MAX needs 0 < MIN < MAX <= 1"),
        (["--mixup-mode", "batches"], 2, "--mixup-mode takes batch, pair or elem"),
        (["--progressive-resize", "16,1,3"], 2, "needs 32 <= MIN <= --image-size"),
        (["--progressive-resize", "32,3,3"], 2, "needs 1 <= FIRST < LAST"),
        (["--dummy-images", "10.5,4"], 2, "--dummy-images takes two whole numbers"),
        (["--auto-augment", "augmix"], 2, "--auto-augment takes none, ra (RandAugment) or ta_wide"),
        (["--ra-magnitude", "31"], 2, "--ra-magnitude must be in 0..30"),
        (["--random-erase", "-0.1"], 2, "--random-erase must be a probability in [0, 1]"),
        (["--random-erase-value", "pixel"], 2, "--random-erase-value takes zero or random"),
        (["--opt", "adam"], 2, "--opt takes sgd, adamw or lars, got 'adam'"),
        (["--opt", "adamw", "--nesterov"], 2, "--nesterov applies to --opt sgd only"),
        (["--opt", "adamw", "--momentum", "0.8"], 2, "--momentum applies to --opt sgd and lars"),
        (["--clip-grad", "0"], 2, "--clip-grad must be a finite number > 0"),
        (["--lars-eta", "0.01"], 2, "--lars-eta applies to --opt lars only"),
        (["--evaluate", "--resume", "auto"], 1, "--evaluate --resume auto: there is no"),
        (["--device", "cuda"], 1, "cuda"),
        (["--resume", os.path.join(work, "missing.safetensors")], 1, "missing.safetensors: no such file"),
        (["--resume", text_file], 1, "notes.safetensors"),
        (["--resume", os.path.join(r34, "last.safetensors")], 1, "holds resnet34, but --arch is resnet18"),
        (["--resume", os.path.join(work, "ck2", "last.safetensors")], 1,
         "has 2 classes, but the dataset"),
        (["--data", empty], 1, empty + "/train"),
        (["--data", no_val], 1, "no val/ folder"),
        (["--data", os.path.join(work, "nowhere")], 1, "not a folder"),
        (["--data", work + "/s-{0..1}.tar"], 1, "give the validation split with --val-data"),
        (["--data", work + "/s-{0..1}.tar", "--val-data", work], 1,
         f"--data {work}/s-{{0..1}}.tar: cannot open the shard {work}/s-0.tar"),
        (["--shuffle-buffer", "-1"], 2, "--shuffle-buffer must be >= 0"),
        (["--checkpoint-dir", text_file], 1, "--checkpoint-dir " + text_file),
        (["--dump-batches", text_file], 1, "--dump-batches " + text_file),
        (["--tensorboard", text_file], 1, "--tensorboard " + text_file),
        (["--pretrained", os.path.join(work, "missing.safetensors")], 1,
         "--pretrained " + os.path.join(work, "missing.safetensors") + ": no such file"),
        (["--pretrained", os.path.join(r34, "last.safetensors")], 1,
         "holds resnet34, but --arch is resnet18"),
        (["--pretrained", text_file, "--resume", text_file], 2,
         "--pretrained starts a new run, --resume FILE continues one"),
        (["--evaluate", "--resume", text_file, "--dump-batches", work], 2,
         "--dump-batches does not apply to --evaluate"),
    ]
    def attempt(case):
        extra = case[0]
        return run(args, 2, extra + ["--checkpoint-dir", os.path.join(work, "ck")]
                   if "--checkpoint-dir" not in extra else extra, timeout=60, expect=None)

    # Most of an mpirun here is Open MPI's start-up and teardown, waiting rather than
    # computing: six at a time take a sixth of the time of one after another.
    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(attempt, cases))
    for (extra, status, words), result in zip(cases, results):
        lines = [l for l in result.stderr.splitlines() if "resnet_train:" in l]
        check(result.returncode != 0, f"{extra}: exited 0")
        check(any(words in l for l in lines), f"{extra}: no line naming '{words}':\n{result.stderr}")
        check(len(lines) == 1, f"{extra}: {len(lines)} error lines, expected one from rank 0:\n"
                               f"{result.stderr}")
        if status == 2:
            check("usage: resnet_train" in result.stderr, f"{extra}: no usage on stderr")
        check(result.seconds < 30, f"{extra}: took {result.seconds:.0f} s")
    print(f"bad_flags: {len(cases)} bad command lines, each one line from rank 0 and non-zero")


def png(width, height, color_type, bit_depth, rows, palette=None):
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    raw = b"".join(b"\x00" + row for row in rows)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, bit_depth,
                                                             color_type, 0, 0, 0))
    if palette:
        data += chunk(b"PLTE", palette)
    return data + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def odd_good_images():
    w = h = 28
    gray = [bytes((x * 9 + y * 3) % 256 for x in range(w)) for y in range(h)]
    return {
        "gray_alpha.png": png(w, h, 4, 8, [bytes(v for p in r for v in (p, 255)) for r in gray]),
        "rgba.png": png(w, h, 6, 8, [bytes(v for p in r for v in (p, p, p, 200)) for r in gray]),
        "gray16.png": png(w, h, 0, 16, [bytes(v for p in r for v in (p, p)) for r in gray]),
        "palette.png": png(w, h, 3, 8, [bytes(p % 16 for p in r) for r in gray],
                           palette=bytes(v for i in range(16) for v in (i * 16, i * 16, i * 16))),
    }


def case_bad_files(args):
    work = fresh(args, "bad_files")
    data = os.path.join(work, "data")
    shutil.copytree(args.data, data)
    klass = sorted(os.listdir(os.path.join(data, "train")))[0]
    folder = os.path.join(data, "train", klass)
    good_png = open(os.path.join(folder, sorted(os.listdir(folder))[0]), "rb").read()
    bad = {
        "zero.png": b"",
        "text.jpg": b"this is not a JPEG\n",
        "truncated.png": good_png[: len(good_png) // 2],
        "huge.png": png(100000, 100000, 0, 8, [])[:33] + b"\0\0\0\0IEND\xaeB`\x82",
        ".hidden.png": b"garbage",
    }
    for name, body in {**bad, **odd_good_images()}.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(body)
    with open(os.path.join(folder, "notes.txt"), "w") as f:
        f.write("not an image extension: ImageFolder never lists it\n")
    for split in ("train", "val"):
        os.makedirs(os.path.join(data, split, "zz_empty"))
    args_copy = argparse.Namespace(**vars(args))
    args_copy.data = data
    result = run(args_copy, 2, ["--epochs", "2", "-b", "16", "--checkpoint-dir", work + "/ck"])
    epochs = read_jsonl(os.path.join(work, "ck", "metrics.jsonl"))
    check(len(epochs) == 2, "training did not finish both epochs")
    for name in bad:
        warned = [l for l in result.stderr.splitlines() if name in l]
        check(warned, f"no warning names {name}:\n{result.stderr}")
        check(len(warned) <= 2, f"{name} warned {len(warned)} times (once per rank at most)")
    for name in odd_good_images():
        check(name not in result.stderr, f"the good image {name} was skipped:\n{result.stderr}")
    check("zz_empty" in result.stderr, "no warning names the empty class folder")
    check(epochs[0]["skipped_files"] >= len(bad), f"skipped_files {epochs[0]['skipped_files']}, "
                                                  f"expected at least {len(bad)}")
    check("skipped files" in result.stdout, "the epoch summary does not count skipped files")
    print(f"bad_files: {len(bad)} bad files skipped and named, {len(odd_good_images())} odd "
          f"images trained, skipped_files {[e['skipped_files'] for e in epochs]}")


def start(args, ranks, extra):
    command = MPI + ["-np", str(ranks), args.exe, "--data", args.data] + COMMON + extra
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def rank_pids(mpirun_pid):
    """The resnet_train processes mpirun started, by their OMPI_COMM_WORLD_RANK."""
    ranks = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"resnet_train" not in f.read().split(b"\0")[0]:
                    continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item)
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            continue
        if ppid == mpirun_pid and b"OMPI_COMM_WORLD_RANK" in env:
            ranks[int(env[b"OMPI_COMM_WORLD_RANK"])] = int(pid)
    return ranks


def wait_for_steps(path, count, process, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        check(process.poll() is None, "the run ended before it was interrupted")
        if os.path.exists(path) and len(open(path).readlines()) >= count:
            return
        time.sleep(0.2)
    raise Failure(f"no {count} steps within {timeout} s")


def interrupt(args, name, sig, extra):
    work = fresh(args, name)
    steps = os.path.join(work, "steps.jsonl")
    process = start(args, 2, ["--epochs", "50", "-b", "16", "--checkpoint-dir", work,
                              "--step-metrics", steps] + extra)
    try:
        wait_for_steps(steps, 12, process)  # past epoch 1's checkpoint (9 steps)
        pids = rank_pids(process.pid)
        check(sorted(pids) == [0, 1], f"found ranks {pids}")
        os.kill(pids[1], sig)
        sent = time.monotonic()
        out, err = process.communicate(timeout=60)
        seconds = time.monotonic() - sent
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    left = rank_pids(process.pid)
    check(not left, f"processes left behind: {left}")
    return work, process.returncode, out, err, seconds


def case_sigterm(args):
    work, status, out, err, seconds = interrupt(args, "sigterm", signal.SIGTERM, [])
    check(status != 0, "mpirun exited 0 after SIGTERM")
    check("stopped by SIGTERM" in out, f"no stop message on rank 0:\nstdout {out}\nstderr {err}")
    check(seconds < 20, f"took {seconds:.1f} s to stop")
    check(not [f for f in os.listdir(work) if ".tmp" in f], f"temp files left: {os.listdir(work)}")
    # The checkpoint is whole: it evaluates.
    run(args, 1, ["--evaluate", "--resume", os.path.join(work, "last.safetensors"), "--metrics",
                  os.path.join(work, "eval.jsonl")])
    print(f"sigterm: every rank stopped {seconds:.1f} s after SIGTERM to rank 1, status {status}, "
          "last.safetensors evaluates")


def case_sigkill(args):
    timeout = 5
    work, status, out, err, seconds = interrupt(args, "sigkill", signal.SIGKILL,
                                                ["--comm-timeout", str(timeout)])
    check(status != 0, "mpirun exited 0 after a rank was killed")
    check(seconds < timeout + 10, f"took {seconds:.1f} s, more than the timeout + 10 s")
    check("rank 1" in err, f"no message names rank 1:\n{err}")
    check(os.path.exists(os.path.join(work, "last.safetensors")), "epoch 1's checkpoint is gone")
    print(f"sigkill: the job ended {seconds:.1f} s after rank 1 was killed, naming it")




def make_shards(args, out):
    """DIR/train and DIR/val as shards of 64 samples; returns the two patterns."""
    tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                        "make_webdataset_shards.py")
    patterns = []
    for split in ("train", "val"):
        made = subprocess.run([sys.executable, tool, "--folder", os.path.join(args.data, split),
                               "--out", out, "--prefix", split, "--samples-per-shard", "64"],
                              capture_output=True, text=True, check=True)
        patterns.append(made.stdout.split(": ")[-1].strip())
    return patterns


def dumped_samples(folder, steps, ranks):
    """{index: (label, image bytes)} of the dumped batches, and how many samples they hold."""
    samples, count = {}, 0
    for step in steps:
        for rank in range(ranks):
            _, tensors = read_safetensors_plain(
                os.path.join(folder, f"step-{step:07d}-rank-{rank}.safetensors"))
            _, shape, pixels = tensors["images"]
            size = shape[1] * shape[2] * shape[3]
            for i, (index, label) in enumerate(zip(tensors["indices"][2], tensors["labels"][2])):
                samples[index] = (label, pixels[i * size:(i + 1) * size])
                count += 1
    return samples, count


def case_shards(args):
    work = fresh(args, "shards")
    train, val = make_shards(args, os.path.join(work, "shards"))
    check(train.endswith("/train-{000000..000004}.tar"), f"the tool printed {train}")
    # 300 images, 2 ranks x 15 = 10 steps an epoch with none left over: the epoch is every
    # sample once, in either form.
    flags = ["--epochs", "1", "-b", "15", "--lr", "0.05", "--val-data", val,
             "--shuffle-buffer", "40"]
    whole = os.path.join(work, "whole.jsonl")
    run(args, 2, flags + ["--checkpoint-dir", work + "/whole", "--step-metrics", whole,
                          "--dump-batches", work + "/dumps"], data=train)
    folder_dumps = os.path.join(work, "folder_dumps")
    run(args, 2, ["--epochs", "1", "-b", "15", "--lr", "0.05",
                  "--checkpoint-dir", work + "/folder", "--dump-batches", folder_dumps])
    from_shards, count = dumped_samples(work + "/dumps", range(1, 11), 2)
    from_folder, _ = dumped_samples(folder_dumps, range(1, 11), 2)
    check(count == 300 and len(from_shards) == 300,
          f"epoch 1 from shards: {count} samples, {len(from_shards)} distinct, expected 300")
    check(from_shards == from_folder, "epoch 1 from shards and from the folder hold other "
          "samples (index, label or pixels)")
    order = lambda folder: [list(read_safetensors_plain(os.path.join(folder, f"step-{s:07d}-rank-0"
                            ".safetensors"))[1]["indices"][2]) for s in range(1, 11)]
    check(order(work + "/dumps") != order(folder_dumps), "shards took the folder's order")

    parts = os.path.join(work, "parts.jsonl")
    run(args, 2, flags + ["--checkpoint-dir", work + "/parts", "--step-metrics", parts,
                          "--max-steps", "7"], data=train)
    resumed = run(args, 2, flags + ["--checkpoint-dir", work + "/parts", "--step-metrics", parts,
                                    "--resume", "auto"], data=train)
    check("(epoch 1, step 7)" in resumed.stdout, "no resume at step 7:\n" + resumed.stdout)
    figures = lambda path: [{k: v for k, v in line.items() if k != "comm_hidden_pct"}
                            for line in read_jsonl(path)]
    a, b = figures(whole), figures(parts)
    check(len(a) == 10 and a == b, "resumed from shards, the steps differ:\n" +
          "".join(f"{x} | {y}\n" for x, y in zip(a, b) if x != y))

    # Validation's order is defined (one rank: the samples in order): the same figures.
    checkpoint = os.path.join(work, "whole", "last.safetensors")
    evaluated = []
    for data, extra in ((None, []), (train, ["--val-data", val])):
        metrics = os.path.join(work, f"eval{len(evaluated)}.jsonl")
        run(args, 1, ["--evaluate", "--resume", checkpoint, "--metrics", metrics] + extra,
            data=data)
        line = read_jsonl(metrics)[0]
        evaluated.append((line["val_loss"], line["val_top1_pct"], line["val_top5_pct"]))
    check(evaluated[0] == evaluated[1], f"--evaluate: folder {evaluated[0]}, shards {evaluated[1]}")

    # A shard cut short and a corrupt member: named, skipped, the run goes on.
    shard = os.path.join(work, "shards", "train-000004.tar")
    with open(shard, "r+b") as f:
        f.truncate(os.path.getsize(shard) // 2)
    first = os.path.join(work, "shards", "train-000000.tar")
    with open(first, "r+b") as f:
        f.seek(512 + 16)  # inside member 000000000.png, past its signature
        f.write(b"\0" * 64)
        f.seek(512)
        f.write(b"not a png")
    bad = run(args, 1, flags + ["--max-steps", "3", "--checkpoint-dir", work + "/bad"], data=train)
    check(f"shard {shard} is damaged: truncated: member 000000" in bad.stderr,
          "the truncated shard was not named:\n" + bad.stderr)
    check(f"skipping {work}/shards/train-000000.tar/000000000.png" in bad.stderr,
          "the corrupt member was not named:\n" + bad.stderr)
    print(f"shards: epoch 1 == the folder's 300 samples (as a multiset, another order); resumed "
          f"at step 7 == uninterrupted over 10 steps; --evaluate {evaluated[1]} == folder; a "
          "truncated shard and a corrupt member named")


CASES = {name[len("case_"):]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("case", choices=sorted(CASES))
    parser.add_argument("--exe", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--probe-exe", help="probe_step (the probe case)")
    args = parser.parse_args()
    if not os.path.isdir(os.path.join(args.data, "train")):
        print(f"SKIP: no dataset at {args.data} (needs Debian's dataset-fashion-mnist)")
        sys.exit(77)
    os.makedirs(args.work, exist_ok=True)
    try:
        CASES[args.case](args)
    except (Failure, subprocess.TimeoutExpired) as error:
        print(f"FAIL {args.case}: {error}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
