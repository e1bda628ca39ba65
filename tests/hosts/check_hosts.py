#!/usr/bin/env python3
"""Multi-host checks on simulated hosts (tools/sim_hosts.sh: network namespaces with their
own /dev/shm and hostname, mpirun across them through an rsh agent), the ctest cases hosts_*:

    python3 tests/hosts/check_hosts.py CASE --sim-hosts tools/sim_hosts.sh --build BUILD
        [--data DIR --work DIR]

Cases:
  collectives  the distributed suite (every communicator that spans hosts, ring-hier's three
               stages, the bootstrap's placement against the ranks' host names) on 2 hosts x
               2 ranks under --map-by slot and --map-by node, and on 2 + 1 ranks (uneven
               hosts: ring-hier refuses, the rest run)
  faults       training on 2 hosts x 2 ranks, the second host lost mid-epoch (its link down,
               its processes SIGKILLed, or stopped) or stopped during the startup: the job
               ends, mpirun included, within --comm-timeout + 10 s with a message naming the
               lost host (at startup: the phase); nothing is left on either host (the stalled
               one once resumed); last.safetensors resumes
  data         a different copy of --data on the second host (a file missing, a file
               renamed) stops every rank before any work with one message naming the host;
               a --resume file missing there is named with its host; tar shards of the same
               data train on 2 hosts x 1 rank, and a shard rewritten on the second host (a
               member one byte longer, the same names) is named as the folders are
  train        resnet_train on 2 hosts x 2 ranks against 1 host x 4 ranks: the same per-step
               losses and checkpoints, bit for bit where the reduction order is the same
               (ring-mpi's ring, MPI_Allreduce), within the equivalence tolerances where it
               is not (ring-hier), with and without --sync-bn; --comm auto picks ring-hier
               and says so; ring-shm across hosts is refused
After each job nothing may be left on any host: no process, no /dev/shm entry.
Needs root (namespaces); exits 77 (skipped) without it. Only the standard library is used.
"""
import argparse
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
sys.path.insert(0, os.path.join(HERE, "..", "train"))
from safetensors_plain import read_safetensors_plain  # noqa: E402
from check_resnet_train import (COMMON, MPI, Failure, check, read_jsonl, step_losses,  # noqa: E402
                                wait_for_steps)

PREFIX = "cihost"
HOSTS = [PREFIX + "0", PREFIX + "1"]


class SimHosts:
    """Two simulated hosts for the duration of a case, removed whatever happens."""

    def __init__(self, script):
        self.script = script
        self.env = dict(os.environ, SIM_HOSTS_PREFIX=PREFIX)

    def tool(self, *args, check_rc=True):
        result = subprocess.run([self.script, *args], env=self.env, capture_output=True,
                                text=True)
        if check_rc and result.returncode != 0:
            raise Failure(f"sim_hosts.sh {' '.join(args)} exited {result.returncode}:\n"
                          f"{result.stdout}{result.stderr}")
        return result

    def __enter__(self):
        self.tool("up", "--hosts", "2")
        return self

    def __exit__(self, *exc):
        self.tool("down", check_rc=False)

    def mpirun(self, placement, args, timeout=600, expect_ok=True):
        command = [self.script, "mpirun", *placement, *args]
        started = time.monotonic()
        result = subprocess.run(command, env=self.env, capture_output=True, text=True,
                                timeout=timeout)
        result.seconds = time.monotonic() - started
        if expect_ok and result.returncode != 0:
            raise Failure(f"{' '.join(command)} exited {result.returncode}\n--- stdout\n"
                          f"{result.stdout[-4000:]}\n--- stderr\n{result.stderr[-4000:]}")
        self.check_clean(" ".join(placement))
        return result

    def check_clean(self, after, wait=5, hosts=HOSTS):
        """No process and nothing in /dev/shm on the hosts once a job has ended (within `wait`
        seconds: an aborting rank's launcher guard lives a few seconds)."""
        deadline = time.monotonic() + wait
        while True:
            left = self.tool("pids", *hosts).stdout.split()
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        check(not left, f"after {after}: processes left on the hosts: {self.describe(left)}")
        for host in hosts:
            entries = self.tool("shm", host).stdout.split()
            check(not entries, f"after {after}: /dev/shm on {host} holds {entries}")

    @staticmethod
    def describe(pids):
        names = []
        for pid in pids:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    command = f.read().replace(b"\0", b" ").decode(errors="replace")
                names.append(f"{pid} {command[:80]}")
            except OSError:
                names.append(pid)
        return "; ".join(names)


