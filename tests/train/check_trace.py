#!/usr/bin/env python3
"""resnet_train --trace FILE --trace-steps A-B (ctest train_trace_*): the timeline's file.

    check_trace.py CASE --exe build/resnet_train --work DIR

Cases (each trains a few steps of resnet18 on 32 px --dummy images):
  cpu     one rank: the file parses as Chrome trace JSON (every event has name, ph, ts, dur, pid
          and tid; metadata events name the lanes), each traced step has its step, data wait,
          forward, loss, backward and optimizer spans, and every top-level layer's forward and
          backward span nested inside them, in order; no other step is in the file.
  np2     two ranks under mpirun: each writes FILE with .rankR before the extension, pid = its
          rank, and each step's gradient buckets' all-reduce spans (their bytes adding up to
          the step's) lie inside the step, after its backward began and before its optimizer.
  bad     a range past the run's end, an unwritable path (one rank and two) and a malformed
          range: one line on stderr naming the flag, no training, no checkpoint.
  sim     --device cuda on the sim device (ENGINE_CUDA=SIM builds): the CUDA event path writes
          the same spans, two ranks through the NCCL shim; exit 77 (a skip) where
          resnet_train has no CUDA device.
Only the standard library.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

SKIP = 77
MPI = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]
COMMON = ["--dummy", "--dummy-classes", "4", "--dummy-images", "64,8", "--arch", "resnet18",
          "--image-size", "32", "--workers", "1", "--print-freq", "2", "--epochs", "1",
          "--lr", "0.01"]
# resnet18's top-level layers, as ResNet registers them (bn1 carries the stem's ReLU).
LAYERS = (["conv1", "bn1", "maxpool"]
          + [f"layer{stage}.{block}" for stage in range(1, 5) for block in range(2)]
          + ["avgpool", "fc"])
PHASES = ["forward", "loss", "backward", "optimizer"]
# Event times are float milliseconds from an anchor (cudaEventElapsedTime's type; about 0.5 us
# resolution on a GPU), the host clock's are exact: they may disagree by less than this.
EPSILON_US = 1.0


def check(condition, message):
    if not condition:
        sys.exit("check_trace: " + message)


def run(args, name, flags, ranks=1, env=None, expect=0):
    work = os.path.join(args.work, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    command = [args.exe, "--checkpoint-dir", os.path.join(work, "ck")] + COMMON + flags
    if ranks > 1:
        command = MPI + ["-np", str(ranks)] + command
    result = subprocess.run(command, capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, **(env or {})))
    if expect is not None and result.returncode != expect:
        sys.exit(f"check_trace: {' '.join(command)} exited {result.returncode}, not {expect}"
                 f"\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}")
    return work, result


def load(path):
    check(os.path.isfile(path), f"no trace file {path}")
    with open(path) as f:
        trace = json.load(f)
    check(isinstance(trace, dict) and isinstance(trace.get("traceEvents"), list),
          f"{path}: not a Chrome trace (an object with a traceEvents list)")
    events = trace["traceEvents"]
    for event in events:
        for key in ("name", "ph", "pid", "tid"):
            check(key in event, f"{path}: an event without {key}: {event}")
        check(event["ph"] in ("X", "M"), f"{path}: unexpected phase {event['ph']}")
        if event["ph"] == "X":
            for key in ("ts", "dur"):
                check(isinstance(event.get(key), (int, float)), f"{path}: {key} of {event}")
            check(event["dur"] >= 0, f"{path}: negative duration in {event}")
            check(isinstance(event.get("args", {}).get("step"), int),
                  f"{path}: no args.step in {event}")
    lanes = {e["tid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name"}
    check(set(lanes) == {0, 1, 2}, f"{path}: lanes named {lanes}, expected tids 0, 1, 2")
    return [e for e in events if e["ph"] == "X"], trace


def inside(inner, outer):
    return (inner["ts"] >= outer["ts"] - EPSILON_US
            and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + EPSILON_US)


def one(events, what, **match):
    found = [e for e in events if all(e.get(k) == v for k, v in match.items())]
    check(len(found) == 1, f"{len(found)} {what} spans ({match}), expected one")
    return found[0]


def check_steps(path, events, steps, rank):
    """Every traced step's spans, nested as the timeline promises."""
    check({e["args"]["step"] for e in events} == set(steps),
          f"{path}: steps {sorted({e['args']['step'] for e in events})}, expected {steps}")
    check(all(e["pid"] == rank for e in events), f"{path}: a pid other than rank {rank}")
    for step in steps:
        mine = [e for e in events if e["args"]["step"] == step]
        whole = one(mine, "step", name=f"step {step}", tid=0)
        for e in mine:
            check(inside(e, whole), f"{path}: {e['name']} of step {step} outside the step span")
        waits = [e for e in mine if e["name"] == "data wait" and e["tid"] == 0]
        check(len(waits) == 1, f"{path}: step {step} has {len(waits)} data waits")
        phase = {name: one(mine, name, name=name, tid=1) for name in PHASES}
        check(inside(phase["loss"], phase["forward"]), f"{path}: loss outside forward")
        order = [phase[name]["ts"] for name in ["forward", "backward", "optimizer"]]
        check(order == sorted(order), f"{path}: step {step}: forward, backward, optimizer "
              f"start at {order}")
        for direction, parent in (("forward", phase["forward"]),
                                  ("backward", phase["backward"])):
            spans = [e for e in mine if e["cat"] == "layer " + direction]
            names = [e["name"] for e in sorted(spans, key=lambda e: e["ts"])]
            expected = LAYERS if direction == "forward" else LAYERS[::-1]
            check(names == expected, f"{path}: step {step}'s layer {direction} spans in time "
                  f"order are {names}, expected {expected}")
            for e in spans:
                check(inside(e, parent), f"{path}: {e['name']} {direction} of step {step} "
                      f"outside the {direction} span")
    return True


