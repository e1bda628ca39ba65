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
          its steps: the environment, the bf16 step (with and without the CUDA graph, with
          --fusion block, and with ENGINE_GATED_SUMS=reread from the environment), bench_kernels
          bf16, the memory floor and the tuner's table; no test suite ran; the step's JSON rows
          name each variant (what the memory floor tells from the default step's row).
  multi   --part M on 2, then 4 emulated GPUs (ENGINE_SIM_DEVICE_COUNT), through the pack's
          mpirun with this host's Open MPI and PMIx hidden (as root: a private mount namespace
          binds empty folders over their component folders and /dev/null over their
          libraries and programs, so only the pack's copies can run): exit 0, "0 failed", every
          step of the part ran to exit 0 (the NCCL collectives' and SyncBN's cases on N ranks,
          bench_allreduce with NCCL_ALGO=Ring and without, bench_ddp with its hidden share (on 2
          only: 70 s more on 4, for the same code), bench_syncbn, N ranks' losses against one
          rank's); the all-reduce rows have no wrong element. Then on one emulated GPU the part
          says it needs two and runs nothing.
Usage: check_gpu_check.py CASE --script scripts/gpu-check --work DIR (SIM_BUILD_DIR in the
environment names the ENGINE_CUDA=SIM build).
"""
import argparse
import glob
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


def run(script, work, extra_env, args, prefix=()):
    env = dict(os.environ, CARRY=os.path.join(work, "carry"), OUT=os.path.join(work, "out"))
    env.update(extra_env)
    return subprocess.Popen([*prefix, script, "--sim", *args], env=env, stdout=subprocess.PIPE,
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
                 r"bench_kernels bf16", r"step memory floor bf16", r"bench_kernels --tune bf16",
                 r"bench_step bf16 --fusion block", r"bench_step bf16 ENGINE_GATED_SUMS=reread"):
        if not any(re.match(step + ": exit 0", line) for line in summary):
            fail(f"part P did not run '{step}' to exit 0:\n" + "\n".join(summary))
    if any(re.match(r"\S+_test: exit", line) for line in summary):
        fail("part P ran test suites:\n" + "\n".join(summary))
    with open(os.path.join(work, "out", "bench_step.jsonl")) as rows:
        cases = [json.loads(line)["case"] for line in rows if line.strip()]
    for ending in (" bf16 train step", " graph=off", " fusion=block", " gated-sums=reread"):
        if not any(case.endswith(ending) for case in cases):
            fail(f"no bench_step row ends with '{ending}': {cases}")
    if not re.search(r": 0 failed, 0 skipped step\(s\) in \d+ s$", summary[-1]):
        fail(f"the summary's last line: {summary[-1]}")


# What a GPU machine without Debian's packages lacks: Open MPI's and PMIx's plugin folders,
# configuration and help texts, their programs and their libraries.
HIDDEN_FOLDERS = ["/usr/lib/*/openmpi", "/usr/lib/*/pmix2", "/usr/share/openmpi", "/etc/openmpi"]
HIDDEN_LIBRARIES = ["libmpi.so.40", "libopen-rte.so.40", "libopen-pal.so.40", "libpmix.so.2"]
HIDDEN_PROGRAMS = ["orterun", "orted"]


def hiding_prefix(work):
    """A command prefix that runs what follows with this host's Open MPI hidden, or () when
    this process cannot make a mount namespace (not root)."""
    if os.geteuid() != 0 or not shutil.which("unshare") or \
            subprocess.run(["unshare", "--mount", "true"]).returncode != 0:
        return ()
    folders = sorted({path for pattern in HIDDEN_FOLDERS for path in glob.glob(pattern)})
    files = [shutil.which(name) for name in HIDDEN_PROGRAMS if shutil.which(name)]
    files += [path for name in HIDDEN_LIBRARIES for path in glob.glob(f"/usr/lib/*/{name}")]
    files = sorted({os.path.realpath(path) for path in files})
    empty = os.path.join(work, "empty")
    os.makedirs(empty, exist_ok=True)
    # The files first: one may lie inside a hidden folder (libpmix in PMIx's own prefix).
    binds = [f"mount --bind /dev/null {path}" for path in files]
    binds += [f"mount --bind {empty} {folder}" for folder in folders]
    print("hidden: " + " ".join(folders + files))
    return ("unshare", "--mount", "--propagation", "private", "sh", "-ec",
            " && ".join(binds) + ' && exec "$@"', "hide-open-mpi")


def case_multi(script, work):
    build = os.environ.get("SIM_BUILD_DIR", "build-sim")
    carry = os.path.join(work, "carry")
    packed = subprocess.run([os.path.join(os.path.dirname(script), "pack-gpu-check")],
                            env=dict(os.environ, BUILD_DIR=build, CARRY=carry, ARCHIVE="0"),
                            capture_output=True, text=True)
    if packed.returncode != 0:
        fail(f"pack-gpu-check failed:\n{packed.stdout}{packed.stderr}")
    prefix = hiding_prefix(work)
    if not prefix:
        print("not root: this host's Open MPI stays visible, so the pack's closure is not shown")
    for gpus in (2, 4):
        env = {"ENGINE_SIM_DEVICE_COUNT": str(gpus), "GPU_CHECK_PACKED": "1"}
        # bench_ddp's N ranks run the same code at 2 and 4: at 4 it would take 70 s more here.
        only = [] if gpus == 2 else ["--only", "^(environment|collectives|bench_allreduce|"
                                               "training|nn_sync|bench_syncbn)"]
        process = run(script, work, env, ["--part", "M", *only], prefix)
        output, _ = process.communicate(timeout=600)
        print(output)
        if process.returncode != 0:
            fail(f"gpu-check --sim --part M on {gpus} GPUs exited {process.returncode}")
        out = os.path.join(work, "out")
        summary = check_out(out, {"summary.txt", "report.tar.xz"})
        if f"part M: {gpus} ranks, one GPU each" not in summary:
            fail(f"the summary does not say part M ran {gpus} ranks:\n" + "\n".join(summary))
        steps = [rf"collectives_mpi_test nccl np{gpus}", rf"bench_allreduce np{gpus} NCCL_ALGO=Ring",
                 rf"bench_allreduce np{gpus} NCCL_ALGO=default",
                 rf"training np{gpus} == np1 on the global batch",
                 rf"nn_sync_batchnorm_test nccl np{gpus}", rf"bench_syncbn np{gpus} "]
        steps = [step + r".*: exit 0" for step in steps]
        if gpus == 2:
            steps.append(rf"bench_ddp np{gpus} .*: exit 0, .*hidden [0-9.]+")
            steps.append(rf"cuda graphs np{gpus} == --cuda-graph off: exit 0, equivalence: 3 "
                         r"steps, relative loss differences 0\.00e\+00, 0\.00e\+00, 0\.00e\+00")
        for step in steps:
            if not any(re.match(step, line) for line in summary):
                fail(f"part M on {gpus} GPUs did not run '{step}' to exit 0:\n" + "\n".join(summary))
        if not re.search(r": 0 failed, 0 skipped step\(s\) in \d+ s$", summary[-1]):
            fail(f"the summary's last line: {summary[-1]}")
        for line in summary:
            if line.startswith("bench_allreduce") and ", 0 wrong (" not in line:
                fail(f"an all-reduce run has wrong elements or no row: {line}")
        if not any("equivalence: 3 steps" in line for line in summary):
            fail("the training comparison printed no equivalence line:\n" + "\n".join(summary))
    process = run(script, work, {"ENGINE_SIM_DEVICE_COUNT": "1", "GPU_CHECK_PACKED": "1"},
                  ["--part", "M"], prefix)
    output, _ = process.communicate(timeout=120)
    summary = check_out(os.path.join(work, "out"), {"summary.txt", "report.tar.xz"})
    if process.returncode != 0 or not any("it needs 2 or more" in line for line in summary):
        fail(f"part M on one GPU should say it needs two (exit {process.returncode}):\n{output}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("case", choices=["full", "killed", "budget", "perf", "multi"])
    parser.add_argument("--script", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    {"full": case_full, "killed": case_killed, "budget": case_budget,
     "perf": case_perf, "multi": case_multi}[args.case](
        os.path.abspath(args.script), args.work)
    print(f"gpu-check --sim {args.case}: ok")


if __name__ == "__main__":
    main()
