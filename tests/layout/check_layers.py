#!/usr/bin/env python3
"""No arrow climbs back up a layer: checked on every #include and on the CMake target graph.

    check_layers.py --source ROOT --graph BUILD/target_graph.tsv   # the tree as it is
    check_layers.py --self-test                                     # planted violations are caught

The engine's layers, lowest first (a layer may use itself and the layers below it):
    kernels < collectives, data (side by side: neither uses the other) < nn < train < bench, tools
The emulators (sim/) stand where NVIDIA's libraries stand in a GPU build, beside the engine:
    sim/simt < sim/cuda < sim/nccl
No engine file includes sim/ (a sim build links sim/cuda and sim/nccl where a GPU build links
libcudart and libnccl; the kernels meet the SIMT emulator only through a force-included
prelude), and sim/ uses nothing of the engine but its foundation (FOUNDATION below). Within
kernels/, the CPU twins, the CUDA launchers and the tensor layer below them all (kernels/*.h,
*.cpp: tensors, memory, streams) never reach up to the dispatchers (kernels/ops.h, kernels/ops/).
The API headers of collectives/ (collectives/*.h) include each other and collectives/core/ only,
never the implementations in its other folders, which include them.
tests/ may use anything.
"""
import argparse
import os
import re
import subprocess
import sys

ENGINE_RANK = {"kernels": 1, "collectives": 2, "data": 2, "nn": 3, "train": 4, "bench": 5, "tools": 5}
SIM_RANK = {"sim/simt": 0, "sim/cuda": 1, "sim/nccl": 2}
# What of the engine the emulators may build on: errors, CUDA error checks, and the
# collectives' core (shared memory, timeouts, reductions), which the NCCL shim reuses.
FOUNDATION = ("kernels/error.h", "kernels/cuda/check_cuda.h", "collectives/core/", "collectives/cpu/")
FOUNDATION_TARGETS = {"engine_collectives_core"}
SOURCE = re.compile(r"\.(h|cpp|cu|cuh)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def unit(path):
    """The layer a path belongs to: 'sim/simt', 'kernels', ... or None (tests, top level)."""
    parts = path.split("/")
    if parts[0] == "sim" and len(parts) > 1:
        return "/".join(parts[:2]) if "/".join(parts[:2]) in SIM_RANK else None
    return parts[0] if parts[0] in ENGINE_RANK else None


def include_violation(path, include):
    src, dst = unit(path), unit(include)
    if src is None or dst is None or src == dst and src not in ("kernels", "collectives"):
        return None
    if src in SIM_RANK:
        if dst in SIM_RANK:
            return None if SIM_RANK[dst] <= SIM_RANK[src] else "an emulator uses one above it"
        return None if include.startswith(FOUNDATION) else "an emulator uses the engine"
    if dst in SIM_RANK:
        return "the engine includes an emulator"
    if src == "kernels" and dst == "kernels":
        if not (include == "kernels/ops.h" or include.startswith("kernels/ops/")):
            return None
        if path.startswith(("kernels/cpu/", "kernels/cuda/")):
            return "a CPU twin or CUDA launcher uses a dispatcher"
        if path.count("/") == 1 and path != "kernels/ops.h":
            return "the tensor layer (tensors, memory, streams) uses a dispatcher"
        return None
    if src == "collectives" and dst == "collectives":
        api_header = path.count("/") == 1 and path.endswith(".h")
        below = include.count("/") > 1 and not include.startswith("collectives/core/")
        return "a collectives API header uses an implementation" if api_header and below else None
    if ENGINE_RANK[dst] > ENGINE_RANK[src] or (ENGINE_RANK[dst] == ENGINE_RANK[src] and src != dst):
        return "a layer uses one above or beside it"
    return None


def check_includes(files):
    """files: {path: text}. Returns the violations, one line each."""
    found = []
    for path, text in sorted(files.items()):
        for include in INCLUDE.findall(text):
            why = include_violation(path, include)
            if why:
                found.append(f"{path}: #include \"{include}\": {why}")
    return found


def check_graph(lines):
    """lines of target_graph.tsv (target, folder, links). Returns the violations."""
    folder_of, links_of = {}, {}
    for line in lines:
        if not line.strip():
            continue
        target, folder, links = (line.rstrip("\n").split("\t") + ["", ""])[:3]
        folder_of[target] = folder
        links_of[target] = [link for link in links.split(";") if link]
    found = []
    for target, links in sorted(links_of.items()):
        src = unit(folder_of[target] + "/")
        if src is None:
            continue
        for link in links:
            if link not in folder_of:
                continue  # not the project's: a system or NVIDIA library
            dst = unit(folder_of[link] + "/")
            if dst is None:
                continue  # the top level's interface targets (warnings, sanitizers)
            why = None
            if src in SIM_RANK:
                if dst in SIM_RANK:
                    why = SIM_RANK[dst] > SIM_RANK[src] and "an emulator links one above it"
                elif link not in FOUNDATION_TARGETS:
                    why = "an emulator links the engine"
            elif dst in SIM_RANK:
                # The link-time stand-ins for libcudart and libnccl; never the SIMT emulator itself.
                why = dst == "sim/simt" and "the engine links the SIMT emulator"
            elif ENGINE_RANK[dst] > ENGINE_RANK[src] or (ENGINE_RANK[dst] == ENGINE_RANK[src] and src != dst):
                why = "a layer links one above or beside it"
            if why:
                found.append(f"target {target} ({folder_of[target]}) links {link} ({folder_of[link]}): {why}")
    return found


def tree_files(root):
    listed = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True)
    if listed.returncode == 0 and listed.stdout:
        paths = listed.stdout.split()
    else:  # not a git checkout (an exported tree): walk it
        paths = [os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs]
    return {p: open(os.path.join(root, p), errors="replace").read()
            for p in paths if SOURCE.search(p) and os.path.isfile(os.path.join(root, p))}


