#!/usr/bin/env python3
"""Static SASS figures of each GEMM kernel's main loop, for judging a CUDA kernel change on a
machine without a GPU.

    tools/sass_loop_stats.py build/kernels/CMakeFiles/engine_kernels.dir/cuda/conv.cu.o

For every kernel whose name matches --kernels (a regular expression), it finds the loop that
holds the most math instructions (FFMA, HMMA), the main K loop, and prints what one trip
through it issues: all instructions, the math ones, global and shared loads/stores, barriers,
calls (64-bit integer division is a call to a subroutine of ~70 instructions), generic
loads (LD: WMMA's fragment loads compile to these, not LDS/LDSM), cp.async copies (LDGSTS,
global to shared without registers) and the instructions per math instruction, the figure a
faster kernel lowers; and the registers a thread of the kernel takes (they bound how many
blocks share an SM). Counts are static (one
pass over the loop body with its inner loops counted once): a proxy to compare two builds of
the same kernel, not a timing.

It needs NVIDIA's cuobjdump and nvdisasm: on PATH, in $CUDA_BIN, or from PyPI
(pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm; found under site-packages).
"""

import argparse
import glob
import os
import re
import shutil
import site
import subprocess
import sys
import tempfile

MATH = ("FFMA", "HMMA")
GROUPS = {
    "math": lambda op: op.startswith(MATH),
    # LDGSTS (cp.async) and LDGDEPBAR (its commit_group) are counted apart
    "ldg": lambda op: op.startswith("LDG") and not op.startswith(("LDGSTS", "LDGDEPBAR")),
    "lds": lambda op: op.startswith(("LDS", "LDSM")),
    # generic loads: shared memory read through a pointer the compiler did not place in it
    "ld": lambda op: op == "LD" or op.startswith("LD."),
    "sts": lambda op: op.startswith("STS"),
    "bar": lambda op: op.startswith("BAR"),
    "call": lambda op: op.startswith("CALL"),
    "async": lambda op: op.startswith("LDGSTS"),
}


def tool_path(name):
    """Where NVIDIA's `name` (cuobjdump, nvdisasm) is: $CUDA_BIN, PATH, a pip install of it
    (site-packages), or where scripts/install-deps puts it; None when nowhere."""
    folder = os.environ.get("CUDA_BIN")
    if folder and os.access(os.path.join(folder, name), os.X_OK):
        return os.path.join(folder, name)
    if shutil.which(name):
        return shutil.which(name)
    cache = os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))
    roots = site.getsitepackages() + [site.getusersitepackages(),
                                      os.path.join(cache, "resnet-engine", "cuda-tools")]
    for root in roots:
        for path in glob.glob(os.path.join(root, "nvidia", "*", "bin", name)):
            if os.access(path, os.X_OK):
                return path
    return None


def find_tool(name):
    path = tool_path(name)
    if path is None:
        sys.exit(f"sass_loop_stats: {name} not found (PATH, $CUDA_BIN, scripts/install-deps, or "
                 f"pip install nvidia-cuda-{'cuobjdump' if name == 'cuobjdump' else 'nvdisasm'})")
    return path


def resources(path, arch=None):
    """{mangled name: {"REG": n, "STACK": n, "SHARED": n, "LOCAL": n, ...}} from cuobjdump's
    resource usage, for the cubins of `arch` (e.g. "sm_90"; None: every arch, later wins)."""
    out = subprocess.run([find_tool("cuobjdump"), "--dump-resource-usage", os.path.abspath(path)],
                         check=True, capture_output=True, text=True).stdout
    result = {}
    current_arch = None
    lines = out.splitlines()
    for i, line in enumerate(lines):
        found = re.match(r"^arch = (sm_\d+\w*)", line)
        if found:
            current_arch = found.group(1)
        function = re.match(r"^\s*Function (\S+):\s*$", line)
        if function and i + 1 < len(lines) and (arch is None or current_arch == arch):
            result[function.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+(?:\[\d+\])?):(\d+)",
                                                                         lines[i + 1])}
    return result


def registers(path, arch=None):
    """{mangled name: registers per thread}."""
    return {name: usage.get("REG", 0) for name, usage in resources(path, arch).items()}


def disassemble(path, arch=None):
    """nvdisasm's text of the object's cubins (those of `arch` only, when given)."""
    nvdisasm = find_tool("nvdisasm")
    if path.endswith(".cubin"):
        cubins = [path]
        folder = None
    else:
        folder = tempfile.mkdtemp(prefix="sass_loop_stats.")
        subprocess.run([find_tool("cuobjdump"), "-xelf", "all", os.path.abspath(path)], cwd=folder,
                       check=True, stdout=subprocess.DEVNULL)
        cubins = sorted(glob.glob(os.path.join(folder, "*.cubin")))
        if arch is not None:
            cubins = [c for c in cubins if c.endswith(f".{arch}.cubin")]
        if not cubins:
            sys.exit(f"sass_loop_stats: {path} holds no cubin" + (f" for {arch}" if arch else ""))
    text = ""
    for cubin in cubins:
        text += subprocess.run([nvdisasm, "-c", cubin], check=True, capture_output=True,
                               text=True).stdout
    if folder:
        shutil.rmtree(folder)
    return text