def check_all_reduce(path, events, trace, steps, device):
    # On CUDA the compute stream goes on once the last all-reduce completes; the comm stream's
    # end event after it is stamped when that stream reaches it, which on the sim device is
    # when its worker thread runs (milliseconds later on a loaded 2-core machine; on a GPU,
    # microseconds). So there a bucket may end a little after the optimizer started.
    late_us = 20000 if device == "cuda" else EPSILON_US
    for step in steps:
        mine = [e for e in events if e["args"]["step"] == step]
        whole = one(mine, "step", name=f"step {step}", tid=0)
        backward = one(mine, "backward", name="backward", tid=1)
        optimizer = one(mine, "optimizer", name="optimizer", tid=1)
        buckets = sorted((e for e in mine if e["tid"] == 2), key=lambda e: e["args"]["bucket"])
        check(len(buckets) >= 2, f"{path}: step {step} has {len(buckets)} all-reduce spans")
        check(len(buckets) == whole["args"].get("buckets"),
              f"{path}: step {step}: {len(buckets)} bucket spans, the step says "
              f"{whole['args'].get('buckets')}")
        check(sum(e["args"]["bytes"] for e in buckets) == whole["args"]["all_reduce_bytes"],
              f"{path}: step {step}: the buckets' bytes do not add up to the step's")
        for e in buckets:
            check(e["name"] == f"all-reduce bucket {e['args']['bucket']}", f"{path}: {e}")
            check(inside(e, whole), f"{path}: {e['name']} of step {step} outside the step "
                  f"[{whole['ts']}, {whole['ts'] + whole['dur']}]: {e}")
            check(e["ts"] >= backward["ts"] - EPSILON_US,
                  f"{path}: {e['name']} of step {step} starts before its backward")
            check(e["ts"] + e["dur"] <= optimizer["ts"] + late_us,
                  f"{path}: {e['name']} of step {step} ends after its optimizer starts")
        for a, b in zip(buckets, buckets[1:]):
            check(b["ts"] >= a["ts"] - EPSILON_US,
                  f"{path}: step {step}: bucket {b['args']['bucket']} starts before "
                  f"bucket {a['args']['bucket']}")


def single_rank(args, device="cpu", env=None, steps=(2, 3), batch=4):
    path_flags = ["--trace-steps", f"{steps[0]}-{steps[-1]}", "--max-steps", str(steps[-1]),
                  "-b", str(batch), "--device", device]
    work = os.path.join(args.work, "cpu" if device == "cpu" else "sim1")
    trace_path = os.path.join(work, "trace.json")
    run(args, os.path.basename(work), ["--trace", trace_path] + path_flags, env=env)
    events, trace = load(trace_path)
    check(trace["otherData"]["world"] == 1, f"{trace_path}: otherData {trace['otherData']}")
    # A CUDA build (the sim device's too) has the toolkit's headers, nvtx3 among them.
    check(device != "cuda" or trace["otherData"]["nvtx"] is True,
          f"{trace_path}: no NVTX ranges in a CUDA build")
    check_steps(trace_path, events, list(steps), 0)
    check(not [e for e in events if e["tid"] == 2], "a world of one all-reduced something")
    print(f"check_trace: {len(events)} spans for steps {steps} on {device}, one rank")