def placement(per_host, mapping="slot"):
    return ["-H", ",".join(f"{h}:{n}" for h, n in zip(HOSTS, per_host)), "--map-by", mapping,
            "-np", str(sum(per_host))]


def gtest_summary(output):
    lines = [l for l in re.sub(r"\x1b\[[0-9;]*m", "", output).splitlines()
             if "[  PASSED  ]" in l]
    return lines[0].split("]")[-1].strip() if lines else "?"


def case_collectives(args, hosts):
    suite = os.path.join(args.build, "tests", "collectives", "collectives_mpi_test")
    for per_host, mapping in (((2, 2), "slot"), ((2, 2), "node"), ((2, 1), "slot")):
        result = hosts.mpirun(placement(per_host, mapping), [suite])
        output = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout)
        uneven = per_host[0] != per_host[1]
        expected = ["Bootstrap.WorldMatchesMpiAndLocalRanksNumberEachHost"] + [
            f"Communicators/Collectives.AllReduceEveryOpDtypeAndSize/{impl}"
            for impl in (["ring_mpi", "mpi"] + ([] if uneven else ["ring_hier"]))]
        missing = [name for name in expected if f"[       OK ] {name} " not in output]
        check(not missing, f"{per_host} by {mapping}: did not pass {missing}")
        if uneven:
            check("ring-hier needs the same number of ranks on every host" in output,
                  "uneven hosts: ring-hier did not say why it skipped:\n" + output[-3000:])
        print(f"collectives on {'+'.join(map(str, per_host))} ranks by {mapping}: "
              f"{gtest_summary(result.stdout)} ({result.seconds:.0f} s)")


