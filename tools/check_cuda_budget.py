#!/usr/bin/env python3
"""Holds the CUDA kernels' machine code to a budget, on a machine without a GPU.

    tools/check_cuda_budget.py --budget tests/cuda_budget/budget.tsv OBJECT.o [...]

For every kernel in the objects' sm_90 cubins (the CUDA build's kernels/cuda/*.cu.o):
  - no spills, no stack frame, no local memory, in any kernel;
  - for each kernel a row of the budget matches (the first whose regex finds the kernel's
    readable name, as tools/sass_loop_stats.py prints it): registers per thread at most
    max_regs, the blocks per SM those registers allow (65,536 registers an SM, allocated per
    warp in units of 256) at least min_blocks, the instructions per math instruction (HMMA or
    FFMA) of one trip through the main loop at most max_per_math, and where async128 is
    "yes", every cp.async (LDGSTS) of that loop a 16-byte copy;
  - every GEMM kernel (gemm_ in its name) has a row: a new configuration comes with a budget.
Prints one line per kernel with its figures and exits 1 naming each breach, so a change that
adds instructions to a main loop, registers that cost a block per SM, or a spill fails in CI
rather than on a GPU months later. Shared memory per block is held by static_asserts in
kernels/cuda/gemm_tiles.cuh (dynamic shared memory is not in the object's resource table).

--expect-breach KIND (spill, regs, blocks, per_math, async128, unbudgeted) inverts the exit
status for the self-test: 0 only when some breach of that kind was found.
Exit 77 (ctest's skip code here) when NVIDIA's cuobjdump or nvdisasm cannot be found.
"""

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sass_loop_stats as sass  # noqa: E402

SKIP = 77
REGISTERS_PER_SM = 65536
REGISTER_UNIT = 256  # registers are allocated to a warp in units of 256
MAX_BLOCKS_PER_SM = 32
MAX_THREADS_PER_SM = 2048


def read_budget(path):
    """[(regex, row dict)] in file order; '#' starts a comment, '-' is no limit."""
    rows = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = line.split("\t")
            fields = [x.strip() for x in fields if x.strip()]
            if len(fields) != 6:
                sys.exit(f"{path}:{number}: want 6 tab-separated fields (kernel, threads, max_regs, "
                         f"min_blocks, max_per_math, async128), found {len(fields)}")
            kernel, threads, max_regs, min_blocks, max_per_math, async128 = fields
            value = (lambda text, kind: None if text == "-" else kind(text))
            rows.append((re.compile(kernel), {
                "line": number, "pattern": kernel, "threads": int(threads),
                "max_regs": value(max_regs, int), "min_blocks": value(min_blocks, int),
                "max_per_math": value(max_per_math, float), "async128": async128 == "yes"}))
    return rows


def blocks_per_sm(registers, threads):
    """Blocks of `threads` threads that `registers` per thread allow on an SM of sm_90."""
    warps = (threads + 31) // 32
    per_warp = (registers * 32 + REGISTER_UNIT - 1) // REGISTER_UNIT * REGISTER_UNIT
    by_registers = REGISTERS_PER_SM // (per_warp * warps) if per_warp else MAX_BLOCKS_PER_SM
    return min(by_registers, MAX_BLOCKS_PER_SM, MAX_THREADS_PER_SM // threads)


def async_copies(body):
    """(cp.async copies in a main loop's body, how many of them are 16-byte)."""
    copies = [op for op in body or [] if op.startswith("LDGSTS")]
    return len(copies), sum(op.endswith(".128") for op in copies)


def check(objects, budget, arch):
    breaches = []  # (kind, message)
    lines = []
    for path in objects:
        table = sass.functions(sass.disassemble(path, arch))
        usage = sass.resources(path, arch)
        names = sorted(table)
        for name, pretty in zip(names, sass.demangle(names)):
            kernel = sass.readable(pretty)
            res = usage.get(name, {})
            regs = res.get("REG", 0)
            where = f"{os.path.basename(path)}: {kernel}"
            for field in ("STACK", "LOCAL"):
                if res.get(field, 0):
                    breaches.append(("spill", f"{where}: {res[field]} bytes of {field.lower()} "
                                              "memory (a spill or a local array)"))
            row = next((r for regex, r in budget if regex.search(kernel)), None)
            if row is None:
                if "gemm_" in kernel:
                    breaches.append(("unbudgeted", f"{where}: no row of the budget matches it"))
                lines.append(f"{regs:4d}    -      -      -  {kernel}")
                continue
            blocks = blocks_per_sm(regs, row["threads"])
            body = sass.main_loop(table[name])
            counts = sass.body_counts(body)
            per_math = counts["instr"] / counts["math"] if counts else None
            copies, wide = async_copies(body)
            per_math_text = f"{per_math:6.2f}" if per_math is not None else "     -"
            copies_text = f"{wide}/{copies}" if row["async128"] else "-"
            lines.append(f"{regs:4d} {blocks:4d} {per_math_text} {copies_text:>5s}  {kernel}")
            if row["max_regs"] is not None and regs > row["max_regs"]:
                breaches.append(("regs", f"{where}: {regs} registers > {row['max_regs']} "
                                         f"(budget line {row['line']})"))
            if row["min_blocks"] is not None and blocks < row["min_blocks"]:
                breaches.append(("blocks", f"{where}: {regs} registers x {row['threads']} threads "
                                           f"allow {blocks} blocks per SM < {row['min_blocks']} "
                                           f"(budget line {row['line']})"))
            if row["max_per_math"] is not None:
                if per_math is None:
                    breaches.append(("per_math", f"{where}: no main loop with math instructions "
                                                 f"(budget line {row['line']})"))
                elif per_math > row["max_per_math"]:
                    breaches.append(("per_math", f"{where}: {per_math:.2f} instructions per math "
                                                 f"instruction in the main loop > "
                                                 f"{row['max_per_math']} (budget line {row['line']})"))
            if row["async128"]:
                if copies == 0 or wide != copies:
                    breaches.append(("async128", f"{where}: {wide} of {copies} cp.async copies in "
                                                 f"the main loop are 16-byte (budget line {row['line']})"))
    return lines, breaches


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("objects", nargs="+", help="object files (.o) holding CUDA kernels")
    parser.add_argument("--budget", required=True, help="the budget (TSV)")
    parser.add_argument("--arch", default="sm_90", help="the cubins checked (default sm_90)")
    parser.add_argument("--expect-breach", default=None,
                        help="self-test: succeed only when a breach of this kind is found")
    args = parser.parse_args()
    for tool in ("cuobjdump", "nvdisasm"):
        if sass.tool_path(tool) is None:
            print(f"check_cuda_budget: SKIP: NVIDIA's {tool} not found (PATH, $CUDA_BIN, or "
                  "scripts/install-deps, which installs it where nvcc is)")
            return SKIP
    lines, breaches = check(args.objects, read_budget(args.budget), args.arch)
    print(f"{'regs':>4s} {'blk':>4s} {'/math':>6s} {'c16':>5s}  kernel ({args.arch}; blk: blocks "
          "per SM by registers; /math: main-loop instructions per HMMA/FFMA; c16: 16-byte "
          "cp.async of all)")
    print("\n".join(lines))
    for kind, message in breaches:
        print(f"BREACH [{kind}] {message}")
    if args.expect_breach:
        found = any(kind == args.expect_breach for kind, _ in breaches)
        print(f"self-test: a '{args.expect_breach}' breach was {'found' if found else 'NOT found'}")
        return 0 if found else 1
    print(f"{len(breaches)} breach(es) of the budget in {len(lines)} kernels")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
