#!/usr/bin/env python3
"""resnet_train under SLURM on two simulated hosts (tools/sim_slurm.sh: slurmctld and a
slurmd per host of tools/sim_hosts.sh, munge), the ctest case hosts_slurm:

    python3 tests/hosts/check_slurm.py --sim-hosts tools/sim_hosts.sh \\
        --sim-slurm tools/sim_slurm.sh --exe resnet_train --data DIR --work DIR \\
        --sbatch-dir docs/slurm

In order, each job on the subset of Fashion-MNIST at 32 px:
  srun         srun --mpi=pmix -N 2 --ntasks-per-node=2 --distribution=cyclic trains 3
               steps; the banner places the ranks as SLURM did (0, 2 | 1, 3)
  no PMIx      srun with no --mpi (MpiDefault=none) and with --mpi=pmi2: one line saying to
               pass --mpi=pmix, from one task, none of Open MPI's MPI_Init text, exit non-zero
  scancel      scancel mid-epoch: every task exits 143, rank 0 saved last at the step the
               ranks stopped at (the step metrics' last), nothing left on either host
  requeue      docs/slurm/resnet_train.sbatch (srun) given SLURM's --signal=USR1 notice:
               the ranks stop at one step, save, exit 138, the script requeues the job,
               which continues from that step (--resume auto) to --max-steps;
               docs/slurm/resnet_train_mpirun.sbatch (mpirun inside the allocation)
               preempted by `scontrol requeue` (SIGTERM to every process): the same
  node down    cihost1's slurmd killed: a 2-node srun fails naming cihost1, SLURM marks it
               down, then a 2-node job is refused with --immediate and a 1-node job runs
After each job nothing but the daemons may be left on either host: no process, no /dev/shm
entry. Needs root (namespaces) and Debian's slurm-wlm and munge; exits 77 (skipped)
without them. Only the standard library is used.
"""
import argparse
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check_hosts import HOSTS, SimHosts  # noqa: E402
from check_resnet_train import COMMON, Failure, check, fresh, read_jsonl  # noqa: E402

# What the ranks need in the simulated hosts: root, and MPI's TCP on their subnet.
JOB_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_btl_tcp_if_include": "198.18.0.0/24",
           "OMPI_MCA_oob_tcp_if_include": "198.18.0.0/24",
           # Not resnet_train_mpirun.sbatch's 10 s, which mpirun lingers 3.5 times at every
           # early end: these tiny ranks finish their step and save within 4 s of its SIGTERM.
           "OMPI_MCA_odls_base_sigkill_timeout": "4"}
PMIX_HINT = "pass --mpi=pmix to srun, or set MpiDefault=pmix in slurm.conf"


def checkpoint_step(path):
    """The step in a checkpoint's metadata (the safetensors header only)."""
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        return int(json.loads(f.read(length))["__metadata__"]["step"])


def exit_codes(srun_stderr):
    """{task: exit code} from srun's "cihost0: tasks 0-1: Exited with exit code 143"."""
    codes = {}
    for first, last, code in re.findall(
            r"tasks? (\d+)(?:-(\d+))?: Exited with exit code (\d+)", srun_stderr):
        for task in range(int(first), int(last or first) + 1):
            codes[task] = int(code)
    return codes