def self_test():
    """Each planted arrow must be caught, and the allowed ones must pass."""
    planted = {
        "kernels/ops/conv.cpp": '#include "sim/simt/simt.h"',
        "kernels/cuda/conv.cu": '#include "kernels/ops/conv.h"',
        "kernels/cuda/pool.cuh": '#include "kernels/ops.h"',
        "kernels/stream.cpp": '#include "kernels/ops.h"',
        "kernels/memory.cpp": '#include "kernels/ops/copy.h"',
        "collectives/communicator.h": '#include "collectives/communicators/nccl_comm.h"',
        "collectives/bootstrap.h": '#include "collectives/transports/peer_names.h"',
        "kernels/tensor.cpp": '#include "collectives/communicator.h"',
        "collectives/ring/ring_algorithms.cpp": '#include "data/loader.h"',
        "nn/model.cpp": '#include "train/trainer.h"',
        "sim/simt/launch.cpp": '#include "sim/cuda/streams.h"',
        "sim/nccl/group.cpp": '#include "collectives/ring/ring_algorithms.h"',
        "sim/cuda/streams.cpp": '#include "kernels/tensor.h"',
    }
    allowed = {
        "sim/nccl/progress.cpp": '#include "collectives/core/timeout.h"\n#include "sim/cuda/streams.h"',
        "sim/cuda/launch.cpp": '#include "kernels/cuda/check_cuda.h"\n#include "sim/simt/simt.h"',
        "kernels/ops/conv.cpp": '#include "kernels/cpu/conv.h"\n#include "kernels/tensor.h"',
        "kernels/ops/pool.cpp": '#include "kernels/ops/checks.h"\n#include "kernels/memory.h"',
        "kernels/ops.h": '#include "kernels/ops/pool.h"',
        "collectives/comm_options.h": '#include "collectives/core/timeout.h"\n#include "kernels/device.h"',
        "collectives/comm_factory.cpp": '#include "collectives/ring/ring_communicator.h"',
        "collectives/communicators/mpi_communicator.h": '#include "collectives/communicator.h"',
        "train/trainer.cpp": '#include "nn/model.h"\n#include "data/loader.h"',
        "tests/kernels/test_conv_simt.cpp": '#include "sim/simt/simt.h"',
    }
    graph_planted = ["simt_plain\tsim/simt\tengine_kernels", "engine_kernels\tkernels\tsimt_plain;engine_nn",
                     "engine_sim_nccl\tsim/nccl\tengine_collectives", "engine_nn\tnn\t",
                     "engine_collectives\tcollectives\t"]
    graph_allowed = ["engine_sim_nccl\tsim/nccl\tengine_collectives_core;engine_sim_runtime;Threads::Threads",
                     "engine_sim_runtime\tsim/cuda\tsimt_plain", "simt_plain\tsim/simt\t",
                     "engine_kernels\tkernels\tengine_sim_runtime", "engine_collectives_core\tcollectives\tengine_kernels"]
    failures = []
    for path, text in planted.items():
        if len(check_includes({path: text})) != 1:
            failures.append(f"missed: {path}: {text}")
    if check_includes(allowed):
        failures += [f"false alarm: {v}" for v in check_includes(allowed)]
    caught = check_graph(graph_planted)
    if len(caught) != 4:
        failures.append(f"graph: expected 4 planted links caught, got {caught}")
    if check_graph(graph_allowed):
        failures += [f"graph false alarm: {v}" for v in check_graph(graph_allowed)]
    for failure in failures:
        print(failure)
    print("self-test:", "FAILED" if failures else f"{len(planted) + 4} planted arrows caught, none allowed flagged")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", help="the source root")
    parser.add_argument("--graph", help="target_graph.tsv written by CMake (cmake/TargetGraph.cmake)")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    if not args.source or not args.graph:
        parser.error("--source and --graph are required (or --self-test)")
    files = tree_files(args.source)
    with open(args.graph) as graph:
        targets = graph.readlines()
    violations = check_includes(files) + check_graph(targets)
    for violation in violations:
        print(violation)
    print(f"{len(files)} files and {len(targets)} targets checked: {len(violations)} arrows climb back up")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
