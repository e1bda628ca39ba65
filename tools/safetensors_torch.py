"""safetensors files read and written by hand with torch (the safetensors package is not
installed here): 8-byte little-endian header length, JSON header, raw little-endian data.
Shared by the tools and the test scripts that check the engine against torchvision."""
import json
import struct

import torch

DTYPES = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64}
NAMES = {dtype: name for name, dtype in DTYPES.items()}


def read_safetensors(path):
    """(metadata, {name: tensor}) of the file at path."""
    with open(path, "rb") as f:
        data = f.read()
    (header_bytes,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + header_bytes])
    metadata = header.pop("__metadata__", {})
    start = 8 + header_bytes
    tensors = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        dtype = DTYPES[entry["dtype"]]
        chunk = bytearray(data[start + begin:start + end])  # writable, so frombuffer is quiet
        tensors[name] = torch.frombuffer(chunk, dtype=dtype).reshape(entry["shape"]) \
            if chunk else torch.empty(entry["shape"], dtype=dtype)
    return metadata, tensors


def write_safetensors(path, tensors, metadata=None):
    """Writes {name: tensor} (f32, f64, i64) as a safetensors file."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, tensor in tensors.items():
        blob = tensor.detach().contiguous().cpu().numpy().tobytes()
        header[name] = {"dtype": NAMES[tensor.dtype], "shape": list(tensor.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