class Slurm:
    """The cluster on the hosts for the whole check, ended whatever happens."""

    def __init__(self, hosts, script, logs):
        self.hosts = hosts
        self.script = script
        self.env = dict(hosts.env, **JOB_ENV)
        self.logs = logs

    def __enter__(self):
        self.tool("up")
        return self

    def __exit__(self, failure, *exc):
        if failure:  # the daemons' logs outlive the cluster, for whoever reads the failure
            state = self.tool("state", check_rc=False).stdout.strip()
            shutil.rmtree(self.logs, ignore_errors=True)
            os.makedirs(self.logs)
            for folder, _, names in os.walk(state):
                for name in names:
                    if name.endswith(".log"):
                        shutil.copy(os.path.join(folder, name), self.logs)
            print(f"the SLURM daemons' logs: {self.logs}", file=sys.stderr)
        self.tool("down", check_rc=False)

    def tool(self, *args, check_rc=True, timeout=120):
        result = subprocess.run([self.script, *args], env=self.env, capture_output=True,
                                text=True, timeout=timeout)
        if check_rc and result.returncode != 0:
            raise Failure(f"sim_slurm.sh {' '.join(args)} exited {result.returncode}:\n"
                          f"{result.stdout}{result.stderr}")
        return result

    def srun(self, args, timeout=120):
        started = time.monotonic()
        result = self.tool("srun", *args, check_rc=False, timeout=timeout)
        result.seconds = time.monotonic() - started
        return result

    def start(self, command, *args):
        return subprocess.Popen([self.script, command, *args], env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)

    def jobs(self):
        return self.tool("squeue", "-h", "-o", "%i").stdout.split()

    def field(self, job, name):
        shown = self.tool("scontrol", "show", "job", "-o", job).stdout
        return re.search(rf"\b{name}=(\S+)", shown).group(1)

    def state(self, job):
        return self.field(job, "JobState")

    def wait_state(self, job, states, timeout):
        deadline = time.monotonic() + timeout
        while (state := self.state(job)) not in states:
            check(time.monotonic() < deadline, f"job {job} still {state} after {timeout} s, "
                  f"not {'/'.join(states)}")
            time.sleep(0.2)
        return state

    def check_clean(self, after, wait=10, also_allowed=(), shm_allowed=None):
        """Only the daemons left on the hosts (slurmctld's slurmscriptd is its own child),
        and nothing in either /dev/shm, within `wait` seconds of a job's end."""
        daemons = set(self.tool("daemons").stdout.split())
        allowed = ("slurmscriptd", "", *also_allowed)
        deadline = time.monotonic() + wait
        while True:
            left = [pid for pid in self.hosts.tool("pids", *HOSTS).stdout.split()
                    if pid not in daemons and comm(pid) not in allowed]
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        check(not left, f"after {after}: left on the hosts: {SimHosts.describe(left)}")
        for host in HOSTS:
            entries = [entry for entry in self.hosts.tool("shm", host).stdout.split()
                       if not (shm_allowed and re.fullmatch(shm_allowed, entry))]
            check(not entries, f"after {after}: /dev/shm on {host} holds {entries}")


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def wait_for_lines(path, count, timeout=60):
    deadline = time.monotonic() + timeout
    while not (os.path.exists(path) and len(open(path).readlines()) >= count):
        check(time.monotonic() < deadline, f"{path}: not {count} lines within {timeout} s")
        time.sleep(0.1)


def train_args(args, work, extra):
    return [args.exe, "--data", args.data, *COMMON, "-b", "4", "--lr", "0.002",
            "--checkpoint-dir", os.path.join(work, "checkpoints"),
            "--step-metrics", os.path.join(work, "steps.jsonl"), *extra]


def case_srun(args, slurm):
    work = fresh(args, "srun")
    result = slurm.srun(["--mpi=pmix", "-N", "2", "--ntasks-per-node=2",
                         "--distribution=cyclic",
                         *train_args(args, work, ["--epochs", "1", "--max-steps", "3"])])
    check(result.returncode == 0, f"srun --mpi=pmix exited {result.returncode}:\n"
          f"{result.stdout[-2000:]}{result.stderr[-3000:]}")
    placed = f"hosts: {HOSTS[0]} (ranks 0, 2), {HOSTS[1]} (ranks 1, 3)"
    check(placed in result.stdout, f"the banner lacks '{placed}':\n{result.stdout[:1500]}")
    check("reached --max-steps at step 3" in result.stdout, result.stdout[-1500:])
    step = checkpoint_step(os.path.join(work, "checkpoints", "last.safetensors"))
    check(step == 3, f"last.safetensors holds step {step}, not 3")
    slurm.check_clean("srun --mpi=pmix")
    print(f"srun: --mpi=pmix -N 2 --ntasks-per-node=2 cyclic: 3 steps, {placed} "
          f"({result.seconds:.1f} s)")


