#!/usr/bin/env python3
"""scripts/gpu-check --sim as the GPU machine will run it: its parts, its budget and its $OUT.

A device call brings back at most 8 files of $OUT and may be killed at its time limit, so
gpu-check packs its report into four files after every step. Cases:
  full    every part: exit 0; $OUT holds exactly summary.txt, bench_step.jsonl,
          bench_kernels.jsonl and report.tar.xz; the summary names the parts and ends with
          "0 failed"; the archive holds every step's log and no checkpoint; every JSON row parses;
          the tuner's step timed at least one pass, a fused one among them; part C's three
          training runs (JPEGs, --dummy, --dummy without CUDA graphs) each printed a rate.
  killed  --part A, killed (SIGKILL, the whole process group) once three steps have ended and a
          fourth is running: $OUT still holds at most the four files, and its summary names the
          steps that ended and the one that was running; the archive holds the ended steps' logs.
  budget  --part A with GPU_CHECK_BUDGET_S=12: the part ends within its budget (plus the packing
          before it and the last step's kill grace); steps beyond the environment ran, and the
          ones the budget left no time for are named as skipped, the part's last ones among them.
  perf    --part P, the short perf check: exit 0, "0 failed"; the summary names part P alone and
          its steps: the environment, the bf16 step (with and without the CUDA graph), bench_kernels
          bf16, the memory floor and the tuner's table; no test suite ran.
Usage: check_gpu_check.py CASE --script scripts/gpu-check --work DIR (SIM_BUILD_DIR in the
environment names the ENGINE_CUDA=SIM build).
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time

REPORT_FILES = {"summary.txt", "bench_step.jsonl", "bench_kernels.jsonl", "report.tar.xz"}
ENDED = re.compile(r"^(\S+): exit ")


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def out_files(out):
    # .packing/ holds a file only while it is written (renamed into place after).
    return {name for name in os.listdir(out) if name != ".packing"}


def check_out(out, required):
    files = out_files(out)
    if not files <= REPORT_FILES:
        fail(f"$OUT holds more than the report's files: {sorted(files - REPORT_FILES)}")
    if not required <= files:
        fail(f"$OUT lacks {sorted(required - files)} (has {sorted(files)})")
    return open(os.path.join(out, "summary.txt")).read().splitlines()


def archive_names(out):
    with tarfile.open(os.path.join(out, "report.tar.xz")) as archive:
        return archive.getnames()


def run(script, work, extra_env, args):
    env = dict(os.environ, CARRY=os.path.join(work, "carry"), OUT=os.path.join(work, "out"))
    env.update(extra_env)
    return subprocess.Popen([script, "--sim", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def case_full(script, work):
    process = run(script, work, {}, [])
    output, _ = process.communicate(timeout=840)
    print(output)
    if process.returncode != 0:
        fail(f"gpu-check --sim exited {process.returncode}")
    out = os.path.join(work, "out")
    summary = check_out(out, REPORT_FILES)
    for part in ("A", "B", "C"):
        if not any(line.startswith(f"part {part}: a budget of") for line in summary):
            fail(f"the summary does not name part {part}")
    if not re.search(r": 0 failed, 0 skipped step\(s\) in \d+ s$", summary[-1]):
        fail(f"the summary's last line: {summary[-1]}")
    rates = [line for line in summary if line.startswith("data rate: ")]
    if len(rates) != 1 or len(re.findall(r"[0-9.]+ img/s", rates[0])) != 3:
        fail(f"part C's data rate line should give three rates: {rates}")
    names = archive_names(out)
    for log in ("report/environment.txt", "report/kernels_conv_test.txt",
                "report/resnet_train-fp32.txt", "report/probe_step.txt"):
        if log not in names:
            fail(f"report.tar.xz lacks {log}")
    if any(name.endswith(".safetensors") for name in names):
        fail("report.tar.xz holds a checkpoint")
    for jsonl in ("bench_step.jsonl", "bench_kernels.jsonl"):
        rows = [json.loads(line) for line in open(os.path.join(out, jsonl))]
        if not rows:
            fail(f"{jsonl} is empty")
    # The tuner's step timed something: its total line's heuristic time is not 0 (a --filter
    # that selects no layer would leave it 0 and the plan table empty).
    tuned = [line for line in summary if line.startswith("bench_kernels --tune bf16:")]
    total = re.search(r"all conv layers \(x count\) ([0-9.]+)", tuned[0] if tuned else "")
    if not total or float(total.group(1)) <= 0:
        fail(f"the tuner's step timed nothing: {tuned}")
    # ... and timed the passes as the step runs them: layer4.0.conv1's forward takes its
    # BatchNorm's statistics in the epilogue (--fusion full, the default).
    with tarfile.open(os.path.join(out, "report.tar.xz")) as archive:
        table = archive.extractfile("report/bench_kernels-tune-bf16.txt").read().decode()
    if "forward + stats" not in table:
        fail(f"the tuner's table times no fused pass:\n{table}")
    kernels = [json.loads(line)["case"] for line in open(os.path.join(out, "bench_kernels.jsonl"))]
    if not any("bf16" in case for case in kernels) or not any("f32" in case for case in kernels):
        fail("bench_kernels.jsonl lacks the bf16 (part A) or the f32 (part B) rows")


def case_killed(script, work):
    out = os.path.join(work, "out")
    process = run(script, work, {}, ["--part", "A"])
    summary_path = os.path.join(out, "summary.txt")
    deadline = time.monotonic() + 300
    ended = running = []
    while time.monotonic() < deadline and process.poll() is None:
        if os.path.exists(summary_path):
            lines = open(summary_path).read().splitlines()
            ended = [m.group(1) for m in map(ENDED.match, lines) if m]
            running = [line for line in lines if line.endswith("running when this report was packed")]
            if len(ended) >= 3 and running:
                break
        time.sleep(0.02)
    if process.poll() is not None:
        fail(f"gpu-check ended (exit {process.returncode}) before it could be killed")
    if len(ended) < 3 or not running:
        fail("no summary with three ended steps and a running one within 300 s")
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    print(f"killed after {ended} with {running}")
    summary = check_out(out, {"summary.txt", "report.tar.xz"})
    for step in ended:
        if not any(line.startswith(f"{step}: exit ") for line in summary):
            fail(f"the summary lost the ended step {step}")
    if not any(line.endswith("running when this report was packed") for line in summary):
        fail("the summary does not name the step that was running")
    names = archive_names(out)
    for step in ended:
        if step.endswith("_test") and f"report/{step}.txt" not in names:
            fail(f"report.tar.xz lacks the log of the ended step {step}")


def case_budget(script, work):
    budget = 12
    started = time.monotonic()
    process = run(script, work, {"GPU_CHECK_BUDGET_S": str(budget)}, ["--part", "A"])
    output, _ = process.communicate(timeout=300)
    elapsed = time.monotonic() - started
    print(output)
    summary = check_out(os.path.join(work, "out"), {"summary.txt", "report.tar.xz"})
    # Packing the sim build (~5 s here) comes before the budget starts; a step cut at the
    # budget's end may take timeout's 5 s kill grace.
    if elapsed > budget + 40:
        fail(f"part A took {elapsed:.0f} s on a budget of {budget} s")
    skipped = [line.split(":")[0] for line in summary if "skipped, the part's budget" in line]
    if "bench_step bf16 --profile" not in skipped or "bench_kernels bf16" not in skipped:
        fail(f"the budget of {budget} s did not skip part A's last steps: skipped {skipped}")
    ran = [m.group(1) for m in map(ENDED.match, summary) if m]
    if len(ran) < 2:
        fail(f"the budget of {budget} s ran only {ran}")
    if not re.search(rf": \d+ failed, {len(skipped)} skipped step\(s\)", summary[-1]):
        fail(f"the summary's last line does not count the skipped steps: {summary[-1]}")
    print(f"part A in {elapsed:.0f} s; ran {ran}; skipped {skipped}")


def case_perf(script, work):
    process = run(script, work, {}, ["--part", "P"])
    output, _ = process.communicate(timeout=600)
    print(output)
    if process.returncode != 0:
        fail(f"gpu-check --sim --part P exited {process.returncode}")
    summary = check_out(os.path.join(work, "out"), REPORT_FILES)
    parts = [line for line in summary if re.match(r"part \w: a budget of", line)]
    if parts != [line for line in parts if line.startswith("part P:")] or not parts:
        fail(f"--part P should run part P alone: {parts}")
    for step in (r"environment", r"bench_step bf16 batch \d+", r"bench_step bf16 --cuda-graph off",
                 r"bench_kernels bf16", r"step memory floor bf16", r"bench_kernels --tune bf16"):
        if not any(re.match(step + ": exit 0", line) for line in summary):
            fail(f"part P did not run '{step}' to exit 0:\n" + "\n".join(summary))
    if any(re.match(r"\S+_test: exit", line) for line in summary):
        fail("part P ran test suites:\n" + "\n".join(summary))
    if not re.search(r": 0 failed, 0 skipped step\(s\) in \d+ s$", summary[-1]):
        fail(f"the summary's last line: {summary[-1]}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("case", choices=["full", "killed", "budget", "perf"])
    parser.add_argument("--script", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    {"full": case_full, "killed": case_killed, "budget": case_budget,
     "perf": case_perf}[args.case](
        os.path.abspath(args.script), args.work)
    print(f"gpu-check --sim {args.case}: ok")


if __name__ == "__main__":
    main()
