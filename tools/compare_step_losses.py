#!/usr/bin/env python3
"""Two training runs' per-step losses (resnet_train --step-metrics), step by step, each within
its own relative tolerance: N ranks x batch b with --sync-bn against one rank x batch N*b is
the same computation but for the order of its sums, so the first steps agree to rounding and
later ones drift (rounding flips max-pool and ReLU decisions that later steps amplify).

  compare_step_losses.py ONE.jsonl MANY.jsonl --tolerances 1e-5,1e-5,1e-2

Exits 1, naming every step's difference, when the runs' step counts differ from the number of
tolerances or a difference exceeds its tolerance. Used by tests/train/check_resnet_train.py
(equivalence, on the CPU) and by scripts/gpu-check --part M (on N GPUs).
"""
import argparse
import json
import sys


def step_losses(path):
    with open(path) as f:
        return [(row["step"], row["loss"]) for row in map(json.loads, f) if "loss" in row]


def compare(one, many, tolerances):
    """(ok, message) for two lists of (step, loss) against the tolerances, one per step."""
    if len(one) != len(tolerances) or len(many) != len(tolerances):
        return False, (f"expected {len(tolerances)} steps each, got {len(one)} and {len(many)}:"
                       f"\none  {one}\nmany {many}")
    if [s for s, _ in one] != [s for s, _ in many]:
        return False, f"the runs' steps differ:\none  {one}\nmany {many}"
    differences = [abs(a - b) / abs(a) if a != 0 else abs(b) for (_, a), (_, b) in zip(one, many)]
    shown = ", ".join(f"{d:.2e}" for d in differences)
    if not all(d <= t for d, t in zip(differences, tolerances)):  # NaN fails too
        return False, (f"losses differ by {shown} relative (tolerances {tolerances}):"
                       f"\none  {one}\nmany {many}")
    return True, (f"equivalence: {len(one)} steps, relative loss differences {shown} "
                  f"(tolerances {tolerances})")


def self_test():
    one = [(1, 2.0), (2, 1.5), (3, 1.0)]
    cases = [
        ("equal within tolerance", [(1, 2.0 + 1e-6), (2, 1.5), (3, 1.001)], True),
        ("the first step off", [(1, 2.1), (2, 1.5), (3, 1.0)], False),
        ("the last step off", [(1, 2.0), (2, 1.5), (3, 1.1)], False),
        ("a step missing", [(1, 2.0), (2, 1.5)], False),
        ("a NaN loss", [(1, 2.0), (2, float("nan")), (3, 1.0)], False),
        ("other steps", [(2, 2.0), (3, 1.5), (4, 1.0)], False),
    ]
    failures = [name for name, many, expected in cases
                if compare(one, many, [1e-5, 1e-5, 1e-2])[0] != expected]
    if failures:
        print("compare_step_losses self-test FAILED: " + ", ".join(failures))
        return 1
    print(f"compare_step_losses self-test: {len(cases)} cases, each judged as expected")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("one", nargs="?", help="the one-rank run's --step-metrics file")
    parser.add_argument("many", nargs="?", help="the N-rank run's --step-metrics file")
    parser.add_argument("--tolerances", default="1e-5,1e-5,1e-2",
                        help="relative, one per step (default 1e-5,1e-5,1e-2)")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    if not args.one or not args.many:
        parser.error("give ONE.jsonl and MANY.jsonl (or --self-test)")
    tolerances = [float(t) for t in args.tolerances.split(",")]
    ok, message = compare(step_losses(args.one), step_losses(args.many), tolerances)
    print(message)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