def case_no_pmix(args, slurm):
    work = fresh(args, "no-pmix")
    for mpi, said in (([], "with no PMI"), (["--mpi=pmi2"], "with --mpi=pmi2")):
        result = slurm.srun([*mpi, "-N", "2", "--ntasks-per-node=2",
                             *train_args(args, work, ["--max-steps", "1"])])
        lines = [line for line in result.stderr.splitlines() if "resnet_train:" in line]
        label = " ".join(mpi) or "no --mpi"
        check(result.returncode != 0, f"srun {label} exited 0")
        check(len(lines) == 1 and said in lines[0] and PMIX_HINT in lines[0],
              f"srun {label}: expected one line '... {said} ... {PMIX_HINT}', got:\n"
              f"{result.stderr[-3000:]}")
        check("MPI_Init" not in result.stderr and "OPAL ERROR" not in result.stderr,
              f"srun {label}: Open MPI's abort text is still there:\n{result.stderr[-3000:]}")
        slurm.check_clean(f"srun {label}")
        print(f"no PMIx: srun {label}: exit {result.returncode}, one line: {lines[0][:150]}...")


def case_scancel(args, slurm):
    work = fresh(args, "scancel")
    steps = os.path.join(work, "steps.jsonl")
    process = slurm.start("srun", "--mpi=pmix", "-N", "2", "--ntasks-per-node=2",
                          *train_args(args, work, ["--epochs", "20"]))
    try:
        wait_for_lines(steps, 4)
        (job,) = slurm.jobs()
        slurm.tool("scancel", job)
        cancelled = time.monotonic()
        out, err = process.communicate(timeout=40)
        seconds = time.monotonic() - cancelled
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    stopped = re.search(r"stopped by SIGTERM at step (\d+); saved", out)
    check(stopped, f"scancel: no stop line from rank 0:\n{out[-1500:]}\n{err[-2000:]}")
    step = int(stopped.group(1))
    codes = exit_codes(err)
    check(codes == {task: 143 for task in range(4)},
          f"scancel: tasks' exit codes {codes}, expected 143 for tasks 0-3:\n{err[-2000:]}")
    logged = read_jsonl(steps)[-1]["step"]
    saved = checkpoint_step(os.path.join(work, "checkpoints", "last.safetensors"))
    check(logged == step and saved == step,
          f"scancel: stopped at step {step}, last logged step {logged}, last.safetensors {saved}")
    check(seconds < 15, f"scancel: srun took {seconds:.1f} s to end")
    slurm.check_clean("scancel")
    print(f"scancel: every rank stopped at step {step} (tasks 0-3 exited 143, "
          f"last.safetensors holds step {saved}) {seconds:.1f} s after scancel; nothing left")