def demangle(names):
    if not shutil.which("c++filt"):
        return names
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
    return out.stdout.splitlines()


_HEADER = re.compile(r"^\.text\.(\S+):$")
_LABEL = re.compile(r"^(\.L_x_\d+):$")
_INSTRUCTION = re.compile(r"^\s*/\*([0-9a-f]+)\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)(.*);")
_BRANCH_TARGET = re.compile(r"\((\.L_x_\d+)\)")


def functions(text):
    """{mangled name: [(address, opcode, whole line)], labels {label: address}}"""
    result = {}
    current = None
    pending_labels = []
    for line in text.splitlines():
        # nvdisasm's lines start with their kind: "." for a section or label, spaces for an
        # instruction; the cheap test first (a 50 MB cubin's text is a million lines).
        if line.startswith(".text."):
            header = _HEADER.match(line)
            if header:
                current = {"ops": [], "labels": {}}
                result[header.group(1)] = current
                continue
        if current is None:
            continue
        if line.startswith(".L_x_"):
            label = _LABEL.match(line)
            if label:
                pending_labels.append(label.group(1))
            continue
        instruction = _INSTRUCTION.match(line) if "/*" in line else None
        if instruction:
            address = int(instruction.group(1), 16)
            for name in pending_labels:
                current["labels"][name] = address
            pending_labels = []
            current["ops"].append((address, instruction.group(2), instruction.group(3)))
    return result


def main_loop(function):
    """The loop (target, branch address) holding the most math instructions: its opcodes."""
    ops = function["ops"]
    index_of = {address: i for i, (address, _, _) in enumerate(ops)}
    # math_before[i]: math instructions among ops[:i], so a loop's count is one subtraction
    # rather than a walk of its body (the walk made this quadratic in a kernel's branches).
    math_before = [0]
    for _, op, _ in ops:
        math_before.append(math_before[-1] + GROUPS["math"](op))
    best = None  # (math, first, last)
    for last, (address, op, rest) in enumerate(ops):
        if not op.startswith("BRA"):
            continue
        target = _BRANCH_TARGET.search(rest)
        if not target or target.group(1) not in function["labels"]:
            continue
        start = function["labels"][target.group(1)]
        if start > address:
            continue
        first = index_of[start]
        math = math_before[last + 1] - math_before[first]
        if math and (best is None or math > best[0]):
            best = (math, first, last)
    return [o for _, o, _ in ops[best[1]:best[2] + 1]] if best else None


def readable(pretty):
    """A demangled kernel name without the namespace and parameter list, bf16 for its type."""
    for long, short in (("engine::cuda::", ""), ("__nv_bfloat16", "bf16"), (" >", ">")):
        pretty = pretty.replace(long, short)
    return re.sub(r"\((int|long)(, \1)*, .*\)$", "", pretty)


def loop_counts(function):
    """{group: count, "instr": n} of the main loop's one trip, or None without a math loop."""
    return body_counts(main_loop(function))


def body_counts(body):
    """{group: count, "instr": n} of a loop body (main_loop's), or None for no body."""
    if body is None:
        return None
    counts = {g: sum(test(o) for o in body) for g, test in GROUPS.items()}
    counts["instr"] = len(body)
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("object", help="an object file (.o) or a .cubin")
    parser.add_argument("--kernels", default="gemm_", help="regex on the mangled kernel names")
    parser.add_argument("--arch", default=None, help="only the cubins of this arch (e.g. sm_90)")
    args = parser.parse_args()
    table = functions(disassemble(args.object, args.arch))
    regs = registers(args.object, args.arch)
    names = sorted(n for n in table if re.search(args.kernels, n))
    pretty_names = demangle(names)
    print(f"{'instr':>6s} " + " ".join(f"{g:>5s}" for g in GROUPS) +
          f" {'per_math':>8s} {'regs':>4s}  kernel")
    for name, pretty in zip(names, pretty_names):
        counts = loop_counts(table[name])
        if counts is None:
            continue
        print(f"{counts['instr']:6d} " + " ".join(f"{counts[g]:5d}" for g in GROUPS) +
              f" {counts['instr'] / counts['math']:8.2f} {regs.get(name, 0):4d}  {readable(pretty)}")

if __name__ == "__main__":
    main()