def run_train(hosts, args, name, per_host, comm, extra, local=False):
    """3 steps of resnet18 at 32 px on 4 ranks; the step losses and the checkpoint."""
    work = os.path.join(args.work, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    steps = os.path.join(work, "steps.jsonl")
    train = [args.exe, "--data", args.data] + COMMON + [
        "--epochs", "1", "--max-steps", "3", "-b", "4", "--lr", "0.002", "--momentum", "0.9",
        "--comm", comm, "--checkpoint-dir", work, "--step-metrics", steps] + extra
    if local:  # every rank on one host: plain mpirun, as every other test
        command = MPI + ["-np", str(sum(per_host))] + train
        result = subprocess.run(command, capture_output=True, text=True, timeout=600)
        check(result.returncode == 0, f"{' '.join(command)} exited {result.returncode}:\n"
              f"{result.stderr[-3000:]}")
    else:
        result = hosts.mpirun(placement(per_host), train)
    _, tensors = read_safetensors_plain(os.path.join(work, "last.safetensors"))
    return result, step_losses(steps), tensors


def relative_weight_difference(a, b):
    """RMS of the learned weights' differences over their RMS (no optimizer state, no
    BatchNorm running statistics)."""
    difference = norm = 0.0
    for name, (_, _, values) in a.items():
        if name.startswith("optimizer.") or "running_" in name or "num_batches" in name:
            continue
        difference += sum((x - y) ** 2 for x, y in zip(values, b[name][2]))
        norm += sum(x * x for x in values)
    return (difference / norm) ** 0.5


def case_train(args, hosts):
    # Tolerances of the one-host equivalence case (check_resnet_train.py case_equivalence),
    # for the same reason: another summation order flips ReLU and max-pool decisions that
    # later steps amplify.
    tolerances = [1e-5, 1e-5, 1e-2]
    refused = hosts.mpirun(placement((2, 2)), [args.exe, "--data", args.data, "--comm",
                                               "ring-shm"] + COMMON, expect_ok=False)
    check(refused.returncode != 0 and "ring-shm needs every rank on one host" in refused.stderr,
          "--comm ring-shm across hosts was not refused:\n" + refused.stderr[-2000:])
    for sync in ([], ["--sync-bn"]):
        label = "SyncBN" if sync else "BN"
        reference = {}
        for comm in ("ring-mpi", "mpi"):
            reference[comm] = run_train(hosts, args, f"one-host-{comm}{'-sync' if sync else ''}",
                                        (4,), comm, sync, local=True)
        for comm in ("ring-mpi", "mpi", "auto"):
            result, losses, tensors = run_train(
                hosts, args, f"two-hosts-{comm}{'-sync' if sync else ''}", (2, 2), comm, sync)
            if comm == "auto":
                check("(ring-hier, auto: 4 ranks on 2 hosts" in result.stdout,
                      "--comm auto did not pick ring-hier across hosts, or did not say so:\n" +
                      result.stdout[:1500])
                placed = f"hosts: {HOSTS[0]} (ranks 0, 1), {HOSTS[1]} (ranks 2, 3)"
                check(placed in result.stdout, f"the banner lacks '{placed}':\n" +
                      result.stdout[:1500])
                _, ref_losses, ref_tensors = reference["ring-mpi"]
                differences = [abs(x[1] - y[1]) / abs(x[1]) for x, y in zip(ref_losses, losses)]
                check(len(losses) == 3 and all(d < t for d, t in zip(differences, tolerances)),
                      f"{label} ring-hier on 2x2: losses {losses}, one host {ref_losses}")
                # Three steps at lr 0.002 change the weights by about 1% (RMS); the third
                # step's flipped ReLU and max-pool decisions move that by a few percent of
                # itself (measured 1.6e-4). Averaging over the wrong count would be ~1e-2.
                weights = relative_weight_difference(ref_tensors, tensors)
                check(weights < 1e-3, f"{label} ring-hier: weights differ by {weights:.2e} RMS")
                print(f"train {label}: ring-hier (auto) on 2 hosts x 2 ranks within "
                      f"{', '.join(f'{d:.1e}' for d in differences)} of one host's losses, "
                      f"weights within {weights:.1e} RMS ({result.seconds:.0f} s)")
            else:
                _, ref_losses, ref_tensors = reference[comm]
                check(losses == ref_losses,
                      f"{label} {comm}: 2 hosts x 2 ranks {losses}, 1 host x 4 {ref_losses}")
                check(tensors == ref_tensors, f"{label} {comm}: the checkpoints differ")
                print(f"train {label}: {comm} on 2 hosts x 2 ranks = 1 host x 4 bit for bit "
                      f"(losses {[round(l, 5) for _, l in losses]}, checkpoint) "
                      f"({result.seconds:.0f} s)")


FAULT_TIMEOUT = 10  # --comm-timeout of the fault runs, in seconds


def inject(hosts, fault):
    """Takes the second host away: its link down, its processes killed or stopped."""
    victim = HOSTS[1]
    if fault == "link-down":
        hosts.tool("link", victim, "down")
        return
    pids = [int(p) for p in hosts.tool("pids", victim).stdout.split()]
    check(pids, f"no processes on {victim} to {fault}")
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL if fault == "host-killed" else signal.SIGSTOP)
        except ProcessLookupError:
            pass