def requeued_run(args, slurm, script, interrupt, signal_name, max_steps=12):
    """Submits `script`, interrupts it once steps are logged (the ranks stop at a print
    point), follows the requeued job to its end; returns the stop step and the seconds."""
    work = fresh(args, "requeue-" + signal_name)
    steps = os.path.join(work, "steps.jsonl")
    out = os.path.join(work, "job.out")
    env_checkpoints = os.path.join(work, "checkpoints")
    slurm.env.update(RESNET_TRAIN=args.exe, CHECKPOINT_DIR=env_checkpoints)
    submitted = slurm.tool(
        "sbatch", "--parsable", "-N", "2", "--ntasks-per-node=2", "--cpus-per-task=1",
        "--time=10", "-o", out, script, "--data", args.data, *COMMON, "-b", "4", "--lr",
        "0.002", "--epochs", "20", "--max-steps", str(max_steps), "--step-metrics", steps)
    job = submitted.stdout.strip().split(";")[0]
    started = time.monotonic()
    wait_for_lines(steps, 2)
    interrupt(job)
    # Back in the queue (SLURM starts it again once the first run's credential expires: the
    # 5 s of sim_slurm.sh here, 120 s by default).
    deadline = time.monotonic() + 40
    pattern = rf"stopped by {signal_name} at step (\d+); saved"
    while not (stopped := re.search(pattern, text := open(out).read())):
        check(time.monotonic() < deadline, f"{signal_name}: no stop line from rank 0 in the "
              f"job's output within 40 s:\n{text[-3000:]}")
        time.sleep(0.2)
    while slurm.field(job, "Restarts") == "0":
        check(time.monotonic() < deadline, f"job {job} not requeued 40 s after {signal_name}")
        time.sleep(0.2)
    step = int(stopped.group(1))
    saved = checkpoint_step(os.path.join(env_checkpoints, "last.safetensors"))
    check(saved == step, f"{signal_name}: stopped at step {step}, last.safetensors holds {saved}")
    check(step < max_steps, f"{signal_name}: the first run reached --max-steps before it")
    slurm.wait_state(job, ("COMPLETED", "FAILED", "CANCELLED"), timeout=120)
    seconds = time.monotonic() - started
    text = open(out).read()
    check(slurm.state(job) == "COMPLETED", f"the requeued job ended {slurm.state(job)}:\n"
          f"{text[-3000:]}")
    resumed = f"resumed from {os.path.join(env_checkpoints, 'last.safetensors')} ("
    check("restart 1" in text and resumed in text and f", step {step})" in text,
          f"{signal_name}: the requeued job did not continue from step {step}:\n{text[-3000:]}")
    check(f"reached --max-steps at step {max_steps}" in text, text[-2000:])
    logged = [line["step"] for line in read_jsonl(steps)]
    check(logged[-(max_steps - step):] == list(range(step + 1, max_steps + 1)),
          f"{signal_name}: after the requeue the steps logged were {logged}")
    slurm.check_clean(f"{signal_name} and the requeue")
    return step, seconds


def case_requeue(args, slurm):
    usr1 = lambda job: slurm.tool("scancel", "--signal=USR1", job)  # as --signal=USR1@120
    step, seconds = requeued_run(args, slurm, os.path.join(args.sbatch_dir,
                                                           "resnet_train.sbatch"),
                                 usr1, "SIGUSR1")
    print(f"requeue: resnet_train.sbatch (srun), SIGUSR1 to the steps: every rank stopped at "
          f"step {step}, the script requeued the job, which resumed there and reached "
          f"--max-steps ({seconds:.1f} s)")
    preempt = lambda job: slurm.tool("scontrol", "requeue", job)  # SIGTERM, back in the queue
    step, seconds = requeued_run(args, slurm, os.path.join(args.sbatch_dir,
                                                           "resnet_train_mpirun.sbatch"),
                                 preempt, "SIGTERM")
    print(f"requeue: resnet_train_mpirun.sbatch, scontrol requeue (SIGTERM to every process): "
          f"every rank stopped at step {step}, the requeued job resumed there and reached "
          f"--max-steps ({seconds:.1f} s)")