def two_ranks(args, device="cpu", env=None, steps=(2, 3), batch=4):
    name = "np2" if device == "cpu" else "sim2"
    work = os.path.join(args.work, name)
    flags = ["--trace", os.path.join(work, "trace.json"), "--trace-steps",
             f"{steps[0]}-{steps[-1]}", "--max-steps", str(steps[-1]), "-b", str(batch),
             "--bucket-cap-mb", "4", "--device", device]
    run(args, name, flags, ranks=2, env=env)
    for rank in range(2):
        path = os.path.join(work, f"trace.rank{rank}.json")
        events, trace = load(path)
        check(trace["otherData"]["rank"] == rank and trace["otherData"]["world"] == 2,
              f"{path}: otherData {trace['otherData']}")
        check_steps(path, events, list(steps), rank)
        check_all_reduce(path, events, trace, list(steps), device)
    check(not os.path.exists(os.path.join(work, "trace.json")), "a rankless trace.json with -np 2")
    print(f"check_trace: two ranks' traces on {device}, all-reduces inside their steps")


def bad_inputs(args):
    def refused(name, flags, ranks, expected, code=1):
        work, result = run(args, name, flags + ["--device", "cpu"], ranks=ranks, expect=code)
        # Ours, as check_resnet_train.py's bad_flags counts them: mpirun adds its own box
        # about the non-zero exit, and a machine without a GPU says so.
        lines = [line for line in result.stderr.splitlines() if "resnet_train:" in line]
        check(len(lines) == 1 and expected in lines[0],
              f"{name}: expected one line with '{expected}' on stderr, got {lines}")
        check(not os.path.exists(os.path.join(work, "ck", "last.safetensors")),
              f"{name}: a checkpoint was written: it trained")
        check("step" not in result.stdout.replace("--trace-steps", ""),
              f"{name}: training output on stdout:\n{result.stdout}")
        return work

    past = ["--trace-steps", "3-9", "--max-steps", "4", "-b", "8"]
    for ranks in (1, 2):
        work = refused(f"past_end_np{ranks}",
                       ["--trace", os.path.join(args.work, f"past_end_np{ranks}", "t.json")]
                       + past, ranks, "--trace-steps 3-9 ends past the run's last optimizer "
                       "step, 4")
        check(not [f for f in os.listdir(work) if f.startswith("t.")],
              f"past_end_np{ranks}: the refused run left a trace file")
    refused("past_epochs", ["--trace", os.path.join(args.work, "past_epochs", "t.json"),
                            "--trace-steps", "8-9", "-b", "8"], 1,
            "ends past the run's last optimizer step, 8")
    for ranks in (1, 2):
        refused(f"unwritable_np{ranks}", ["--trace", "/proc/no-such-dir/trace.json", "-b", "8"],
                ranks, "--trace: cannot write /proc/no-such-dir/trace")
    refused("malformed", ["--trace", "t.json", "--trace-steps", "5-3"], 1,
            "--trace-steps takes steps A-B with 1 <= A <= B, got '5-3'", code=2)
    print("check_trace: bad ranges and paths refused in one line, before training")


def sim_device(args):
    env = {"ENGINE_SIM_DEVICE_COUNT": "2"}  # a device per rank
    # The preflight asks for the device before it tries the trace file: a run that cannot
    # write its trace says which of the two it lacks, before any work.
    probe = subprocess.run([args.exe, "--dummy", "--device", "cuda", "--trace",
                            "/proc/no-such-dir/trace.json"], capture_output=True, text=True,
                           timeout=120, env=dict(os.environ, **env))
    if "--trace: cannot write" not in probe.stderr:
        print(f"check_trace: skipped, no CUDA device for resnet_train:\n{probe.stderr}")
        return SKIP
    # The emulator runs every CUDA thread: the smallest batch, the first two steps.
    single_rank(args, "cuda", env, steps=(1, 2), batch=2)
    two_ranks(args, "cuda", env, steps=(1, 2), batch=2)
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("case", choices=["cpu", "np2", "bad", "sim"])
    parser.add_argument("--exe", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    if args.case == "cpu":
        single_rank(args)
    elif args.case == "np2":
        two_ranks(args)
    elif args.case == "bad":
        bad_inputs(args)
    else:
        return sim_device(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