def stall_at_startup(hosts, process):
    """Stops the second host once rank 0 is past MPI_Init (its --resume auto line), inside
    the preflight checks and setup, which take a second or more."""
    line = process.stdout.readline()
    check("--resume auto" in line, f"expected rank 0's --resume auto line first, got {line!r}")
    for pid in hosts.tool("pids", HOSTS[1]).stdout.split():
        try:
            os.kill(int(pid), signal.SIGSTOP)
        except ProcessLookupError:
            pass


def recover(hosts, fault):
    """What an operator would do once the job has ended: the link back, the host resumed."""
    victim = HOSTS[1]
    if fault == "link-down":
        hosts.tool("link", victim, "up")
    elif fault.startswith("host-stalled"):
        for pid in hosts.tool("pids", victim).stdout.split():
            try:
                os.kill(int(pid), signal.SIGCONT)
            except ProcessLookupError:
                pass


def case_faults(args, hosts):
    """A host lost mid-epoch ends the whole job (mpirun too) within --comm-timeout + 10 s,
    names the lost host, leaves nothing behind, and its last checkpoint resumes."""
    faults = os.environ.get("HOSTS_FAULTS",
                            "link-down,host-killed,host-stalled,host-stalled-at-startup").split(",")
    for fault in faults:
        work = os.path.join(args.work, "fault-" + fault)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        steps = os.path.join(work, "steps.jsonl")
        command = [hosts.script, "mpirun", *placement((2, 2)), args.exe, "--data", args.data,
                   *COMMON, "--epochs", "5", "-b", "4", "--lr", "0.002", "--checkpoint-dir", work,
                   "--step-metrics", steps, "--save-every-steps", "2", "--comm-timeout",
                   str(FAULT_TIMEOUT)] + (["--resume", "auto"] if fault.endswith("startup") else [])
        process = subprocess.Popen(command, env=hosts.env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            if fault.endswith("startup"):
                stall_at_startup(hosts, process)
            else:
                wait_for_steps(steps, 5, process)
                inject(hosts, fault)
            struck = time.monotonic()
            try:
                out, err = process.communicate(timeout=FAULT_TIMEOUT + 30)
            except subprocess.TimeoutExpired:
                raise Failure(f"{fault}: mpirun still running {FAULT_TIMEOUT + 30} s later")
            seconds = time.monotonic() - struck
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.communicate()
        check(process.returncode != 0, f"{fault}: mpirun exited 0")
        check(seconds <= FAULT_TIMEOUT + 10,
              f"{fault}: the job took {seconds:.1f} s to end, more than --comm-timeout + 10 s")
        # Our timeout names the rank and its host; when the host's processes die, Open MPI
        # ends the job first, naming the host (the banner gives its ranks).
        named = [line for line in err.splitlines() if HOSTS[1] in line and
                 ("rank" in line or "Remote daemon" in line)]
        if fault.endswith("startup"):  # MPI's collectives cannot say who is missing
            named = [line for line in err.splitlines() if "startup (resnet_train: the "
                     "preflight checks and setup) timed out after" in line]
        # Our line is what the user reads: no crash of mpirun's after it (4.1.4's mpirun
        # crashed in PMIx_Finalize when the launcher guard sent it SIGTERM).
        check("Segmentation fault" not in err and "PMIx_Finalize" not in err,
              f"{fault}: mpirun crashed after the job's end:\n{err[-3000:]}")
        check(named, f"{fault}: no message names {HOSTS[1]} (exit "
              f"{process.returncode} after {seconds:.1f} s):\n--- stderr\n{err[-3000:]}\n"
              f"--- stdout\n{out[-1500:]}")
        # Nothing left on either host, before and after the host comes back (a stalled
        # host's processes are still there, stopped, until it resumes: then they must go).
        hosts.check_clean(fault, wait=10,
                          hosts=HOSTS[:1] if fault.startswith("host-stalled") else HOSTS)
        recover(hosts, fault)
        hosts.check_clean(fault + " once recovered", wait=10)
        if fault.endswith("startup"):
            print(f"faults: {fault}: the job ended {seconds:.1f} s after the fault "
                  f"(--comm-timeout {FAULT_TIMEOUT}), nothing left on the hosts; the message: "
                  f"{named[0].strip()[:200]}")
            continue
        saved = [line["step"] for line in read_jsonl(steps) if line["step"] % 2 == 0]
        resumed = hosts.mpirun(placement((2, 2)), [
            args.exe, "--data", args.data, *COMMON, "--epochs", "5", "-b", "4", "--lr", "0.002",
            "--checkpoint-dir", work, "--resume", os.path.join(work, "last.safetensors"),
            "--max-steps", str(saved[-1] + 1)])
        check("resumed from " + os.path.join(work, "last.safetensors") in resumed.stdout,
              f"{fault}: --resume did not continue:\n{resumed.stdout[-2000:]}")
        print(f"faults: {fault}: the job ended {seconds:.1f} s after the fault "
              f"(--comm-timeout {FAULT_TIMEOUT}), nothing left on the hosts, last.safetensors "
              f"resumed; the message: {named[0].strip()[:200]}")


def case_data(args, hosts):
    """Each host its own copy of --data (a bind mount inside the second host's mount
    namespace): a copy that differs stops every rank before any work, naming the host; so
    does a --resume file that only the first host has."""
    copy = os.path.join(args.work, "other-copy")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(args.data, copy)
    first_class = os.path.join(copy, "train", sorted(os.listdir(os.path.join(copy, "train")))[0])
    victim = os.path.join(first_class, sorted(os.listdir(first_class))[0])
    train = [args.exe, "--data", args.data, *COMMON, "--epochs", "1", "--max-steps", "1",
             "-b", "4", "--checkpoint-dir", os.path.join(args.work, "data-checks")]
    hosts.tool("exec", HOSTS[1], "mount", "--bind", copy, args.data)
    try:
        for change in ("a file missing", "a file renamed"):
            if change == "a file missing":
                os.rename(victim, victim + ".away")  # no image extension: not scanned
                expected = "has 10 classes and 299 images, on host"
            else:
                os.rename(victim + ".away", victim[:-4] + "_renamed.png")
                expected = "has 10 classes and 300 images but other class or file names"
            result = hosts.mpirun(placement((2, 2)), train, expect_ok=False)
            message = (f"--data: the ranks see different datasets: {args.data}/train on host "
                       f"{HOSTS[1]} (rank 2) {expected}")
            check(result.returncode != 0 and message in result.stderr,
                  f"{change} on {HOSTS[1]}: expected '{message}' and a failure, got exit "
                  f"{result.returncode}:\n{result.stderr[-2000:]}")
            check(result.stderr.count("the ranks see different datasets") == 1,
                  "more than one rank printed the dataset message:\n" + result.stderr)
            print(f"data: {change} on {HOSTS[1]}: every rank stopped, one message: "
                  f"{message} ... ({result.seconds:.1f} s)")
    finally:
        hosts.tool("exec", HOSTS[1], "umount", args.data, check_rc=False)
    # A checkpoint only the first host sees (an empty folder over it on the second).
    here = os.path.join(args.work, "resume-here")
    shutil.rmtree(here, ignore_errors=True)
    os.makedirs(here)
    run_train(hosts, args, "resume-source", (4,), "ring-mpi", [], local=True)
    shutil.copy(os.path.join(args.work, "resume-source", "last.safetensors"), here)
    empty = os.path.join(args.work, "resume-empty")
    os.makedirs(empty, exist_ok=True)
    hosts.tool("exec", HOSTS[1], "mount", "--bind", empty, here)
    try:
        resume = os.path.join(here, "last.safetensors")
        result = hosts.mpirun(placement((2, 2)), train + ["--resume", resume], expect_ok=False)
    finally:
        hosts.tool("exec", HOSTS[1], "umount", here, check_rc=False)
    named = [line for line in result.stderr.splitlines()
             if "--resume" in line and line.endswith(f"(on host {HOSTS[1]})")]
    check(result.returncode != 0 and named,
          f"a --resume file missing on {HOSTS[1]} was not named with its host:\n" +
          result.stderr[-2000:])
    print(f"data: --resume missing on {HOSTS[1]} only: "
          f"{named[0]}")
    check_shards_across_hosts(args, hosts)


def check_shards_across_hosts(args, hosts):
    """WebDataset shards (tools/make_webdataset_shards.py) on both hosts: a short run trains;
    a copy on the second host whose first image is one byte longer stops every rank."""
    shards = os.path.join(args.work, "shards")
    shutil.rmtree(shards, ignore_errors=True)
    tool = os.path.join(HERE, "..", "..", "tools", "make_webdataset_shards.py")
    patterns = []
    for split in ("train", "val"):
        made = subprocess.run([sys.executable, tool, "--folder", os.path.join(args.data, split),
                               "--out", shards, "--prefix", split, "--samples-per-shard", "100"],
                              capture_output=True, text=True, check=True)
        patterns.append(made.stdout.split(": ")[-1].strip())
    train = [args.exe, "--data", patterns[0], "--val-data", patterns[1], *COMMON, "--epochs", "1",
             "--max-steps", "3", "-b", "4", "--checkpoint-dir", os.path.join(args.work, "shard-run")]
    started = time.monotonic()
    result = hosts.mpirun(placement((1, 1)), train)
    check("reached --max-steps at step 3" in result.stdout,
          "2 hosts did not train from shards:\n" + result.stdout[-2000:])
    copy = os.path.join(args.work, "shards-other")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(shards, copy)
    first = os.path.join(copy, "train-000000.tar")
    with tarfile.open(first) as archive:
        members = [(info, archive.extractfile(info).read()) for info in archive.getmembers()]
    with tarfile.open(first, "w", format=tarfile.GNU_FORMAT) as archive:
        for index, (info, data) in enumerate(members):
            data += b"\0" if index == 0 else b""  # PNG decoders ignore bytes after IEND
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    hosts.tool("exec", HOSTS[1], "mount", "--bind", copy, shards)
    try:
        result = hosts.mpirun(placement((1, 1)), train, expect_ok=False)
    finally:
        hosts.tool("exec", HOSTS[1], "umount", shards, check_rc=False)
    message = (f"--data: the ranks see different datasets: the shards in {shards} on host "
               f"{HOSTS[1]} (rank 1) has 10 classes and 300 images but other")
    check(result.returncode != 0 and message in result.stderr,
          f"a rewritten shard on {HOSTS[1]}: expected '{message}', got exit "
          f"{result.returncode}:\n{result.stderr[-2000:]}")
    print(f"data: shards train on 2 hosts; a shard rewritten on {HOSTS[1]}: {message} ... "
          f"({time.monotonic() - started:.1f} s for both)")


CASES = {"collectives": case_collectives, "train": case_train, "faults": case_faults,
         "data": case_data}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("case", choices=sorted(CASES))
    parser.add_argument("--sim-hosts", required=True, help="tools/sim_hosts.sh")
    parser.add_argument("--build", required=True, help="the build directory")
    parser.add_argument("--exe", help="resnet_train (train, faults)")
    parser.add_argument("--data", help="a small ImageFolder (train, faults)")
    parser.add_argument("--work", help="a scratch directory (train, faults)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("SKIP: simulated hosts need root (network and mount namespaces)")
        sys.exit(77)
    if args.case != "collectives" and not os.path.isdir(os.path.join(args.data or "", "train")):
        print(f"SKIP: no dataset at {args.data} (needs Debian's dataset-fashion-mnist)")
        sys.exit(77)
    try:
        with SimHosts(args.sim_hosts) as hosts:
            CASES[args.case](args, hosts)
    except (Failure, subprocess.TimeoutExpired) as error:
        print(f"FAIL {args.case}: {error}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