def case_node_down(args, slurm):
    work = fresh(args, "node-down")
    slurm.tool("stop", HOSTS[1])
    lost = time.monotonic()
    train = train_args(args, work, ["--epochs", "1", "--max-steps", "1"])
    result = slurm.srun(["--mpi=pmix", "-N", "2", "--ntasks-per-node=2", *train], timeout=60)
    named = [line for line in result.stderr.splitlines() if f"failed on node {HOSTS[1]}" in line]
    check(result.returncode != 0 and named, f"a 2-node srun with {HOSTS[1]}'s slurmd gone: "
          f"exit {result.returncode}, expected a line naming it:\n{result.stderr[-2000:]}")
    deadline = time.monotonic() + 30
    while "down" not in (state := slurm.tool("sinfo", "-h", "-n", HOSTS[1], "-o", "%T").stdout):
        check(time.monotonic() < deadline, f"{HOSTS[1]} still '{state.strip()}' after 30 s")
        time.sleep(0.5)
    marked = time.monotonic() - lost
    # Our ranks are gone; the step's slurmstepd on the first host is not: SLURM's PMIx
    # plugin keeps retrying to reach the lost node (seen: over a minute; PMIxTimeout does not
    # bound it), which is SLURM's to end (KillWait, or the cluster's end here). SLURM
    # SIGKILLed the ranks inside MPI_Init, waiting for the others: Open MPI's shared-memory
    # segments stay (under mpirun its daemon removes them), and are removed here.
    slurm.check_clean(f"the launch on a lost {HOSTS[1]}", also_allowed=("slurmstepd",),
                      shm_allowed=rf"vader_segment\.{HOSTS[0]}\..*")
    slurm.hosts.tool("exec", HOSTS[0], "sh", "-c", "rm -f /dev/shm/vader_segment.*")
    refused = slurm.srun(["--immediate=2", "-N", "2", "hostname"])
    check(refused.returncode != 0 and "Required node not available" in refused.stderr,
          f"a 2-node job with {HOSTS[1]} down: exit {refused.returncode}:\n{refused.stderr}")
    placed = slurm.srun(["-N", "1", "-n", "2", "hostname"])
    check(placed.returncode == 0 and placed.stdout.split() == [HOSTS[0]] * 2,
          f"a 1-node job with {HOSTS[1]} down: exit {placed.returncode}:\n"
          f"{placed.stdout}{placed.stderr}")
    slurm.check_clean("the 1-node job", also_allowed=("slurmstepd",))
    print(f"node down: {named[0].strip()} ({result.seconds:.1f} s); SLURM marked it "
          f"{state.strip()} {marked:.0f} s after its slurmd died; then 2 nodes were refused "
          f"with --immediate, 1 node placed on {HOSTS[0]}")


CASES = [case_srun, case_no_pmix, case_scancel, case_requeue, case_node_down]


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sim-hosts", required=True, help="tools/sim_hosts.sh")
    parser.add_argument("--sim-slurm", required=True, help="tools/sim_slurm.sh")
    parser.add_argument("--exe", required=True, help="resnet_train")
    parser.add_argument("--data", required=True, help="a small ImageFolder")
    parser.add_argument("--work", required=True, help="a scratch directory")
    parser.add_argument("--sbatch-dir", required=True, help="docs/slurm, the sbatch scripts")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("SKIP: simulated hosts need root (network and mount namespaces)")
        sys.exit(77)
    missing = [tool for tool in ("slurmctld", "slurmd", "srun", "munged")
               if not shutil.which(tool, path="/usr/sbin:/usr/bin:/sbin:/bin")]
    if missing:
        print(f"SKIP: no {', '.join(missing)} (scripts/install-deps installs SLURM and munge)")
        sys.exit(77)
    if not os.path.isdir(os.path.join(args.data, "train")):
        print(f"SKIP: no dataset at {args.data} (needs Debian's dataset-fashion-mnist)")
        sys.exit(77)
    cases = [case for case in CASES if case.__name__[5:] in os.environ.get(
        "SLURM_CASES", " ".join(case.__name__[5:] for case in CASES)).split()]
    started = time.monotonic()
    try:
        logs = os.path.join(args.work, "slurm-logs")
        with SimHosts(args.sim_hosts) as hosts, Slurm(hosts, args.sim_slurm, logs) as slurm:
            for case in cases:
                case(args, slurm)
    except (Failure, subprocess.TimeoutExpired) as error:
        print(f"FAIL slurm: {error}", file=sys.stderr)
        sys.exit(1)
    print(f"slurm: all cases passed in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
