#!/usr/bin/env python3
"""Writes tests/nn/golden/torchvision_resnet18_state_dict.safetensors, the proof that a
state_dict written by PyTorch loads into the engine (Debian's python3-torch and
python3-torchvision; run Debian's /usr/bin/python3):

    /usr/bin/python3 tools/make_checkpoint_golden.py tests/nn/golden [--keep-state-dict FILE]

The state_dict itself (torchvision's resnet18 at 10 classes, 44.7 MB of incompressible
weights) is not committed. Its weights come from the counter-based generator the C++ tests
reproduce bit for bit (tools/make_nn_goldens.py, tests/nn/golden_weights.h), its BN
statistics and batch counters from the same generator (set_golden_buffers below), and it is
laid out exactly as safetensors.torch.save_file lays out a state_dict without metadata:
tensors sorted by descending dtype (I64 before F32), then by name; compact JSON; the header
padded with spaces to a multiple of 8 bytes. What is committed (about 20 KB):
  - metadata "state_dict_header": that file's header, byte for byte, and "state_dict_bytes"
    and "state_dict_sha256": its size and digest
  - "tensor_sha256" U8 [tensors, 32]: each tensor's data digest, in header order
  - "eval_logits" F64 [2, 10]: torchvision's eval-mode logits of the golden input images
    (batch 2, 64x64), computed in float64 (the exact answer for these weights), and
    "eval_logits:torch_f32_error": PyTorch's own fp32 error against them
The C++ test rebuilds the file's bytes from the header and the generator, proves them equal
to PyTorch's (the SHA-256 digests), loads them and compares the logits.
"""
import argparse
import hashlib
import json
import os
import struct
import sys

import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_nn_goldens import fnv1a64, golden_values, set_golden_weights  # noqa: E402

GOLDEN_VERSION = 1
REGENERATE = "/usr/bin/python3 tools/make_checkpoint_golden.py tests/nn/golden"
FILE_NAME = "torchvision_resnet18_state_dict.safetensors"
ARCH, CLASSES, BATCH, IMAGE_SIZE = "resnet18", 10, 2, 64
DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64", torch.uint8: "U8"}
# safetensors' Dtype order, in which save_file sorts tensors (descending).
DTYPE_ORDER = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32",
               "U32", "F32", "F64", "I64", "U64"]


def set_golden_buffers(model):
    """running_mean 0 +- 0.1, running_var 1 +- 0.25, num_batches_tracked fnv1a64(name) % 1000."""
    with torch.no_grad():
        for name, b in model.named_buffers():
            if name.endswith("num_batches_tracked"):
                b.fill_(fnv1a64(name) % 1000)
            elif name.endswith("running_mean"):
                b.copy_(golden_values(name, b.numel(), 0.1))
            else:
                b.copy_(golden_values(name, b.numel(), 0.25, 1.0))


def encode_safetensors(tensors, metadata=None):
    """(header bytes, data bytes) as safetensors.torch.save_file writes them."""
    items = [(name, DTYPES[t.dtype], t.detach().contiguous().cpu()) for name, t in tensors.items()]
    items.sort(key=lambda item: item[0])
    items.sort(key=lambda item: DTYPE_ORDER.index(item[1]), reverse=True)
    header, offset, chunks = {}, 0, []
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, t in items:
        data = t.numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        chunks.append(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return text, chunks


def write_file(path, header, chunks):
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)))
        f.write(header)
        for data in chunks:
            f.write(data)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--keep-state-dict", metavar="FILE",
                        help="also write the 44.7 MB state_dict itself there")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = torchvision.models.__dict__[ARCH](num_classes=CLASSES)
    set_golden_weights(model)
    set_golden_buffers(model)
    header, chunks = encode_safetensors(model.state_dict())
    if args.keep_state_dict:
        write_file(args.keep_state_dict, header, chunks)
    whole = hashlib.sha256(struct.pack("<Q", len(header)) + header)
    for data in chunks:
        whole.update(data)
    tensor_digests = torch.tensor([list(hashlib.sha256(d).digest()) for d in chunks],
                                  dtype=torch.uint8)

    images = golden_values("input", BATCH * 3 * IMAGE_SIZE * IMAGE_SIZE, 1.0)
    images = images.reshape(BATCH, 3, IMAGE_SIZE, IMAGE_SIZE)
    model.eval()
    with torch.no_grad():
        logits32 = model(images)
        logits64 = model.double()(images.double())
    error = (logits32.double() - logits64).abs().max().reshape(1)

    metadata = {
        "magic": "ENGINE-CHECKPOINT-GOLDEN", "version": str(GOLDEN_VERSION),
        "regenerate": REGENERATE, "torch": torch.__version__,
        "torchvision": torchvision.__version__, "arch": ARCH, "classes": str(CLASSES),
        "batch": str(BATCH), "image_size": str(IMAGE_SIZE), "reference": "float64, eval mode",
        "state_dict_header": header.decode(), "state_dict_bytes":
            str(8 + len(header) + sum(len(d) for d in chunks)),
        "state_dict_sha256": whole.hexdigest(),
    }
    golden_header, golden_chunks = encode_safetensors(
        {"eval_logits": logits64, "eval_logits:torch_f32_error": error,
         "tensor_sha256": tensor_digests}, metadata)
    path = os.path.join(args.out_dir, FILE_NAME)
    write_file(path, golden_header, golden_chunks)
    print(f"wrote {path} ({8 + len(golden_header) + sum(map(len, golden_chunks))} bytes; "
          f"the state_dict it describes: {metadata['state_dict_bytes']} bytes, "
          f"{len(chunks)} tensors)")


if __name__ == "__main__":
    main()
