#!/usr/bin/env python3
"""resnet_train --tensorboard DIR (ctest train_tensorboard): the event file, read two ways.

    check_tensorboard.py --exe build/resnet_train --work DIR --reader TENSORBOARD_DIR

Trains 2 epochs on --dummy images with --step-metrics and --tensorboard, then reads the event
file (1) with this script's own decoder: every TFRecord's length and data checksums (masked
CRC-32C), the first event's file_version, each scalar's tag, step and value, and every value
equal to the JSON lines' figure rounded to float32 (step/loss, step/lr and step/comm_hidden_pct
against --step-metrics; epoch/* against metrics.jsonl, at the epoch's last optimizer step);
(2) with TensorBoard's own EventAccumulator (the tensorboard package scripts/install-deps puts
in TENSORBOARD_DIR), which must see the same scalars. Exit 77 (a skip) when TensorBoard's
reader cannot be imported. Only the standard library otherwise.
"""
import argparse
import glob
import json
import os
import shutil
import struct
import subprocess
import sys

SKIP = 77


def check(condition, message):
    if not condition:
        sys.exit("check_tensorboard: " + message)


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(data):
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    data = open(path, "rb").read()
    at = 0
    while at < len(data):
        check(at + 12 <= len(data), f"a truncated record header at byte {at}")
        header = data[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (header_crc,) = struct.unpack("<I", data[at + 8:at + 12])
        check(header_crc == masked(header), f"the length's checksum at byte {at}")
        body = data[at + 12:at + 12 + length]
        (body_crc,) = struct.unpack("<I", data[at + 12 + length:at + 16 + length])
        check(body_crc == masked(body), f"the data's checksum at byte {at}")
        yield body
        at += 16 + length


def varint(data, at):
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def fields(message):
    """(field number, value) pairs of a protobuf message: ints, floats/doubles as bytes."""
    at = 0
    while at < len(message):
        key, at = varint(message, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = varint(message, at)
        elif wire == 1:
            value, at = message[at:at + 8], at + 8
        elif wire == 2:
            length, at = varint(message, at)
            value, at = message[at:at + length], at + length
        elif wire == 5:
            value, at = message[at:at + 4], at + 4
        else:
            sys.exit(f"check_tensorboard: wire type {wire} in an event")
        yield number, value


def decode(path):
    """The file's version and its scalars {tag: [(step, value)]}."""
    version, scalars = None, {}
    for body in records(path):
        step, summary = 0, None
        for number, value in fields(body):
            if number == 2:
                step = value
            elif number == 3:
                version = value.decode()
            elif number == 5:
                summary = value
        if summary is None:
            continue
        for number, value in fields(summary):
            check(number == 1, f"summary field {number}")
            entry = dict(fields(value))
            tag = entry[1].decode()
            scalars.setdefault(tag, []).append((step, struct.unpack("<f", entry[2])[0]))
    return version, scalars


def as_float32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exe", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--reader", required=True, help="where the tensorboard package is")
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    board, steps_file = os.path.join(args.work, "board"), os.path.join(args.work, "steps.jsonl")
    command = [args.exe, "--dummy", "--dummy-classes", "4", "--dummy-images", "64,32",
               "--arch", "resnet18", "--image-size", "32", "-b", "16", "--epochs", "2",
               "--workers", "1", "--print-freq", "2", "--lr", "0.01",
               "--checkpoint-dir", os.path.join(args.work, "ck"), "--step-metrics", steps_file,
               "--tensorboard", board]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    check(result.returncode == 0, f"resnet_train exited {result.returncode}:\n{result.stderr}")
    files = glob.glob(os.path.join(board, "events.out.tfevents.*"))
    check(len(files) == 1, f"expected one event file in {board}, found {files}")
    version, scalars = decode(files[0])
    check(version == "brain.Event:2", f"file_version {version!r}")

    steps = [json.loads(line) for line in open(steps_file)]
    epochs = [json.loads(line) for line in open(os.path.join(args.work, "ck", "metrics.jsonl"))]
    check(len(steps) == 8 and len(epochs) == 2, f"{len(steps)} steps, {len(epochs)} epochs")
    for key in ("loss", "lr", "comm_hidden_pct"):
        expected = [(s["step"], as_float32(s[key])) for s in steps]
        check(scalars.get("step/" + key) == expected,
              f"step/{key}: {scalars.get('step/' + key)} vs --step-metrics {expected}")
    check(len(scalars.get("step/top1_pct", [])) == 8, "step/top1_pct missing")
    for key in ("train_loss", "train_top1_pct", "val_loss", "val_top1_pct", "val_top5_pct", "lr",
                "images_per_s", "epoch_s", "comm_hidden_pct"):
        expected = [(e["step"], as_float32(e[key])) for e in epochs]
        check(scalars.get("epoch/" + key) == expected,
              f"epoch/{key}: {scalars.get('epoch/' + key)} vs metrics.jsonl {expected}")

    sys.path.insert(0, args.reader)
    try:
        from tensorboard.backend.event_processing import event_accumulator
    except ImportError as error:
        print(f"SKIP: TensorBoard's reader is not importable from {args.reader}: {error}")
        sys.exit(SKIP)
    accumulator = event_accumulator.EventAccumulator(board, size_guidance={"scalars": 0})
    accumulator.Reload()
    tags = sorted(accumulator.Tags()["scalars"])
    check(tags == sorted(scalars), f"TensorBoard sees tags {tags}, we wrote {sorted(scalars)}")
    for tag, ours in scalars.items():
        theirs = [(e.step, e.value) for e in accumulator.Scalars(tag)]
        check(theirs == ours, f"{tag}: TensorBoard reads {theirs}, we wrote {ours}")
    print(f"tensorboard: {len(tags)} tags, {sum(len(v) for v in scalars.values())} scalars, "
          f"checksums valid, equal to the JSON lines and as TensorBoard reads them")


if __name__ == "__main__":
    main()
